/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/watchdog.c: the recovery and step watchdog: a thread that ends the process with
 * ELASTIC_EXIT_REFORM when a recovery or a step overruns (ELASTIC_WATCHDOG,
 * ELASTIC_STEP_TIMEOUT). */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "rankend.h"

/* The library ends the process here (elastic(3), EXIT HOOK): ULFM
 * recovery, or a step whose failure went unnoticed, can hang; a peer that
 * asked for a re-form leaves a job that must re-form. The last commit is
 * kept on the node first. */
static _Noreturn void _escalate(elastic_ctx_t *ctx, const char *msg, int n,
				const char *why)
{
	elastic__ending();
	if (write(STDERR_FILENO, msg, (size_t)n) < 0) {
	}
	elastic__persist_on_exit(ctx);
	elastic__exit_hook(ctx->cb.exit_fn, ctx->cb.exit_arg, ELASTIC_EXIT_REFORM, why);
	/* Told from here: the runtime ends a launch's other processes within
	 * half a second of the first exit, and a rank wrapper a loaded host
	 * runs late would die before its own report, making this rank look
	 * lost (its node held out of the relaunch). No log line on failure:
	 * the wrapper still tells it when it can. */
	(void)elastic__report_end(ELASTIC_RANK_EXITED, ELASTIC_EXIT_REFORM);
	_exit(ELASTIC_EXIT_REFORM);
}

