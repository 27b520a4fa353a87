/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/inplace.h: elastic-run's resizes in place, a state machine (idle,
 * joining, leaving, healing) whose plans are pure functions: the growth onto
 * new nodes, the planned shrink of released GPUs, the heal after lost ranks.
 * inplace_run.c acts on the plans (files for libelastic, messages). */
#ifndef ELASTIC_LAUNCHER_INPLACE_H
#define ELASTIC_LAUNCHER_INPLACE_H

#include <stdint.h>

#include "contract.h" /* struct elastic_request */
#include "gpuset.h"

enum elastic_inplace_state {
	ELASTIC_INPLACE_IDLE,	 /* the world is the launch's, or agrees with Slurm */
	ELASTIC_INPLACE_JOINING, /* new ranks join at the next step boundary */
	ELASTIC_INPLACE_LEAVING, /* ranks on released GPUs leave at the next boundary */
	ELASTIC_INPLACE_HEALING, /* ranks were lost and healed around; the set
				  * waits for Slurm to list fewer GPUs */
};

/* The resize in place under way in the current launch. A heal can come
 * while ranks leave: its clock (t_heal) runs beside the state. */
struct elastic_inplace {
	enum elastic_inplace_state state;
	int world; /* ranks of the launch, less those lost and healed in place */
	/* joining: ranks to start, the world size it makes, when it was asked */
	int join_add, join_world;
	double t_join;
	/* leaving: ranks asked to leave (their GPUs named in the leave file), the
	 * world size before, the step at which they left (0 until the
	 * survivors' record shows it), when it was asked */
	int leave_ranks, leave_world;
	unsigned long long leave_step;
	double t_leave;
	/* releases seen that leave the set above the controller's lower
	 * target: since when the rest of them is awaited (0: not waiting) */
	double t_rel_wait;
	/* ranks lost and healed in place while Slurm still lists all the set's
	 * GPUs: since when (0: the set agrees with the world), last look-up */
	double t_heal, t_heal_look;
};

/* ---- The state's moves: what happened, and the state it leaves. */

enum elastic_inplace_event {
	ELASTIC_INPLACE_LAUNCHED,      /* a launch began: its world is the set */
	ELASTIC_INPLACE_JOIN_PLANNED,  /* new ranks join at the next boundary */
	ELASTIC_INPLACE_LEAVE_PLANNED, /* ranks on released GPUs leave there */
	ELASTIC_INPLACE_JOINED,	       /* the joining ranks joined */
	ELASTIC_INPLACE_RELEASED,      /* the leaving ranks left and the others
				       * committed a step: the grants go */
	ELASTIC_INPLACE_HEALED,	       /* ranks were lost and healed around */
	ELASTIC_INPLACE_HEAL_OVER,     /* the heal's set agrees with Slurm's, or
				       * its look-ups ended */
};

/* The state after event in state; heal_open: a heal's set still waits for
 * Slurm (t_heal set). A join or a leave ends in HEALING while a heal's
 * wait runs beside it, else in IDLE; a heal opens HEALING only from IDLE
 * (a join or a leave under way keeps its state) and its end closes it. */
enum elastic_inplace_state elastic__inplace_next(enum elastic_inplace_state state,
						 enum elastic_inplace_event event,
						 int heal_open);

/* ---- The growth plan: a larger set seen on a runtime that grows in place. */

struct elastic_grow_in {
	int grow_in_place; /* the runtime starts ranks inside a running mpirun */
	enum elastic_inplace_state state;
	int released; /* GPUs of the launched set on grants ordered released */
	int world;
	const struct elastic_gpuset *launched, *seen;
	char *const *prog; /* the program's argv (the join file has one a line) */
};

enum elastic_grow_what {
	ELASTIC_GROW_NONE,   /* no growth in place to consider: the ranks re-form */
	ELASTIC_GROW_REFORM, /* considered but refused (why): the ranks re-form */
	ELASTIC_GROW_JOIN,   /* add new ranks join the running ones */
};

