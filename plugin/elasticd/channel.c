/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/channel.c: elasticd's TCP job channel server (non-blocking, one poll
 * loop).
 *
 * No user can jam it: a connection that is not bound to a job (no hello) is
 * closed once a query is answered, and after ChannelIdleTimeout without a byte
 * from its peer; one uid holds at most UID_CONNS connections; a full table makes
 * room for a new connection by closing the quietest one not bound to a job.
 * A job's own connection (one per job) is never timed out or evicted. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "channel.h"
#include "log.h"

#define MAX_CONNS     1024
#define UID_CONNS     (MAX_CONNS / 4) /* connections one uid may hold */
#define MAX_OUT	      (256 * 1024)    /* a peer that reads nothing is dropped */
#define FRAME_TIMEOUT 10000	      /* ms to finish a frame once started */

struct _conn {
	int fd;
	char peer[64];
	uint8_t in[ELASTIC_PROTO_HDR_LEN + ELASTIC_PROTO_MAX_BODY];
	size_t inlen;
	uint64_t frame_start_ms, active_ms; /* active: opened or last byte in */
	uint8_t *out;
	size_t outlen, outcap;
	uint32_t job; /* registered for this job (hello), 0 none */
	uid_t uid;    /* of its first valid message, when uid_known */
	int uid_known;
	int closing; /* close once out is flushed */
	int dead;
};

struct ed_channel {
	int lfd, port;
	uint64_t idle_ms; /* a connection bound to no job may be quiet */
	elastic_auth_t *auth;
	struct _conn *conns;
	int nconns;
	struct ed_channel_handlers h; /* registered by elasticd.c; none: refused */
	void *harg;
	struct ed_poll_extra extra;	      /* other sockets in the same poll */
	char standby[ELASTIC_PROTO_TEXT_MAX]; /* "": acting; else the refusal */
};

#define EXTRA_FDS 32

ed_channel_t *ed_channel_create(const char *host, int port, int idle_s,
				elastic_auth_t *auth, elastic_error_t *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE},
			*res = NULL;
	char service[16];
	ed_channel_t *ch = calloc(1, sizeof(*ch));
	int one = 1, rc;

	if (!ch) {
		elastic__errorf(err, "out of memory");
		return NULL;
	}
	ch->conns = calloc(MAX_CONNS, sizeof(*ch->conns));
	if (!ch->conns) {
		free(ch);
		elastic__errorf(err, "out of memory");
		return NULL;
	}
	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(host && *host ? host : NULL, service, &hints, &res);
	if (rc != 0) {
		elastic__errorf(err, "listen address %s:%d: %s", host ? host : "*", port,
				gai_strerror(rc));
		goto fail;
	}
	ch->lfd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (ch->lfd < 0) {
		elastic__errorf(err, "socket: %s", strerror(errno));
		goto fail;
	}
	setsockopt(ch->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ch->lfd, res->ai_addr, res->ai_addrlen) < 0 ||
	    listen(ch->lfd, 128) < 0) {
		elastic__errorf(err, "cannot listen on %s:%d: %s",
				host && *host ? host : "*", port, strerror(errno));
		close(ch->lfd);
		goto fail;
	}
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	getsockname(ch->lfd, (struct sockaddr *)&sa, &sl);
	ch->port =
		ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
					       : ((struct sockaddr_in *)&sa)->sin_port);
	freeaddrinfo(res);
	ch->auth = auth;
	ch->idle_ms = idle_s > 0 ? (uint64_t)idle_s * 1000 : 10000;
	return ch;
fail:
	if (res)
		freeaddrinfo(res);
	free(ch->conns);
	free(ch);
	return NULL;
}

static void _close(struct _conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->dead = 1;
}

void ed_channel_destroy(ed_channel_t *ch)
{
	if (!ch)
		return;
	for (int i = 0; i < ch->nconns; i++)
		if (!ch->conns[i].dead)
			_close(&ch->conns[i]);
	close(ch->lfd);
	free(ch->conns);
	free(ch);
}

int ed_channel_port(const ed_channel_t *ch)
{
	return ch->port;
}

