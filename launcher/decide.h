/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/decide.h: elastic-run's decisions, pure functions of what it saw
 * (decide.c), each state machine a section: what follows an mpirun's end,
 * the launch's clocks, the ranks' stop, the resizes in place, the recoveries
 * counted and the nodes held out as lost. watch.c, inplace_run.c and
 * elastic-run.c feed them and carry out their answers; cmocka tables test
 * them (test/). */
#ifndef ELASTIC_LAUNCHER_DECIDE_H
#define ELASTIC_LAUNCHER_DECIDE_H

#include <stdint.h>

#include "contract.h" /* struct elastic_request */
#include "gpuset.h"
#include "proto.h"  /* struct elastic_recovery_counts, causes, kinds */
#include "report.h" /* struct elastic_report_summary */

/* ==== After each mpirun: finished, stopped, or re-form again, or give up.
 * elastic-run.c is the state machine (launch, watch, re-form, finish) that
 * acts on these. */

enum elastic_run_next {
	ELASTIC_RUN_REFORM,   /* launch again on the GPUs the job holds now */
	ELASTIC_RUN_FINISHED, /* the program ended normally: exit 0 */
	ELASTIC_RUN_STOPPED,  /* elastic-run was told to stop (SIGTERM, SIGINT) */
	ELASTIC_RUN_NOSTART,  /* mpirun could not be started (status 127) */
	ELASTIC_RUN_STUCK,    /* too many failures in a row without progress */
	ELASTIC_RUN_TOO_MANY, /* --max-relaunch reached */
	ELASTIC_RUN_FAILED,   /* the program failed on an error of its own */
};

/* A launch ended with mpirun status mstatus and the ranks' reports in sum;
 * sig is the signal elastic-run got (0: none); healed the size of the world
 * the survivors healed in place to during the launch (0: none). Returns
 * FINISHED (some ranks ended the program normally, and none failed or every
 * rank of the healed world ended it normally; none asked to re-form),
 * STOPPED, NOSTART, FAILED (a rank failed on an error it wrote of its
 * own, a Python exception, while other ranks ended the program normally:
 * the training is over, a relaunch would only repeat its end), or REFORM
 * (look at the GPUs, then ask elastic__run_retry and elastic__run_failures).
 * *status gets the exit status of the run if it ends here. */
enum elastic_run_next elastic__run_ended(const struct elastic_report_summary *sum,
					 int mstatus, int sig, int healed, int *status);

/* Whether to launch again: progress is whether the last launch moved the
 * job on (ranks asked to re-form, the GPUs changed, or elastic-run asked
 * for the re-form); planned whether elastic-run asked for it on the
 * controller's order. *stuck counts the failures in a row without progress
 * (reset by progress); *relaunches counts the relaunches nobody planned
 * (failures, lost nodes): a job resized by the controller for days is never
 * given up for that. Returns REFORM, STUCK (*stuck > max_stuck) or TOO_MANY
 * (*relaunches > max_relaunch). */
enum elastic_run_next elastic__run_retry(int progress, int planned, int *stuck,
					 int *relaunches, int max_stuck,
					 int max_relaunch);

/* Failures of the program's own: a launch in which a rank failed with an
 * error status (failed), and whether rank 0 committed a step during it
 * (committed). *failures counts such launches since the last committed
 * step. Returns FAILED when there are more than max_failures of them (the
 * job ends: with 1, the first failure is retried once, and a retry that
 * commits no step before failing ends it), else REFORM. */
enum elastic_run_next elastic__run_failures(int failed, int committed, int *failures,
					    int max_failures);

/* The launch bound: how long a launch may run before rank 0 commits its
 * first step, in seconds (0: none). configured is --launch-timeout (0:
 * off); slowest the longest a launch of this run took to its first commit
 * (0: none did yet). A job that has shown how long it takes gets
 * ELASTIC_LAUNCH_BOUND_FACTOR times that, at least ELASTIC_LAUNCH_BOUND_MIN_S
 * and at most configured: a C re-form that commits in 0.3 s is bounded at
 * 30 s, a PyTorch job whose first launch took 40 s to import and load at
 * 120 s. */