struct elastic_grow_plan {
	enum elastic_grow_what what;
	int add;	 /* JOIN: GPUs on the nodes new to the launch */
	const char *why; /* REFORM: why not in place */
};

/* In place when seen keeps every host of launched as it is and adds whole
 * nodes new to the launch (a daemon there serves one grant's Slurm job). */
struct elastic_grow_plan elastic__inplace_plan_grow(const struct elastic_grow_in *in);

/* 1 if seen has a host named like this one of launched: the nodes of seen
 * without one are the new nodes of a growth. */
int elastic__inplace_host_known(const struct elastic_gpuset *launched, const char *name);

/* ---- The leave plan: a release of GPUs the ranks use. */

struct elastic_leave_in {
	int in_place; /* the runtime survives a lost daemon */
	enum elastic_inplace_state state;
	int daemon_host;   /* a host whose daemon runs in a released grant's step
			  * while ranks that stay run there, or -1 */
	int world;	   /* ranks of the launch now */
	int live;	   /* GPUs of the launched set that hold a live rank */
	int total;	   /* GPUs of the launched set */
	int grants_add;	   /* started grants add GPUs the job may use */
	int released;	   /* GPUs of the launched set on released grants
			  * (-1: too many to list) */
	int idle_released; /* of those, GPUs whose rank already ended */
	uint32_t target;   /* the controller's target (0: none) */
	const struct elastic_request *req;
};

enum elastic_leave_what {
	ELASTIC_LEAVE_REFORM_DAEMON, /* a released grant hosts a daemon of ranks
				      * that stay: every rank re-forms */
	ELASTIC_LEAVE_REFORM,	     /* every rank re-forms */
	ELASTIC_LEAVE_ACK,	     /* no live rank on the released GPUs:
				      * acknowledged at once, no stop */
	ELASTIC_LEAVE_IN_PLACE,	     /* leaving ranks leave, the others go on */
};

struct elastic_leave_plan {
	enum elastic_leave_what what;
	int leaving; /* IN_PLACE: the ranks that leave */
};

/* In place on a runtime that survives a lost daemon, when what is left is
 * a size the job allows and no grant is on its way to replace it. */
struct elastic_leave_plan elastic__inplace_plan_leave(const struct elastic_leave_in *in);

/* ---- Rank 0's record of the world size during a launch. */

struct elastic_record_in {
	int in_place;
	enum elastic_inplace_state state;
	int size;      /* the world size in the record */
	int world;     /* ranks of the launch before it */
	int leave_end; /* leaving: the world once they left */
	int join_end;  /* joining: the world once they joined */
	int heal_open; /* a heal's set still waits for Slurm (t_heal set) */
};

enum elastic_record_what {
	ELASTIC_RECORD_NONE,	  /* nothing new */
	ELASTIC_RECORD_LEFT,	  /* the leaving ranks left */
	ELASTIC_RECORD_JOINED,	  /* the joining ranks joined */
	ELASTIC_RECORD_HEAL_LOOK, /* a heal's set may shrink: look again */
	ELASTIC_RECORD_HEALED,	  /* ranks were lost and healed around */
};

enum elastic_record_what elastic__inplace_on_record(const struct elastic_record_in *in);

/* ---- After a heal: when to ask Slurm again for the smaller set. */

#define ELASTIC_HEAL_LOOK_FOR_S	  10.0 /* looked up for so long after a heal */
#define ELASTIC_HEAL_LOOK_EVERY_S 0.5

struct elastic_heal_in {
	int world, total; /* ranks, and GPUs of the launched set */
	int released;	  /* GPUs of the launched set on released grants */
	double now, t_heal, t_heal_look;
};

enum elastic_heal_what {
	ELASTIC_HEAL_END,  /* the set agrees with the world, or too late */
	ELASTIC_HEAL_WAIT, /* not yet (a release under way drops its GPUs) */
	ELASTIC_HEAL_LOOK, /* ask Slurm now */
};

enum elastic_heal_what elastic__inplace_heal_look(const struct elastic_heal_in *in);

#endif
