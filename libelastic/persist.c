/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/persist.c: when the committed state is copied out: node snapshots every
 * ELASTIC_SNAPSHOT_EVERY steps (in the background with ELASTIC_SNAPSHOT_THREAD),
 * checkpoints every ELASTIC_CHECKPOINT_EVERY, and the last step before a re-form or at
 * destroy. The copies themselves are snap.c's. */
#include "config.h"

#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

/* This launch's node snapshot is written: older launches' files on this
 * node can go (once). */
static void _snap_written(elastic_ctx_t *ctx)
{
	if (!ctx->cleaned && !ctx->fenced) {
		elastic__snap_file_remove(ctx->shm_prefix, ctx->launch_id);
		ctx->cleaned = 1;
	}
}

/* The copy of the last committed step made at the commit (copy at commit),
 * or NULL (update after commit: the state itself is that step's). */
static const unsigned char *_committed_copy(const elastic_ctx_t *ctx)
{
	int slot = (int)(ctx->committed & 1);
	return ctx->host.buf[slot] && ctx->host.step[slot] == ctx->committed
		       ? ctx->host.buf[slot]
		       : NULL;
}

/* Wait for a background node snapshot, if one was started. */
void elastic__persist_wait(elastic_ctx_t *ctx)
{
	elastic_error_t e;

	if (!ctx->sw.running)
		return;
	if (elastic__snap_async_wait(ctx, &e) < 0)
		elastic__snap_shm_lost(ctx, &e);
	else
		_snap_written(ctx);
}

/* The node snapshot (and checkpoint) of the last committed step, when due.
 * sync = 0 at a begin in update-after-commit mode: with
 * ELASTIC_SNAPSHOT_THREAD the node snapshot is copied in the background while
 * the step runs (the caller does not change its state until the commit
 * returns, which waits for it). */
void elastic__persist(elastic_ctx_t *ctx, int sync)
{
	elastic_error_t e;

	if (ctx->committed == ctx->persisted || !ctx->started)
		return;
	if (ctx->shm_prefix[0] &&
	    ctx->committed - ctx->persisted >= (uint64_t)ctx->env.snapshot_every) {
		if (ctx->node_rank == 0 && !ctx->fenced &&
		    !elastic__snap_owner_is(ctx->shm_prefix, ctx->launch_id)) {
			/* a newer launch of this job resumed from these snapshots:
			 * this one is a leftover and must stop (see commit) */
			ctx->fenced = 1;
			elastic__log(
				ctx, ELASTIC_LOG_ERROR,
				"a newer launch of job %s owns the snapshots of this node: stopping this one",
				ctx->env.job_id);
		}
		if (ctx->node_rank == 0 && !ctx->fenced && !ctx->shm_off) {
			/* copy at commit: from the copy just made (when fused, it is
			 * the snapshot's data already); else from the state itself */
			const unsigned char *src = _committed_copy(ctx);
			if (!sync && !src && ctx->env.snapshot_thread &&
			    ctx->mode == ELASTIC_UPDATE_AFTER_COMMIT &&
			    elastic__snap_async_start(ctx, ctx->committed) == 0) {
				/* joined in elastic_step_commit (_snap_wait) */
			} else if (elastic__snap_shm_publish(ctx, ctx->committed, src,
							     &e) < 0) {
				elastic__snap_shm_lost(ctx, &e);
			} else {
				_snap_written(ctx);
			}
		}
		ctx->persisted = ctx->committed;
	}
	if (ctx->env.checkpoint_dir[0] && ctx->rank == 0 &&
	    ctx->committed % (uint64_t)ctx->env.checkpoint_every == 0) {
		char prefix[512];
		elastic_snap_prefix(prefix, sizeof(prefix), ctx->env.checkpoint_dir,
				    ctx->env.job_id[0] ? ctx->env.job_id : "job", NULL);
		if (elastic__snap_file_write(ctx, prefix, ctx->committed, &e) < 0)
			elastic__log(ctx, ELASTIC_LOG_WARN, "checkpoint: %s", e.text);
		else
			elastic__snap_file_remove(prefix, ctx->launch_id);
	}
}

void elastic__persist_now(elastic_ctx_t *ctx)
{
	long every = ctx->env.snapshot_every;

	elastic__persist_wait(ctx);
	ctx->env.snapshot_every = 1;
	elastic__persist(ctx, 1);
	ctx->env.snapshot_every = every;
}

void elastic__persist_final(elastic_ctx_t *ctx)
{
	if (ctx->mode == ELASTIC_UPDATE_AFTER_COMMIT && !ctx->in_step && !ctx->completed)
		elastic__persist_now(ctx);
}

/* How long the watchdog waits for the caller to finish applying an update
 * before it gives up the snapshot (update after commit). */
#define APPLY_WAIT_S 1.0

/* The watchdog ends the process (a step or a recovery hung, a peer asked
 * for a re-form, SIGTERM inside a step): where the snapshot interval left
 * the last committed step out (ELASTIC_SNAPSHOT_EVERY > 1, the default on a
 * runtime that heals in place), it goes to the node snapshot first, so that
 * the relaunch loses at most the step in flight. Its copy: the one made at
 * the commit (copy at commit), or the state itself (update after commit:
 * unchanged inside a step, but not while the caller applies the committed
 * step's update: waited for, APPLY_WAIT_S at most, else not written: a
 * copy then would mix two steps). The main thread's commit waits for it. */
void elastic__persist_on_exit(elastic_ctx_t *ctx)
{
	elastic_error_t e;
	double end = elastic__now_mono() + APPLY_WAIT_S;

	pthread_mutex_lock(&ctx->wd.state);
	while (atomic_load(&ctx->applying) && elastic__now_mono() < end) {
		pthread_mutex_unlock(&ctx->wd.state);
		nanosleep(&(struct timespec){.tv_nsec = 1000000}, NULL);
		pthread_mutex_lock(&ctx->wd.state);
	}
	const unsigned char *src = _committed_copy(ctx);
	if (!ctx->started || ctx->committed == ctx->persisted || !ctx->shm_prefix[0] ||
	    ctx->shm_off || ctx->node_rank != 0 || ctx->fenced || ctx->sw.running ||
	    (ctx->mode == ELASTIC_COPY_AT_COMMIT && !src)) {
		pthread_mutex_unlock(&ctx->wd.state);
		return;
	}
	if (atomic_load(&ctx->applying)) {
		/* stderr only: this is the watchdog thread (a log callback may
		 * be Python's) */
		char msg[200];
		int n = snprintf(
			msg, sizeof(msg),
			"libelastic[%d]: node snapshot: step %llu not written (its update was still being applied after %.0f s)\n",
			ctx->rank, (unsigned long long)ctx->committed, APPLY_WAIT_S);
		pthread_mutex_unlock(&ctx->wd.state);
		if (write(STDERR_FILENO, msg, (size_t)n) < 0) {
		}
		return;
	}
	if (elastic__snap_shm_publish(ctx, ctx->committed, src, &e) == 0)
		ctx->persisted = ctx->committed;
	pthread_mutex_unlock(&ctx->wd.state);
}