static void *_watchdog(void *arg)
{
	elastic_ctx_t *ctx = arg;
	double t_term = 0;

	pthread_mutex_lock(&ctx->wd.lock);
	while (!ctx->wd.stop) {
		int64_t d = atomic_load(&ctx->wd.deadline_ns);
		double wait = 0.1; /* a step deadline is armed without a wake-up */
		if (elastic__term_requested()) {
			/* SIGTERM and the main thread reached no step begin: held
			 * inside a step (a collective with lost peers), where the
			 * state is the last commit's, it is persisted from here;
			 * outside one (the caller applying an update) the process
			 * ends without; before the first step or after
			 * elastic_complete nothing is owed: at once */
			double now = elastic__now_mono();
			if (!t_term)
				t_term = now;
			int in_step = __atomic_load_n(&ctx->in_step, __ATOMIC_ACQUIRE);
			int idle = !__atomic_load_n(&ctx->started, __ATOMIC_ACQUIRE) ||
				   __atomic_load_n(&ctx->completed, __ATOMIC_ACQUIRE);
			if (idle || (in_step && now - t_term > 0.3) ||
			    now - t_term > 2.0) {
				pthread_mutex_unlock(&ctx->wd.lock);
				elastic__term_act(ctx, idle ? -2 : in_step ? 0 : -1);
				pthread_mutex_lock(&ctx->wd.lock);
				t_term = 0; /* the program's handler let it live */
			}
		}
		int peer = atomic_load(&ctx->wd.peer_reform) - 2;
		if (peer >= -1 && !atomic_load(&ctx->wd.leaving)) {
			char msg[200], who[32] = "a rank";
			if (peer >= 0)
				snprintf(who, sizeof(who), "rank %d", peer);
			int n = snprintf(
				msg, sizeof(msg),
				"libelastic[%d]: %s ended asking for a re-form: exiting %d too\n",
				ctx->rank, who, ELASTIC_EXIT_REFORM);
			pthread_mutex_unlock(&ctx->wd.lock);
			_escalate(ctx, msg, n, "a peer's re-form");
		}
		if (d > 0) {
			double left = d * 1e-9 - elastic__now_mono();
			if (left <= 0) {
				char msg[200];
				int step =
					atomic_load(&ctx->wd.kind) == ELASTIC__WATCH_STEP;
				int n = snprintf(
					msg, sizeof(msg),
					"libelastic[%d]: %s did not finish in %g s: exiting %d so that the job is re-formed\n",
					ctx->rank, step ? "a step" : "recovery",
					step ? ctx->env.step_timeout_s
					     : ctx->wd.timeout_s,
					ELASTIC_EXIT_REFORM);
				pthread_mutex_unlock(&ctx->wd.lock);
				_escalate(ctx, msg, n,
					  step ? "step timeout" : "recovery watchdog");
			}
			if (left < wait)
				wait = left;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		double until = ts.tv_sec + ts.tv_nsec * 1e-9 + wait;
		ts.tv_sec = (time_t)until;
		ts.tv_nsec = (long)((until - (double)ts.tv_sec) * 1e9);
		pthread_cond_timedwait(&ctx->wd.cond, &ctx->wd.lock, &ts);
	}
	pthread_mutex_unlock(&ctx->wd.lock);
	return NULL;
}

void elastic__watchdog_arm(elastic_ctx_t *ctx, enum elastic__watch kind)
{
	double t = kind == ELASTIC__WATCH_RECOVERY ? ctx->wd.timeout_s
		   : kind == ELASTIC__WATCH_STEP   ? ctx->env.step_timeout_s
						   : 0;

	if (!ctx->wd.running)
		return;
	atomic_store(&ctx->wd.kind, kind);
	atomic_store(&ctx->wd.deadline_ns,
		     kind != ELASTIC__WATCH_OFF && t > 0
			     ? (int64_t)((elastic__now_mono() + t) * 1e9)
			     : 0);
	if (kind == ELASTIC__WATCH_RECOVERY) {
		/* recovery (rare): wake the thread for an exact deadline */
		pthread_mutex_lock(&ctx->wd.lock);
		pthread_cond_signal(&ctx->wd.cond);
		pthread_mutex_unlock(&ctx->wd.lock);
	}
}

int elastic__watchdog_peer_reform(elastic_ctx_t *ctx, int rank)
{
	if (!ctx->wd.running)
		return -1;
	if (atomic_load(&ctx->wd.leaving))
		return 0; /* on its way out already: nothing to add */
	pthread_mutex_lock(&ctx->wd.lock);
	atomic_store(&ctx->wd.peer_reform, (rank < 0 ? -1 : rank) + 2);
	pthread_cond_signal(&ctx->wd.cond);
	pthread_mutex_unlock(&ctx->wd.lock);
	return 0;
}

int elastic_set_watchdog(elastic_ctx_t *ctx, double seconds, elastic_error_t *err)
{
	if (!ctx)
		return _fail(err, EINVAL, "elastic_set_watchdog: ctx is NULL");
	if (!isfinite(seconds) || seconds < 0 || seconds > 86400)
		return _fail(err, EINVAL,
			     "elastic_set_watchdog: %g s is outside 0..86400", seconds);
	pthread_mutex_lock(&ctx->wd.lock);
	ctx->wd.timeout_s = seconds;
	pthread_mutex_unlock(&ctx->wd.lock);
	return 0;
}

int elastic__watchdog_start(elastic_ctx_t *ctx)
{
	ctx->wd.timeout_s = ctx->env.watchdog_s;
	pthread_mutex_init(&ctx->wd.lock, NULL);
	pthread_mutex_init(&ctx->wd.state, NULL);
	/* its waits end at CLOCK_MONOTONIC times: a condition on the default
	 * clock (CLOCK_REALTIME) took them for times long past and the thread
	 * spun, taking a share of a core from every rank */
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&ctx->wd.cond, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

void elastic__watchdog_run(elastic_ctx_t *ctx)
{
	if (pthread_create(&ctx->wd.thread, NULL, _watchdog, ctx) == 0) {
		ctx->wd.running = 1;
		/* as top -H and /proc/PID/task/TID/comm show it */
		(void)pthread_setname_np(ctx->wd.thread, "elastic-watch");
	} else {
		elastic__log(ctx, ELASTIC_LOG_WARN,
			     "no watchdog thread: recovery is not timed");
	}
}

void elastic__watchdog_stop(elastic_ctx_t *ctx)
{
	if (ctx->wd.running) {
		pthread_mutex_lock(&ctx->wd.lock);
		ctx->wd.stop = 1;
		pthread_cond_signal(&ctx->wd.cond);
		pthread_mutex_unlock(&ctx->wd.lock);
		pthread_join(ctx->wd.thread, NULL);
		ctx->wd.running = 0;
	}
	pthread_mutex_destroy(&ctx->wd.lock);
	pthread_mutex_destroy(&ctx->wd.state);
	pthread_cond_destroy(&ctx->wd.cond);
}
