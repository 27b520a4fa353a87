/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/scaling.h: a job's measured scaling, the throughput it
 * reaches at each GPU count, as a small fitted model the throughput policy
 * reads (pure: no Slurm, no clock, no globals). */
#ifndef ELASTIC_SCALING_H
#define ELASTIC_SCALING_H

/*
 * Design note: the scaling model
 * ==============================
 * A training job's global batch is constant whatever its size, so one step's
 * time at n GPUs is modelled by what a step is made of:
 *
 *     t(n) = alpha / n + beta + gamma * log2(n) + delta * n
 *
 * alpha: the work split among the ranks (forward, backward); beta: the serial
 * part (optimizer step, input pipeline, agreement); gamma: a collective whose
 * latency grows with a tree's depth; delta: a per-rank cost (a ring's steps,
 * per-rank I/O). All four are >= 0, so the model can scale linearly (alpha
 * alone), saturate (alpha + beta: Amdahl) or slow down past some size (gamma,
 * delta). Its rate is 1 / t(n) in the job's own unit (samples per second).
 *
 * Observations. Each distinct size keeps a decaying average of the rates
 * measured there: an observation's weight halves every half_life seconds, so
 * a job whose speed drifts (a new epoch's data, a neighbour on its nodes) is
 * followed. At most ELASTIC_SCALING_SIZES sizes are kept; a new size
 * replaces the one seen longest ago.
 *
 * Fit. The coefficients minimise the weighted squared relative error of t at
 * the observed sizes, with every coefficient >= 0 (non-negative least squares
 * solved exactly by trying each subset of the four terms: 15 small systems).
 * A fit uses at most as many terms as there are distinct sizes. Among equal
 * fits the one with fewer terms wins, and among those alpha's: one observed
 * size is read as linear scaling, the optimistic guess that lets the policy
 * try a larger size, where the next observation corrects it.
 *
 * Confidence, per size: MEASURED (observed there), INTERPOLATED (between
 * observed sizes), EXTRAPOLATED (beyond them), UNKNOWN (nothing observed).
 */

#include <stddef.h>
#include <stdint.h>

#define ELASTIC_SCALING_SIZES 16

struct elastic_scaling_obs {
	int n;	       /* GPUs (world size), > 0 */
	double rate;   /* decaying average, > 0 */
	double weight; /* decayed number of observations at `when` */
	int64_t when;  /* seconds (epoch) of the last observation */
};

struct elastic_scaling {
	int nobs;
	struct elastic_scaling_obs obs[ELASTIC_SCALING_SIZES];
	/* the fit (elastic_scaling_fit): alpha, beta, gamma, delta; terms = 0
	 * while nothing is observed */
	double coef[4];
	int terms;
};

enum elastic_scaling_confidence {
	ELASTIC_SCALING_UNKNOWN = 0,
	ELASTIC_SCALING_EXTRAPOLATED,
	ELASTIC_SCALING_INTERPOLATED,
	ELASTIC_SCALING_MEASURED,
};

/* Record a rate measured at n GPUs at time now (seconds), then refit. A rate
 * that is not finite and > 0, or n <= 0, is ignored (returns -1, EINVAL);
 * half_life <= 0 keeps only the newest observation of each size. */
int elastic_scaling_observe(struct elastic_scaling *s, int n, double rate, int64_t now,
			    double half_life);

/* Fit the coefficients to the observations (observe does it). */
void elastic_scaling_fit(struct elastic_scaling *s);

/* The model's rate at n GPUs; 0 when nothing is observed or n <= 0. */
double elastic_scaling_rate(const struct elastic_scaling *s, int n);

/* Speedup at n against one GPU, rate(n) / rate(1); 0 when unknown. */
double elastic_scaling_speedup(const struct elastic_scaling *s, int n);

/* Smallest and largest size observed (0, 0 when none). */
void elastic_scaling_seen(const struct elastic_scaling *s, int *lo, int *hi);

enum elastic_scaling_confidence
elastic_scaling_confidence(const struct elastic_scaling *s, int n);
/* "unknown", "extrapolated", "interpolated", "measured"; NULL if bad. */
const char *elastic_scaling_confidence_name(enum elastic_scaling_confidence c);

/* The model as a table, for elastic-ctl: one row per size, every size
 * measured and each n > 0 of also[] (the GPUs a job holds, its target), as
 * "N:MEASURED:PREDICTED:EFFICIENCY:C" joined by ",", N ascending. MEASURED
 * is empty where nothing was measured; rates in samples/s to 4 significant
 * digits; EFFICIENCY is the predicted speedup per GPU; C is the confidence's
 * first letter (m, i, e). Rows that do not fit in len are left out; the
 * rows of also[] are kept first, then those of the measured sizes nearest to
 * also[0]. Returns the length written (0 when nothing is measured). */
int elastic_scaling_table(const struct elastic_scaling *s, const int *also, int nalso,
			  char *buf, size_t len);

/* The observations as one line, "n:rate:weight:when" joined by ",", for a
 * state file; parse reads it back (and refits). Format returns the snprintf
 * length; parse returns -1 (EINVAL) on a malformed line and leaves *s
 * unchanged. */
int elastic_scaling_format(const struct elastic_scaling *s, char *buf, size_t len);
int elastic_scaling_parse(struct elastic_scaling *s, const char *line);

#endif
