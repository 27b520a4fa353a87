/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/slurm.h: the only libslurm caller: the snapshot of nodes,
 * elastic jobs and grant jobs; submit, mark and cancel grants. Every call
 * goes through the gate of ctld_gate.h: while slurmctld does not answer it
 * fails at once ("slurmctld does not answer"), it does not wait. */
#ifndef ELASTICD_SLURM_H
#define ELASTICD_SLURM_H

#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "model.h"

int ed_slurm_init(elastic_error_t *err);
void ed_slurm_fini(void);
/* 1 while slurmctld does not answer (the gate's last ping failed). */
int ed_slurm_ctld_down(void);
/* May the loop call slurmctld now without waiting on the gate's ping? 1:
 * yes (slurmctld answered a moment ago, or does not answer and calls fail
 * at once). 0: a ping is out (sent now if needed); serve the loop and ask
 * again a few ms later, so that a tick or a look begins once it is back
 * (or ED_GATE_WAIT_MS passed) instead of waiting on it. */
int ed_slurm_ready(void);
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
 * elastic jobs and grants only; all jobs with ELASTICD_QUERY=full). With
 * jobs 0 the elastic jobs are not asked about (hints say when they change),
 * only the grants while one is pending. */
int ed_slurm_jobs_changed(int jobs);
/* The next snapshot reads the whole job list (in targeted mode: a job the
 * watch list does not hold, as one that speaks to elasticd unknown). */
void ed_slurm_want_full(void);
/* Hints arrive (1) or not (0). While they do, a plain job is read once,
 * not again while young in case a tag is added to it (the update's hint
 * says so), and the whole list is read every 10 minutes, not every 2. */
void ed_slurm_hints_alive(int alive);
/* Jobs a hint named (n of them; n < 0: more than were kept, none read):
 * the next snapshot reads those it does not watch, 64 at most. 1 if there
 * is one (a tick should read it now), else 0. */
int ed_slurm_hinted(const uint32_t *ids, int n);
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
/* End a running grant as done: its batch script exits 0 on SIGURG
 * (elastic__grant_script), so Slurm records it COMPLETED, not CANCELLED.
 * A grant not running, or whose script ignores the signal (submitted by an
 * older elasticd), is left running: cancel it then. 0, or -1 with err. */
int ed_slurm_end_grant(uint32_t id, elastic_error_t *err);
/* Is id, by Slurm's record, a grant not ended yet (pending, running or
 * suspended)? 1 with the job it serves and its user, 0 if not, -1 (err)
 * when slurmctld cannot say. */
int ed_slurm_grant_info(uint32_t id, const char *grant_prefix, uint32_t *job, uid_t *uid,
			elastic_error_t *err);

/* The calls to slurmctld, by kind (ed_call_name: the metrics' label). */
enum ed_call {
	ED_CALL_NODES,	   /* the node list */
	ED_CALL_JOB_LIST,  /* the whole job list, or what changed since a time */
	ED_CALL_JOB,	   /* one job's record */
	ED_CALL_JOB_STATE, /* the states of given jobs, or of the new ones */
	ED_CALL_SUBMIT,	   /* a grant submitted */
	ED_CALL_UPDATE,	   /* a grant marked for release */
	ED_CALL_SIGNAL,	   /* a signal or a cancel */
	ED_CALL_CONFIG,	   /* slurmctld's configuration */
	ED_CALL_PING,	   /* the gate's pings, to their answer or the end of
			      the wait (slurmctld not heard from for
			      ED_GATE_FRESH_MS: ctld_gate.h) */
	ED_CALLS
};
extern const char *const ed_call_name[ED_CALLS];
/* Calls made since the start, and the seconds spent waiting for their
 * answers. */
struct ed_calls {
	uint64_t n[ED_CALLS];
	double s[ED_CALLS];
};
void ed_slurm_calls(struct ed_calls *out);

#endif
