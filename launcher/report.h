/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/report.h: how each rank's end reaches elastic-run. mpirun's own
 * exit status cannot tell: under --with-ft ulfm it is 0 even when ranks were
 * killed or aborted. The rank wrapper sends one line over TCP instead. */
#ifndef ELASTIC_LAUNCHER_REPORT_H
#define ELASTIC_LAUNCHER_REPORT_H

#include <time.h>

#include "conf.h"
#include "rankend.h"

#define ELASTIC_REPORT_MAX_RANKS 65536

/* The most of a rank's error text that reaches elastic-run (its end: the
 * last frames of a traceback and the exception itself), in bytes. */
#define ELASTIC_REPORT_ERROR_MAX 1024

struct elastic_rank_end {
	int how;			/* ELASTIC_RANK_* */
	int value;			/* exit status or signal number */
	char host[ELASTIC_REPORT_HOST]; /* where the rank ran ("" if not said) */
	int gpu;			/* its GPU's index there (-1: none or not said) */
	int told;			/* elastic-run has said so (set by the caller) */
};

/* A Slurm step a launch needs besides mpirun's own: a daemon's (started by
 * the launch agent's srun) or a rank's in another job's step (by its
 * wrapper's srun). What its srun said of its own ("srun: ..." lines on its
 * stderr) and whether the step began reach elastic-run as report lines. */
#define ELASTIC_REPORT_SRUNS	 256
#define ELASTIC_REPORT_SRUN_TEXT 240
struct elastic_srun {
	unsigned long job; /* the Slurm job of the step */
	char host[64];
	int started;			     /* its first process said so */
	char said[ELASTIC_REPORT_SRUN_TEXT]; /* srun's last line ("": none) */
};

struct elastic_report {
	int fd;		/* listening socket */
	char token[33]; /* shared secret of this run (hex) */
	unsigned gen;	/* launch number: older reports are ignored */
	char addr[300]; /* "host:port" for ELASTIC_RUN_REPORT */
	int nranks;
	struct elastic_rank_end *end; /* per rank of the current launch */
	int nconn, conn[1024];	      /* accepted, not yet read */
	/* the first error a rank of the current launch wrote of its own
	 * (ELASTIC_ERROR_FILE: a Python traceback), sent by its wrapper */
	int err_from; /* 1 + the rank that sent it (0: none) */
	char err_text[ELASTIC_REPORT_ERROR_MAX];
	/* the steps of the current launch heard of (a step's start, or its
	 * srun's words), and who is told at once of srun's words */
	int nsrun;
	struct elastic_srun srun[ELASTIC_REPORT_SRUNS];
	void (*on_said)(const struct elastic_srun *s, const char *text);
};

/* Listen on all addresses, any port; addr uses this host's name. */
int elastic__report_open(struct elastic_report *r, elastic_error_t *err);
void elastic__report_close(struct elastic_report *r);

/* Start a new launch of nranks ranks: forget earlier reports. */
int elastic__report_begin(struct elastic_report *r, int nranks);

/* The launch grew in place to nranks ranks: the reports so far stay. */
int elastic__report_grow(struct elastic_report *r, int nranks);

/* Accept and read what is pending, waiting at most timeout_ms for the first
 * event. Malformed or foreign lines are dropped. Returns the number of
 * reports taken. */
int elastic__report_poll(struct elastic_report *r, int timeout_ms);

/* Parse one report line; returns 0 and fills rank/end, or -1. */
int elastic__report_parse(const struct elastic_report *r, const char *line, int *rank,
			  struct elastic_rank_end *end);

/* 1 if a rank of the current launch reported its end and ran on GPU gpu of
 * host (its GPU holds no live rank now), else 0. */
int elastic__report_ended_on(const struct elastic_report *r, const char *host, int gpu);

/* 1 if a rank's end (how: ELASTIC_RANK_*, value) is a failure: a signal, or
 * an exit status other than 0, a re-form's (ELASTIC_EXIT_REFORM) and
 * libelastic's "left" (ELASTIC_EXIT_LEFT), else 0. */
int elastic__report_end_failed(int how, int value);

/* 1 if a rank of the current launch ran on GPU gpu of host and failed
 * there (elastic__report_end_failed), else 0. */
int elastic__report_failed_on(const struct elastic_report *r, const char *host, int gpu);

/* Ranks of the current launch that reported their end and ran on host. */
int elastic__report_from(const struct elastic_report *r, const char *host);

/* The line a rank's wrapper sends with what the program wrote of its own
 * failure (text: ELASTIC_ERROR_FILE's content, of any length; its first
 * line and as much of its end as fits ELASTIC_REPORT_ERROR_MAX are kept,
 * newlines escaped). buf of at least ELASTIC_REPORT_ERROR_LINE bytes. */
#define ELASTIC_REPORT_ERROR_LINE (2 * ELASTIC_REPORT_ERROR_MAX + 80)
void elastic__report_format_error(char *buf, size_t len, const char *token, unsigned gen,
				  int rank, const char *text);

/* Parse an error line; returns 0 and fills rank and text (decoded, at least
 * ELASTIC_REPORT_ERROR_MAX bytes), or -1. */
