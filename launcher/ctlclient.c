/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/ctlclient.c: elastic-run's controller channel (common/proto):
 * munge-sealed messages over one TCP connection, reconnecting with backoff. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctlclient.h"

static double _mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int elastic__ctl_init(struct elastic_ctlclient *c, const char *spec, uint32_t job,
		      elastic_error_t *err)
{
	const char *colon = spec ? strrchr(spec, ':') : NULL;
	char *end;
	long port;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	if (!colon || colon == spec || (size_t)(colon - spec) >= sizeof(c->host))
		return elastic__fail(err, EINVAL,
				     "ELASTIC_CONTROLLER=%s is not host:port",
				     spec ? spec : "");
	port = strtol(colon + 1, &end, 10);
	if (*end || end == colon + 1 || port < 1 || port > 65535)
		return elastic__fail(err, EINVAL,
				     "ELASTIC_CONTROLLER=%s: port is not in [1, 65535]",
				     spec);
	memcpy(c->host, spec, colon - spec);
	c->host[colon - spec] = '\0';
	c->port = (int)port;
	c->job = job;
	c->backoff = 0.5;
	return 0;
}

static void _drop(struct elastic_ctlclient *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->next_try = _mono() + c->backoff;
	if (c->backoff < 8)
		c->backoff *= 2;
}

void elastic__ctl_fini(struct elastic_ctlclient *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	elastic_auth_destroy(c->auth);
	c->auth = NULL;
}

static void _ack_releases(struct elastic_ctlclient *c, void (*say)(const char *fmt, ...));

static int _send(struct elastic_ctlclient *c, const struct elastic_msg *m,
		 void (*say)(const char *fmt, ...))
{
	elastic_error_t err;
	if (c->fd < 0)
		return -1;
	if (elastic_proto_send(c->fd, c->auth, m, &err) < 0) {
		say("controller %s:%d: send failed: %s (reconnecting)", c->host, c->port,
		    err.text);
		_drop(c);
		return -1;
	}
	return 0;
}

static void _connect(struct elastic_ctlclient *c, void (*say)(const char *fmt, ...))
{
	elastic_error_t err;
	char host[64];

	if (!c->auth && !(c->auth = elastic_auth_create(NULL, &err))) {
		say("controller: munge: %s", err.text);
		c->next_try = _mono() + 5;
		return;
	}
	if ((c->fd = elastic_proto_connect(c->host, c->port, 2000, &err)) < 0) {
		if (c->backoff <= 0.5)
			say("controller %s:%d: %s (retrying)", c->host, c->port,
			    err.text);
		_drop(c);
		return;
	}
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	struct elastic_msg h = {.type = ELASTIC_MSG_HELLO,
				.present = ELASTIC_K_JOB | ELASTIC_K_HOST |
					   ELASTIC_K_GPUS | ELASTIC_K_STEP,
				.job = c->job,
				.gpus = (uint32_t)c->gpus,
				.step = c->step};
	snprintf(h.host, sizeof(h.host), "%s", host);
	if (_send(c, &h, say) == 0) {
		c->backoff = 0.5;
		say("controller %s:%d: registered job %u (%d GPUs)", c->host, c->port,
		    c->job, c->gpus);
	}
}

static int _known(const uint32_t *list, int n, uint32_t v)
{
	for (int i = 0; i < n; i++)
		if (list[i] == v)
			return 1;
	return 0;
}

int elastic__ctl_released(const struct elastic_ctlclient *c, uint32_t grant)
{
	for (int i = 0; i < c->nrel; i++)
		if (c->rel[i].grant == grant)
			return 1;
	return 0;
}

