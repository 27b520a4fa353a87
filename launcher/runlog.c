/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/runlog.c: elastic-run's clock and its log lines on stderr. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "report.h"
#include "runlog.h"

int elastic__verbose;

double elastic__now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double elastic__wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void elastic__setenv_time(const char *name, double t)
{
	char v[32];
	snprintf(v, sizeof(v), "%.6f", t);
	setenv(name, v, 1);
}

void elastic__say(const char *fmt, ...)
{
	va_list ap;
	struct timespec now;
	struct tm tm;
	char ts[16], msg[1024];
	clock_gettime(CLOCK_REALTIME, &now);
	strftime(ts, sizeof(ts), "%H:%M:%S", localtime_r(&now.tv_sec, &tm));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* one fprintf, one write(2): the ranks' output shares this stream,
	 * and a line written in pieces could take a rank's line in between */
	fprintf(stderr, "elastic-run %s.%03ld: %s\n", ts, now.tv_nsec / 1000000, msg);
}

void elastic__say_srun(const struct elastic_srun *s, const char *text)
{
	elastic__say("srun into job %lu on %s: %s", s->job, s->host, text);
}
