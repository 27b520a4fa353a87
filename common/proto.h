/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/proto.h: the elasticd <-> job channel: frames, messages, munge sealing. */
#ifndef ELASTIC_COMMON_PROTO_H
#define ELASTIC_COMMON_PROTO_H

/*
 * Wire format (version 1), over one TCP connection per job (opened by the
 * job, kept open; elasticd pushes its orders on it) or per query:
 *
 *   frame   = header body
 *   header  = 12 bytes: magic "ELJC", version (1 byte, = 1), type (1 byte),
 *             reserved (2 bytes, zero), body length (4 bytes, big endian,
 *             1 .. ELASTIC_PROTO_MAX_BODY)
 *   body    = a MUNGE credential (text, "MUNGE:...:") whose sealed payload is
 *             the message: the payload is authenticated and integrity
 *             protected by munge, and munged refuses to decode a credential
 *             twice (replay).
 *   payload = Key=Value lines ('\n' after every line, at most
 *             ELASTIC_PROTO_MAX_PAYLOAD bytes); the first line is type=NAME
 *             and must name the header's type; every other key must be one
 *             the type allows, at most once, and the required ones present.
 *             Numbers are plain decimal (no sign, no leading zeros, no
 *             spaces), names are [A-Za-z0-9._-], text is printable ASCII.
 *
 * Anything else is rejected with a reason in elastic_error_t: the receiver
 * drops the message, logs the reason and closes the connection.
 *
 * Who may send what is not decided here: elasticd accepts a message about
 * job X only from X's owner uid or root/SlurmUser (see plugin/elasticd).
 *
 * The conversation (as elasticd holds it):
 *   job -> hello                 on connecting (again after any reconnect;
 *                                one connection per job: a new hello
 *                                replaces the old connection)
 *   ctl -> target                at once, and whenever the policy's size
 *                                for the job changes
 *   ctl -> grant (one per grant) for every grant running now, and for each
 *                                new grant when it starts
 *   ctl -> release               for a grant to give back by the deadline;
 *                                sent again after a reconnect while pending
 *   job -> ack (order, grant)    when the job runs without the grant:
 *                                elasticd cancels the grant at once (an ack
 *                                naming the grant also matches an order of
 *                                an elasticd that restarted meanwhile);
 *                                result=refused or silence: cancelled at
 *                                the deadline anyway
 *   job -> giveback (grant)      a grant the job cannot use (a launch's
 *                                step in it never began): elasticd cancels
 *                                it at once, and may grant again
 *   job -> status                progress, at will (step, rate, GPUs; the
 *                                re-form and recovery counts once there
 *                                are any: an elasticd older than them
 *                                refuses the keys, the job then leaves
 *                                them out, see common/ctlclient.c)
 *   ctl -> error                 why a message was refused; then it closes
 * Anyone (any authenticated uid) may send query on a fresh connection and
 * gets one jobinfo per elastic job and an end; elasticd then closes the
 * connection unless a hello bound it to a job. The end's reason, when
 * present, says what administrators paused or drained.
 * root or SlurmUser may send admin (action=pause|drain|resume[, node]; any
 * uid action=show) on a fresh connection: the answer is an end whose reason
 * is the resulting state, or an error.
 */

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf.h"

#define ELASTIC_PROTO_MAGIC	  "ELJC"
#define ELASTIC_PROTO_VERSION	  1
#define ELASTIC_PROTO_HDR_LEN	  12
#define ELASTIC_PROTO_MAX_BODY	  4096 /* bytes of munge credential */
#define ELASTIC_PROTO_MAX_PAYLOAD 1024 /* bytes of Key=Value text */
#define ELASTIC_PROTO_NAME_MAX	  64   /* host/node/user names, with NUL */
#define ELASTIC_PROTO_TEXT_MAX	  128  /* reason text, with NUL */
#define ELASTIC_PROTO_NODES_MAX	  256  /* node list, with NUL */
/* How a standby elasticd's ERROR reason begins: the peer tries the next
 * controller address. */
#define ELASTIC_STANDBY_PREFIX "standby:"
/* The refusal of an elasticd in its first half second, while it claims the
 * controller role: the peer may wait for it. */
