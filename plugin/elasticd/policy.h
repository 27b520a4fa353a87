/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/policy.h: the elastic allocation policy, a pure function from
 * jobs + nodes to per-job GPU targets and placements (no Slurm calls). */
#ifndef ELASTIC_POLICY_H
#define ELASTIC_POLICY_H

/*
 * Design note: how the policy splits GPUs
 * =======================================
 * elastic_policy_decide() is a pure function of its input: no Slurm calls, no
 * globals, no clock (the caller passes "now"). Same input, same output, in any
 * input order of jobs.
 *
 * Capacity. Free GPUs of a node = its GPUs - GPUs held by non-elastic jobs.
 * The capacity C is the sum over nodes. GPUs held by elastic jobs count as
 * theirs to be re-split.
 *
 * Sizes. A job's allowed sizes are any count, powers of two, or an explicit
 * list. MIN is raised to the smallest allowed size >= MIN and MAX lowered to
 * the largest allowed size <= MAX; a job with no allowed size in [MIN, MAX] is
 * bad input. A job never gets a count outside its allowed sizes (0 = none).
 *
 * Rank. Jobs are ranked for admission and every tie-break:
 *   priority, fairshare: higher Slurm priority, then earlier submit, then
 *                        lower job id;
 *   fifo:                earlier submit, then lower job id.
 *
 * Admission (when the MINs do not all fit). A running job (holding GPUs now)
 * is never stopped to start another one: running jobs are admitted first, in
 * rank order, each if its MIN still fits in what the MINs before it left; a
 * running job whose MIN no longer fits (capacity lost, e.g. a node went down)
 * is stopped (target 0, reason STOP), lowest rank first. Pending jobs (holding
 * nothing) are then admitted in rank order, and admission stops at the first
 * pending job whose MIN does not fit: the ones behind it wait (reason WAIT)
 * even if they are smaller, so a large job is not starved by a stream of small
 * ones (the GPUs meanwhile go to running jobs' growth, never idle). Slurm's
 * own preemption, not this policy, decides whether a pending job may take
 * GPUs from a running job's MIN.
 *
 * Shares. Every admitted job gets at least its MIN; GPUs are water-filled:
 *   priority:  shares proportional to the Slurm job priority (priority 0
 *              counts as 1), bounded by MIN and MAX: the level L solves
 *              sum_j clamp(w_j * L, MIN_j, MAX_j) = C, so GPUs a job cannot
 *              take (its MAX) flow to the others by their weights. Exact:
 *              integer arithmetic decides (floating point only guesses,
 *              integer checks correct the guess).
 *   fairshare: the same with equal weights: every admitted job gets an equal
 *              share whatever its priority; priority only orders admission
 *              and ties. Why not "equal within a priority tier, tiers served
 *              in order": Slurm's multifactor priorities are nearly always
 *              distinct (the age factor alone changes them every minute), so
 *              tiers would degrade into strict priority order; Slurm's own
 *              fair-share factor lives in the priority, which the priority
 *              mode follows.
 *   fifo:      after all MINs, jobs in submit order each take up to their MAX.
 *   throughput: GPUs go where they add the most measured throughput (below).
 * Rounding (largest remainder). Each job gets the largest allowed size <= its
 * ideal share; the GPUs left over go one allowed step at a time to the jobs
 * with the largest remainder (ideal - given), ties by rank; passes repeat
 * while some job can still take its next allowed step within what is left
 * and under its MAX, so no GPU stays idle that an allowed size could use.
 * Example: 8 GPUs, priorities 10000 and 5000: ideals 5.33 and 2.67, floors
 * 5 and 2, the one GPU left goes to the larger remainder (0.67): 5 / 3.
 *
 * Stable allocations. A running job keeps its GPUs while its current
 * allocation is as good as the new split: it is within one allowed size step
 * of its ideal share (it holds the largest allowed size <= its share, or the
 * next allowed size above that, and the share is not exactly the former), and
 * no job is below its MIN or above its MAX. GPUs move only when some job is
 * really short: below the largest allowed size <= its share (a job just
 * admitted, a job that lost a node, a priority change worth more than a
 * step). Rounding does it: a job that holds at least the next allowed step
 * above its floor gets that step before any job by largest remainder, so
 *   - when every job is within a step, the split is the current allocation
 *     (idle GPUs still go out by largest remainder: no GPU stays idle);
 *   - when some job is short, it gets its floor at once (a pending job
 *     starts at its share in one step), the jobs within a step keep what
 *     they hold as far as the GPUs left allow, and a job above its step
 *     shrinks to that step, not past it. Who gets a step when not all fit:
 *     jobs holding exactly it (no re-form) before jobs above it (they
 *     re-form anyway), before the rest; within each, larger remainder,
 *     then rank.
 * Largest remainder alone would move a GPU whenever two remainders swap
 * order: two jobs on 7 GPUs at 5001 vs 5000 that swap priorities at each
 * decision would move a GPU at every decision; here they move none. The
 * bound is largest remainder's: a job's count is a rounding of its share
 * (within one allowed step, unless others' MAX leave more to hand out). Input
 * fresh_split = 1 rounds as if no job held GPUs (largest remainder alone;
 * benches use it to compare churn). fifo mode splits without rounding.
 *
 * Throughput. Each job's measured scaling (scaling.h) predicts its speedup
 * S(n) = rate(n) / rate(1). The split maximises the sum over jobs of weight x
 * S(n) (the weight: --elastic-policy-weight) by marginal gain: every
 * admitted job starts at its base, and the next allowed step (p -> q GPUs)
 * goes to the job whose weighted gain per GPU, w * (S(q) - S(p)) / (q - p),
 * is largest, while GPUs are left. Gains within 1 % of each other are equal;
 * among equal gains the job furthest below its fair share (fairshare's
 * split) goes first, then a step the job already holds, then rank. A step
 * whose own gain per GPU is under min_gain (0.3: the GPU would add less than
 * 0.3 of what one GPU does alone) is not given: that GPU stays free for
 * plain jobs, or unspent. The base is the job's MIN, raised towards
 * fair_floor x its fair share as far as each step still gains min_gain (no
 * job is held below that floor unless it cannot use it). A job with nothing
 * measured is taken to scale linearly. A job is given at most twice the
 * largest size it was measured at (or its MIN, base or current size, if
 * larger): a size is tried one doubling at a time, and the cool-down bounds
 * how often. GPUs that no job wants within that bound then go out by the
 * same gains beyond it, but only to jobs measured at two sizes or more (the
 * model's extrapolation): a job measured at one size looks linear whatever
 * it is, and would keep what it got unmeasured. Until a second size is
 * measured such GPUs stay free (a few ticks per new job). Targets are exact
 * (no rounding step); the hysteresis below and placement apply as in the
 * other modes.
 *
 * Hysteresis. A job's change is held (target = current, reason HOLD_*) when
 *   - now - last resize < Cooldown seconds (reason HOLD_COOLDOWN), or
 *   - |change| < MinChange GPUs, or |change| * 100 < MinChangePct * current
 *     (reason HOLD_THRESHOLD).
 * Held jobs keep their GPUs and the others are re-split around them,
 * repeated until no new change is held (at most 32 rounds, then the last
 * split stands). Once anything is held, the jobs the split left unchanged
 * keep their size as well when they are in their cool-down or a threshold
 * is set: what held jobs do not take or give is settled among the jobs that
 * change anyway, so no extra job re-forms for a nudge and rounds stay few
 * (2 to 3 in the benchmark). Never held: a job below its MIN (it always gets
 * its MIN: a pending job starts at once), a job above its MAX or at a size
 * it may not have, a job being stopped. A shrink is held only while the
 * admitted jobs' MINs still fit around it: a shrink that makes room for
 * another job's MIN happens even within the cool-down, and then straight to
 * the job's fair share (one re-form instead of two). Holds are granted grows
 * first (they only free GPUs), then shrinks in rank order while room lasts.
 * GPUs a held grow leaves go to the jobs not held; if every job is held
 * they stay idle until the cool-down ends.
 *
 * Placement. Jobs keep the GPUs they hold unless they shrink (moving GPUs
 * means re-forming the job): a shrinking job releases GPUs first from the
 * nodes where it holds the fewest (whole nodes go first, fewer nodes remain),
 * ties on the higher node index, and never its pinned GPUs (its own Slurm
 * allocation) unless it stops. Growing jobs are then placed largest need
 * first (ties by rank): first on free GPUs of nodes they already use (most
 * held first), then best fit: the lowest-index node whose free count is the
 * smallest that covers the rest; if none covers it, the lowest-index node
 * with the most free GPUs is taken whole and the search repeats. This packs
 * a job on as few nodes as a greedy can and leaves whole nodes whole. A
 * grant on a node the job already uses is safe under device confinement:
 * the launcher runs each rank in the step of the Slurm job that holds its
 * GPU, so it sees that GPU and ends with that grant (elastic-run(1)).
 *
 * Input rules (else -1, EINVAL, and the text names the job or node): ids
 * unique and > 0; 1 <= MIN <= MAX; times >= 0; what jobs hold on a node plus
 * its non-elastic GPUs fits its GPU count (a node that is down has 0 GPUs:
 * the caller drops holdings there first); pinned GPUs <= MIN; some GPU on
 * some node (zero capacity is an error; all GPUs busy is not).
 *
 * Cost. Ranking, the level events and the rounding order are radix-sorted
 * (exact comparisons only among equal keys), jobs' working state is kept in
 * rank order, re-split rounds work on the jobs not yet held: about
 * O(J + N + P log N) for J jobs, N nodes and P placement entries;
 * throughput mode hands out each gain level whole where it fits, off a heap
 * only the level that does not. 10,000 jobs on 12,500 nodes x 8 GPUs, with
 * a workspace kept between decisions (elastic_policy_decide_ws): about
 * 2 ms of CPU per decision (priority, fairshare), 1.2 ms (fifo) and 4.5 ms
 * (throughput) on the 2-core development machine (bench/bench_policy).
 */

