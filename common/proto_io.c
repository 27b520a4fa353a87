/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/proto_io.c: munge sealing of job channel frames and blocking socket I/O. */
#include "config.h"

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
#include <time.h>
#include <unistd.h>
#include <munge.h>

#include "io.h"
#include "proto.h"

#define _fail elastic__fail

struct elastic_auth {
	munge_ctx_t enc; /* munge wants separate contexts for encode and decode */
	munge_ctx_t dec;
};

elastic_auth_t *elastic_auth_create(const char *socket, elastic_error_t *err)
{
	elastic_auth_t *a = calloc(1, sizeof(*a));
	if (!socket || !*socket)
		socket = getenv("ELASTIC_MUNGE_SOCKET");
	if (!a) {
		elastic__errorf(err, "out of memory");
		return NULL;
	}
	a->enc = munge_ctx_create();
	a->dec = munge_ctx_create();
	if (!a->enc || !a->dec) {
		elastic__errorf(err, "munge_ctx_create failed");
		goto fail;
	}
	if (socket && *socket) {
		munge_err_t e = munge_ctx_set(a->enc, MUNGE_OPT_SOCKET, socket);
		if (e == EMUNGE_SUCCESS)
			e = munge_ctx_set(a->dec, MUNGE_OPT_SOCKET, socket);
		if (e != EMUNGE_SUCCESS) {
			elastic__errorf(err, "munge socket '%s': %s", socket,
					munge_strerror(e));
			goto fail;
		}
	}
	return a;
fail:
	elastic_auth_destroy(a);
	errno = EINVAL;
	return NULL;
}

void elastic_auth_destroy(elastic_auth_t *a)
{
	if (!a)
		return;
	if (a->enc)
		munge_ctx_destroy(a->enc);
	if (a->dec)
		munge_ctx_destroy(a->dec);
	free(a);
}

int elastic_proto_seal(elastic_auth_t *a, const struct elastic_msg *m, uint8_t **frame,
		       size_t *len, elastic_error_t *err)
{
	char payload[ELASTIC_PROTO_MAX_PAYLOAD + 1];
	char *cred = NULL;
	int n = elastic_proto_encode(m, payload, sizeof(payload), err);
	munge_err_t e;
	size_t clen;
	uint8_t *f;

	if (n < 0)
		return -1;
	e = munge_encode(&cred, a->enc, payload, n);
	if (e != EMUNGE_SUCCESS) {
		const char *detail = munge_ctx_strerror(a->enc);
		return _fail(err, EACCES, "munge_encode: %s",
			     detail ? detail : munge_strerror(e));
	}
	clen = strlen(cred);
	if (clen > ELASTIC_PROTO_MAX_BODY) {
		free(cred);
		return _fail(err, EMSGSIZE, "credential of %zu bytes over the limit %d",
			     clen, ELASTIC_PROTO_MAX_BODY);
	}
	f = malloc(ELASTIC_PROTO_HDR_LEN + clen);
	if (!f) {
		free(cred);
		return _fail(err, ENOMEM, "out of memory");
	}
	elastic_proto_header_pack(f, m->type, (uint32_t)clen);
	memcpy(f + ELASTIC_PROTO_HDR_LEN, cred, clen);
	free(cred);
	*frame = f;
	*len = ELASTIC_PROTO_HDR_LEN + clen;
	return 0;
}

int elastic_proto_open(elastic_auth_t *a, const struct elastic_proto_header *h,
		       const char *body, struct elastic_msg *m, uid_t *uid, gid_t *gid,
		       elastic_error_t *err)
{
	char cred[ELASTIC_PROTO_MAX_BODY + 1];
	void *payload = NULL;
	int plen = 0, rc;
	munge_err_t e;
	uid_t u;
	gid_t g;

	if (h->length == 0 || h->length > ELASTIC_PROTO_MAX_BODY)
		return _fail(err, EPROTO, "body length %u out of range", h->length);
	if (elastic_proto_body_check(body, h->length, err) < 0)
		return -1;
	memcpy(cred, body, h->length);
	cred[h->length] = '\0';
	e = munge_decode(cred, a->dec, &payload, &plen, &u, &g);
	if (e != EMUNGE_SUCCESS) {
		const char *detail = munge_ctx_strerror(a->dec);
		free(payload);
		return _fail(err, EACCES, "munge credential rejected: %s",
			     detail ? detail : munge_strerror(e));
	}
	rc = elastic_proto_decode(payload, (size_t)plen, m, err);
	free(payload);
	if (rc < 0)
		return -1;
	if (m->type != h->type)
		return _fail(err, EPROTO, "header says %s but the sealed payload is %s",
			     elastic_msg_type_name(h->type),
			     elastic_msg_type_name(m->type));
	if (uid)
		*uid = u;
	if (gid)
		*gid = g;
	return 0;
}

