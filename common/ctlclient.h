/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/ctlclient.h: the job side of the controller channel: one connection
 * to elasticd that registers a job (hello), reconnects with backoff, sends
 * progress and acknowledgements, and hands over the orders that arrive, one
 * event at a time. elastic-run and elastic-ctl's stand-in job both use it;
 * what to do with an order is theirs. */
#ifndef ELASTIC_COMMON_CTLCLIENT_H
#define ELASTIC_COMMON_CTLCLIENT_H

#include <stdint.h>
#include <sys/types.h>

#include "proto.h"

#define ELASTIC_CTL_ADDRS 4

struct elastic_ctlclient {
	char host[256]; /* the controller now tried or connected to */
	int port;
	/* Every controller address (a primary and its backups), tried in turn:
	 * the next after a failed connection, a lost one, or a standby's
	 * refusal. */
	struct {
		char host[256];
		int port;
	} addr[ELASTIC_CTL_ADDRS];
	int naddr, cur;
	uint32_t job;
	/* Settings: elastic__ctl_init sets them, the caller may change them
	 * before the first elastic__ctl_next. */
	char node[ELASTIC_PROTO_NAME_MAX]; /* host named in the hello */
	const char *munge_socket;	   /* NULL: $ELASTIC_MUNGE_SOCKET or default */
	int connect_ms;			   /* connection timeout (2000) */
	double backoff_min, backoff_max;   /* s between attempts (0.5 doubling to 8) */
	double auth_retry;		   /* s before a retry after munge failed (5) */
	uid_t slurm_user; /* SlurmUser (slurm.conf): orders are taken from it and root */
	/* What the hello and status messages say: set by the caller. */
	int gpus;
	uint64_t step;
	struct elastic_recovery_counts rec; /* status: sent once not all zero */
	/* State. */
	int fd; /* -1: not connected */
	elastic_auth_t *auth;
	double next_try; /* monotonic time of the next connection attempt */
	double backoff;
	int failures;	 /* connections dropped or failed since the last hello */
	int rec_refused; /* the controller refused rec's keys (older than them) */
	/* a message that came with the answer to the hello, handed out next */
	int stashed;
	struct elastic_msg stash;
	uid_t stash_uid;
};

enum elastic_ctl_ev_type {
	ELASTIC_CTL_EV_NONE,	/* nothing happened within the timeout */
	ELASTIC_CTL_EV_HELLO,	/* connected; the hello went out */
	ELASTIC_CTL_EV_DOWN,	/* not connected (see down, err): retried later */
	ELASTIC_CTL_EV_MSG,	/* a message from the controller (msg) */
	ELASTIC_CTL_EV_IGNORED, /* a message from a uid that may not give orders */
};

enum elastic_ctl_down {
	ELASTIC_CTL_DOWN_AUTH,	  /* munge context could not be made */
	ELASTIC_CTL_DOWN_CONNECT, /* connection attempt failed */
	ELASTIC_CTL_DOWN_HELLO,	  /* connected, but the hello could not be sent */
	ELASTIC_CTL_DOWN_LOST,	  /* the connection broke or the controller closed it */
	ELASTIC_CTL_DOWN_STANDBY, /* that elasticd stands by: the next address is tried */
};

struct elastic_ctl_ev {
	enum elastic_ctl_ev_type type;
	enum elastic_ctl_down down; /* DOWN: where */
	int failures;		    /* DOWN: c->failures (1: the first since a hello) */
	char where[280];	    /* DOWN: "host:port" of the attempt that failed */
	elastic_error_t err;	    /* DOWN: why */
	uid_t uid;		    /* MSG, IGNORED: the sender */
	struct elastic_msg msg;	    /* MSG, IGNORED */
};

/* Parse "host:port" (ELASTIC_CONTROLLER), or a list "host:port,host:port"
 * (a primary, then its backups), into c with the default settings; nothing
 * is connected yet (elastic__ctl_next does, and retries). 0, or -1 with err
 * naming the bad value. */
int elastic__ctl_init(struct elastic_ctlclient *c, const char *spec, uint32_t job,
		      elastic_error_t *err);
/* The same from a host and a port already known. */
void elastic__ctl_init_at(struct elastic_ctlclient *c, const char *host, int port,
			  uint32_t job);
/* Close the connection and free the munge context; c can be set up again. */
void elastic__ctl_fini(struct elastic_ctlclient *c);

/* 1 when m is a standby elasticd's refusal (an ERROR whose reason begins
 * with ELASTIC_STANDBY_PREFIX): the next controller address is to be
 * tried. */
int elastic__ctl_is_standby(const struct elastic_msg *m);

static inline int elastic__ctl_connected(const struct elastic_ctlclient *c)
{
	return c->fd >= 0;
}

/* The next event within timeout_ms. Not connected: wait until the next
 * attempt is due (or the timeout passes: EV_NONE), then connect and send
 * the hello (EV_HELLO or EV_DOWN). Connected: one message (EV_MSG; from a
 * uid other than root, SlurmUser or ours: EV_IGNORED), or EV_NONE, or
 * EV_DOWN when the connection broke (it is closed and retried after the
 * backoff). */
enum elastic_ctl_ev_type elastic__ctl_next(struct elastic_ctlclient *c, int timeout_ms,
					   struct elastic_ctl_ev *ev);

/* Progress: the committed step and samples/s (rate < 0: leave it out), with
 * the GPUs in c->gpus and, once any is not zero, the counts in c->rec
 * (unless the controller refused them). Sent now if connected; else the step goes with the
 * next hello. 0, or -1 with err when not connected or the send failed (the
 * connection is then closed and retried). */
int elastic__ctl_status(struct elastic_ctlclient *c, uint64_t step, double rate,
			elastic_error_t *err);

/* 1 if m is a controller's error that refuses one of the keys of
 * c->rec as unknown (an elasticd older than them; it closes the
 * connection): elastic__ctl_next then leaves them out from the next
 * status on. */
int elastic__ctl_refuses_rec(const struct elastic_msg *m);

/* Answer a release order: result ELASTIC_ACK_OK, or ELASTIC_ACK_REFUSED with
 * reason (may be NULL). 0, or -1 with err as for elastic__ctl_status. */
int elastic__ctl_ack(struct elastic_ctlclient *c, uint64_t order, uint32_t grant,
		     int result, const char *reason, elastic_error_t *err);

/* Give a grant back that the job cannot use (a launch's step in it never
 * began; reason: srun's words, may be NULL): elasticd cancels it. 0, or -1
 * with err as for elastic__ctl_status. */
int elastic__ctl_giveback(struct elastic_ctlclient *c, uint32_t grant, const char *reason,
			  elastic_error_t *err);

#endif
