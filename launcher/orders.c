/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/orders.c: elastic-run's book of the controller's orders, and the
 * loop that feeds it from the channel. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "orders.h"

void elastic__orders_init(struct elastic_orders *o, uint32_t job)
{
	memset(o, 0, sizeof(*o));
	o->job = job;
}

static int _known(const uint32_t *list, int n, uint32_t v)
{
	for (int i = 0; i < n; i++)
		if (list[i] == v)
			return 1;
	return 0;
}

int elastic__orders_released(const struct elastic_orders *o, uint32_t grant)
{
	for (int i = 0; i < o->nrel; i++)
		if (o->rel[i].grant == grant)
			return 1;
	return 0;
}

/* The book is bounded, and a job resized for days sees thousands of
 * grants: make room for one more entry. A started grant ordered released
 * is never counted again (grant ids are not reused), so its entry in the
 * grow list can go; a release already acknowledged whose grant is no
 * longer in the grow list can go too. Only when neither frees a slot does
 * the oldest entry go. */
static void _forget_grow(struct elastic_orders *o)
{
	int k = 0;
	for (int i = 0; i < o->ngrow; i++)
		if (!elastic__orders_released(o, o->grow[i])) {
			o->grow_gpus[k] = o->grow_gpus[i];
			o->grow[k++] = o->grow[i];
		}
	o->ngrow = k;
	if (o->ngrow == ELASTIC_ORDERS_MAX) {
		o->ngrow--;
		memmove(o->grow, o->grow + 1, sizeof(o->grow[0]) * (size_t)o->ngrow);
		memmove(o->grow_gpus, o->grow_gpus + 1,
			sizeof(o->grow_gpus[0]) * (size_t)o->ngrow);
	}
}

static void _forget_release(struct elastic_orders *o)
{
	int k = 0;
	for (int i = 0; i < o->nrel; i++)
		if (!o->rel[i].acked || _known(o->grow, o->ngrow, o->rel[i].grant))
			o->rel[k++] = o->rel[i];
	o->nrel = k;
	if (o->nrel == ELASTIC_ORDERS_MAX) /* forget the oldest */
		memmove(o->rel, o->rel + 1, sizeof(o->rel[0]) * (size_t)--o->nrel);
}

static int _release(struct elastic_orders *o, const struct elastic_msg *m,
		    elastic_say_fn say)
{
	for (int i = 0; i < o->nrel; i++) {
		if (o->rel[i].grant != m->grant)
			continue;
		/* Ordered again (a resent order, or an elasticd that took over
		 * from the one that ordered it): nothing new to do, but the
		 * acknowledgement goes again, under the new order, once the
		 * job runs without it (an ack sent to a controller that died
		 * meanwhile is lost with it). */
		o->rel[i].order = m->order;
		if (o->rel[i].acked) {
			o->rel[i].acked = 0;
			o->ack_due = 1;
			say("controller: release grant %u (order %llu) again: acknowledging it again",
			    m->grant, (unsigned long long)m->order);
		}
		return 0;
	}
	if (o->nrel == ELASTIC_ORDERS_MAX)
		_forget_release(o);
	o->rel[o->nrel].order = m->order;
	o->rel[o->nrel].acked = o->rel[o->nrel].done = 0;
	o->rel[o->nrel++].grant = m->grant;
	say("controller: release grant %u (order %llu): re-forming at the next step boundary",
	    m->grant, (unsigned long long)m->order);
	return 1;
}

static int _grant(struct elastic_orders *o, const struct elastic_msg *m,
		  elastic_say_fn say)
{
	if (_known(o->grow, o->ngrow, m->grant))
		return 0;
	if (o->ngrow == ELASTIC_ORDERS_MAX)
		_forget_grow(o);
	o->grow_gpus[o->ngrow] = m->gpus;
	o->grow[o->ngrow++] = m->grant;
	say("controller: grant %u started (%u GPUs on %s): growing at the next step boundary",
	    m->grant, m->gpus, m->node);
	return 1;
}