#define ELASTIC_STANDBY_STARTING ELASTIC_STANDBY_PREFIX " this elasticd is starting"
#define ELASTIC_PROTO_MODEL_MAX	 448 /* JOBINFO model, with NUL */

enum elastic_msg_type {
	ELASTIC_MSG_HELLO = 1, /* job -> ctl: register (job, host, gpus, step[, rate]) */
	ELASTIC_MSG_STATUS,    /* job -> ctl: progress (job, gpus, step[, rate]) */
	ELASTIC_MSG_GRANT, /* ctl -> job: grant started (job, order, grant, node, gpus) */
	ELASTIC_MSG_RELEASE, /* ctl -> job: give grant back by deadline (ms since epoch)
			      */
	ELASTIC_MSG_TARGET,  /* ctl -> job: the policy's size for the job (job, order,
				target) */
	ELASTIC_MSG_ACK, /* job -> ctl: order done or refused (job, order, result[..]) */
	ELASTIC_MSG_QUERY,    /* anyone -> ctl: status of one job or all ([job]) */
	ELASTIC_MSG_JOBINFO,  /* ctl -> querier: one job's status */
	ELASTIC_MSG_END,      /* ctl -> querier: end of the answer (count) */
	ELASTIC_MSG_ERROR,    /* ctl -> peer: why its message was refused (reason[, job]),
				sent just before the controller closes the connection */
	ELASTIC_MSG_ADMIN,    /* root/SlurmUser -> ctl: pause, drain, resume or show
				elastic activity (action[, node]); answered by end */
	ELASTIC_MSG_GIVEBACK, /* job -> ctl: a grant it cannot use (job, grant[,
				 reason]): its launch's step there never began */
	ELASTIC_MSG_TYPE_MAX = ELASTIC_MSG_GIVEBACK,
};

enum elastic_ack_result {
	ELASTIC_ACK_OK = 0,
	ELASTIC_ACK_REFUSED = 1,
};

enum elastic_job_state {
	ELASTIC_STATE_STEADY = 0,
	ELASTIC_STATE_GROWING,
	ELASTIC_STATE_SHRINKING,
	ELASTIC_STATE_PENDING, /* the elastic job itself is not running yet */
};

/* Bits of elastic_msg.present, one per key. */
enum elastic_msg_key {
	ELASTIC_K_JOB = 1u << 0,
	ELASTIC_K_HOST = 1u << 1,
	ELASTIC_K_GPUS = 1u << 2,
	ELASTIC_K_STEP = 1u << 3,
	ELASTIC_K_RATE = 1u << 4,
	ELASTIC_K_ORDER = 1u << 5,
	ELASTIC_K_GRANT = 1u << 6,
	ELASTIC_K_NODE = 1u << 7,
	ELASTIC_K_DEADLINE = 1u << 8,
	ELASTIC_K_TARGET = 1u << 9,
	ELASTIC_K_RESULT = 1u << 10,
	ELASTIC_K_REASON = 1u << 11,
	ELASTIC_K_USER = 1u << 12,
	ELASTIC_K_MIN = 1u << 13,
	ELASTIC_K_MAX = 1u << 14,
	ELASTIC_K_NODES = 1u << 15,
	ELASTIC_K_STATE = 1u << 16,
	ELASTIC_K_RESIZED = 1u << 17,
	ELASTIC_K_CONNECTED = 1u << 18,
	ELASTIC_K_GRANTS = 1u << 19,
	ELASTIC_K_COUNT = 1u << 20,
	ELASTIC_K_ACTION = 1u << 21,
	ELASTIC_K_REFORMS = 1u << 22,
	ELASTIC_K_INPLACE = 1u << 23,
	ELASTIC_K_RECOVERY = 1u << 24,
	ELASTIC_K_RECOVERY_MS = 1u << 25,
	ELASTIC_K_EFFICIENCY = 1u << 26,
	ELASTIC_K_SCALING = 1u << 27, /* QUERY: scaling=1 asks for efficiencies */
	ELASTIC_K_MODEL = 1u << 28,
};