static void _flush(struct _conn *c)
{
	while (c->outlen > 0) {
		ssize_t w = send(c->fd, c->out, c->outlen, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (w <= 0) {
			c->outlen = 0;
			c->closing = 1;
			return;
		}
		memmove(c->out, c->out + w, c->outlen - (size_t)w);
		c->outlen -= (size_t)w;
	}
}

static int _queue(ed_channel_t *ch, struct _conn *c, const struct elastic_msg *m)
{
	uint8_t *frame;
	size_t len;
	elastic_error_t err;
	if (c->dead || c->fd < 0)
		return -1;
	if (elastic_proto_seal(ch->auth, m, &frame, &len, &err) < 0) {
		ed_error("cannot seal a %s message to %s: %s",
			 elastic_msg_type_name(m->type), c->peer, err.text);
		return -1;
	}
	if (c->outlen + len > MAX_OUT) {
		free(frame);
		ed_error("%s reads nothing (%zu bytes queued): closing", c->peer,
			 c->outlen);
		c->closing = 1;
		c->outlen = 0;
		return -1;
	}
	if (c->outlen + len > c->outcap) {
		size_t cap = c->outcap ? c->outcap * 2 : 8192;
		while (cap < c->outlen + len)
			cap *= 2;
		uint8_t *n = realloc(c->out, cap);
		if (!n) {
			free(frame);
			return -1;
		}
		c->out = n;
		c->outcap = cap;
	}
	memcpy(c->out + c->outlen, frame, len);
	c->outlen += len;
	free(frame);
	_flush(c);
	return 0;
}

/* Tell the peer why it is refused, and close once that is sent. */
static void _refuse(ed_channel_t *ch, struct _conn *c, uint32_t job, const char *why)
{
	struct elastic_msg m = {.type = ELASTIC_MSG_ERROR, .present = ELASTIC_K_REASON};
	snprintf(m.reason, sizeof(m.reason), "%s", why);
	if (job) {
		m.job = job;
		m.present |= ELASTIC_K_JOB;
	}
	/* Reasons come from our own code; keep only what the codec allows. */
	for (char *p = m.reason; *p; p++)
		if (*p < 0x20 || *p > 0x7e)
			*p = '?';
	_queue(ch, c, &m);
	c->closing = 1;
	c->inlen = 0;
}

/* Refuse with a log line naming the peer. */
static void _reject(ed_channel_t *ch, struct _conn *c, uid_t uid, int known_uid,
		    uint32_t job, const char *why)
{
	char who[32] = "unauthenticated";
	if (known_uid)
		snprintf(who, sizeof(who), "uid %u", (unsigned)uid);
	ed_error("rejected message from %s (%s): %s", c->peer, who, why);
	_refuse(ch, c, job, why);
}

/* The first valid message of c names its uid: refuse it when that uid holds
 * UID_CONNS connections already, so one user cannot fill the table. */
static int _uid_cap(ed_channel_t *ch, struct _conn *c, uid_t uid)
{
	int n = 0;
	for (int i = 0; i < ch->nconns; i++) {
		const struct _conn *o = &ch->conns[i];
		n += !o->dead && o->uid_known && o->uid == uid;
	}
	if (n >= UID_CONNS) {
		char why[96];
		snprintf(why, sizeof(why),
			 "uid %u holds %d connections already (limit %d per uid)",
			 (unsigned)uid, n, UID_CONNS);
		_reject(ch, c, uid, 1, 0, why);
		return -1;
	}
	c->uid = uid;
	c->uid_known = 1;
	return 0;
}

/* A query or admin message answered: only a job keeps its connection. */
static void _answered(struct _conn *c)
{
	if (!c->job && c->outlen == 0 && !c->dead)
		_close(c);
	else if (!c->job)
		c->closing = 1;
}

static void _frame(ed_channel_t *ch, struct _conn *c,
		   const struct elastic_proto_header *h)
{
	struct elastic_msg m;
	elastic_error_t err;
	uid_t uid;
	gid_t gid;

	if (elastic_proto_open(ch->auth, h, (const char *)c->in + ELASTIC_PROTO_HDR_LEN,
			       &m, &uid, &gid, &err) < 0) {
		_reject(ch, c, 0, 0, 0, err.text);
		return;
	}
	if (!c->uid_known && _uid_cap(ch, c, uid) < 0)
		return;
	if (ch->standby[0]) {
		ed_debug("%s from %s (uid %u): %s", elastic_msg_type_name(m.type),
			 c->peer, (unsigned)uid, ch->standby);
		_refuse(ch, c, 0, ch->standby);
		return;
	}
	if (m.type == ELASTIC_MSG_QUERY) {
		struct elastic_msg *info = NULL;
		int n = ch->h.query ? ch->h.query(ch->harg,
						  m.present & ELASTIC_K_JOB ? m.job : 0,
						  &info)
				    : 0;
		for (int i = 0; i < n; i++) {
			/* a client that did not ask may not know the key */
			if (!(m.present & ELASTIC_K_SCALING) || !m.scaling)
				info[i].present &=
					~(ELASTIC_K_EFFICIENCY | ELASTIC_K_MODEL);
			_queue(ch, c, &info[i]);
		}
		free(info);
		struct elastic_msg end = {.type = ELASTIC_MSG_END,
					  .present = ELASTIC_K_COUNT,
					  .count = (uint32_t)n};
		if (ch->h.admin &&
		    ch->h.admin(ch->harg, NULL, uid, end.reason, sizeof(end.reason),
				&err) == 0 &&
		    end.reason[0])
			end.present |= ELASTIC_K_REASON;
		_queue(ch, c, &end);
		_answered(c);
		return;
	}
	if (m.type == ELASTIC_MSG_ADMIN) {
		struct elastic_msg end = {.type = ELASTIC_MSG_END,
					  .present = ELASTIC_K_COUNT | ELASTIC_K_REASON};
		if (c->job || !ch->h.admin ||
		    ch->h.admin(ch->harg, &m, uid, end.reason, sizeof(end.reason), &err) <
			    0) {
			_reject(ch, c, uid, 1, 0,
				c->job || !ch->h.admin
					? "admin messages come on a connection of their own"
					: err.text);
			return;
		}
		_queue(ch, c, &end);
		_answered(c);
		return;
	}
	uint32_t before = c->job;
	if (!ch->h.message) {
		_reject(ch, c, uid, 1, m.job, "elasticd is not ready for messages");
		return;
	}
	if (ch->h.message(ch->harg, &m, uid, &c->job, &err) < 0) {
		_reject(ch, c, uid, 1, m.job, err.text);
		return;
	}
	if (m.type == ELASTIC_MSG_HELLO && before == 0) {
		/* One connection per job: a new hello replaces the old one. */
		for (int i = 0; i < ch->nconns; i++) {
			struct _conn *o = &ch->conns[i];
			if (o != c && !o->dead && o->job == c->job) {
				ed_info("job %u: new connection from %s replaces %s",
					c->job, c->peer, o->peer);
				o->job = 0;
				o->closing = 1;
			}
		}
		if (ch->h.job_connected)
			ch->h.job_connected(ch->harg, c->job);
	}
}

static void _read(ed_channel_t *ch, struct _conn *c)
{
	for (;;) {
		struct elastic_proto_header h;
		elastic_error_t err;
		size_t want = ELASTIC_PROTO_HDR_LEN;
		if (c->inlen >= ELASTIC_PROTO_HDR_LEN) {
			if (elastic_proto_header_parse(c->in, &h, &err) < 0) {
				_reject(ch, c, 0, 0, 0, err.text);
				return;
			}
			want += h.length;
		}
		if (c->inlen < want) {
			ssize_t r = recv(c->fd, c->in + c->inlen, want - c->inlen,
					 MSG_DONTWAIT);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			if (r <= 0) {
				if (c->inlen > 0)
					ed_error(
						"%s closed in the middle of a frame (%zu bytes)",
						c->peer, c->inlen);
				else if (c->job)
					ed_info("job %u: connection from %s closed",
						c->job, c->peer);
				_close(c);
				return;
			}
			c->active_ms = ed_now_ms();
			if (c->inlen == 0)
				c->frame_start_ms = c->active_ms;
			c->inlen += (size_t)r;
			continue;
		}
		_frame(ch, c, &h);
		c->inlen = 0;
		if (c->closing || c->dead)
			return;
	}
}

static const char *_who(const struct _conn *c, char *buf, size_t len)
{
	if (!c->uid_known)
		return "unauthenticated";
	snprintf(buf, len, "uid %u", (unsigned)c->uid);
	return buf;
}

/* The table is full: close the connection bound to no job that has been
 * quiet longest, for a new one; its slot, or -1 when every one is a job's. */
static int _evict(ed_channel_t *ch)
{
	int v = -1;
	char who[32];

	for (int i = 0; i < ch->nconns; i++) {
		const struct _conn *c = &ch->conns[i];
		if (!c->dead && !c->job &&
		    (v < 0 || c->active_ms < ch->conns[v].active_ms))
			v = i;
	}
	if (v < 0) {
		ed_error("too many connections (%d), all jobs': refusing one", MAX_CONNS);
		return -1;
	}
	ed_error("too many connections (%d): closing %s (%s), the quietest without a job",
		 MAX_CONNS, ch->conns[v].peer, _who(&ch->conns[v], who, sizeof(who)));
	_close(&ch->conns[v]);
	return v;
}

void ed_channel_set_handlers(ed_channel_t *ch, const struct ed_channel_handlers *h,
			     void *arg)
{
	ch->h = *h;
	ch->harg = arg;
}

void ed_channel_set_extra(ed_channel_t *ch, const struct ed_poll_extra *x)
{
	ch->extra = *x;
}

int ed_channel_connections(const ed_channel_t *ch)
{
	int n = 0;
	for (int i = 0; i < ch->nconns; i++)
		n += !ch->conns[i].dead;
	return n;
}

/* Accept every connection waiting, each into a free slot (or the slot of
 * the connection evicted for it); one with no room is closed. */
static void _accept(ed_channel_t *ch)
{
	for (;;) {
		struct sockaddr_storage sa;
		socklen_t sl = sizeof(sa);
		int fd = accept4(ch->lfd, (struct sockaddr *)&sa, &sl,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);
		int slot = -1;
		if (fd < 0)
			break;
		for (int i = 0; i < ch->nconns; i++)
			if (ch->conns[i].dead) {
				slot = i;
				break;
			}
		if (slot < 0 && ch->nconns < MAX_CONNS)
			slot = ch->nconns++;
		if (slot < 0 && (slot = _evict(ch)) < 0) {
			close(fd);
			continue;
		}
		struct _conn *c = &ch->conns[slot];
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->active_ms = ed_now_ms();
		int one = 1;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		char addr[INET6_ADDRSTRLEN] = "?";
		int port = 0;
		if (sa.ss_family == AF_INET) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
			inet_ntop(AF_INET, &s4->sin_addr, addr, sizeof(addr));
			port = ntohs(s4->sin_port);
		} else if (sa.ss_family == AF_INET6) {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;
			inet_ntop(AF_INET6, &s6->sin6_addr, addr, sizeof(addr));
			port = ntohs(s6->sin6_port);
		}
		snprintf(c->peer, sizeof(c->peer), "%s:%d", addr, port);
	}
}