int elastic__orders_new_gpus(const struct elastic_orders *o,
			     int (*known)(uint32_t grant, const void *arg),
			     const void *arg)
{
	int n = 0;
	for (int i = 0; i < o->ngrow; i++)
		if (!elastic__orders_released(o, o->grow[i]) && !known(o->grow[i], arg))
			n += (int)o->grow_gpus[i];
	return n;
}

int elastic__orders_forget_ended(struct elastic_orders *o,
				 int (*listed)(uint32_t grant, const void *arg),
				 const void *arg)
{
	int k = 0, n = o->ngrow;
	for (int i = 0; i < n; i++)
		if (elastic__orders_released(o, o->grow[i]) || listed(o->grow[i], arg)) {
			o->grow_gpus[k] = o->grow_gpus[i];
			o->grow[k++] = o->grow[i];
		}
	o->ngrow = k;
	return n - k;
}

int elastic__orders_take(struct elastic_orders *o, const struct elastic_msg *m,
			 elastic_say_fn say)
{
	if (m->job != o->job) {
		say("controller: message about job %u ignored (this is job %u)", m->job,
		    o->job);
		return 0;
	}
	int act = 0;
	switch (m->type) {
	case ELASTIC_MSG_RELEASE:
		act = _release(o, m, say);
		break;
	case ELASTIC_MSG_GRANT:
		act = _grant(o, m, say);
		break;
	case ELASTIC_MSG_TARGET:
		o->target = m->target;
		say("controller: target %u GPUs", m->target);
		break;
	case ELASTIC_MSG_ERROR:
		say("controller refused: %s", m->reason);
		break;
	default:
		say("controller: unexpected %s message ignored",
		    elastic_msg_type_name(m->type));
		break;
	}
	o->unheeded |= act;
	return act;
}

int elastic__orders_heed(struct elastic_orders *o)
{
	int was = o->unheeded;
	o->unheeded = 0;
	return was;
}

void elastic__orders_releases_done(struct elastic_orders *o)
{
	elastic__orders_releases_done_unless(o, NULL, NULL);
}

void elastic__orders_releases_done_unless(struct elastic_orders *o,
					  int (*in_use)(uint32_t grant, const void *arg),
					  const void *arg)
{
	for (int i = 0; i < o->nrel; i++)
		if (!in_use || !in_use(o->rel[i].grant, arg))
			o->rel[i].done = 1;
	o->ack_due = 1;
}

int elastic__orders_next_ack(const struct elastic_orders *o)
{
	for (int i = 0; i < o->nrel; i++)
		if (o->rel[i].done && !o->rel[i].acked)
			return i;
	return -1;
}

/* A connection lost while sending: logged as the old client did. */
static void _send_failed(const struct elastic_ctlclient *c, const elastic_error_t *err,
			 elastic_say_fn say)
{
	say("controller %s:%d: send failed: %s (reconnecting)", c->host, c->port,
	    err->text);
}

static void _ack_releases(struct elastic_orders *o, struct elastic_ctlclient *c,
			  elastic_say_fn say)
{
	elastic_error_t err;
	int i;

	while (elastic__ctl_connected(c) && (i = elastic__orders_next_ack(o)) >= 0) {
		if (elastic__ctl_ack(c, o->rel[i].order, o->rel[i].grant, ELASTIC_ACK_OK,
				     NULL, &err) < 0) {
			_send_failed(c, &err, say);
			return;
		}
		say("controller: job runs without grant %u now (acknowledged)",
		    o->rel[i].grant);
		o->rel[i].acked = 1;
	}
	if (elastic__ctl_connected(c))
		o->ack_due = 0;
}

/* Send the givebacks not told to the controller connected now. */
static void _give_back_due(struct elastic_orders *o, struct elastic_ctlclient *c,
			   elastic_say_fn say)
{
	elastic_error_t err;

	for (int i = 0; i < o->ngive && elastic__ctl_connected(c); i++) {
		if (o->give[i].told)
			continue;
		if (elastic__ctl_giveback(c, o->give[i].grant, o->give[i].reason, &err) <
		    0) {
			_send_failed(c, &err, say);
			return;
		}
		o->give[i].told = 1;
	}
}