/* Why elastic-run relaunched mpirun (a re-form). */
enum elastic_reform_cause {
	ELASTIC_REFORM_FAILURE, /* mpirun ended without an order (ranks or a node lost) */
	ELASTIC_REFORM_GROW,	/* planned: the job's set gained GPUs */
	ELASTIC_REFORM_SHRINK,	/* planned: GPUs ordered released */
	ELASTIC_REFORM_OTHER,	/* planned otherwise (SIGUSR1, a reshape) */
	ELASTIC_REFORM_REPLACE, /* planned: a rank again on GPUs whose rank failed */
	ELASTIC_REFORM_CAUSES,
};

/* A resize done inside the running mpirun, no relaunch. */
enum elastic_resize_kind {
	ELASTIC_RESIZE_HEAL,   /* ranks lost, the survivors healed (ULFM) */
	ELASTIC_RESIZE_GROW,   /* new ranks joined */
	ELASTIC_RESIZE_SHRINK, /* ranks on released GPUs left */
	ELASTIC_RESIZE_KINDS,
};

/* Recovery seconds (from the event to the first step committed after it):
 * bucket i counts those <= elastic_recovery_le[i] and above the bound
 * before; the last bucket those above every bound. */
#define ELASTIC_RECOVERY_BUCKETS 10
extern const double elastic_recovery_le[ELASTIC_RECOVERY_BUCKETS - 1];

/* A job's re-forms, resizes in place and recoveries since elastic-run
 * started: cumulative, so a lost STATUS loses nothing. On the wire (STATUS,
 * optional): reforms=F,G,S,O,R inplace=H,G,S recovery=B0,..,B9 recovery_ms=N. */
struct elastic_recovery_counts {
	uint32_t reforms[ELASTIC_REFORM_CAUSES];
	uint32_t in_place[ELASTIC_RESIZE_KINDS];
	uint32_t bucket[ELASTIC_RECOVERY_BUCKETS]; /* not cumulative */
	uint64_t sum_ms;			   /* of every recovery, in ms */
};

/* "failure", "grow", "shrink", "other", "replace"; "heal", "grow", "shrink". */
const char *elastic_reform_cause_name(int cause);
const char *elastic_resize_kind_name(int kind);

/* One decoded message. Fields not used by the type stay zero; present says
 * which keys were on the wire. */
struct elastic_msg {
	enum elastic_msg_type type;
	uint32_t present;
	uint32_t job;			   /* elastic job id */
	char host[ELASTIC_PROTO_NAME_MAX]; /* HELLO: the host of rank 0 */
	uint32_t gpus;	   /* HELLO/STATUS: GPUs in use; GRANT: GPUs of the grant;
			   JOBINFO: GPUs held */
	uint64_t step;	   /* last committed step */
	double rate;	   /* throughput, samples/s (>= 0, finite) */
	double efficiency; /* JOBINFO: speedup per GPU its measured scaling
			      predicts at the GPUs it holds (>= 0); only to a
			      QUERY with scaling=1 (older clients refuse the key) */
	uint32_t scaling;  /* QUERY: 1 asks for the efficiency and the model */
	/* JOBINFO, only to a QUERY with scaling=1: the measured scaling at the
	 * sizes it was measured at and at the GPUs held and targeted, as
	 * "N:MEASURED:PREDICTED:EFFICIENCY" joined by ",", N ascending
	 * (MEASURED empty where not measured; samples/s; efficiency is the
	 * predicted speedup per GPU) */
	char model[ELASTIC_PROTO_MODEL_MAX];
	uint64_t order;			   /* id of a controller order, echoed by ACK */
	uint32_t grant;			   /* grant job id */
	char node[ELASTIC_PROTO_NAME_MAX]; /* GRANT: the node of the grant */
	uint64_t deadline_ms;		   /* RELEASE: ms since the epoch */
	uint32_t target;		   /* TARGET/JOBINFO: GPUs the policy wants */
	enum elastic_ack_result result;
	char reason[ELASTIC_PROTO_TEXT_MAX]; /* ACK: why refused */
	char user[ELASTIC_PROTO_NAME_MAX];   /* JOBINFO: owner */
	uint32_t min, max;		     /* JOBINFO: bounds */
	char nodes[ELASTIC_PROTO_NODES_MAX]; /* JOBINFO: nodes, "node1,node2" */
	enum elastic_job_state state;	     /* JOBINFO */
	uint64_t resized;   /* JOBINFO: last resize, s since epoch; 0 never */
	uint32_t connected; /* JOBINFO: 1 if the job's channel is up */
	uint32_t grants;    /* JOBINFO: grant jobs held */
	uint32_t count;	    /* END: JOBINFO messages sent */
	char action[16];    /* ADMIN: pause, drain, resume or show */
	struct elastic_recovery_counts rec; /* STATUS: reforms, inplace, recovery,
					       recovery_ms */
};