int elastic__ctl_poll(struct elastic_ctlclient *c, int timeout_ms,
		      void (*say)(const char *fmt, ...))
{
	struct elastic_msg m;
	elastic_error_t err;
	uid_t uid;
	gid_t gid;
	int act = 0, rc;

	if (c->fd < 0) {
		if (_mono() >= c->next_try)
			_connect(c, say);
		if (c->fd < 0) {
			if (timeout_ms > 0)
				usleep(timeout_ms * 1000);
			return 0;
		}
	}
	while ((rc = elastic_proto_recv(c->fd, c->auth, &m, &uid, &gid, timeout_ms,
					&err)) == 1) {
		timeout_ms = 0;
		/* Orders come only from the controller (root or SlurmUser). */
		if (uid != 0 && uid != geteuid()) {
			say("controller: message from uid %u ignored", (unsigned)uid);
			continue;
		}
		if (m.job != c->job) {
			say("controller: message about job %u ignored (this is job %u)",
			    m.job, c->job);
			continue;
		}
		switch (m.type) {
		case ELASTIC_MSG_RELEASE:
			if (!elastic__ctl_released(c, m.grant)) {
				if (c->nrel ==
				    ELASTIC_CTL_MAX_PENDING) { /* forget the oldest */
					memmove(c->rel, c->rel + 1,
						sizeof(c->rel[0]) * --c->nrel);
				}
				c->rel[c->nrel].order = m.order;
				c->rel[c->nrel].acked = c->rel[c->nrel].done = 0;
				c->rel[c->nrel++].grant = m.grant;
				say("controller: release grant %u (order %llu): re-forming at the next step boundary",
				    m.grant, (unsigned long long)m.order);
				act = 1;
			}
			break;
		case ELASTIC_MSG_GRANT:
			if (!_known(c->grow, c->ngrow, m.grant)) {
				if (c->ngrow < ELASTIC_CTL_MAX_PENDING)
					c->grow[c->ngrow++] = m.grant;
				say("controller: grant %u started (%u GPUs on %s): growing at the next step boundary",
				    m.grant, m.gpus, m.node);
				act = 1;
			}
			break;
		case ELASTIC_MSG_TARGET:
			say("controller: target %u GPUs", m.target);
			break;
		case ELASTIC_MSG_ERROR:
			say("controller refused: %s", m.reason);
			break;
		default:
			say("controller: unexpected %s message ignored",
			    elastic_msg_type_name(m.type));
		}
	}
	if (rc < 0) {
		say("controller %s:%d: %s (reconnecting)", c->host, c->port, err.text);
		_drop(c);
	}
	if (c->ack_due)
		_ack_releases(c, say);
	return act;
}

void elastic__ctl_status(struct elastic_ctlclient *c, uint64_t step, double rate,
			 void (*say)(const char *fmt, ...))
{
	c->step = step;
	struct elastic_msg m = {.type = ELASTIC_MSG_STATUS,
				.present = ELASTIC_K_JOB | ELASTIC_K_GPUS |
					   ELASTIC_K_STEP | ELASTIC_K_RATE,
				.job = c->job,
				.gpus = (uint32_t)c->gpus,
				.step = step,
				.rate = rate};
	_send(c, &m, say); /* not connected: the next hello carries the step */
}

void elastic__ctl_releases_done(struct elastic_ctlclient *c)
{
	for (int i = 0; i < c->nrel; i++)
		c->rel[i].done = 1;
	c->ack_due = 1;
}

static void _ack_releases(struct elastic_ctlclient *c, void (*say)(const char *fmt, ...))
{
	for (int i = 0; i < c->nrel && c->fd >= 0; i++) {
		if (c->rel[i].acked || !c->rel[i].done)
			continue;
		struct elastic_msg k = {.type = ELASTIC_MSG_ACK,
					.present = ELASTIC_K_JOB | ELASTIC_K_ORDER |
						   ELASTIC_K_RESULT | ELASTIC_K_GRANT,
					.job = c->job,
					.order = c->rel[i].order,
					.grant = c->rel[i].grant,
					.result = ELASTIC_ACK_OK};
		if (_send(c, &k, say) < 0)
			return;
		say("controller: job runs without grant %u now (acknowledged)", k.grant);
		c->rel[i].acked = 1;
	}
	if (c->fd >= 0)
		c->ack_due = 0;
}