void elastic__orders_give_back(struct elastic_orders *o, struct elastic_ctlclient *c,
			       uint32_t grant, const char *reason, elastic_say_fn say)
{
	int i = 0;

	while (i < o->ngive && o->give[i].grant != grant)
		i++;
	if (i == o->ngive) {
		if (o->ngive == ELASTIC_ORDERS_MAX) {
			memmove(o->give, o->give + 1,
				sizeof(o->give[0]) * (ELASTIC_ORDERS_MAX - 1));
			i = --o->ngive;
		}
		o->ngive++;
	}
	o->give[i].grant = grant;
	o->give[i].told = 0;
	snprintf(o->give[i].reason, sizeof(o->give[i].reason), "%s",
		 reason ? reason : "");
	if (!elastic__ctl_connected(c))
		say("controller %s:%d: not connected: grant %u is given back once it answers",
		    c->host, c->port, grant);
	_give_back_due(o, c, say);
}

/* Log a channel event; 1 when the loop should stop reading for now. */
static int _event(const struct elastic_ctlclient *c, const struct elastic_ctl_ev *ev,
		  elastic_say_fn say)
{
	switch (ev->type) {
	case ELASTIC_CTL_EV_HELLO:
		say("controller %s:%d: registered job %u (%d GPUs)", c->host, c->port,
		    c->job, c->gpus);
		return 0;
	case ELASTIC_CTL_EV_IGNORED:
		say("controller: message from uid %u ignored", (unsigned)ev->uid);
		return 0;
	case ELASTIC_CTL_EV_DOWN:
		if (ev->down == ELASTIC_CTL_DOWN_AUTH)
			say("controller: munge: %s", ev->err.text);
		else if (ev->down == ELASTIC_CTL_DOWN_HELLO)
			_send_failed(c, &ev->err, say);
		else if (ev->down == ELASTIC_CTL_DOWN_LOST)
			say("controller %s: %s (reconnecting)", ev->where, ev->err.text);
		else if (ev->down == ELASTIC_CTL_DOWN_STANDBY) {
			if (ev->failures <= c->naddr)
				say("controller %s: %s (trying %s:%d)", ev->where,
				    ev->err.text, c->host, c->port);
		} else if (ev->failures == 1)
			say("controller %s: %s (retrying)", ev->where, ev->err.text);
		return 1;
	default:
		return ev->type == ELASTIC_CTL_EV_NONE;
	}
}

int elastic__orders_poll(struct elastic_orders *o, struct elastic_ctlclient *c,
			 int timeout_ms, elastic_say_fn say)
{
	struct elastic_ctl_ev ev;
	int act = 0;

	for (;;) {
		elastic__ctl_next(c, timeout_ms, &ev);
		if (ev.type == ELASTIC_CTL_EV_MSG)
			act |= elastic__orders_take(o, &ev.msg, say);
		else if (ev.type == ELASTIC_CTL_EV_HELLO)
			/* (a controller started since knows nothing of them) */
			for (int i = 0; i < o->ngive; i++)
				o->give[i].told = 0;
		if (ev.type != ELASTIC_CTL_EV_MSG && _event(c, &ev, say))
			break;
		timeout_ms = 0;
	}
	if (o->ack_due)
		_ack_releases(o, c, say);
	_give_back_due(o, c, say);
	return act;
}

void elastic__orders_status(struct elastic_ctlclient *c, uint64_t step, double rate,
			    elastic_say_fn say)
{
	elastic_error_t err;

	if (!elastic__ctl_connected(c)) {
		c->step = step; /* the next hello carries it */
		return;
	}
	if (elastic__ctl_status(c, step, rate, &err) < 0)
		_send_failed(c, &err, say);
}
