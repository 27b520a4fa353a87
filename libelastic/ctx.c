/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/ctx.c: the context: elastic_init/destroy/finalize, the program's callbacks
 * and settings, state registration, accessors. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"

int elastic_set_commit_mode(elastic_ctx_t *ctx, int mode, elastic_error_t *err)
{
	if (!ctx)
		return _fail(err, EINVAL, "elastic_set_commit_mode: ctx is NULL");
	if (mode != ELASTIC_COPY_AT_COMMIT && mode != ELASTIC_UPDATE_AFTER_COMMIT)
		return _fail(err, EINVAL, "elastic_set_commit_mode: unknown mode %d",
			     mode);
	if (ctx->started)
		return _fail(
			err, EBUSY,
			"elastic_set_commit_mode: the first step has begun; set the mode before elastic_step_begin");
	ctx->mode = mode;
	return 0;
}

/* ---- context ---- */

/* An id for this launch of the job (names its snapshot files), drawn by
 * rank 0. */
static uint64_t _launch_id(void)
{
	uint64_t id = 0;
	FILE *f = fopen("/dev/urandom", "rb");

	if (!f || fread(&id, sizeof(id), 1, f) != 1)
		id = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^
		     (uint64_t)(elastic__now_real() * 1e6);
	if (f)
		fclose(f);
	return id ? id : 1;
}

/* The context's world: a joiner's, or a copy of comm; this rank's place in
 * it and on its host, and the launch's id. 0, or -1 (err). */
static int _world(elastic_ctx_t *ctx, MPI_Comm comm, elastic_error_t *err)
{
	uint64_t lo, hi;
	int rc;

	/* a rank started by a growth in place joins the ranks that started it
	 * (resize.c); any other works on a copy of comm */
	if ((rc = elastic__join_parent(ctx, &ctx->comm)) != MPI_SUCCESS)
		return elastic__errorf(
			err,
			"elastic_init: joining the running ranks failed (MPI error %d)",
			rc);
	if (ctx->comm == MPI_COMM_NULL &&
	    (rc = MPI_Comm_dup(comm, &ctx->comm)) != MPI_SUCCESS)
		return elastic__errorf(
			err, "elastic_init: MPI_Comm_dup failed (MPI error %d)", rc);
	MPI_Comm_set_errhandler(ctx->comm, MPI_ERRORS_RETURN);
	ctx->host_id = elastic__host_id();
	MPI_Comm_rank(ctx->comm, &ctx->rank);
	MPI_Comm_size(ctx->comm, &ctx->size);
	if ((rc = elastic__survey(ctx, ctx->comm, &lo, &hi, &ctx->node_rank)) !=
	    MPI_SUCCESS)
		return elastic__errorf(
			err, "elastic_init: MPI_Allgather failed (MPI error %d)", rc);
	ctx->stats.initial_size = ctx->size;
	if (ctx->rank == 0)
		ctx->launch_id = _launch_id();
	if ((rc = MPI_Bcast(&ctx->launch_id, 1, MPI_UINT64_T, 0, ctx->comm)) !=
	    MPI_SUCCESS)
		return elastic__errorf(
			err, "elastic_init: MPI_Bcast failed (MPI error %d)", rc);
	return 0;
}

int elastic_init(MPI_Comm comm, elastic_ctx_t **out, elastic_error_t *err)
{
	elastic_ctx_t *ctx;
	int inited = 0;

	if (!out)
		return _fail(err, EINVAL, "elastic_init: ctx pointer is NULL");
	if (MPI_Initialized(&inited) != MPI_SUCCESS || !inited)
		return _fail(
			err, EPROTO,
			"elastic_init: MPI is not initialized (call MPI_Init first)");
	if (comm == MPI_COMM_NULL)
		return _fail(err, EINVAL, "elastic_init: comm is MPI_COMM_NULL");
	if (!(ctx = calloc(1, sizeof(*ctx))))
		return _fail(err, ENOMEM, "elastic_init: out of memory");
	if (elastic_env_parse(&ctx->env, NULL, err) < 0 ||
	    elastic__config_read(&ctx->cfg, &ctx->env, err) < 0) {
		free(ctx);
		return -1;
	}
	ctx->comm = MPI_COMM_NULL;
	ctx->progress.fd = -1;
	ctx->host.step[0] = ctx->host.step[1] = UINT64_MAX;
	elastic__watchdog_start(ctx);
	if (_world(ctx, comm, err) < 0)
		goto fail;
	if (ctx->env.job_id[0])
		elastic_snap_prefix(ctx->shm_prefix, sizeof(ctx->shm_prefix),
				    ctx->env.shm_dir, ctx->env.job_id,
				    ctx->env.job_stamp);
	if (ctx->env.checkpoint_dir[0] && ctx->rank == 0 &&
	    mkdir(ctx->env.checkpoint_dir, 0700) < 0 && errno != EEXIST)
		elastic__log(ctx, ELASTIC_LOG_WARN, "cannot create %s: %s",
			     ctx->env.checkpoint_dir, strerror(errno));
	elastic__stop_signal_install(ctx);
	elastic__term_signal_install(ctx);
	elastic__bind_near_gpu(ctx);
	elastic__watchdog_run(ctx);
	elastic__peer_watch_start(ctx);
	elastic__log(ctx, ELASTIC_LOG_DEBUG,
		     "init: rank %d of %d, job '%s', watchdog %.1f s, node snapshot %s",
		     ctx->rank, ctx->size, ctx->env.job_id, ctx->wd.timeout_s,
		     ctx->shm_prefix[0] ? ctx->shm_prefix : "off (no ELASTIC_JOB_ID)");
	*out = ctx;
	return 0;
fail:
	if (ctx->comm != MPI_COMM_NULL)
		MPI_Comm_free(&ctx->comm);
	elastic__watchdog_stop(ctx);
	elastic__config_free(&ctx->cfg);
	free(ctx);
	errno = EIO;
	return -1;
}

