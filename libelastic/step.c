/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/step.c: the step protocol (begin, checked communication, commit by
 * agreement), recovery in place, resume from a snapshot, and when the world changes size
 * at a commit (the change itself is resize.c's). */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"
#include "rankend.h"

/* Bits of the commit agreement (bitwise AND over the survivors). */
#define AGREE_STEP_OK 1 /* the step succeeded on this rank */
#define AGREE_COMM_OK 2 /* no fault seen here: the communicator is usable */
#define AGREE_NO_STOP 4 /* no planned re-form asked on this rank (SIGUSR1) */
#define AGREE_OWNER   8 /* this launch still owns the node snapshots here */
#define AGREE_STATE_OK                                                                   \
	16 /* update after commit: the state did not change inside the step */
#define AGREE_ALL                                                                        \
	(AGREE_STEP_OK | AGREE_COMM_OK | AGREE_NO_STOP | AGREE_OWNER | AGREE_STATE_OK)

/* Update after commit: ELASTIC__FP_WORDS words spread over each region, read
 * at begin and compared at commit (a few loads, not a copy): a caller that
 * applies its update before the commit would have it applied twice after a
 * redo; a dense update (weights) changes every sampled word. Returns the
 * index of the first region that differs from ctx->fp, or -1. */
static int _fingerprint(elastic_ctx_t *ctx, int compare)
{
	for (int i = 0; i < ctx->nregions; i++) {
		const unsigned char *p = ctx->regions[i].ptr;
		size_t n = ctx->regions[i].bytes;
		for (int j = 0; j < ELASTIC__FP_WORDS; j++) {
			uint64_t w = 0;
			size_t k = n < 8 ? n : 8,
			       at = n <= 8 ? 0
					   : (n - 8) * (size_t)j /
						     (ELASTIC__FP_WORDS - 1);
			memcpy(&w, p + at, k);
			uint64_t *slot = &ctx->fp[i * ELASTIC__FP_WORDS + j];
			if (!compare)
				*slot = w;
			else if (*slot != w)
				return i;
		}
	}
	return -1;
}

/* A failure of the world seen on this rank: revoke so that no rank stays
 * blocked in an operation on the broken communicator. */
static void _fault(elastic_ctx_t *ctx, int rc, const char *what)
{
	if (ctx->comm_ok) {
		ctx->stats.last_failure_time = elastic__now_real();
		elastic__log(ctx, ELASTIC_LOG_INFO,
			     "step %llu: %s failed (MPI error %d): revoking",
			     (unsigned long long)ctx->committed, what, rc);
		elastic__ft_revoke(ctx->comm);
	}
	ctx->comm_ok = 0;
	ctx->step_ok = 0;
}

int elastic_check(elastic_ctx_t *ctx, int mpi_rc)
{
	if (!ctx) {
		errno = EINVAL;
		return -1;
	}
	if (mpi_rc == MPI_SUCCESS)
		return 0;
	if (elastic__ft_is_fault(mpi_rc)) {
		_fault(ctx, mpi_rc, "communication");
		errno = EPIPE;
	} else {
		/* Another MPI error: peers may wait on this rank, so revoke as
		 * for a fault; the world is rebuilt at its size. */
		_fault(ctx, mpi_rc, "communication (not a process failure)");
		errno = EIO;
	}
	return -1;
}

void elastic_step_fail(elastic_ctx_t *ctx)
{
	if (ctx && ctx->in_step)
		ctx->step_ok = 0;
}

static int _comm_usable(elastic_ctx_t *ctx)
{
	if (!ctx) {
		errno = EINVAL;
		return 0;
	}
	if (!ctx->in_step) {
		errno = EPROTO;
		return 0;
	}
	if (!ctx->comm_ok) {
		errno = ECANCELED;
		return 0;
	}
	return 1;
}

int elastic_allreduce(elastic_ctx_t *ctx, const void *sendbuf, void *recvbuf, int count,
		      MPI_Datatype type, MPI_Op op)
{
	if (!_comm_usable(ctx))
		return -1;
	return elastic_check(ctx,
			     MPI_Allreduce(sendbuf, recvbuf, count, type, op, ctx->comm));
}

int elastic_allgather_i64(elastic_ctx_t *ctx, const int64_t *send, int count,
			  int64_t *recv, int cap, int *total)
{
	int *counts, *displs, sum = 0, rc;

	if (!_comm_usable(ctx))
		return -1;
	if (count < 0 || (count > 0 && !send) || !recv || !total) {
		errno = EINVAL;
		return -1;
	}
	counts = malloc(2 * sizeof(int) * (size_t)ctx->size);
	if (!counts) {
		errno = ENOMEM;
		return -1;
	}
	displs = counts + ctx->size;
	rc = MPI_Allgather(&count, 1, MPI_INT, counts, 1, MPI_INT, ctx->comm);
	if (elastic_check(ctx, rc) < 0) {
		free(counts);
		return -1;
	}
	for (int i = 0; i < ctx->size; i++) {
		displs[i] = sum;
		if (counts[i] < 0 || counts[i] > cap - sum) {
			/* Every rank sees the same counts: all skip alike. */
			free(counts);
			ctx->step_ok = 0;
			errno = ERANGE;
			return -1;
		}
		sum += counts[i];
	}
	rc = MPI_Allgatherv(send, count, MPI_INT64_T, recv, counts, displs, MPI_INT64_T,
			    ctx->comm);
	free(counts);
	if (elastic_check(ctx, rc) < 0)
		return -1;
	*total = sum;
	return 0;
}

/* Copy a snapshot's data (state_bytes at buf) into the registered buffers. */
static void _apply(elastic_ctx_t *ctx, const unsigned char *buf)
{
	for (int i = 0; i < ctx->nregions; i++)
		memcpy(ctx->regions[i].ptr, buf + ctx->regions[i].offset,
		       ctx->regions[i].bytes);
}

/* Resume from a snapshot: find the best snapshot of this job on any rank's node (or in the
 * checkpoint directory) and give it to every rank. Collective. */
static int _resume(elastic_ctx_t *ctx, elastic_error_t *err)
{
	unsigned char *buf = NULL;
	uint64_t mine = 0, best = 0, step = 0, in[2], out[2];
	int have = 0, root, cand, rc, bad = 0;
	elastic_error_t e2, why = {""};

	if (!ctx->shm_prefix[0] && !ctx->env.checkpoint_dir[0])
		return 0;
	if (!(buf = malloc(ctx->state_bytes ? ctx->state_bytes : 1)))
		return _fail(err, ENOMEM, "resume: out of memory");
	if (ctx->shm_prefix[0]) {
		have = elastic__snap_file_load(ctx, ctx->shm_prefix, buf, &step, &e2);
		if (have < 0) {
			bad |= errno == EINVAL;
			elastic__log(ctx, ELASTIC_LOG_WARN, "resume: %s", e2.text);
			why = e2;
		}
		if (have > 0)
			mine = step;
	}
	if (ctx->env.checkpoint_dir[0]) {
		char prefix[512];
		unsigned char *b2 = malloc(ctx->state_bytes ? ctx->state_bytes : 1);
		elastic_snap_prefix(prefix, sizeof(prefix), ctx->env.checkpoint_dir,
				    ctx->env.job_id[0] ? ctx->env.job_id : "job", NULL);
		int h2 = b2 ? elastic__snap_file_load(ctx, prefix, b2, &step, &e2) : -1;
		if (h2 < 0)
			elastic__log(ctx, ELASTIC_LOG_WARN, "resume: %s",
				     b2 ? e2.text : "no memory");
		if (h2 > 0 && step > mine) {
			memcpy(buf, b2, ctx->state_bytes);
			mine = step;
		}
		free(b2);
	}
	in[0] = mine;
	in[1] = (uint64_t)bad;
	rc = MPI_Allreduce(in, out, 2, MPI_UINT64_T, MPI_MAX, ctx->comm);
	if (rc != MPI_SUCCESS) {
		free(buf);
		return _fail(err, EIO, "resume: MPI_Allreduce failed (MPI error %d)", rc);
	}
	best = out[0];
	/* this launch now owns the node snapshots (older launches still running
	 * somewhere stop at their next commit) */
	if (ctx->shm_prefix[0] && ctx->node_rank == 0 &&
	    elastic__snap_owner_claim(ctx->shm_prefix, ctx->launch_id) < 0)
		elastic__log(ctx, ELASTIC_LOG_WARN, "cannot claim %sowner: %s",
			     ctx->shm_prefix, strerror(errno));
	if (out[1]) {
		/* A snapshot of this job that this program cannot take: never
		 * overwrite it silently (it may be the job's progress). */
		free(buf);
		if (bad)
			return _fail(err, EINVAL, "resume: %s", why.text);
		return _fail(
			err, EINVAL,
			"resume: a snapshot of job %s does not match this program's registration (see the other ranks' errors)",
			ctx->env.job_id);
	}
	if (best == 0) {
		free(buf);
		return 0;
	}
	cand = mine == best ? ctx->rank : INT_MAX;
	rc = MPI_Allreduce(&cand, &root, 1, MPI_INT, MPI_MIN, ctx->comm);
	if (rc == MPI_SUCCESS)
		rc = MPI_Bcast(buf, (int)ctx->state_bytes, MPI_BYTE, root, ctx->comm);
	if (rc != MPI_SUCCESS) {
		free(buf);
		return _fail(err, EIO, "resume: sending the state failed (MPI error %d)",
			     rc);
	}
	_apply(ctx, buf);
	free(buf);
	ctx->committed = best;
	ctx->resumed = 1;
	ctx->stats.resumed_step = best;
	elastic__log(ctx, ELASTIC_LOG_INFO,
		     "resumed at committed step %llu (snapshot of rank %d)",
		     (unsigned long long)best, root);
	return 1;
}

/* Every rank agreed to stop after this committed step: keep it on the node
 * (whatever the snapshot interval), leave MPI and exit so that elastic-run
 * re-forms the job over its new set of GPUs. One of the documented places
 * where the library ends the process (elastic(3), EXIT HOOK): elastic-run
 * takes status ELASTIC_EXIT_REFORM as the rank's word, and no return
 * status of the public calls says "stop". */
static void _stop_for_reform(elastic_ctx_t *ctx)
{
	atomic_store(&ctx->wd.leaving, 1); /* the peers' exits 75 are expected */
	elastic__term_signal_drop();	   /* and the runtime's SIGTERM after them */
	elastic__ending();
	elastic__persist_now(ctx);
	elastic__log(ctx, ELASTIC_LOG_INFO,
		     "planned re-form: stopping after committed step %llu (exit %d)",
		     (unsigned long long)ctx->committed, ELASTIC_EXIT_REFORM);
	elastic__exit_hook(ctx->cb.exit_fn, ctx->cb.exit_arg, ELASTIC_EXIT_REFORM,
			   "planned re-form");
	/* Told from here, before MPI_Finalize, whose fence holds every rank
	 * until all have told it: the runtime ends a launch's other ranks
	 * (SIGTERM, then SIGKILL half a second later) as soon as one exits,
	 * and a wrapper that a loaded host ran late would be killed before its
	 * own report, making a rank that stopped as asked look lost. */
	if (elastic__report_end(ELASTIC_RANK_EXITED, ELASTIC_EXIT_REFORM) < 0)
		elastic__log(
			ctx, ELASTIC_LOG_WARN,
			"planned re-form: cannot tell elastic-run (%s); its rank wrapper tells it after the exit",
			getenv("ELASTIC_RUN_REPORT"));
	elastic_finalize(ctx, ELASTIC_EXIT_REFORM);
	_exit(ELASTIC_EXIT_REFORM);
}

void elastic_reform_now(elastic_ctx_t *ctx)
{
	elastic__log(ctx, ELASTIC_LOG_INFO,
		     "re-form asked by the program after committed step %llu",
		     (unsigned long long)ctx->committed);
	_stop_for_reform(ctx);
}

/* This rank leaves at a planned shrink in place, now that the survivors
 * have their world: it ends here (exit ELASTIC_EXIT_LEFT, not a failure),
 * inside elastic_step_commit, one of the documented places where the
 * library ends the process (elastic(3), EXIT HOOK). elastic-run reads
 * status 76 as "left"; elastic_step_commit has no status that says so, and
 * a leaver's code is the same as a survivor's, so the program is not asked
 * to end itself. */
static _Noreturn void _left(elastic_ctx_t *ctx)
{
	elastic__ending();
	elastic__exit_hook(ctx->cb.exit_fn, ctx->cb.exit_arg, ELASTIC_EXIT_LEFT,
			   "planned shrink: left");
	fflush(NULL);
	_exit(ELASTIC_EXIT_LEFT);
}

/* Every rank agreed on a planned change at this commit: none when it was
 * taken already (a late signal), else shrink in place (this rank leaves,
 * or goes on in the smaller world), else grow in place at the next begin,
 * else stop for a re-form. */
static void _planned_change(elastic_ctx_t *ctx)
{
	if (elastic__ask_taken(ctx)) {
		elastic__stop_clear();
		return;
	}
	switch (elastic__shrink_in_place(ctx)) {
	case ELASTIC__SHRINK_LEAVE:
		_left(ctx);
	case ELASTIC__SHRINK_STAY:
		return;
	case ELASTIC__SHRINK_NONE:
		break;
	}
	if (elastic__grow_planned(ctx))
		return;
	/* stop at the next begin: with update after commit the caller has not
	 * applied this step yet; and a commit may be the training's last, after
	 * which elastic_complete() comes instead and the training ends here (a
	 * relaunch would resume past the end, and a loop that tests its end
	 * before elastic_step_begin() resumes would run a step too many) */
	ctx->stop_pending = 1;
}

/* A growth in place agreed at the last commit, now that every rank holds
 * the committed state (update after commit: applied by the caller): the
 * joiners start and take it; on any failure every rank stops for a
 * re-form (the runtime's error reaches all of them), as without it. */
static void _grow(elastic_ctx_t *ctx)
{
	elastic_error_t e;
	if (elastic__grow_in_place(ctx, &e) < 0) {
		elastic__log(ctx, ELASTIC_LOG_WARN, "%s: re-form instead", e.text);
		_stop_for_reform(ctx);
	}
	elastic__stop_clear();
	elastic__resized(ctx);
}

/* The first begin's work (elastic_start): agree on the registration, resume
 * from a snapshot or take a growth's state, record the state to return to.
 * who: the public call, for the messages. */
static int _start(elastic_ctx_t *ctx, const char *who, elastic_error_t *err)
{
	if (ctx->nregions == 0)
		return _fail(
			err, EPROTO,
			"%s: no state registered (elastic_register the weights first)",
			who);
	/* every rank must hold the same state: same names, sizes, order */
	if (elastic__layout_agree(ctx, err) < 0)
		return -1;
	if (ctx->mode == ELASTIC_COPY_AT_COMMIT && elastic__snap_host_alloc(ctx, err) < 0)
		return -1;
	/* a joiner of a growth in place takes the state of the ranks that
	 * ran; any other rank looks for a snapshot */
	if ((ctx->joining ? elastic__grow_handoff(ctx, err) : _resume(ctx, err)) < 0) {
		elastic__snap_host_free(ctx);
		return -1;
	}
	if (ctx->mode == ELASTIC_COPY_AT_COMMIT)
		elastic__snap_host_save(ctx, ctx->committed);
	ctx->persisted = ctx->committed;
	ctx->started = 1;
	if (ctx->resumed && ctx->cb.change_fn)
		ctx->cb.change_fn(ctx, ctx->cb.change_arg);
	return 0;
}

int elastic_start(elastic_ctx_t *ctx, elastic_error_t *err)
{
	if (!ctx)
		return _fail(err, EINVAL, "elastic_start: ctx is NULL");
	if (ctx->started)
		return 0;
	return _start(ctx, "elastic_start", err);
}

int elastic_step_begin(elastic_ctx_t *ctx, elastic_error_t *err)
{
	if (!ctx)
		return _fail(err, EINVAL, "elastic_step_begin: ctx is NULL");
	if (ctx->in_step)
		return _fail(
			err, EPROTO,
			"elastic_step_begin: step %llu is open (call elastic_step_commit first)",
			(unsigned long long)ctx->committed);
	if (ctx->completed)
		return _fail(err, EPROTO,
			     "elastic_step_begin: the training was completed");
	atomic_store(&ctx->applying, 0); /* the last commit is applied */
	if (ctx->started && elastic__term_requested())
		elastic__term_act(ctx, 1); /* keep it */
	if (!ctx->started) {
		if (_start(ctx, "elastic_step_begin", err) < 0)
			return -1;
	} else {
		/* the caller has applied the last committed step's update */
		if (ctx->join)
			_grow(ctx);
		if (ctx->stop_pending)
			_stop_for_reform(ctx);
		if (ctx->mode == ELASTIC_UPDATE_AFTER_COMMIT)
			elastic__persist(ctx, 0);
	}
	if (ctx->mode == ELASTIC_UPDATE_AFTER_COMMIT) {
		if (!ctx->fp &&
		    !(ctx->fp = calloc((size_t)ctx->nregions * ELASTIC__FP_WORDS,
				       sizeof(uint64_t))))
			return _fail(err, ENOMEM, "elastic_step_begin: out of memory");
		_fingerprint(ctx, 0);
	}
	ctx->in_step = 1;
	ctx->step_ok = 1;
	ctx->comm_ok = 1;
	elastic__watchdog_arm(ctx, ELASTIC__WATCH_STEP); /* if set */
	return 0;
}

/* Recovery in place: rebuild the world from the survivors of ctx->comm and return the
 * state to the last step committed everywhere. Collective over survivors. */
static int _recover(elastic_ctx_t *ctx, elastic_error_t *err)
{
	MPI_Comm cur = ctx->comm, nc = MPI_COMM_NULL;
	double t0 = elastic__now_mono();
	int old_size = ctx->size, attempt;
	uint64_t lo = 0, hi = 0;
	int node_rank = 0;

	if (ctx->stats.last_failure_time == 0)
		ctx->stats.last_failure_time = elastic__now_real();
	elastic__watchdog_arm(ctx, ELASTIC__WATCH_RECOVERY);
	elastic__ft_revoke(cur);
	for (attempt = 1;; attempt++) {
		double ts = elastic__now_mono();
		int rc = elastic__ft_shrink(cur, &nc), ok, flag;
		elastic__log(ctx, ELASTIC_LOG_DEBUG, "recovery: shrink %.3f ms (rc %d)",
			     (elastic__now_mono() - ts) * 1e3, rc);
		if (rc != MPI_SUCCESS) {
			elastic__log(ctx, ELASTIC_LOG_WARN,
				     "recovery: shrink failed (MPI error %d), attempt %d",
				     rc, attempt);
			if (attempt >= 20) {
				elastic__watchdog_arm(ctx, ELASTIC__WATCH_OFF);
				return _fail(err, EIO,
					     "recovery: MPIX_Comm_shrink failed %d times",
					     attempt);
			}
			continue;
		}
		MPI_Comm_set_errhandler(nc, MPI_ERRORS_RETURN);
		/* Every survivor should be at the same committed step (the commit
		 * agreement is uniform); check it, and take the lowest if not. The
		 * same collective finds each rank's place on its host. */
		rc = elastic__survey(ctx, nc, &lo, &hi, &node_rank);
		ok = rc == MPI_SUCCESS;
		flag = ok;
		rc = elastic__ft_agree(nc, &flag);
		elastic__log(ctx, ELASTIC_LOG_DEBUG,
			     "recovery: shrink + survey + agree %.3f ms",
			     (elastic__now_mono() - ts) * 1e3);
		if (rc == MPI_SUCCESS && flag)
			break;
		elastic__log(
			ctx, ELASTIC_LOG_INFO,
			"recovery: another failure during attempt %d, shrinking again",
			attempt);
		elastic__ft_revoke(nc);
		if (cur != ctx->comm)
			MPI_Comm_free(&cur);
		cur = nc;
		nc = MPI_COMM_NULL;
	}
	if (cur != ctx->comm)
		MPI_Comm_free(&cur);
	if (hi != lo)
		elastic__log(
			ctx, ELASTIC_LOG_WARN,
			"recovery: survivors were at committed steps %llu..%llu: all return to %llu",
			(unsigned long long)lo, (unsigned long long)hi,
			(unsigned long long)lo);
	if (ctx->mode == ELASTIC_UPDATE_AFTER_COMMIT
		    ? hi != lo
		    : elastic__snap_host_restore(ctx, lo) < 0) {
		/* Cannot happen with uniform agreement; never continue on a
		 * state that differs between ranks. */
		elastic__watchdog_arm(ctx, ELASTIC__WATCH_OFF);
		MPI_Comm_free(&nc);
		return _fail(
			err, EIO,
			"recovery: no copy of committed step %llu here (have %llu, %llu)",
			(unsigned long long)lo, (unsigned long long)ctx->host.step[0],
			(unsigned long long)ctx->host.step[1]);
	}
	pthread_mutex_lock(&ctx->wd.state);
	ctx->committed = lo;
	pthread_mutex_unlock(&ctx->wd.state);
	elastic__adopt(ctx, nc, node_rank);
	elastic__watchdog_arm(ctx, ELASTIC__WATCH_OFF);
	ctx->stats.recoveries++;
	ctx->stats.last_recovery_s = elastic__now_mono() - t0;
	elastic__log(
		ctx, ELASTIC_LOG_INFO,
		"recovered: size %d -> %d in %.3f ms (%d attempt%s), back at committed step %llu",
		old_size, ctx->size, ctx->stats.last_recovery_s * 1e3, attempt,
		attempt > 1 ? "s" : "", (unsigned long long)lo);
	return 0;
}

static int _commit(elastic_ctx_t *ctx, elastic_error_t *err);

int elastic_step_updated(elastic_ctx_t *ctx, elastic_error_t *err)
{
	if (!ctx)
		return _fail(err, EINVAL, "elastic_step_updated: ctx is NULL");
	if (ctx->in_step)
		return _fail(
			err, EPROTO,
			"elastic_step_updated: inside step %llu (call it once elastic_step_commit returned ELASTIC_COMMITTED and the update is applied)",
			(unsigned long long)ctx->committed);
	atomic_store(&ctx->applying, 0);
	if (ctx->mode == ELASTIC_UPDATE_AFTER_COMMIT && ctx->started)
		elastic__persist(ctx, 0); /* the next begin's persist finds it done */
	return 0;
}

int elastic_step_commit(elastic_ctx_t *ctx, elastic_error_t *err)
{
	int r = _commit(ctx, err);
	if (ctx) {
		/* the caller may change its state once this returns */
		elastic__persist_wait(ctx);
		elastic__watchdog_arm(ctx, ELASTIC__WATCH_OFF);
	}
	return r;
}

static int _commit(elastic_ctx_t *ctx, elastic_error_t *err)
{
	int flag, rc;

	if (!ctx)
		return _fail(err, EINVAL, "elastic_step_commit: ctx is NULL");
	if (!ctx->in_step)
		return _fail(
			err, EPROTO,
			"elastic_step_commit: no open step (call elastic_step_begin first)");
	int changed = ctx->mode == ELASTIC_UPDATE_AFTER_COMMIT && ctx->fp
			      ? _fingerprint(ctx, 1)
			      : -1;
	flag = (ctx->step_ok ? AGREE_STEP_OK : 0) | (ctx->comm_ok ? AGREE_COMM_OK : 0) |
	       (elastic__stop_requested() ? 0 : AGREE_NO_STOP) |
	       (ctx->fenced ? 0 : AGREE_OWNER) | (changed < 0 ? AGREE_STATE_OK : 0);
	double ta = elastic__now_mono();
	rc = elastic__ft_agree(ctx->comm, &flag);
	if (rc != MPI_SUCCESS || flag != AGREE_ALL)
		elastic__log(ctx, ELASTIC_LOG_DEBUG,
			     "commit agreement: rc %d flag %d in %.3f ms", rc, flag,
			     (elastic__now_mono() - ta) * 1e3);
	if (rc == MPI_SUCCESS && !(flag & AGREE_OWNER)) {
		ctx->in_step = 0;
		return _fail(
			err, ESTALE,
			"elastic_step_commit: a newer launch of job %s resumed from this job's snapshots: this launch must stop",
			ctx->env.job_id);
	}
	if (rc == MPI_SUCCESS && !(flag & AGREE_STATE_OK)) {
		/* misuse, on every rank alike: a redo would apply it twice */
		ctx->in_step = 0;
		if (changed >= 0)
			return _fail(
				err, EPROTO,
				"elastic_step_commit: registered state '%s' changed inside step %llu: with ELASTIC_UPDATE_AFTER_COMMIT apply the update only after elastic_step_commit returned ELASTIC_COMMITTED (or use ELASTIC_COPY_AT_COMMIT)",
				ctx->regions[changed].name,
				(unsigned long long)ctx->committed);
		return _fail(
			err, EPROTO,
			"elastic_step_commit: another rank's registered state changed inside step %llu (ELASTIC_UPDATE_AFTER_COMMIT: update only after the commit)",
			(unsigned long long)ctx->committed);
	}
	if (rc == MPI_SUCCESS && (flag & AGREE_STEP_OK) && (flag & AGREE_COMM_OK)) {
		/* the watchdog's snapshot sees the step before or after, whole */
		pthread_mutex_lock(&ctx->wd.state);
		ctx->committed++;
		if (ctx->mode == ELASTIC_COPY_AT_COMMIT) {
			elastic__snap_host_save(ctx, ctx->committed);
			elastic__persist(ctx, 1);
		} else {
			atomic_store(&ctx->applying, 1); /* the caller's turn */
		}
		ctx->in_step = 0;
		pthread_mutex_unlock(&ctx->wd.state);
		ctx->stats.commits++;
		ctx->stats.last_failure_time = 0;
		elastic__progress_commit(ctx);
		if (!(flag & AGREE_NO_STOP))
			_planned_change(ctx);
		return ELASTIC_COMMITTED;
	}
	ctx->in_step = 0;
	ctx->stats.redos++;
	if (rc == MPI_SUCCESS && (flag & AGREE_COMM_OK)) {
		/* Failed for a reason of the caller's: the world is whole. */
		if (ctx->mode == ELASTIC_COPY_AT_COMMIT)
			elastic__snap_host_restore(ctx, ctx->committed);
		elastic__log(ctx, ELASTIC_LOG_INFO, "step %llu failed on some rank: redo",
			     (unsigned long long)ctx->committed);
		return ELASTIC_REDO;
	}
	if (rc != MPI_SUCCESS && !elastic__ft_is_fault(rc))
		elastic__log(ctx, ELASTIC_LOG_WARN, "commit agreement: MPI error %d", rc);
	if (_recover(ctx, err) < 0)
		return -1;
	if (ctx->cb.change_fn)
		ctx->cb.change_fn(ctx, ctx->cb.change_arg);
	return ELASTIC_REDO;
}

int elastic_complete(elastic_ctx_t *ctx, elastic_error_t *err)
{
	int rc;

	if (!ctx)
		return _fail(err, EINVAL, "elastic_complete: ctx is NULL");
	if (ctx->in_step)
		return _fail(err, EPROTO, "elastic_complete: step %llu is still open",
			     (unsigned long long)ctx->committed);
	atomic_store(&ctx->applying, 0); /* the last update is applied */
	rc = MPI_Barrier(ctx->comm);
	/* A rank lost here cannot undo the training: this rank's last step
	 * committed by agreement, so every rank's did, and every rank's step
	 * loop ended with it (the loop is the same everywhere). The lost rank
	 * failed after the training (a save that raised): complete. */
	if (rc != MPI_SUCCESS && elastic__ft_is_fault(rc))
		elastic__log(
			ctx, ELASTIC_LOG_WARN,
			"elastic_complete: a rank failed after the last committed step %llu: the training is complete",
			(unsigned long long)ctx->committed);
	else if (rc != MPI_SUCCESS)
		return _fail(err, EIO, "elastic_complete: barrier failed (MPI error %d)",
			     rc);
	elastic__persist_wait(ctx);
	if (ctx->shm_prefix[0] && ctx->node_rank == 0) {
		/* only while this launch owns them: a newer launch of the job
		 * that resumed from them goes on from its own */
		if (!ctx->fenced &&
		    elastic__snap_owner_is(ctx->shm_prefix, ctx->launch_id))
			elastic__snap_file_remove(ctx->shm_prefix, 0);
		else
			elastic__log(
				ctx, ELASTIC_LOG_WARN,
				"completed, but a newer launch of job %s owns the snapshots of this node: leaving them to it",
				ctx->env.job_id);
	}
	ctx->completed = 1;
	return 0;
}