int elastic__report_parse_error(const struct elastic_report *r, const char *line,
				int *rank, char *text);

/* The line of a step that began ("step": text NULL) or of a line its srun
 * said of its own ("srun": text, escaped as an error's), for the step of
 * job on host; buf of at least ELASTIC_REPORT_SRUN_LINE bytes. */
#define ELASTIC_REPORT_SRUN_LINE (2 * ELASTIC_REPORT_SRUN_TEXT + 160)
void elastic__report_format_srun(char *buf, size_t len, const char *token, unsigned gen,
				 unsigned long job, const char *host, const char *text);

/* Parse such a line into the launch's book of steps (r->srun): 0, with
 * *said the entry when the line carried srun's words (else NULL), or -1. */
int elastic__report_take_srun(struct elastic_report *r, const char *line,
			      const struct elastic_srun **said);

/* The book's entry of job's step on host, or NULL. */
const struct elastic_srun *elastic__report_srun(const struct elastic_report *r,
						unsigned long job, const char *host);

/* The steps a launch on set needs besides mpirun's own (in job own on
 * self): on every other host the daemon's, in the host's job (its launch
 * agent's srun), and on every host a rank's in the job of each GPU that
 * another job than the host's holds (its wrapper's srun). Calls fn for
 * each that has not begun (s: the book's entry, NULL when its srun said
 * nothing; daemon: 1 for a daemon's step; tried: its srun was started,
 * which a rank's is only once every daemon's step began: the runtime
 * starts no rank before), and returns how many. */
struct elastic_gpuset;
int elastic__report_no_step(const struct elastic_report *r,
			    const struct elastic_gpuset *set, const char *self,
			    unsigned long own,
			    void (*fn)(unsigned long job, const char *host, int daemon,
				       int tried, const struct elastic_srun *s,
				       void *arg),
			    void *arg);

/* Summarise the launch: counts of ranks that exited 0, exited non-zero,
 * exited with want_code, were signalled, and did not report. */
struct elastic_report_summary {
	int ok, failed, reform, signaled, missing;
	int left;   /* left at a planned shrink in place (ELASTIC_EXIT_LEFT) */
	int raised; /* a failed rank wrote its own error (err_from): 1, else 0 */
};
void elastic__report_summary(const struct elastic_report *r, int reform_code,
			     struct elastic_report_summary *s);

/* Why the launch failed, for people: the first rank that died of a signal
 * of its own (not one sent from outside), else the first that exited with
 * an error status other than reform_code, as "rank R on HOST GPU G: killed
 * by signal N (NAME)" or "...: exit status N". Returns 0 and fills buf (at
 * least 160 bytes), or -1 when no rank reported such an end. */
int elastic__report_cause(const struct elastic_report *r, int reform_code, char *buf,
			  size_t len);

/* Rank rank's end, for people: "rank R on HOST GPU G: exit status N" (or
 * "killed by signal N (NAME)", or "no report of its end"); buf of at least
 * 160 bytes. */
void elastic__report_describe(const struct elastic_report *r, int rank, char *buf,
			      size_t len);

/* An exit status that says the rank was killed from outside (128 + SIGTERM,
 * SIGKILL or SIGHUP: a program's handler that exits so), not that it failed. */
int elastic__report_killed_status(int v);

/* ---- Rank 0's progress record (ELASTIC_RUN_PROGRESS), read for the
 * current launch. */

/* Rank 0's progress record: where it is, and what was last read of it and
 * forwarded to elasticd. */
struct elastic_progress {
	const char *path;      /* the file (ELASTIC_RUN_PROGRESS) */
	struct timespec since; /* the current mpirun's start: a record written
				* before is an earlier launch's */
	double t_read, t_last, rate;
	unsigned long long step_last, seen_last;
	int size_last;	      /* the world that committed step_last (0: unknown) */
	int have_last;	      /* step_last, seen_last and t_last are a record's */
	double t_record_read; /* last read for a resize in place */
};

/* Rank 0's progress record "STEP SAMPLES TIME SIZE" (libelastic rewrites it
 * in the file named by ELASTIC_RUN_PROGRESS at most once a second, at once
 * when the world size changed, and at every commit for a second after a
 * planned shrink in place), if written by the current launch:
 * 0, or -1 (none yet, or an older launch's). *size is 0 in a record of a
 * libelastic without the field. */
int elastic__progress_read(const struct elastic_progress *p, unsigned long long *step,
			   unsigned long long *seen, double *t, int *size);

/* Has rank 0 committed a step in the current launch? (Its record is
 * written at once at the launch's first commit.) 1 or 0. */
int elastic__progress_committed(const struct elastic_progress *p);

/* Can the ranks of the current launch (its mpirun started at t0; now is
 * now, both of elastic__now()) take SIGUSR1? Only once libelastic installed
 * its handler in every rank: before, the signal's default action ends them. A step
 * committed since the launch (rank 0's progress record is newer) shows it;
 * after 10 s without one the ranks get it anyway (a launch stuck in its
 * start-up). */
int elastic__ranks_ready(const struct elastic_progress *p, double t0, double now);

#endif
