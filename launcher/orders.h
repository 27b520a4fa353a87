/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/orders.h: elastic-run's book of the controller's orders: grants
 * ordered released stay out of the job and are acknowledged once the job
 * runs without them; grants that started make the job grow. The book is
 * pure; elastic__orders_poll drives it from the channel (common/ctlclient). */
#ifndef ELASTIC_LAUNCHER_ORDERS_H
#define ELASTIC_LAUNCHER_ORDERS_H

#include <stdint.h>

#include "ctlclient.h"

#define ELASTIC_ORDERS_MAX 64

typedef void (*elastic_say_fn)(const char *fmt, ...);

struct elastic_orders {
	uint32_t job;
	/* Release orders: acked once the job runs without them (ack_due). */
	int nrel, ack_due;
	struct {
		uint64_t order;
		uint32_t grant;
		int done, acked;
	} rel[ELASTIC_ORDERS_MAX];
	int ngrow;
	uint32_t grow[ELASTIC_ORDERS_MAX];	/* grants announced as started */
	uint32_t grow_gpus[ELASTIC_ORDERS_MAX]; /* their GPUs, as announced */
	uint32_t
		target; /* GPUs the controller last said the job should hold; 0: none yet */
	/* An order that needs a re-form was taken and not yet acted on
	 * (elastic__orders_heed): whoever polls the channel takes the orders,
	 * the watch acts on them. */
	int unheeded;
	/* Grants the job gives back (unusable): told again after each hello,
	 * since the controller that heard them may be gone, and a new one
	 * never announced them. The oldest go once the book is full. */
	int ngive;
	struct {
		uint32_t grant;
		int told;
		char reason[ELASTIC_PROTO_TEXT_MAX];
	} give[ELASTIC_ORDERS_MAX];
};

void elastic__orders_init(struct elastic_orders *o, uint32_t job);

/* Take one message from the controller: 1 when it is an order that needs a
 * re-form (a new release, or a grant that started; it is then unheeded too),
 * else 0. Messages about another job are ignored. say logs what happened. */
int elastic__orders_take(struct elastic_orders *o, const struct elastic_msg *m,
			 elastic_say_fn say);

/* 1 when an order that needs a re-form was taken since the last call, else
 * 0; the orders count as acted on from then. Called where the job acts on
 * the book, and before each look at Slurm that chooses a launch set (Slurm
 * lists a grant before elasticd tells of it, and the look leaves out the
 * grants ordered released): an order taken after that look, in the launch,
 * waits for the watch. */
int elastic__orders_heed(struct elastic_orders *o);

/* 1 if grant was ordered released (it must not be used again). */
int elastic__orders_released(const struct elastic_orders *o, uint32_t grant);

/* GPUs of the grants announced as started, not ordered released, for which
 * known(grant, arg) is 0 (e.g. not in the set launched on): what the job
 * would gain by the controller's word, before Slurm is asked. */
int elastic__orders_new_gpus(const struct elastic_orders *o,
			     int (*known)(uint32_t grant, const void *arg),
			     const void *arg);

/* Forget the grants announced as started for which listed(grant, arg) is
 * 0: Slurm, asked after the announcement, no longer lists them (they ended
 * on their own: a lost node, a scancel), so they add nothing. Returns how
 * many were forgotten. */
int elastic__orders_forget_ended(struct elastic_orders *o,
				 int (*listed)(uint32_t grant, const void *arg),
				 const void *arg);

/* The job runs without every grant ordered released so far (call it when
 * the old mpirun has ended and the next launch set is chosen): they are due
 * to be acknowledged. */
void elastic__orders_releases_done(struct elastic_orders *o);

/* The same for the grants in_use(grant, arg) says the job no longer uses
 * (a planned shrink in place: the ranks of some released grants left,
 * others may still run on theirs). */
void elastic__orders_releases_done_unless(struct elastic_orders *o,
					  int (*in_use)(uint32_t grant, const void *arg),
					  const void *arg);

/* The next release to acknowledge (done, not acked yet): its index, or -1. */
int elastic__orders_next_ack(const struct elastic_orders *o);

/* Give grant back to the controller on c (reason: why it is unusable):
 * sent now when connected, and again after each reconnection. */
void elastic__orders_give_back(struct elastic_orders *o, struct elastic_ctlclient *c,
			       uint32_t grant, const char *reason, elastic_say_fn say);

/* On the channel c: read what arrived within timeout_ms into the book and
 * send the acknowledgements and the givebacks that are due. Returns 1 when an order arrived
 * that needs a re-form, else 0. Never fails: problems are logged through
 * say and the connection is retried. */
int elastic__orders_poll(struct elastic_orders *o, struct elastic_ctlclient *c,
			 int timeout_ms, elastic_say_fn say);

/* Progress to the controller (elastic__ctl_status), failures logged. */
void elastic__orders_status(struct elastic_ctlclient *c, uint64_t step, double rate,
			    elastic_say_fn say);

#endif