#define ELASTIC_LAUNCH_BOUND_FACTOR 3.0
#define ELASTIC_LAUNCH_BOUND_MIN_S  30.0
double elastic__launch_bound(double configured, double slowest);

/* ==== The clocks of a running launch: the launch bound (no step committed
 * in time; a growth in place not joined in time), the end of a launch whose
 * ranks all ended while mpirun runs on, and SIGKILL after a SIGTERM that
 * did not end it. watch.c feeds them what it saw each turn and carries out
 * their answer. */

/* How long mpirun may run on once every rank of the launch said how it
 * ended. */
#define ELASTIC_ENDED_SETTLE_S 10.0

/* How long a launch ended at a bound has after SIGTERM before SIGKILL. */
#define ELASTIC_BOUND_KILL_S 5.0

/* The launch's clocks (seconds of elastic__now()), written only here;
 * slowest_first outlives the launch: it is the run's. */
struct elastic_watch_clock {
	double t_first;	      /* rank 0 first committed in this launch (0: not yet) */
	double slowest_first; /* the longest a launch of the run took to that */
	double t_bound;	      /* the launch was ended at a bound (0: not) */
	int bound_killed;     /* ...and SIGKILLed after it did not end */
	double t_all_ended;   /* since when every rank said how it ended (0: not) */
};

/* What the watch saw in one turn. */
struct elastic_watch_seen {
	double now, t0;	    /* now, and when mpirun started */
	int committed;	    /* rank 0's record shows a commit in this launch */
	int all_ended;	    /* every rank said how it ended */
	int launch_timeout; /* --launch-timeout, s (0: no bound) */
	double t_join;	    /* a growth in place ordered then, not joined yet (0: none) */
};

enum elastic_watch_clock_act {
	ELASTIC_CLOCK_GO_ON,	    /* nothing to do */
	ELASTIC_CLOCK_UNTRAINED,    /* no step committed within the launch bound:
				  * end the launch (SIGTERM) and launch again */
	ELASTIC_CLOCK_JOIN_STALLED, /* a growth in place not joined within the
				     * launch bound (its ranks' start hangs,
				     * as when slurmctld restarted): end the
				     * launch (SIGTERM) and launch again */
	ELASTIC_CLOCK_LINGERING,    /* every rank ended ELASTIC_ENDED_SETTLE_S ago
				  * and mpirun runs on: end it (SIGTERM) */
	ELASTIC_CLOCK_KILL,	    /* ended at a bound and still there
				  * ELASTIC_BOUND_KILL_S after SIGTERM: SIGKILL */
};

/* 1 while rank 0's first commit is still looked for (none seen, the
 * launch not ended at a bound): the watch reads the record only then. */
int elastic__watch_clock_awaits_commit(const struct elastic_watch_clock *c);

/* A launch starts: its clocks at 0 (the run's slowest first commit kept). */
void elastic__watch_clock_start(struct elastic_watch_clock *c);

/* One turn of the clocks: updates c (the first commit, the all-ended
 * clock, bound_killed when it answers ELASTIC_CLOCK_KILL) and says what to
 * do. *bound gets the launch bound in force (s, 0: none), for the messages
 * of ELASTIC_CLOCK_UNTRAINED and JOIN_STALLED. Once the watch ended the
 * launch for UNTRAINED, JOIN_STALLED or LINGERING, it says when
 * (elastic__watch_clock_ended): from then on the only answers are GO_ON
 * and, once, KILL. */
enum elastic_watch_clock_act elastic__watch_clock(struct elastic_watch_clock *c,
						  const struct elastic_watch_seen *s,
						  double *bound);

/* The launch was ended (SIGTERM) at now. */
void elastic__watch_clock_ended(struct elastic_watch_clock *c, double now);

/* The watch's bounded waits (for the other releases of a shrink, for the
 * warm interpreters of a re-form, before GPUs left with no rank are taken
 * again), each on a clock of its own: since, when it began (0: not begun;
 * a time ahead of now puts the wait off until then). */