#include <stddef.h>
#include <stdint.h>

#include "conf.h"      /* elastic_error_t */
#include "contract.h"  /* enum elastic_sizes_kind */
#include "scaling.h"   /* struct elastic_scaling */
#include "site_conf.h" /* enum elastic_policy_mode */

/* Largest GPU count of one node the policy accepts. */
#define ELASTIC_POLICY_MAX_NODE_GPUS 1024

/* GPUs of one job on one node. */
struct elastic_policy_place {
	int node;   /* index into the input's node arrays */
	int gpus;   /* > 0 */
	int pinned; /* of which the job's own Slurm allocation (never released
		       while the job runs): 0..gpus */
};

struct elastic_policy_job {
	uint32_t id;  /* Slurm job id, > 0, unique */
	int min, max; /* 1 <= min <= max */
	enum elastic_sizes_kind sizes;
	const int *size_list; /* ELASTIC_SIZES_LIST: ascending, > 0 */
	int nsize_list;
	uint32_t priority;   /* Slurm job priority */
	uint32_t weight;     /* --elastic-policy-weight, 0..ELASTIC_WEIGHT_MAX (0
				counts as 1): multiplies the job's share weight in
				priority and fairshare modes */
	int64_t submit_time; /* seconds (epoch), >= 0 */
	int64_t last_resize; /* seconds (epoch) of the last change of its
				GPUs (or start); 0: never */
	const struct elastic_policy_place *place; /* GPUs it holds now; its
						     current count is the sum */
	int nplace;
	/* throughput mode: its measured scaling; NULL or nothing observed:
	 * taken to scale linearly */
	const struct elastic_scaling *scaling;
};

