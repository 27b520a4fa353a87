/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/process.c: what the library does to its process: the exit hook before its own
 * _exit, the finalize guard, and SIGUSR1 (planned re-form). */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

struct _hook {
	elastic_exit_fn fn;
	void *arg;
	int status;
	const char *why;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int done;
};

static void *_hook_thread(void *p)
{
	struct _hook *h = p;
	h->fn(h->arg, h->status, h->why);
	pthread_mutex_lock(&h->lock);
	h->done = 1;
	pthread_cond_signal(&h->cond);
	pthread_mutex_unlock(&h->lock);
	return NULL;
}

void elastic__exit_hook(elastic_exit_fn fn, void *arg, int status, const char *why)
{
	static atomic_int ran;
	/* static: a hook still running at the deadline may read it after we left */
	static struct _hook h = {.lock = PTHREAD_MUTEX_INITIALIZER,
				 .cond = PTHREAD_COND_INITIALIZER};
	pthread_t t;
	pthread_attr_t a;

	if (fn && !atomic_exchange(&ran, 1)) {
		h.fn = fn;
		h.arg = arg;
		h.status = status;
		h.why = why;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &a, _hook_thread, &h) == 0) {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_sec += ELASTIC_EXIT_HOOK_TIMEOUT;
			pthread_mutex_lock(&h.lock);
			while (!h.done &&
			       pthread_cond_timedwait(&h.cond, &h.lock, &ts) == 0) {
			}
			pthread_mutex_unlock(&h.lock);
		}
		pthread_attr_destroy(&a);
	}
	fflush(NULL);
}

struct _guard {
	double seconds;
	int status;
	elastic_exit_fn fn;
	void *arg;
};

/* Set once MPI_Finalize returned: the guard then leaves the process alone. */
static atomic_int _finalize_returned;

static void *_finalize_guard(void *arg)
{
	struct _guard g = *(struct _guard *)arg;
	struct timespec ts = {(time_t)g.seconds,
			      (long)((g.seconds - (time_t)g.seconds) * 1e9)};
	char msg[128];
	int n;

	free(arg);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
	}
	if (atomic_load(&_finalize_returned))
		return NULL; /* the process lives on after MPI_Finalize (Python) */
	elastic__ending();
	n = snprintf(msg, sizeof(msg),
		     "libelastic: MPI_Finalize did not return in %.1f s: exiting %d\n",
		     g.seconds, g.status);
	if (write(STDERR_FILENO, msg, (size_t)n) < 0) {
	}
	/* a documented exit (elastic(3), EXIT HOOK): the caller asked for it */
	elastic__exit_hook(g.fn, g.arg, g.status, "finalize guard");
	_exit(g.status);
	return NULL;
}

void elastic__finalize_guard(double seconds, int status, elastic_exit_fn fn, void *arg)
{
	struct _guard *g = malloc(sizeof(*g));
	pthread_t t;
	pthread_attr_t a;

	if (!g || seconds <= 0) {
		free(g);
		return;
	}
	*g = (struct _guard){seconds, status, fn, arg};
	pthread_attr_init(&a);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	if (pthread_create(&t, &a, _finalize_guard, g) != 0)
		free(g);
	pthread_attr_destroy(&a);
}

void elastic__finalize_returned(void)
{
	atomic_store(&_finalize_returned, 1);
}

/* Planned re-form (grow, planned shrink): elastic-run sends SIGUSR1 to every
 * rank; the flag enters the next commit agreement so that all ranks stop
 * after the same committed step. */
static volatile sig_atomic_t stop_requested;

static void _on_stop_signal(int sig)
{
	stop_requested = 1;
}

int elastic__stop_requested(void)
{
	return stop_requested != 0;
}

/* The ranks shrank in place instead of stopping: a later SIGUSR1 is new. */
void elastic__stop_clear(void)
{
	stop_requested = 0;
}

/* elastic-run starts ranks with SIGUSR1 blocked, so that a re-form asked
 * for before elastic_init stays pending instead of killing the process:
 * unblock it here, once the handler (or the decision not to have one) is
 * in place; a pending request is then taken at the next commit. */
static void _stop_signal_unblock(void)
{
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_UNBLOCK, &usr1, NULL);
}