enum elastic_wait {
	ELASTIC_WAIT_BEGUN, /* it begins now (since = now): say what it waits for */
	ELASTIC_WAIT_ON,    /* within limit s of since */
	ELASTIC_WAIT_OVER,  /* limit s have passed */
};
enum elastic_wait elastic__wait(double *since, double now, double limit);

/* ==== The ranks' stop at a step boundary (SIGUSR1: a re-form, or a resize
 * in place that libelastic carries out), from the moment a change makes it
 * due to the signal, as a small state machine whose moves are these
 * functions and no other writes. */

struct elastic_stop {
	int due;  /* a stop is due; SIGUSR1 waits until the ranks can take it */
	int sent; /* SIGUSR1 was sent for it in this launch */
	int now;  /* ...without that wait: the launch ends (a rank failed on
		   * an error of its own) */
};

/* A launch begins: no stop. */
void elastic__stop_start(struct elastic_stop *s);

/* 1 when no stop is due or sent: a change may be planned. */
int elastic__stop_open(const struct elastic_stop *s);

/* 1 when a stop is due and not sent yet. */
int elastic__stop_pending(const struct elastic_stop *s);

/* A change was planned: due says whether the ranks must stop for it (0:
 * it needs no stop, e.g. a release acknowledged at once). */
void elastic__stop_set_due(struct elastic_stop *s, int due);

/* A rank failed on an error of its own: the launch ends, the others at
 * their next step boundary (a stop due now). */
void elastic__stop_failed(struct elastic_stop *s);

/* A resize in place took effect: the stop that asked for it is over. */
void elastic__stop_done(struct elastic_stop *s);

enum elastic_stop_act {
	ELASTIC_STOP_WAIT,	/* nothing to send now */
	ELASTIC_STOP_SEND,	/* send SIGUSR1 */
	ELASTIC_STOP_SEND_WARM, /* a re-form: send once the warm interpreters
				 * it needs serve (or their wait is over) */
};

/* Whether to ask the ranks now: ranks_ready says they can take a signal
 * (their handlers are set: rank 0's record exists), joining that the stop
 * asks a growth in place (no relaunch: no interpreter to wait for). */
enum elastic_stop_act elastic__stop_when(const struct elastic_stop *s, int ranks_ready,
					 int joining);

/* SIGUSR1 was sent. */
void elastic__stop_sent(struct elastic_stop *s);

/* ==== The resizes in place, a state machine (idle, joining, leaving,
 * healing) whose plans are pure functions: the growth onto new nodes, the
 * planned shrink of released GPUs, the heal after lost ranks. inplace_run.c
 * acts on the plans (files for libelastic, messages). */

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

/* ==== The job's re-forms, resizes in place and recovery times, counted for
 * elasticd's metrics (slurm_elastic_job_reforms_total,
 * ..._resizes_in_place_total, ..._recovery_seconds); inplace_run.c feeds
 * them from the run. */

/* The counts and the clocks of the recovery under way (elastic__now()). */
struct elastic_recovery {
	struct elastic_recovery_counts n; /* what elasticd is told */
	double t_open;	 /* a relaunch's event, until its first commit (0: none) */
	double t_loss;	 /* a rank's end first reported as a loss (0: none) */
	double t_stop;	 /* the ranks were asked to stop (SIGUSR1; 0: not) */
	double t_commit; /* a new step last seen committed at the launch's world */
	unsigned long long step_seen; /* that step */
	double t_read;		      /* rank 0's record last read */
};

/* What a relaunch follows. */
struct elastic_reform_in {
	int planned;  /* elastic-run asked the ranks to stop (an order, SIGUSR1) */
	int released; /* GPUs of the launched set on grants ordered released */
	int gained;   /* the job's set holds GPUs the launch did not use */
	int replaced; /* elastic-run asked it for GPUs whose rank failed */
};

