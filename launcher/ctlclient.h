/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/ctlclient.h: elastic-run's connection to elasticd: registers the
 * job, reports progress, takes grant and release orders, acknowledges them. */
#ifndef ELASTIC_LAUNCHER_CTLCLIENT_H
#define ELASTIC_LAUNCHER_CTLCLIENT_H

#include <stdint.h>

#include "proto.h"

#define ELASTIC_CTL_MAX_PENDING 64

struct elastic_ctlclient {
	char host[256];
	int port;
	uint32_t job;
	int fd; /* -1: not connected */
	elastic_auth_t *auth;
	double next_try; /* monotonic time of the next connection attempt */
	double backoff;
	int gpus; /* what the job runs on now, for hello/status */
	uint64_t step;
	/* Release orders: the grants stay out of the job from the order on;
	 * acked once the job runs without them (ack_due set by the caller). */
	int nrel, ack_due;
	struct {
		uint64_t order;
		uint32_t grant;
		int done, acked;
	} rel[ELASTIC_CTL_MAX_PENDING];
	int ngrow;
	uint32_t grow[ELASTIC_CTL_MAX_PENDING]; /* grants announced as started */
};

/* From "host:port" (ELASTIC_CONTROLLER). 0, or -1 with err for a bad value.
 * Connecting happens later, in elastic__ctl_poll, and is retried. */
int elastic__ctl_init(struct elastic_ctlclient *c, const char *spec, uint32_t job,
		      elastic_error_t *err);
void elastic__ctl_fini(struct elastic_ctlclient *c);

/* Connect when due, read what arrived within timeout_ms. Returns 1 when an
 * order arrived that needs a re-form (a release, or a grant that started),
 * else 0. Never fails: problems are logged through say and retried. */
int elastic__ctl_poll(struct elastic_ctlclient *c, int timeout_ms,
		      void (*say)(const char *fmt, ...));

/* Progress: the committed step and samples/s (0: unknown), with the GPUs in
 * c->gpus, sent now if connected (else the step goes with the next hello). */
void elastic__ctl_status(struct elastic_ctlclient *c, uint64_t step, double rate,
			 void (*say)(const char *fmt, ...));

/* The job runs without every grant ordered released so far (call it when
 * the old mpirun has ended and the next launch set is chosen): acknowledge
 * them to the controller, now or as soon as connected. */
void elastic__ctl_releases_done(struct elastic_ctlclient *c);

/* 1 if grant was ordered released (it must not be used again). */
int elastic__ctl_released(const struct elastic_ctlclient *c, uint32_t grant);

#endif