void elastic__stop_signal_install(elastic_ctx_t *ctx)
{
	struct sigaction old, sa = {.sa_handler = _on_stop_signal};
	if (!ctx->cfg.stop_signal) {
		_stop_signal_unblock();
		return;
	}
	if (sigaction(SIGUSR1, NULL, &old) == 0 && old.sa_handler != SIG_DFL &&
	    old.sa_handler != _on_stop_signal) {
		elastic__log(
			ctx, ELASTIC_LOG_WARN,
			"SIGUSR1 has a handler of the program's: planned re-forms (grow, shrink at a step boundary) are off");
		_stop_signal_unblock();
		return;
	}
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGUSR1, &sa, NULL);
	_stop_signal_unblock();
}

/* SIGTERM: see internal.h. term_armed: a context installed the handler
 * (0 again after elastic_destroy: the signal then goes where it went
 * before); term_prev: the program's disposition before, which gets the
 * signal once the last commit is kept. */
#define TERM_WRITER_WAIT_S 3.0
static volatile sig_atomic_t term_requested, term_armed;
static atomic_int term_taken;
static struct sigaction term_prev;

static void _on_term_signal(int sig)
{
	if (!term_armed) {
		sigaction(sig, &term_prev, NULL);
		raise(sig);
		return;
	}
	term_requested = 1;
}

int elastic__term_requested(void)
{
	return term_requested != 0;
}

void elastic__term_signal_install(elastic_ctx_t *ctx)
{
	struct sigaction old, sa = {.sa_handler = _on_term_signal};

	if (!ctx->shm_prefix[0] || ctx->env.snapshot_every <= 1 || term_armed)
		return; /* every commit is on the node already */
	if (sigaction(SIGTERM, NULL, &old) < 0 || old.sa_handler == SIG_IGN)
		return;
	if (old.sa_handler != _on_term_signal)
		term_prev = old;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	atomic_store(&term_taken, 0);
	term_armed = 1;
	sigaction(SIGTERM, &sa, NULL);
}

/* The program's disposition back; a SIGTERM held back goes to it now. */
static void _term_restore(void)
{
	struct sigaction cur;
	int pending = term_requested;

	term_armed = 0;
	term_requested = 0;
	if (sigaction(SIGTERM, NULL, &cur) == 0 && cur.sa_handler == _on_term_signal)
		sigaction(SIGTERM, &term_prev, NULL);
	if (pending)
		raise(SIGTERM);
}

void elastic__term_signal_remove(void)
{
	if (term_armed)
		_term_restore();
}

void elastic__term_signal_drop(void)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};

	sigemptyset(&ign.sa_mask);
	term_armed = 0;
	term_requested = 0;
	sigaction(SIGTERM, &ign, NULL);
}

void elastic__ending(void)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};

	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, NULL);
}

void elastic__term_act(elastic_ctx_t *ctx, int how)
{
	char msg[200];
	int n, kept = 0;

	if (atomic_exchange(&term_taken, 1))
		return; /* the other thread acts */
	if (how > 0)
		elastic__persist_now(ctx);
	else if (how == 0)
		elastic__persist_on_exit(ctx);
	if (how >= 0 && ctx->node_rank != 0)
		/* The node's lowest rank writes the snapshot; the signal came
		 * to all at once, and a runtime may end a launch's other ranks
		 * (the writer too) as soon as one dies of it (Open MPI 5): this
		 * rank dies only once its commit is on the node. The writer's
		 * longest way there: 2 s between steps. */
		kept = elastic__snap_shm_wait_step(ctx, ctx->committed,
						   TERM_WRITER_WAIT_S);
	else if (how >= 0)
		kept = ctx->persisted == ctx->committed;
	n = snprintf(
		msg, sizeof(msg), "libelastic[%d]: SIGTERM: committed step %llu %s\n",
		ctx->rank, (unsigned long long)ctx->committed,
		how == -2 ? "owes no snapshot (no step begun, or the training completed)"
		: how < 0 ? "not written (the program was between steps for 2 s)"
		: kept	  ? "kept in the node snapshot"
		: ctx->node_rank != 0
			? "could not be seen in the node snapshot (its writer, local rank 0, did not write it in 3 s)"
			: "could not go to the node snapshot");
	if (write(STDERR_FILENO, msg, (size_t)n) < 0) {
	}
	fflush(NULL);
	_term_restore(); /* the default ends the process here */
}
