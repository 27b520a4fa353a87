/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/reconcile.h: the controller's decide step, pure: what slurmctld
 * and the jobs hold now and what the policy wants -> a list of actions.
 *
 * A tick is observe (ctl.c: snapshot, job table, channel), decide (here) and
 * act (ctl.c: carries out the actions in order). Decide runs in two steps,
 * because the policy's input (what each job holds) is an output of the first:
 *   ed_rc_grants  the grants: cancel those of ended jobs, of unknown nodes,
 *                 that can no longer start; finish, force or resume releases;
 *                 then what each job holds and runs
 *   ed_rc_moves   the policy's targets vs holdings: cancel grants not started,
 *                 order releases (with their deadline), grow, tell targets and
 *                 started grants
 * Nothing here calls Slurm, the channel or the clock: now comes in. */
#ifndef ELASTICD_RECONCILE_H
#define ELASTICD_RECONCILE_H

#include "model.h"
#include "plan.h"
#include "proto.h" /* enum elastic_job_state, ELASTIC_PROTO_NODES_MAX */

/* A release ordered and not yet done, as the controller remembers it. */
struct ed_rc_release {
	uint32_t grant, job;
	uint64_t deadline_ms;
	int sent;  /* the job was told */
	int acked; /* the job released it: cancel the grant */
};

/* What the controller remembers of a job of the snapshot. */
struct ed_rc_job {
	int connected;		       /* its channel connection is up */
	int target;		       /* the target of the last tick (0 none) */
	int target_valid, target_sent; /* the last target the job was told */
	const uint32_t *announced;     /* grants it was told of */
	int nannounced;
	time_t last_resize; /* s */
};

struct ed_rc_in {
	const struct ed_snapshot *s;
	const struct ed_rc_job *jobs; /* s->njobs, in snapshot order */
	const struct ed_rc_release *rels;
	int nrels;
	/* pending grants the last tick found without room (ed_rc.shorts) */
	const uint32_t *shorts;
	int nshorts;
	uint64_t now_ms; /* ms since the epoch */
};

enum ed_rc_kind {
	ED_RC_CANCEL,	    /* cancel grant (why); forget its release if any */
	ED_RC_RESUME,	    /* a release ordered before a restart: remember it
			       (deadline_ms from slurmctld) and tell the job */
	ED_RC_SEND_RELEASE, /* tell the job of a release it was not told of */
	ED_RC_FORGET,	    /* the release's grant is gone: forget it */
	ED_RC_EXPLAIN,	    /* the target changed: log why (why) */
	ED_RC_RELEASE,	    /* order a release: remember it, mark it, tell */
	ED_RC_GROW,	    /* submit a grant of gpus on node (one per grant: the
			       sizes keep later shrinks exact, grants.h) */
	ED_RC_TARGET,	    /* tell the job its target (gpus) */
	ED_RC_ANNOUNCE,	    /* tell the job that grant (gpus on node) started;
			       a job's started grants are told of together,
			       once none is pending (one re-form per grow) */
};

struct ed_rc_action {
	enum ed_rc_kind kind;
	int ji; /* index of the job in the snapshot, -1 none */
	uint32_t job, grant;
	int node, gpus;
	int from, to;	      /* release, grow: the job's size (for logs) */
	uint64_t deadline_ms; /* resume, release */
	const char *why;      /* cancel, explain: static or the plan's text */
	int done; /* cancel: a running grant whose work is done (its job released
		     it, or ended): it may end as done, not cancelled */
};

/* What a job holds and runs after ed_rc_grants, and its state after
 * ed_rc_moves. */
struct ed_rc_hold {
	struct elastic_policy_place *held; /* leader + grants not being released */
	struct elastic_policy_place *cur;  /* leader + grants running */
	int nheld, ncur;
	int cur_gpus, ngrants; /* ngrants: not dropped */
	time_t last_resize;
	int releasing, pending; /* grants being released, not started */
	int growing;		/* grants submitted this tick (ED_RC_GROW) */
	char nodes[ELASTIC_PROTO_NODES_MAX];
};

enum { ED_RC_HELD, ED_RC_RELEASING, ED_RC_DROPPED };

struct ed_rc {
	int *gclass; /* per snapshot grant: ED_RC_HELD/RELEASING/DROPPED */
	struct ed_rc_hold *jobs;
	int njobs;
	struct ed_rc_action *acts;
	int nacts, capacts;
	/* pending grants without room on their node in this snapshot and not
	 * in the last one: kept, and cancelled if the next one agrees (the
	 * caller passes them back as ed_rc_in.shorts) */
	uint32_t *shorts;
	int nshorts;
};

/* Step one. Fills out (zeroed by the caller; free it with ed_rc_free).
 * Returns 0, or -1 (ENOMEM). */
int ed_rc_grants(const struct ed_rc_in *in, struct ed_rc *out);
/* Step two, after ed_rc_grants: appends to out->acts. plan holds the
 * policy's targets in snapshot job order. Returns 0, or -1 (ENOMEM). */
int ed_rc_moves(const struct ed_rc_in *in, const struct ed_plan *plan, struct ed_rc *out);
void ed_rc_free(struct ed_rc *rc);

/* The state elastic-ctl shows for a job. */
enum elastic_job_state ed_rc_state(int running, int releasing, int pending, int target,
				   int cur);

#endif
