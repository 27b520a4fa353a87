/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/log.c: logging (callback, ELASTIC_DEBUG) and clocks. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

#include "internal.h"

static const char *_level_name[] = {"error", "warning", "info", "debug"};

void elastic__log(elastic_ctx_t *ctx, int level, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	int to_cb = ctx->cb.log_fn && level <= ctx->cb.log_level;
	int to_err = ctx->env.debug > 0 && level <= ctx->env.debug;

	if (!to_cb && !to_err)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (to_cb)
		ctx->cb.log_fn(ctx->cb.log_arg, level, msg);
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
