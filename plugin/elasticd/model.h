/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/model.h: elasticd's model of slurmctld's state: the nodes,
 * the elastic jobs and their grants of one snapshot (slurm.c fills it). */
#ifndef ELASTICD_MODEL_H
#define ELASTICD_MODEL_H

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "contract.h"
#include "policy.h"

#define ED_NAME_MAX  64
#define ED_SIZES_MAX 64

struct ed_node {
	char name[ED_NAME_MAX];
	int gpus;     /* GPUs of the node; of a down/drained node only those its
			 running jobs hold (nothing new goes there) */
	int busy;     /* GPUs held by running jobs that are neither elastic nor grants */
	int unusable; /* down, drained, failing or not responding */
};

/* A job's GPUs on one node are the policy's struct elastic_policy_place
 * (policy.h): node indexes the snapshot's nodes, and pinned GPUs belong to
 * the job's own allocation (never released). One type from slurmctld's
 * snapshot through the plan to the reconcile, with no copy between. */

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
	struct elastic_policy_place *lead;
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

#endif