void ed_channel_poll(ed_channel_t *ch, int timeout_ms)
{
	struct pollfd pf[MAX_CONNS + 1 + EXTRA_FDS];
	int map[MAX_CONNS + 1], n = 0, nx = 0;
	uint64_t now = ed_now_ms();
	char who[32];

	pf[n].fd = ch->lfd;
	pf[n].events = POLLIN;
	map[n++] = -1;
	for (int i = 0; i < ch->nconns; i++) {
		struct _conn *c = &ch->conns[i];
		if (c->dead)
			continue;
		if (c->closing && c->outlen == 0) {
			_close(c);
			continue;
		}
		if (c->inlen > 0 && now - c->frame_start_ms > FRAME_TIMEOUT) {
			ed_error("%s: frame not finished in time: closing", c->peer);
			_close(c);
			continue;
		}
		if (!c->job && now - c->active_ms > ch->idle_ms) {
			ed_info("%s (%s): idle connection not bound to a job: closing",
				c->peer, _who(c, who, sizeof(who)));
			_close(c);
			continue;
		}
		pf[n].fd = c->fd;
		pf[n].events = (c->closing ? 0 : POLLIN) | (c->outlen ? POLLOUT : 0);
		map[n++] = i;
	}
	if (ch->extra.fill)
		nx = ch->extra.fill(ch->extra.arg, pf + n, EXTRA_FDS);
	if (poll(pf, (nfds_t)(n + nx), timeout_ms) <= 0)
		return;
	if (nx)
		ch->extra.ready(ch->extra.arg, pf + n, nx);
	for (int k = 1; k < n; k++) {
		struct _conn *c = &ch->conns[map[k]];
		if (c->dead)
			continue;
		if (pf[k].revents & POLLOUT)
			_flush(c);
		if (pf[k].revents & (POLLIN | POLLHUP | POLLERR)) {
			if (c->closing) {
				_close(c);
				continue;
			}
			_read(ch, c);
		}
	}
	if (pf[0].revents & POLLIN)
		_accept(ch);
}

