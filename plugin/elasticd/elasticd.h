/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/elasticd.h: elasticd's internal model (what slurmctld says) and its
 * modules. */
#ifndef ELASTICD_H
#define ELASTICD_H

/*
 * Modules of the daemon, one file each:
 *   elasticd.c  main: options, elastic.conf, logging, the event loop
 *   slurm.c     the only file calling libslurm: snapshot of nodes, elastic jobs
 *               and grant jobs; submit, mark and cancel grants
 *   plan.c      the only file calling the policy (policy.h): snapshot -> targets
 *   ctl.c       the controller: per tick, observe (snapshot, job table,
 *               channel), decide (reconcile.c), act (grants, two-phase
 *               shrink, orders to jobs, clean up); the channel's handlers
 *   reconcile.c decide, pure: state and policy targets -> actions
 *   channel.c   the TCP job channel server (common/proto.h); it calls the
 *               handlers registered with it, no other module
 * policy.h takes its size kinds from the contract (common/contract.h) and its
 * mode from site_conf.h.
 */

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <time.h>

#include "conf.h"
#include "proto.h"

#define ED_NAME_MAX  64
#define ED_SIZES_MAX 64

/* ---- logging (elasticd.c) ---- */
enum { ED_LOG_ERROR, ED_LOG_INFO, ED_LOG_DEBUG };
void ed_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define ed_error(...) ed_log(ED_LOG_ERROR, __VA_ARGS__)
#define ed_info(...)  ed_log(ED_LOG_INFO, __VA_ARGS__)
#define ed_debug(...) ed_log(ED_LOG_DEBUG, __VA_ARGS__)

/* Milliseconds since the epoch (realtime) and monotonic. */
uint64_t ed_now_ms(void);

/* ---- the snapshot of slurmctld's state (slurm.c) ---- */
struct ed_node {
	char name[ED_NAME_MAX];
	int gpus;     /* GPUs of the node; of a down/drained node only those its
			 running jobs hold (nothing new goes there) */
	int busy;     /* GPUs held by running jobs that are neither elastic nor grants */
	int unusable; /* down, drained, failing or not responding */
};

struct ed_place {
	int node; /* index into the snapshot's nodes */
	int gpus;
	int pinned; /* of which the job's own allocation (never released) */
};

struct ed_job {
	uint32_t id;
	uid_t uid;
	gid_t gid;
	char user[ED_NAME_MAX];
	char account[ED_NAME_MAX];
	char partition[ED_NAME_MAX];
	int running; /* 1 running, 0 pending */
	/* from the tag */
	int min, max, grace, weight;
	enum elastic_sizes_kind sizes_kind; /* contract.h */
	int nsizes;
	int sizes[ED_SIZES_MAX];
	uint32_t priority;
	time_t submit, start;
	uint32_t time_limit; /* minutes (Slurm's INFINITE/NO_VAL as they are) */
	int nlead;	     /* GPUs of its own allocation, per node */
	struct ed_place *lead;
};

enum ed_grant_state { ED_GRANT_PENDING, ED_GRANT_RUNNING };

struct ed_grant {
	uint32_t id;
	uint32_t job; /* the elastic job it serves */
	uid_t uid;
	int gpus;
	int node; /* index, -1 if unknown */
	enum ed_grant_state state;
	time_t start;
	uint64_t release_by_ms; /* from its AdminComment: release ordered; 0 none */
};

struct ed_snapshot {
	int nnodes, njobs, ngrants;
	struct ed_node *nodes;
	struct ed_job *jobs;
	struct ed_grant *grants;
};

int ed_slurm_init(elastic_error_t *err);
void ed_slurm_fini(void);
/* uid of SlurmUser (from slurmctld's configuration). */
uid_t ed_slurm_user(void);
/* slurmctld's StateSaveLocation (from ed_slurm_init), NULL if unset: the
 * default home of elasticd's state file. */
const char *ed_slurm_state_dir(void);
/* Load nodes and jobs. Grants are jobs named prefix<jobid> whose AdminComment
 * carries the grant mark (which only administrators can set). */
