/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/channel.h: the TCP job channel server (common/proto.h); it
 * calls the handlers registered with it, no other module. */
#ifndef ELASTICD_CHANNEL_H
#define ELASTICD_CHANNEL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"
#include "proto.h"

typedef struct ed_channel ed_channel_t;

/* What the channel calls for the frames it receives: a table registered at
 * start (elasticd.c), so that the channel knows no other module. Handlers
 * run inside ed_channel_poll: they may send (ed_channel_send_job) but never
 * poll, and they leave the work of a tick to the main loop. */
struct ed_channel_handlers {
	/* QUERY: the JOBINFO messages (job 0: all); returns the count (the
	 * channel frees *out, and drops their efficiency unless the query
	 * asked for it). */
	int (*query)(void *arg, uint32_t job, struct elastic_msg **out);
	/* HELLO, STATUS, ACK, authenticated as uid. Returns 0 to accept, or -1
	 * with err (the channel then sends ERROR and closes). conn_job is the
	 * job the connection registered for (0 none); a HELLO sets it. */
	int (*message)(void *arg, const struct elastic_msg *m, uid_t uid,
		       uint32_t *conn_job, elastic_error_t *err);
	/* A connection of job just registered (its first hello). */
	void (*job_connected)(void *arg, uint32_t job);
	/* ADMIN from uid: 0 and the resulting state in state (len bytes), or
	 * -1 with err (the channel sends ERROR). With m NULL: only the state
	 * ("" when nothing is paused or drained), for a QUERY's END. */
	int (*admin)(void *arg, const struct elastic_msg *m, uid_t uid, char *state,
		     size_t len, elastic_error_t *err);
};

/* idle_s: seconds a connection bound to no job may stay quiet (> 0). */
ed_channel_t *ed_channel_create(const char *host, int port, int idle_s,
				elastic_auth_t *auth, elastic_error_t *err);
void ed_channel_destroy(ed_channel_t *ch);
int ed_channel_port(const ed_channel_t *ch);
/* Register the handlers (copied) and their argument. */
void ed_channel_set_handlers(ed_channel_t *ch, const struct ed_channel_handlers *h,
			     void *arg);
/* Wait for and handle I/O up to timeout_ms; frames go to the handlers. */
void ed_channel_poll(ed_channel_t *ch, int timeout_ms);
/* Send m to the connection of job (if any). 0 sent/queued, -1 none/failed. */
int ed_channel_send_job(ed_channel_t *ch, uint32_t job, const struct elastic_msg *m);
int ed_channel_job_connected(const ed_channel_t *ch, uint32_t job);
/* Close a job's connection (its job ended). */
void ed_channel_drop_job(ed_channel_t *ch, uint32_t job);
/* Standing by (another elasticd acts): every message is answered with an
 * ERROR whose reason is why (it starts with ELASTIC_STANDBY_PREFIX, so that
 * jobs and elastic-ctl try the next address), and the connections open now
 * are closed. why NULL: acting again, messages go to the handlers. */
void ed_channel_set_standby(ed_channel_t *ch, const char *why);

/* Other sockets the channel's poll watches (the metrics endpoint): fill adds
 * up to max pollfds and returns how many; ready gets them back after the
 * poll, revents set. */
struct pollfd;
struct ed_poll_extra {
	int (*fill)(void *arg, struct pollfd *pf, int max);
	void (*ready)(void *arg, const struct pollfd *pf, int n);
	void *arg;
};
void ed_channel_set_extra(ed_channel_t *ch, const struct ed_poll_extra *x);
/* Connections open now (bound to a job or not). */
int ed_channel_connections(const ed_channel_t *ch);

#endif