struct elastic_proto_header {
	enum elastic_msg_type type;
	uint32_t length; /* of the body */
};

/* Name of a type ("hello", ...) or NULL; and back (0 if unknown). */
const char *elastic_msg_type_name(int type);
enum elastic_msg_type elastic_msg_type_from_name(const char *name);
const char *elastic_job_state_name(enum elastic_job_state s);

/* Check a message against its type's rules (required keys present, only
 * allowed keys, values in range) as the decoder does. 0 or -1/EINVAL. */
int elastic_proto_check(const struct elastic_msg *m, elastic_error_t *err);

/* Write m as payload text into out (cap bytes, NUL-terminated); returns the
 * length without the NUL, or -1 (EINVAL: m breaks the rules; EMSGSIZE: too
 * long). Only keys marked in m->present are written. */
int elastic_proto_encode(const struct elastic_msg *m, char *out, size_t cap,
			 elastic_error_t *err);

/* Decode payload text (len bytes, need not be NUL-terminated) into m.
 * 0, or -1 with errno EINVAL/EMSGSIZE and err saying what was wrong. */
int elastic_proto_decode(const char *buf, size_t len, struct elastic_msg *m,
			 elastic_error_t *err);

/* Write a frame header for a body of length bytes into out. */
void elastic_proto_header_pack(uint8_t out[ELASTIC_PROTO_HDR_LEN],
			       enum elastic_msg_type type, uint32_t length);

/* Check and read a received header. 0, or -1/EPROTO with err. */
int elastic_proto_header_parse(const uint8_t in[ELASTIC_PROTO_HDR_LEN],
			       struct elastic_proto_header *h, elastic_error_t *err);

/* Check a whole body before it is given to munge: printable ASCII only,
 * starts with "MUNGE:". 0, or -1/EPROTO. */
int elastic_proto_body_check(const char *body, size_t len, elastic_error_t *err);

/* ---- munge sealing and blocking I/O (common/proto_io.c, links libmunge) ---- */

typedef struct elastic_auth elastic_auth_t;

/* A munge context on socket (NULL: $ELASTIC_MUNGE_SOCKET, else munge's own
 * default). Returns NULL with err on failure. */
elastic_auth_t *elastic_auth_create(const char *socket, elastic_error_t *err);
void elastic_auth_destroy(elastic_auth_t *a);

/* Seal m into a whole frame: *frame (malloc'd, caller frees) of *len bytes. */
int elastic_proto_seal(elastic_auth_t *a, const struct elastic_msg *m, uint8_t **frame,
		       size_t *len, elastic_error_t *err);

/* Open a received frame (header h, body of h->length bytes): munge decode,
 * payload decode, type check. Fills m, *uid, *gid. 0 or -1 with err. */
int elastic_proto_open(elastic_auth_t *a, const struct elastic_proto_header *h,
		       const char *body, struct elastic_msg *m, uid_t *uid, gid_t *gid,
		       elastic_error_t *err);

/* Blocking helpers for clients (libelastic, elastic-ctl). */
int elastic_proto_connect(const char *host, int port, int timeout_ms,
			  elastic_error_t *err);
int elastic_proto_send(int fd, elastic_auth_t *a, const struct elastic_msg *m,
		       elastic_error_t *err);
/* Wait up to timeout_ms (-1: forever) for one frame and open it. Returns 1
 * with a message, 0 on timeout, -1 on error or when the peer closed
 * (errno ECONNRESET then). */
int elastic_proto_recv(int fd, elastic_auth_t *a, struct elastic_msg *m, uid_t *uid,
		       gid_t *gid, int timeout_ms, elastic_error_t *err);

#endif