int ed_slurm_snapshot(const char *grant_prefix, struct ed_snapshot *s,
		      elastic_error_t *err);
void ed_snapshot_free(struct ed_snapshot *s);
/* 1 if what elasticd acts on changed since the last snapshot, 0 if not or
 * when slurmctld does not answer: cheap RPCs for reacting between ticks (the
 * elastic jobs and grants only; all jobs with ELASTICD_QUERY=full). */
int ed_slurm_jobs_changed(void);
/* "targeted" or "full" (ELASTICD_QUERY=full, or no job-state RPC). */
const char *ed_slurm_query_mode(void);
int ed_slurm_submit_grant(const struct ed_job *j, const char *node, int gpus,
			  const char *prefix, const char *qos, uint32_t *grant_id,
			  elastic_error_t *err);
/* Record in the grant's AdminComment that its release was ordered, deadline
 * by_ms, so that a restarted elasticd keeps the deadline. */
int ed_slurm_mark_release(uint32_t grant, uint32_t job, uint64_t by_ms,
			  elastic_error_t *err);
int ed_slurm_cancel(uint32_t id, elastic_error_t *err);

const struct ed_job *ed_snapshot_job(const struct ed_snapshot *s, uint32_t id);

/* ---- the policy (plan.c) ---- */
struct ed_plan_params {
	int mode; /* PolicyMode index: priority|fairshare|fifo */
	int min_change;
	int64_t cooldown;
	/* 1: a job not resized since it started is held by the cool-down
	 * too (the timing before issue 13, for benches); 0: it grows to its
	 * share at once (starting is no churn). */
	int cooldown_from_start;
};

struct ed_target {
	uint32_t job;
	int cur, gpus; /* held now (as given), target */
	int nplace;
	struct ed_place *place; /* target placement */
	char explain[160];
};

struct ed_plan {
	int ntargets;
	struct ed_target *targets; /* in snapshot job order */
};

/* held[j] lists what job j holds now (leader + grants not being released),
 * last_resize[j] its last resize (s). */
int ed_plan_compute(const struct ed_snapshot *s, const struct ed_place *const *held,
		    const int *nheld, const time_t *last_resize,
		    const struct ed_plan_params *p, time_t now, struct ed_plan *out,
		    elastic_error_t *err);
void ed_plan_free(struct ed_plan *p);

/* ---- the channel (channel.c) ---- */
typedef struct ed_channel ed_channel_t;

/* What the channel calls for the frames it receives: a table registered at
 * start (elasticd.c), so that the channel knows no other module. Handlers
 * run inside ed_channel_poll: they may send (ed_channel_send_job) but never
 * poll, and they leave the work of a tick to the main loop. */
struct ed_channel_handlers {
	/* QUERY: the JOBINFO messages (job 0: all); returns the count (the
	 * channel frees *out). */
	int (*query)(void *arg, uint32_t job, struct elastic_msg **out);
	/* HELLO, STATUS, ACK, authenticated as uid. Returns 0 to accept, or -1
	 * with err (the channel then sends ERROR and closes). conn_job is the
	 * job the connection registered for (0 none); a HELLO sets it. */
	int (*message)(void *arg, const struct elastic_msg *m, uid_t uid,
		       uint32_t *conn_job, elastic_error_t *err);
	/* A connection of job just registered (its first hello). */
	void (*job_connected)(void *arg, uint32_t job);
	/* ADMIN from uid: 0 and the resulting state in state (len bytes), or
	 * -1 with err (the channel sends ERROR). With m NULL: only the state
	 * ("" when nothing is paused or drained), for a QUERY's END. */
	int (*admin)(void *arg, const struct elastic_msg *m, uid_t uid, char *state,
		     size_t len, elastic_error_t *err);
};

/* idle_s: seconds a connection bound to no job may stay quiet (> 0). */
ed_channel_t *ed_channel_create(const char *host, int port, int idle_s,
				elastic_auth_t *auth, elastic_error_t *err);
void ed_channel_destroy(ed_channel_t *ch);
int ed_channel_port(const ed_channel_t *ch);
/* Register the handlers (copied) and their argument. */
void ed_channel_set_handlers(ed_channel_t *ch, const struct ed_channel_handlers *h,
			     void *arg);
