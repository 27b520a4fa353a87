/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/admin.h: what administrators paused or drained (elastic-ctl
 * pause|drain|resume), and how that bounds a tick's plan; pure, no Slurm. */
#ifndef ELASTICD_ADMIN_H
#define ELASTICD_ADMIN_H

#include <stddef.h>

#include "conf.h"
#include "model.h"
#include "plan.h"

#define ED_ADMIN_NODES_MAX 256

enum ed_admin_mode {
	ED_ADMIN_NONE = 0,
	ED_ADMIN_PAUSE, /* node: no new grants there; cluster: no grow or shrink */
	ED_ADMIN_DRAIN, /* no new grants; grants there are released (grace) */
};

/* Kept in elasticd's memory and in its state file (ed_admin_save): a
 * restart of elasticd keeps what administrators paused or drained, as a
 * restart of slurmctld keeps a drained node. */
struct ed_admin {
	enum ed_admin_mode cluster;
	int nnodes;
	struct {
		char name[ED_NAME_MAX];
		enum ed_admin_mode mode;
	} nodes[ED_ADMIN_NODES_MAX];
};

/* Apply action "pause", "drain" or "resume" to node (NULL or "": the whole
 * cluster; resume without a node lifts every pause and drain). 0, or -1
 * with err (unknown action, too many nodes); a failed call changes nothing. */
int ed_admin_apply(struct ed_admin *a, const char *action, const char *node,
		   elastic_error_t *err);

/* The mode of node (the cluster's drain covers every node; a node's own
 * mode otherwise). */
enum ed_admin_mode ed_admin_node(const struct ed_admin *a, const char *node);

/* One line for people: "" when nothing is paused or drained, else e.g.
 * "paused; drained: node2; no new grants: node3". */
void ed_admin_describe(const struct ed_admin *a, char *buf, size_t len);

/* Bound a tick's planning input. held[j] (nheld[j] places) is what job j
 * holds. A paused node offers no more than its non-elastic work and what
 * the elastic jobs hold there; a drained node no more than its non-elastic
 * work and the jobs' own allocations there, and out[j] (room for nheld[j]
 * places, nout[j] set) is then what the policy may count as kept: on a
 * drained node only the job's own allocation, so that its grants there
 * show as excess and are released. s->nodes[].gpus is lowered in place. */
void ed_admin_bound(const struct ed_admin *a, struct ed_snapshot *s,
		    const struct elastic_policy_place *const *held, const int *nheld,
		    struct elastic_policy_place *const *out, int *nout);

/* A plan that keeps every job at what it holds (cluster paused): targets
 * in snapshot job order, explained as paused. 0, or -1 (ENOMEM). */
int ed_admin_hold_plan(const struct ed_snapshot *s,
		       const struct elastic_policy_place *const *held, const int *nheld,
		       struct ed_plan *out);

/* Write a's state to path (a temporary file renamed over it: a crash leaves
 * the old state or the new, whole): one line per setting ("cluster pause",
 * "node node2 drain"). 0, or -1 with err naming the path. */
int ed_admin_save(const struct ed_admin *a, const char *path, elastic_error_t *err);

/* Read a state file that ed_admin_save wrote into a (emptied first). A
 * missing file is nothing paused or drained (0). -1 with err naming the
 * path and line when it cannot be read or a line is not one of ours; a is
 * then empty. */
int ed_admin_load(struct ed_admin *a, const char *path, elastic_error_t *err);

#endif
