/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/peer.c: a peer that exits ELASTIC_EXIT_REFORM (its watchdog
 * escalated, or a step timed out) asks for the whole job to re-form. Under
 * --with-ft ulfm, PRRTE 5 tells the other processes with the PMIx event
 * PMIX_ERR_EXIT_NONZERO_TERM, which Open MPI's fault tolerance does not
 * handle: its default handler aborts ("An error occurred in PMIx Event
 * Notification", exit 108) a survivor whose own watchdog had not fired yet,
 * without keeping its last commit. This handler, run before Open MPI's,
 * takes an exit 75 to the watchdog thread, which keeps the commit and exits
 * 75 too; on another exit code (a rank that failed, or whose node Slurm took
 * for lost) it keeps the commit on the node and lets Open MPI's handler
 * abort as before. */
#include "config.h"

#include "internal.h"

#if HAVE_PMIX
#include <pthread.h>
#include <stdio.h>
#include <pmix.h>

static pthread_mutex_t _lock = PTHREAD_MUTEX_INITIALIZER;
static elastic_ctx_t *_ctx; /* the context the handler serves, under _lock */
static int _registered;

static void _on_exit_nonzero(size_t id, pmix_status_t status, const pmix_proc_t *source,
			     pmix_info_t info[], size_t ninfo, pmix_info_t results[],
			     size_t nresults, pmix_event_notification_cbfunc_fn_t cbfunc,
			     void *cbdata)
{
	int code = -1, rank = -1, done = -1;

	for (size_t i = 0; i < ninfo; i++) {
		if (PMIX_CHECK_KEY(&info[i], PMIX_EXIT_CODE) &&
		    info[i].value.type == PMIX_INT)
			code = info[i].value.data.integer;
		else if (PMIX_CHECK_KEY(&info[i], PMIX_EVENT_AFFECTED_PROC) &&
			 info[i].value.type == PMIX_PROC && info[i].value.data.proc)
			rank = (int)info[i].value.data.proc->rank;
	}
	pthread_mutex_lock(&_lock);
	if (_ctx) {
		/* stderr only (ELASTIC_DEBUG): a log callback may be Python's,
		 * not to be called from the PMIx thread */
		if (_ctx->env.debug >= ELASTIC_LOG_DEBUG)
			fprintf(stderr,
				"libelastic[%d] debug: PMIx: rank %d ended with exit status %d\n",
				_ctx->rank, rank, code);
		if (code == ELASTIC_EXIT_REFORM)
			done = elastic__watchdog_peer_reform(_ctx, rank);
		else if (code > 0 && code != ELASTIC_EXIT_LEFT)
			/* Open MPI's handler, next, aborts this process: the
			 * last commit goes to the node snapshot first, or a
			 * relaunch redoes the steps since the last periodic
			 * one (ELASTIC_SNAPSHOT_EVERY) */
			elastic__persist_on_exit(_ctx);
	}
	pthread_mutex_unlock(&_lock);
	if (cbfunc)
		cbfunc(done == 0 ? PMIX_EVENT_ACTION_COMPLETE
				 : PMIX_EVENT_NO_ACTION_TAKEN,
		       NULL, 0, NULL, NULL, cbdata);
}

void elastic__peer_watch_start(elastic_ctx_t *ctx)
{
	pmix_status_t code = PMIX_ERR_EXIT_NONZERO_TERM;
	pmix_info_t info;
	int rc;

	pthread_mutex_lock(&_lock);
	if (_ctx || !PMIx_Initialized()) {
		pthread_mutex_unlock(&_lock);
		return; /* one context is served; no PMIx client: nothing to hear */
	}
	_ctx = ctx;
	pthread_mutex_unlock(&_lock);
	if (_registered)
		return;
	PMIX_INFO_LOAD(&info, PMIX_EVENT_HDLR_NAME, "libelastic peer re-form",
		       PMIX_STRING);
	/* the blocking form (no registration callback) returns the reference */
	rc = PMIx_Register_event_handler(&code, 1, &info, 1, _on_exit_nonzero, NULL,
					 NULL);
	PMIX_INFO_DESTRUCT(&info);
	if (rc >= 0) {
		_registered = 1;
	} else {
		elastic__log(ctx, ELASTIC_LOG_DEBUG,
			     "no PMIx handler for a peer's re-form exit (%s)",
			     PMIx_Error_string(rc));
	}
}

void elastic__peer_watch_stop(elastic_ctx_t *ctx)
{
	pthread_mutex_lock(&_lock);
	if (_ctx == ctx)
		_ctx = NULL;
	pthread_mutex_unlock(&_lock);
	/* The handler stays registered (it serves the next context, if any):
	 * deregistering after MPI_Finalize would talk to a finalized client. */
}
#else
void elastic__peer_watch_start(elastic_ctx_t *ctx)
{
	(void)ctx;
}

void elastic__peer_watch_stop(elastic_ctx_t *ctx)
{
	(void)ctx;
}
#endif