void elastic_destroy(elastic_ctx_t *ctx)
{
	if (!ctx)
		return;
	elastic__peer_watch_stop(ctx);
	elastic__watchdog_stop(ctx);
	elastic__persist_final(ctx);   /* waits for a background snapshot first */
	elastic__term_signal_remove(); /* a SIGTERM held back ends us now */
	elastic__snap_async_stop(ctx);
	elastic__nccl_free(ctx);
	elastic__progress_close(ctx);
	if (ctx->comm != MPI_COMM_NULL)
		MPI_Comm_free(&ctx->comm);
	elastic__snap_host_free(ctx);
	elastic__snap_shm_unmap(ctx);
	free(ctx->fp);
	free(ctx->join);
	free(ctx->regions);
	elastic__config_free(&ctx->cfg);
	free(ctx);
}

void elastic_set_log(elastic_ctx_t *ctx, elastic_log_fn fn, void *arg, int level)
{
	if (!ctx)
		return;
	ctx->cb.log_fn = fn;
	ctx->cb.log_arg = arg;
	ctx->cb.log_level = level;
}

void elastic_set_change_callback(elastic_ctx_t *ctx, elastic_change_fn fn, void *arg)
{
	if (!ctx)
		return;
	ctx->cb.change_fn = fn;
	ctx->cb.change_arg = arg;
}

void elastic_set_exit_hook(elastic_ctx_t *ctx, elastic_exit_fn fn, void *arg)
{
	if (!ctx)
		return;
	ctx->cb.exit_fn = fn;
	ctx->cb.exit_arg = arg;
}

MPI_Comm elastic_comm(const elastic_ctx_t *ctx)
{
	return ctx ? ctx->comm : MPI_COMM_NULL;
}

int elastic_rank(const elastic_ctx_t *ctx)
{
	return ctx ? ctx->rank : -1;
}

int elastic_size(const elastic_ctx_t *ctx)
{
	return ctx ? ctx->size : -1;
}

uint64_t elastic_step(const elastic_ctx_t *ctx)
{
	return ctx ? ctx->committed : 0;
}

int elastic_resumed(const elastic_ctx_t *ctx)
{
	return ctx ? ctx->resumed : 0;
}

void elastic_get_stats(const elastic_ctx_t *ctx, struct elastic_stats *st)
{
	if (ctx && st)
		*st = ctx->stats;
}

const struct elastic_env *elastic_get_env(const elastic_ctx_t *ctx)
{
	return ctx ? &ctx->env : NULL;
}

int elastic_finalize(elastic_ctx_t *ctx, int status)
{
	struct elastic_env env;
	int rc;

	if (ctx)
		env = ctx->env;
	else if (elastic_env_parse(&env, NULL, NULL) < 0)
		env.finalize_timeout_s = 10;
	/* the caller's own failure is a failure, completed or not; a process
	 * that ends before the training completed, with no error of its own,
	 * asks for a re-form */
	elastic__finalize_guard(
		env.finalize_timeout_s,
		(ctx && ctx->completed) || status != 0 ? status : ELASTIC_EXIT_REFORM,
		ctx ? ctx->cb.exit_fn : NULL, ctx ? ctx->cb.exit_arg : NULL);
	elastic_destroy(ctx);
	rc = MPI_Finalize();
	elastic__finalize_returned();
	return rc;
}
