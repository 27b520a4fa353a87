/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/runlog.h: elastic-run's clock and its log lines on stderr. */
#ifndef ELASTIC_LAUNCHER_RUNLOG_H
#define ELASTIC_LAUNCHER_RUNLOG_H

/* -v given this many times: say more. */
extern int elastic__verbose;

/* Seconds on the monotonic clock. */
double elastic__now(void);

/* Seconds on the wall clock (the ranks' timings, compared across nodes). */
double elastic__wall(void);

/* Set the environment variable name to the time t, in seconds ("%.6f"). */
void elastic__setenv_time(const char *name, double t);

/* "elastic-run HH:MM:SS.mmm: MESSAGE" on stderr, in one write. */
void elastic__say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A line an srun of the launch said of its own, as it comes
 * (elastic_report's on_said). */
struct elastic_srun;
void elastic__say_srun(const struct elastic_srun *s, const char *text);

#endif
