/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/stopask.h: the ranks' stop at a step boundary (SIGUSR1: a
 * re-form, or a resize in place that libelastic carries out), from the
 * moment a change makes it due to the signal, as a small state machine
 * whose moves are these functions and no other writes (stopask.c). */
#ifndef ELASTIC_LAUNCHER_STOPASK_H
#define ELASTIC_LAUNCHER_STOPASK_H

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

#endif