struct elastic_policy_input {
	enum elastic_policy_mode mode;
	int64_t now;	      /* seconds (epoch), >= 0 */
	int min_change;	      /* hold changes of fewer GPUs (0/1: none held) */
	int min_change_pct;   /* hold changes under this % of the current size */
	int64_t cooldown;     /* hold changes this many seconds after a resize */
	int fresh_split;      /* 1: round as if no job held GPUs (no stable
				 allocations; for comparisons); 0: stable */
	double min_gain;      /* throughput: smallest gain per GPU given (0..1) */
	double fair_floor;    /* throughput: share of the fair share kept (0..1) */
	int nnodes;	      /* > 0 */
	const int *node_gpus; /* [nnodes] GPUs per node, 0 for a node down */
	const int *node_busy; /* [nnodes] GPUs held by non-elastic jobs; NULL: 0 */
	int njobs;	      /* >= 0 */
	const struct elastic_policy_job *jobs;
};

enum elastic_policy_reason {
	ELASTIC_POLICY_STEADY = 0,     /* target == current, nothing to do */
	ELASTIC_POLICY_START,	       /* pending job admitted */
	ELASTIC_POLICY_GROW,	       /* grows to its share */
	ELASTIC_POLICY_SHRINK,	       /* shrinks to its share (or to MAX) */
	ELASTIC_POLICY_WAIT,	       /* pending, its MIN does not fit: 0 */
	ELASTIC_POLICY_STOP,	       /* running, its MIN no longer fits: 0 */
	ELASTIC_POLICY_HOLD_THRESHOLD, /* change held: under the threshold */
	ELASTIC_POLICY_HOLD_COOLDOWN,  /* change held: within the cool-down */
};

