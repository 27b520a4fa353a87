/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/ctl_int.h: the controller's state, shared by its three
 * files and by no other: ctl.c (the tick: observe, decide, act),
 * ctl_channel.c (what the jobs and elastic-ctl say on the channel) and
 * ctl_metrics.c (the OpenMetrics text). */
#ifndef ELASTICD_CTL_INT_H
#define ELASTICD_CTL_INT_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "admin.h"
#include "channel.h"
#include "ctl.h"
#include "model.h"

#define ANNOUNCED_MAX 64

/* What elasticd remembers about an elastic job between ticks. All of it can
 * be lost (restart): it is rebuilt from slurmctld and the job's hello. */
struct ed_jobrt {
	uint32_t job;
	uid_t uid;
	int running, seen;
	char user[ED_NAME_MAX];
	int min, max;
	time_t last_resize;
	/* what the job was told */
	int target_valid;
	int target_sent;
	uint32_t announced[ANNOUNCED_MAX];
	int nannounced;
	/* what it reported */
	int reported;
	uint64_t step;
	double rate;
	uint32_t ranks; /* GPUs in use (its ranks training), from HELLO/STATUS */
	/* its measured scaling (the throughput policy): each STATUS rate taken
	 * while the job trains on all its GPUs at the ranks of the STATUS
	 * before it (_observe_rate) */
	struct elastic_scaling scal;
	uint32_t obs_ranks;
	struct elastic_recovery_counts rec; /* re-forms..., from STATUS (cumulative) */
	/* the last grant submission error, to log it once a minute */
	char last_error[256];
	time_t last_error_time;
	/* status, computed at each tick */
	int target, cur, ngrants;
	enum elastic_job_state state;
	char nodes[ELASTIC_PROTO_NODES_MAX];
};

/* A release ordered (phase one) and not yet done (phase two: cancel). */
struct ed_release {
	uint32_t grant, job;
	uint64_t order;
	uint64_t deadline_ms;
	uint64_t ordered_ms;
	int sent, acked, seen;
};

/* A grant its job released, signalled to end as done (ed_slurm_end_grant):
 * cancelled if it still runs at by_ms (_signal_end, _ending_settle). */
struct ed_ending {
	uint32_t grant, job;
	int signalled; /* 0: slurmctld was away: ENDING_MS counts from the first signal */
	int given_back; /* unusable to its job: cancelled, not signalled */
	uint64_t by_ms, resignal_ms;
};

/* Upper bounds of the tick-duration histogram's buckets, s (the last one is
 * +Inf, written as such). */
#define ED_TICK_BUCKETS 13
extern const double ed_tick_le[ED_TICK_BUCKETS - 1];
/* The parts of a tick that are timed: reading slurmctld, the policy's
 * decision, and acting on Slurm (grants submitted, marked, cancelled). */
enum { ED_PHASE_OBSERVE, ED_PHASE_DECIDE, ED_PHASE_ACT, ED_PHASES };
extern const char *const ed_tick_phase[ED_PHASES];
/* A tick (or a look between ticks) this long, s, is logged with the Slurm
 * calls it waited on (ed_ctl_slow). */
#define ED_SLOW_TICK_S	      0.1
#define ED_SLOW_TICK_EVERY_MS 60000
/* A tick spends at most this long on the Slurm calls that can wait
 * (grant submissions, end signals of released grants; at least one): the
 * rest waits for a tick that follows at once, the loop's messages and
 * scrapes served in between (ed_ctl_act_budget). */
#define ED_ACT_BUDGET_S 0.05

struct ed_ctl {
	struct ed_ctl_conf conf;
	ed_channel_t *ch;
	struct ed_jobrt *jobs;
	int njobs, capjobs;
	struct ed_release *rels;
	int nrels, caprels;
	uint32_t *shorts; /* pending grants the last tick found without room */
	int nshorts;
	struct ed_ending *ending;
	int nending, capending;
	uint64_t next_order;
	uint64_t last_tick_ms;
	uint64_t full_for_unknown_ms; /* the last whole list read for an unknown job */
	time_t snap_fail_since, snap_fail_logged;
	char last_plan_error[256];
	int tick_wanted;	 /* a handler asked for a tick after this poll */
	double act_slurm_s;	 /* this tick's time on such calls */
	uint64_t last_action_ms; /* last grant submitted, release ordered or
				    done, grant announced */
	struct ed_admin admin;	 /* paused or drained by administrators */
	char admin_path[4096];	 /* its state file ("": not kept) */
	char scaling_path[4200]; /* admin_path.scaling ("": not kept) */
	int scaling_dirty;	 /* a model changed since it was written */
	int scaling_restored;
	uint64_t scaling_saved_ms;
	char (*node_names)[ED_NAME_MAX]; /* nodes of the last snapshot */
	int nnode_names;
	/* of the last snapshot, for the metrics */
	int gpus_total, gpus_free, grants_pending, grants_running;
	int snapshot_ok;
	/* how long the ticks took (ed_ctl_tick): counts per bucket of
	 * ed_tick_le, their sum, the number of ticks */
	uint64_t tick_bucket[ED_TICK_BUCKETS];
	double tick_sum_s;
	uint64_t ticks;
	/* the same less the time each waited for a CPU (ed_runq_s), and that
	 * time's sum */
	uint64_t tick_own_bucket[ED_TICK_BUCKETS];
	double tick_own_sum_s, tick_runq_s;
	/* and where their time went (ed_tick_phase) */
	double tick_phase_s[ED_PHASES];
	/* slow ticks (ED_SLOW_TICK_S) not logged yet, the slowest of them
	 * described, and when the last one was logged */
	int slow_unsaid;
	double slow_worst_s;
	char slow_worst[480];
	uint64_t slow_said_ms;
	int active;   /* holds the controller role (ed_ctl_set_active) */
	int stood_by; /* stood by since its start: state to read again */
};

/* The tick's helpers the channel handlers use (ctl.c). */
/* The job's entry, NULL when elasticd does not know it. */
struct ed_jobrt *ed_ctl_job_rt(struct ed_ctl *c, uint32_t job);
/* Cancel grant (of job), saying why; 0 when done. */
int ed_ctl_cancel(struct ed_ctl *c, uint32_t grant, uint32_t job, const char *why);
/* A grant its job released: signalled to end as done (ed_slurm_end_grant). */
void ed_ctl_end_released(struct ed_ctl *c, uint32_t grant, uint32_t job, const char *why);
/* Cancel a grant its job gave back (unusable); while slurmctld does not
 * answer, at the first tick it does (ctl.c). */
void ed_ctl_cancel_given_back(struct ed_ctl *c, uint32_t grant, uint32_t job);
/* The jobs of snapshot s into the controller's entries; 0 on success. */
int ed_ctl_observe_jobs(struct ed_ctl *c, const struct ed_snapshot *s);
/* A release done or given up: forgotten. */
void ed_ctl_rel_remove(struct ed_ctl *c, struct ed_release *r);

#endif