/* Unplanned: failure. Planned: shrink for releases alone, grow for gains
 * alone, replace for GPUs left with no rank (and nothing else), other for
 * the rest (a reshape, SIGUSR1). */
enum elastic_reform_cause elastic__recovery_cause(const struct elastic_reform_in *in);

/* A rank's end (report.h how, value) that tells of a loss: a signal, or an
 * exit status other than 0, a re-form's or a planned leave's. */
int elastic__recovery_is_loss(int how, int value);

/* One recovery of seconds (< 0 counts as 0) into the histogram. */
void elastic__recovery_observe(struct elastic_recovery_counts *n, double seconds);

/* A rank's loss reported at t: kept unless an earlier one is still news
 * (reported after the last commit seen). */
void elastic__recovery_loss(struct elastic_recovery *rc, double t);

/* When the event behind a recovery happened: the loss reported, if it
 * came after the last commit seen, else fallback. */
double elastic__recovery_since(const struct elastic_recovery *rc, double fallback);

/* A relaunch's recovery starts at t (one under way keeps its earlier
 * start: the relaunches it took are one recovery). */
void elastic__recovery_open(struct elastic_recovery *rc, double t);

/* The first step committed after it, seen at now: observed, closed.
 * 1 if one was open, else 0. */
int elastic__recovery_close(struct elastic_recovery *rc, double now);

/* GPUs whose rank failed while the others went on stay held with no rank
 * for a wait before the job re-forms onto them: the first wait
 * (--replace-after, default ELASTIC_REPLACE_AFTER_S), doubled for each such
 * re-form that came less than ELASTIC_REPLACE_FORGET_S after the one before
 * (a GPU that fails its ranks again and again costs less and less), up to
 * ELASTIC_REPLACE_MAX_S or the first wait if longer. A failure that long
 * after the last such re-form waits the first wait again: a rank lost once
 * a day does not pay for the days before. */
#define ELASTIC_REPLACE_AFTER_S	 2
#define ELASTIC_REPLACE_MAX_S	 300.0
#define ELASTIC_REPLACE_FORGET_S 600.0

struct elastic_replace {
	int streak;    /* such re-forms, each less than the forget time after
			  the one before */
	double t_last; /* when the last one was asked (0: none) */
};

/* The wait for GPUs left with no rank since t, the first wait being first
 * seconds (> 0). */
double elastic__replace_wait(const struct elastic_replace *rp, double t, double first);

/* A re-form onto them asked at t. */
void elastic__replace_asked(struct elastic_replace *rp, double t);

/* A launch that cannot read the job's GPUs from Slurm (slurmctld restarting,
 * or not answering within its MessageTimeout) asks again: first after
 * ELASTIC_SLURM_ASK_AFTER_S, the wait doubling up to ELASTIC_SLURM_ASK_MAX_S,
 * until waited + the next wait would pass bound (the launch bound,
 * --launch-timeout; 0: no bound). */
#define ELASTIC_SLURM_ASK_AFTER_S 1.0
#define ELASTIC_SLURM_ASK_MAX_S	  8.0

/* The wait before ask number tries + 1, after tries failed asks (>= 1) over
 * waited seconds; -1: give up (the bound is spent). */
double elastic__slurm_ask_wait(int tries, double waited, int bound);

/* ==== The nodes lost under a launch. When mpirun ends and the ranks of a node
 * never said how they ended, that node's daemon or the node itself is gone;
 * Slurm may list its grant as running for a while yet (until slurmd reports
 * the step's end, or SlurmdTimeout for a dead node). Relaunching onto it would
 * fail again: the next launches leave such a node out while Slurm still lists
 * the jobs it held there. Once Slurm no longer lists them the node is
 * forgotten (a new grant there is welcome); if Slurm still lists them when the
 * hold ends, the job takes the node again (it was a daemon lost, not the
 * node), and a node lost again is held twice as long. A node whose daemon's
 * job (the grant whose step hosted it) Slurm no longer lists while it lists
 * the node's other jobs lost its ranks with that grant's end, not with the
 * node: it is not held out, and the job takes its other GPUs again at once. */

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