int ed_channel_send_job(ed_channel_t *ch, uint32_t job, const struct elastic_msg *m)
{
	for (int i = 0; i < ch->nconns; i++) {
		struct _conn *c = &ch->conns[i];
		if (!c->dead && !c->closing && c->job == job)
			return _queue(ch, c, m);
	}
	return -1;
}

int ed_channel_job_connected(const ed_channel_t *ch, uint32_t job)
{
	for (int i = 0; i < ch->nconns; i++) {
		const struct _conn *c = &ch->conns[i];
		if (!c->dead && !c->closing && c->job == job)
			return 1;
	}
	return 0;
}

void ed_channel_set_standby(ed_channel_t *ch, const char *why)
{
	if (!why) {
		ch->standby[0] = '\0';
		return;
	}
	snprintf(ch->standby, sizeof(ch->standby), "%s", why);
	for (int i = 0; i < ch->nconns; i++)
		if (!ch->conns[i].dead)
			_close(&ch->conns[i]);
}

void ed_channel_drop_job(ed_channel_t *ch, uint32_t job)
{
	for (int i = 0; i < ch->nconns; i++) {
		struct _conn *c = &ch->conns[i];
		if (!c->dead && c->job == job) {
			c->job = 0;
			c->closing = 1;
		}
	}
}
