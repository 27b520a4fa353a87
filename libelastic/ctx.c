/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/ctx.c: the context: environment, logging, state registration, accessors and
 * the recovery watchdog thread. */
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

static const char *_level_name[] = {"error", "warning", "info", "debug"};

void elastic__log(elastic_ctx_t *ctx, int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int to_cb = ctx->log_fn && level <= ctx->log_level;
	int to_err = ctx->env.debug > 0 && level <= ctx->env.debug;

	if (!to_cb && !to_err)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (to_cb)
		ctx->log_fn(ctx->log_arg, level, msg);
	if (to_err)
		fprintf(stderr, "libelastic[%d] %s: %s\n", ctx->rank,
			_level_name[level < 0	? 0
				    : level > 3 ? 3
						: level],
			msg);
}

double elastic__now_mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double elastic__now_real(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

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

/* ---- watchdog ---- */

static void *_watchdog(void *arg)
{
	elastic_ctx_t *ctx = arg;

	pthread_mutex_lock(&ctx->wd_lock);
	while (!ctx->wd_stop) {
		int64_t d = atomic_load(&ctx->wd_deadline_ns);
		double wait = 0.1; /* a step deadline is armed without a wake-up */
		if (d > 0) {
			double left = d * 1e-9 - elastic__now_mono();
			if (left <= 0) {
				char msg[200];
				int kind = atomic_load(&ctx->wd_kind);
				int n = snprintf(
					msg, sizeof(msg),
					"libelastic[%d]: %s did not finish in %g s: exiting %d so that the job is re-formed\n",
					ctx->rank, kind == 2 ? "a step" : "recovery",
					kind == 2 ? ctx->env.step_timeout_s
						  : ctx->wd_timeout_s,
					ELASTIC_EXIT_REFORM);
				/* The library ends the process here (documented in
				 * elastic.h): ULFM recovery, or a step whose failure
				 * went unnoticed, can hang. */
				if (write(STDERR_FILENO, msg, (size_t)n) < 0) {
				}
				pthread_mutex_unlock(&ctx->wd_lock);
				elastic__exit_hook(
					ctx->exit_fn, ctx->exit_arg, ELASTIC_EXIT_REFORM,
					kind == 2 ? "step timeout" : "recovery watchdog");
				_exit(ELASTIC_EXIT_REFORM);
			}
			if (left < wait)
				wait = left;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		double until = ts.tv_sec + ts.tv_nsec * 1e-9 + wait;
		ts.tv_sec = (time_t)until;
		ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
		pthread_cond_timedwait(&ctx->wd_cond, &ctx->wd_lock, &ts);
	}
	pthread_mutex_unlock(&ctx->wd_lock);
	return NULL;
}

void elastic__watchdog_arm(elastic_ctx_t *ctx, int kind)
{
	double t = kind == 1   ? ctx->wd_timeout_s
		   : kind == 2 ? ctx->env.step_timeout_s
			       : 0;

	if (!ctx->wd_running)
		return;
	atomic_store(&ctx->wd_kind, kind);
	atomic_store(&ctx->wd_deadline_ns,
		     kind && t > 0 ? (int64_t)((elastic__now_mono() + t) * 1e9) : 0);
	if (kind == 1) {
		/* recovery (rare): wake the thread for an exact deadline */
		pthread_mutex_lock(&ctx->wd_lock);
		pthread_cond_signal(&ctx->wd_cond);
		pthread_mutex_unlock(&ctx->wd_lock);
	}
}

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

int elastic_set_watchdog(elastic_ctx_t *ctx, double seconds, elastic_error_t *err)
{
	if (!ctx)
		return _fail(err, EINVAL, "elastic_set_watchdog: ctx is NULL");
	if (!isfinite(seconds) || seconds < 0 || seconds > 86400)
		return _fail(err, EINVAL,
			     "elastic_set_watchdog: %g s is outside 0..86400", seconds);
	pthread_mutex_lock(&ctx->wd_lock);
	ctx->wd_timeout_s = seconds;
	pthread_mutex_unlock(&ctx->wd_lock);
	return 0;
}

/* ---- context ---- */

/* FNV-1a of the host name: ranks with the same value share a node (and its
 * /dev/shm). */
static uint64_t _host_id(void)
{
	char name[256] = "";
	uint64_t h = 1469598103934665603ull;

	gethostname(name, sizeof(name) - 1);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

int elastic__survey(elastic_ctx_t *ctx, MPI_Comm comm, uint64_t *lo, uint64_t *hi,
		    int *node_rank)
{
	int size, rank, rc, nr = 0;
	uint64_t mine[2] = {ctx->host_id, ctx->committed}, *all, l = UINT64_MAX, u = 0;

	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	if (!(all = malloc(2 * sizeof(uint64_t) * (size_t)size)))
		return MPI_ERR_NO_MEM;
	rc = MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, comm);
	if (rc == MPI_SUCCESS) {
		for (int i = 0; i < size; i++) {
			if (i < rank && all[2 * i] == mine[0])
				nr++;
			l = all[2 * i + 1] < l ? all[2 * i + 1] : l;
			u = all[2 * i + 1] > u ? all[2 * i + 1] : u;
		}
		*lo = l;
		*hi = u;
		*node_rank = nr;
	}
	free(all);
	return rc;
}

int elastic_init(MPI_Comm comm, elastic_ctx_t **out, elastic_error_t *err)
{
	elastic_ctx_t *ctx;
	int inited = 0, rc;

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
	if (elastic_env_parse(&ctx->env, NULL, err) < 0) {
		free(ctx);
		return -1;
	}
	ctx->comm = MPI_COMM_NULL;
	ctx->progress.fd = -1;
	ctx->host.step[0] = ctx->host.step[1] = UINT64_MAX;
	ctx->wd_timeout_s = ctx->env.watchdog_s;
	pthread_mutex_init(&ctx->wd_lock, NULL);
	pthread_cond_init(&ctx->wd_cond, NULL);
	if ((rc = MPI_Comm_dup(comm, &ctx->comm)) != MPI_SUCCESS) {
		elastic__errorf(err, "elastic_init: MPI_Comm_dup failed (MPI error %d)",
				rc);
		goto fail;
	}
	MPI_Comm_set_errhandler(ctx->comm, MPI_ERRORS_RETURN);
	ctx->host_id = _host_id();
	MPI_Comm_rank(ctx->comm, &ctx->rank);
	MPI_Comm_size(ctx->comm, &ctx->size);
	{
		uint64_t lo, hi;
		if ((rc = elastic__survey(ctx, ctx->comm, &lo, &hi, &ctx->node_rank)) !=
		    MPI_SUCCESS) {
			elastic__errorf(
				err, "elastic_init: MPI_Allgather failed (MPI error %d)",
				rc);
			goto fail;
		}
	}
	ctx->stats.initial_size = ctx->size;
	/* an id for this launch of the job: names its snapshot files */
	if (ctx->rank == 0) {
		FILE *f = fopen("/dev/urandom", "rb");
		if (!f || fread(&ctx->launch_id, sizeof(ctx->launch_id), 1, f) != 1)
			ctx->launch_id = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull ^
					 (uint64_t)(elastic__now_real() * 1e6);
		if (f)
			fclose(f);
		if (!ctx->launch_id)
			ctx->launch_id = 1;
	}
	if ((rc = MPI_Bcast(&ctx->launch_id, 1, MPI_UINT64_T, 0, ctx->comm)) !=
	    MPI_SUCCESS) {
		elastic__errorf(err, "elastic_init: MPI_Bcast failed (MPI error %d)", rc);
		goto fail;
	}
	if (ctx->env.job_id[0])
		elastic_snap_prefix(ctx->shm_prefix, sizeof(ctx->shm_prefix),
				    ctx->env.shm_dir, ctx->env.job_id,
				    ctx->env.job_stamp);
	if (ctx->env.checkpoint_dir[0] && ctx->rank == 0 &&
	    mkdir(ctx->env.checkpoint_dir, 0700) < 0 && errno != EEXIST)
		elastic__log(ctx, ELASTIC_LOG_WARN, "cannot create %s: %s",
			     ctx->env.checkpoint_dir, strerror(errno));
	elastic__stop_signal_install(ctx);
	elastic__bind_near_gpu(ctx);
	if (pthread_create(&ctx->wd_thread, NULL, _watchdog, ctx) == 0)
		ctx->wd_running = 1;
	else
		elastic__log(ctx, ELASTIC_LOG_WARN,
			     "no watchdog thread: recovery is not timed");
	elastic__log(ctx, ELASTIC_LOG_DEBUG,
		     "init: rank %d of %d, job '%s', watchdog %.1f s, node snapshot %s",
		     ctx->rank, ctx->size, ctx->env.job_id, ctx->wd_timeout_s,
		     ctx->shm_prefix[0] ? ctx->shm_prefix : "off (no ELASTIC_JOB_ID)");
	*out = ctx;
	return 0;
fail:
	if (ctx->comm != MPI_COMM_NULL)
		MPI_Comm_free(&ctx->comm);
	pthread_mutex_destroy(&ctx->wd_lock);
	pthread_cond_destroy(&ctx->wd_cond);
	free(ctx);
	errno = EIO;
	return -1;
}

void elastic_destroy(elastic_ctx_t *ctx)
{
	if (!ctx)
		return;
	if (ctx->wd_running) {
		pthread_mutex_lock(&ctx->wd_lock);
		ctx->wd_stop = 1;
		pthread_cond_signal(&ctx->wd_cond);
		pthread_mutex_unlock(&ctx->wd_lock);
		pthread_join(ctx->wd_thread, NULL);
	}
	elastic__persist_final(ctx); /* waits for a background snapshot first */
	elastic__snap_async_stop(ctx);
	elastic__nccl_free(ctx);
	elastic__progress_close(ctx);
	if (ctx->comm != MPI_COMM_NULL)
		MPI_Comm_free(&ctx->comm);
	elastic__snap_host_free(ctx);
	elastic__snap_shm_unmap(ctx);
	free(ctx->fp);
	free(ctx->regions);
	pthread_mutex_destroy(&ctx->wd_lock);
	pthread_cond_destroy(&ctx->wd_cond);
	free(ctx);
}

void elastic_set_log(elastic_ctx_t *ctx, elastic_log_fn fn, void *arg, int level)
{
	if (!ctx)
		return;
	ctx->log_fn = fn;
	ctx->log_arg = arg;
	ctx->log_level = level;
}

void elastic_set_change_callback(elastic_ctx_t *ctx, elastic_change_fn fn, void *arg)
{
	if (!ctx)
		return;
	ctx->change_fn = fn;
	ctx->change_arg = arg;
}

void elastic_set_exit_hook(elastic_ctx_t *ctx, elastic_exit_fn fn, void *arg)
{
	if (!ctx)
		return;
	ctx->exit_fn = fn;
	ctx->exit_arg = arg;
}

int elastic_register(elastic_ctx_t *ctx, const char *name, void *ptr, size_t bytes,
		     elastic_error_t *err)
{
	struct elastic__region *r;
	size_t nl;

	if (!ctx)
		return _fail(err, EINVAL, "elastic_register: ctx is NULL");
	if (!name || !(nl = strlen(name)) || nl >= ELASTIC__NAME_MAX)
		return _fail(err, EINVAL,
			     "elastic_register: name must be 1..%d characters",
			     ELASTIC__NAME_MAX - 1);
	if (!ptr)
		return _fail(err, EINVAL, "elastic_register('%s'): buffer is NULL", name);
	if (bytes == 0)
		return _fail(err, EINVAL, "elastic_register('%s'): size is 0", name);
	if (ctx->started)
		return _fail(
			err, EBUSY,
			"elastic_register('%s'): the first step has begun; register all state before elastic_step_begin",
			name);
	for (int i = 0; i < ctx->nregions; i++)
		if (!strcmp(ctx->regions[i].name, name))
			return _fail(err, EEXIST,
				     "elastic_register('%s'): name already registered",
				     name);
	if (bytes > SIZE_MAX / 4 - ctx->state_bytes)
		return _fail(err, EOVERFLOW,
			     "elastic_register('%s'): %zu bytes is too large", name,
			     bytes);
	if (!(r = realloc(ctx->regions, (ctx->nregions + 1) * sizeof(*r))))
		return _fail(err, ENOMEM, "elastic_register('%s'): out of memory", name);
	ctx->regions = r;
	r = &ctx->regions[ctx->nregions++];
	memset(r, 0, sizeof(*r));
	memcpy(r->name, name, nl + 1);
	r->ptr = ptr;
	r->bytes = bytes;
	r->offset = ctx->state_bytes;
	ctx->state_bytes += (bytes + 63) & ~(size_t)63;
	return 0;
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
	n = snprintf(msg, sizeof(msg),
		     "libelastic: MPI_Finalize did not return in %.1f s: exiting %d\n",
		     g.seconds, g.status);
	if (write(STDERR_FILENO, msg, (size_t)n) < 0) {
	}
	elastic__exit_hook(g.fn, g.arg, g.status, "finalize guard");
	_exit(g.status);
	return NULL;
}

int elastic_finalize(elastic_ctx_t *ctx, int status)
{
	struct _guard *g = malloc(sizeof(*g));
	struct elastic_env env;
	pthread_t t;
	pthread_attr_t a;

	if (ctx)
		env = ctx->env;
	else if (elastic_env_parse(&env, NULL, NULL) < 0)
		env.finalize_timeout_s = 10;
	if (g && env.finalize_timeout_s > 0) {
		g->seconds = env.finalize_timeout_s;
		g->status = ctx && ctx->completed ? status : ELASTIC_EXIT_REFORM;
		g->fn = ctx ? ctx->exit_fn : NULL;
		g->arg = ctx ? ctx->exit_arg : NULL;
		pthread_attr_init(&a);
		pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &a, _finalize_guard, g) != 0)
			free(g);
		pthread_attr_destroy(&a);
	} else {
		free(g);
	}
	elastic_destroy(ctx);
	int rc = MPI_Finalize();
	atomic_store(&_finalize_returned, 1);
	return rc;
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
	const char *v = getenv("ELASTIC_STOP_SIGNAL");

	if (v && strcmp(v, "none") == 0) {
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