struct elastic_policy_target {
	uint32_t id;
	int cur;      /* GPUs held now */
	int gpus;     /* target */
	int want;     /* what the split gave before a HOLD_* kept cur */
	int min, max; /* effective bounds (after allowed sizes) */
	enum elastic_policy_reason reason;
	double share;	     /* ideal (unrounded) share, for explanations only;
			 throughput mode: the fair share */
	double eff_cur, eff; /* throughput mode: predicted speedup / GPUs at cur
				and at gpus (0: none) */
	/* Target placement, ascending node index; pinned kept from the input.
	 * For a START it says where room is made: Slurm still picks the nodes
	 * of the job's own allocation, and the next decision takes what the
	 * job then holds as its input. */
	int nplace;
	struct elastic_policy_place *place; /* owned by the result */
};

struct elastic_policy_result {
	enum elastic_policy_mode mode;
	int capacity; /* free GPUs of all nodes for elastic jobs */
	int used;     /* sum of targets */
	int idle;     /* capacity - used */
	int rounds;   /* split rounds (1 + hysteresis re-splits) */
	int64_t now, cooldown;
	int njobs;
	struct elastic_policy_target *targets; /* input order */
};

/* Compute targets and placements. On success *out is a new result (free it
 * with elastic_policy_result_destroy) and 0 is returned. Bad input returns -1
 * with errno EINVAL and err naming the job/node and the value; *out is left
 * unchanged. ENOMEM likewise. */
int elastic_policy_decide(const struct elastic_policy_input *in,
			  struct elastic_policy_result **out, elastic_error_t *err);

/* Accepts NULL. */
void elastic_policy_result_destroy(struct elastic_policy_result *res);

/* A workspace for decisions, kept between them by a caller that decides
 * often (elasticd): the same result as elastic_policy_decide, without
 * allocating and faulting in its scratch memory (several MB at cluster
 * scale) at every decision. The workspace holds nothing of one decision
 * that the next one reads: any sequence of inputs, of any sizes, gives
 * the results elastic_policy_decide gives. It grows to the largest input
 * seen and keeps that memory until destroyed. One thread at a time per
 * workspace. The result is the caller's as with elastic_policy_decide
 * (free it with elastic_policy_result_destroy); it does not point into
 * the workspace. create returns NULL when out of memory; destroy accepts
 * NULL. */
struct elastic_policy_ws;
struct elastic_policy_ws *elastic_policy_ws_create(void);
void elastic_policy_ws_destroy(struct elastic_policy_ws *ws);
int elastic_policy_decide_ws(const struct elastic_policy_input *in,
			     struct elastic_policy_ws *ws,
			     struct elastic_policy_result **out, elastic_error_t *err);

/* "priority", "fairshare", "fifo", "throughput"; NULL for an unknown value. */
const char *elastic_policy_mode_name(enum elastic_policy_mode mode);

/* "steady", "start", ...; NULL for an unknown value. */
const char *elastic_policy_reason_name(enum elastic_policy_reason reason);

/* One line for people about target i of res, e.g. "job 2: grow 4 -> 5 GPUs
 * (priority share 5.33)". Returns the snprintf length, or -1 (EINVAL) for a
 * bad argument. */
int elastic_policy_explain(const struct elastic_policy_result *res, int i, char *buf,
			   size_t len);

#endif