int elastic_proto_connect(const char *host, int port, int timeout_ms,
			  elastic_error_t *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL, *ai;
	char service[16];
	int fd = -1, rc, saved = 0;

	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(host, service, &hints, &res);
	if (rc != 0)
		return _fail(err, EHOSTUNREACH, "controller %s:%d: %s", host, port,
			     gai_strerror(rc));
	for (ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0)
			continue;
		rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
		if (rc < 0 && errno == EINPROGRESS) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			int soerr = 0;
			socklen_t sl = sizeof(soerr);
			if (poll(&p, 1, timeout_ms) == 1 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 &&
			    soerr == 0)
				rc = 0;
			else
				errno = soerr ? soerr : ETIMEDOUT;
		}
		if (rc == 0)
			break;
		saved = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		return _fail(err, saved ? saved : ECONNREFUSED, "controller %s:%d: %s",
			     host, port, strerror(saved ? saved : ECONNREFUSED));
	/* Back to blocking; the helpers below poll themselves. */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

/* send(2) as an elastic__io_fn: MSG_NOSIGNAL, so that a closed peer is an
 * error here, not a SIGPIPE. */
static ssize_t _send(int fd, void *p, size_t n, off_t off)
{
	(void)off;
	return send(fd, p, n, MSG_NOSIGNAL);
}

int elastic_proto_send(int fd, elastic_auth_t *a, const struct elastic_msg *m,
		       elastic_error_t *err)
{
	uint8_t *frame;
	size_t len;
	int rc;
	if (elastic_proto_seal(a, m, &frame, &len, err) < 0)
		return -1;
	rc = elastic__io_all(_send, fd, frame, len, 0);
	free(frame);
	if (rc < 0)
		return _fail(err, errno, "send: %s", strerror(errno));
	return 0;
}

static long _now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Read exactly n bytes by deadline (ms, monotonic; -1 none). 1 done, 0
 * timeout before the first byte when first, -1 error/EOF. */
static int _read_full(int fd, uint8_t *p, size_t n, long deadline, int first)
{
	size_t got = 0;
	while (got < n) {
		int wait = -1;
		if (deadline >= 0) {
			long left = deadline - _now_ms();
			wait = left > 0 ? (int)left : 0;
		}
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		int pr = poll(&pf, 1, wait);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return -1;
		if (pr == 0) {
			if (first && got == 0)
				return 0;
			errno = ETIMEDOUT;
			return -1;
		}
		ssize_t r = recv(fd, p + got, n - got, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r == 0) {
			errno = ECONNRESET;
			return -1;
		}
		if (r < 0)
			return -1;
		got += (size_t)r;
	}
	return 1;
}

int elastic_proto_recv(int fd, elastic_auth_t *a, struct elastic_msg *m, uid_t *uid,
		       gid_t *gid, int timeout_ms, elastic_error_t *err)
{
	uint8_t hdr[ELASTIC_PROTO_HDR_LEN];
	char body[ELASTIC_PROTO_MAX_BODY];
	struct elastic_proto_header h;
	long deadline = timeout_ms < 0 ? -1 : _now_ms() + timeout_ms;
	int rc = _read_full(fd, hdr, sizeof(hdr), deadline, 1);

	if (rc == 0)
		return 0;
	if (rc < 0)
		return _fail(err, errno, "receive: %s",
			     errno == ECONNRESET ? "connection closed by peer"
						 : strerror(errno));
	if (elastic_proto_header_parse(hdr, &h, err) < 0)
		return -1;
	/* Once a header has arrived the body must follow promptly. */
	if (_read_full(fd, (uint8_t *)body, h.length, _now_ms() + 5000, 0) < 0)
		return _fail(err, errno, "receive body: %s", strerror(errno));
	if (elastic_proto_open(a, &h, body, m, uid, gid, err) < 0)
		return -1;
	return 1;
}
