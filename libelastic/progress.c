/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/progress.c: the job's progress (committed step, samples taken)
 * told to elastic-run, which reports it to elasticd (elastic-ctl status). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

/* At most one record a second, "STEP SAMPLES TIME SIZE" (TIME:
 * CLOCK_MONOTONIC, the same for every process of the host; SIZE: the world
 * size), and at once after the world size changed (ranks lost and healed in
 * place: elastic-run learns it from here): a pwrite of 71 bytes into a file
 * elastic-run named in ELASTIC_RUN_PROGRESS, by rank 0 only. Nothing is written when the
 * variable is unset (a program run without elastic-run). */
#define PROGRESS_PERIOD_S 1.0

void elastic__progress_commit(elastic_ctx_t *ctx)
{
	struct elastic__progress *p = &ctx->progress;
	char line[80];
	double now;
	int len;

	if (ctx->rank != 0 || p->off)
		return;
	if (p->fd < 0) {
		const char *path = ctx->cfg.run_progress;
		if (!path ||
		    (p->fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)) < 0) {
			p->off =
				1; /* not under elastic-run, or not writable: never again */
			return;
		}
	}
	now = elastic__now_mono();
	if (p->last > 0 && now - p->last < PROGRESS_PERIOD_S && ctx->size == p->size &&
	    now > p->eager_until)
		return;
	p->last = now;
	p->size = ctx->size;
	/* fixed width: a reader never sees the tail of a longer record */
	len = snprintf(line, sizeof(line), "%020llu %020llu %017.6f %010d\n",
		       (unsigned long long)ctx->committed,
		       (unsigned long long)(ctx->sampler
						    ? elastic__sampler_seen(ctx->sampler)
						    : 0),
		       now, ctx->size);
	if (pwrite(p->fd, line, (size_t)len, 0) != len)
		elastic__log(ctx, ELASTIC_LOG_DEBUG,
			     "progress: cannot write the progress record");
}

void elastic__progress_eager(elastic_ctx_t *ctx)
{
	ctx->progress.eager_until = elastic__now_mono() + PROGRESS_PERIOD_S;
}

void elastic__progress_close(elastic_ctx_t *ctx)
{
	if (ctx->progress.fd >= 0)
		close(ctx->progress.fd);
	ctx->progress.fd = -1;
}
