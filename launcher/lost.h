/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/lost.h: the nodes lost under a launch (pure). When mpirun ends
 * and the ranks of a node never said how they ended, that node's daemon or
 * the node itself is gone; Slurm may list its grant as running for a while
 * yet (until slurmd reports the step's end, or SlurmdTimeout for a dead
 * node). Relaunching onto it would fail again: the next launches leave such
 * a node out while Slurm still lists the jobs it held there. Once Slurm no
 * longer lists them the node is forgotten (a new grant there is welcome);
 * if Slurm still lists them when the hold ends, the job takes the node
 * again (it was a daemon lost, not the node), and a node lost again is
 * held twice as long. A node whose daemon's job (the grant whose step
 * hosted it) Slurm no longer lists while it lists the node's other jobs
 * lost its ranks with that grant's end, not with the node: it is not held
 * out, and the job takes its other GPUs again at once. */
#ifndef ELASTIC_LAUNCHER_LOST_H
#define ELASTIC_LAUNCHER_LOST_H

#include "gpuset.h"

#define ELASTIC_LOST_MAX      64 /* nodes held out at once */
#define ELASTIC_LOST_JOBS     8	 /* jobs of one node remembered */
#define ELASTIC_LOST_HOLD_S   10.0
#define ELASTIC_LOST_HOLD_MAX 300.0

struct elastic_lost_node {
	char host[64];
	int njobs;
	unsigned long job[ELASTIC_LOST_JOBS]; /* the jobs whose GPUs it had */
	unsigned long daemon;		      /* the job whose step hosted its daemon */
	int times;			      /* lost so often in this run */
	double since, until;		      /* held out from, until */
};

struct elastic_lost {
	int n;
	struct elastic_lost_node node[ELASTIC_LOST_MAX];
	/* nodes no longer held: how often each was lost, so that a node
	 * lost again is held longer */
	int nseen;
	struct {
		char host[64];
		int times;
	} seen[ELASTIC_LOST_MAX];
};

/* After an mpirun ended: hold out the nodes of launched, other than self
 * (where elastic-run runs: its loss is the job's), from which fewer ranks
 * reported their end than the node has GPUs (reports(host, arg) counts
 * them; a CPU-only job's node has one slot). Returns how many nodes were
 * held out (again). */
int elastic__lost_mark(struct elastic_lost *l, const struct elastic_gpuset *launched,
		       const char *self,
		       int (*reports)(const char *host, const void *arg), const void *arg,
		       double now);

/* Drop from set the nodes held out (a host with a GPU of a job it held when
 * it was lost, whole; not one where set lacks the daemon's job, see above).
 * Returns the GPUs dropped. */
int elastic__lost_hold_out(const struct elastic_lost *l, struct elastic_gpuset *set);

/* What a look at Slurm changed for the nodes held out. */
struct elastic_lost_look {
	int gone;	 /* nodes forgotten: Slurm lists none of their jobs there */
	int released;	 /* nodes whose hold ended, still listed: taken again */
	int daemon_gone; /* of those, released early: their daemon's job ended */
	char host[64];	 /* one of them, for the log */
	double held_for; /* how long that one was held */
};

/* all is every GPU Slurm lists for the job now (nothing held out). Updates
 * the book and says what changed. */
struct elastic_lost_look elastic__lost_look(struct elastic_lost *l,
					    const struct elastic_gpuset *all, double now);

#endif