/* Wait for and handle I/O up to timeout_ms; frames go to the handlers. */
void ed_channel_poll(ed_channel_t *ch, int timeout_ms);
/* Send m to the connection of job (if any). 0 sent/queued, -1 none/failed. */
int ed_channel_send_job(ed_channel_t *ch, uint32_t job, const struct elastic_msg *m);
int ed_channel_job_connected(const ed_channel_t *ch, uint32_t job);
/* Close a job's connection (its job ended). */
void ed_channel_drop_job(ed_channel_t *ch, uint32_t job);

/* Other sockets the channel's poll watches (the metrics endpoint): fill adds
 * up to max pollfds and returns how many; ready gets them back after the
 * poll, revents set. */
struct pollfd;
struct ed_poll_extra {
	int (*fill)(void *arg, struct pollfd *pf, int max);
	void (*ready)(void *arg, const struct pollfd *pf, int n);
	void *arg;
};
void ed_channel_set_extra(ed_channel_t *ch, const struct ed_poll_extra *x);
/* Connections open now (bound to a job or not). */
int ed_channel_connections(const ed_channel_t *ch);

/* ---- the metrics endpoint (metrics.c, http.c) ---- */
typedef struct ed_metrics ed_metrics_t;
/* Writes the OpenMetrics text (ending with "# EOF") to f. */
typedef void (*ed_metrics_render_fn)(void *arg, FILE *f);
/* Listen on addr ("host:port", "[v6]:port", ":port"); render makes the text
 * of each GET /metrics. */
ed_metrics_t *ed_metrics_create(const char *addr, ed_metrics_render_fn render, void *arg,
				elastic_error_t *err);
void ed_metrics_destroy(ed_metrics_t *m);
int ed_metrics_port(const ed_metrics_t *m);
/* struct ed_poll_extra's fill and ready. */
int ed_metrics_pollfds(ed_metrics_t *m, struct pollfd *pf, int max);
void ed_metrics_handle(ed_metrics_t *m, const struct pollfd *pf, int n);

/* ---- the controller (ctl.c) ---- */
struct ed_ctl_conf {
	char grant_prefix[ED_NAME_MAX];
	char grant_qos[ED_NAME_MAX];
	struct ed_plan_params plan;
	int dry_run; /* compute and log, change nothing */
};

struct ed_ctl *ed_ctl_create(const struct ed_ctl_conf *conf, ed_channel_t *ch);
void ed_ctl_destroy(struct ed_ctl *ctl);
/* New policy parameters (a configuration re-read), used from the next tick. */
void ed_ctl_set_plan(struct ed_ctl *ctl, const struct ed_plan_params *plan);
/* One pass: observe, decide, act. */
void ed_ctl_tick(struct ed_ctl *ctl);
/* 1 when a handler asked for a tick (a job registered): the main loop runs
 * one after the poll that handled it. */
int ed_ctl_tick_wanted(const struct ed_ctl *ctl);
/* The channel's handlers (struct ed_channel_handlers), arg the ed_ctl. */
extern const struct ed_channel_handlers ed_ctl_handlers;
/* The earliest release deadline (ms since the epoch), 0 if none: the main
 * loop runs a tick then, so forced releases are not a tick late. */
uint64_t ed_ctl_next_deadline(const struct ed_ctl *ctl);
/* 1 while a change is under way (a release not done, a job growing or
 * shrinking): the main loop then looks for slurmctld's events more often. */
int ed_ctl_busy(const struct ed_ctl *ctl);
/* The OpenMetrics text of the controller's state (ed_metrics_render_fn, arg
 * the ed_ctl). */
void ed_ctl_metrics(void *ctl, FILE *f);
/* What administrators paused or drained, from the state file path (NULL:
 * not kept), which each change rewrites from then on (not in a dry run). A
 * file that cannot be read or is not elasticd's pauses the whole cluster,
 * said in the log: nothing moves until an administrator looks. */
void ed_ctl_admin_restore(struct ed_ctl *ctl, const char *path);

#endif
