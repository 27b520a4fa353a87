/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/metrics.c: the OpenMetrics endpoint: a small non-blocking
 * HTTP/1.x responder (GET /metrics only) whose sockets the job channel's
 * poll watches; the text comes from a callback (the controller's). */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http.h"
#include "log.h"
#include "metrics.h"

#define METRICS_CONNS	   16	      /* scrapers at once; more are closed at accept */
#define METRICS_TIMEOUT_MS 5000	      /* a request and its answer take no longer */
#define METRICS_BODY_MAX   (4u << 20) /* the text of a very large cluster */

struct _mconn {
	int fd;
	uint64_t opened_ms;
	char in[ELASTIC_HTTP_HEAD_MAX];
	size_t inlen;
	char *out; /* the whole answer, once the request is read */
	size_t outlen, outoff;
	int draining; /* answered: reading what the client still sends until it closes */
};

struct ed_metrics {
	int lfd;
	struct _mconn conns[METRICS_CONNS];
	ed_metrics_render_fn render;
	void *rarg;
	uint64_t scrapes;
};

/* "host:port", "[v6]:port" or ":port" (every address). */
static int _split(const char *addr, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon;
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close[1] != ':')
			return -1;
		snprintf(host, hlen, "%.*s", (int)(close - addr - 1), addr + 1);
		colon = close + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon)
			return -1;
		snprintf(host, hlen, "%.*s", (int)(colon - addr), addr);
	}
	if (!colon[1] || strlen(colon + 1) >= plen)
		return -1;
	snprintf(port, plen, "%s", colon + 1);
	return 0;
}

ed_metrics_t *ed_metrics_create(const char *addr, ed_metrics_render_fn render, void *arg,
				elastic_error_t *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE},
			*res = NULL;
	char host[256], port[16];
	int one = 1, rc;
	ed_metrics_t *m;

	if (_split(addr, host, sizeof(host), port, sizeof(port)) < 0) {
		elastic__errorf(err, "MetricsAddress=%s: not HOST:PORT", addr);
		return NULL;
	}
	if ((rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res)) != 0) {
		elastic__errorf(err, "MetricsAddress=%s: %s", addr, gai_strerror(rc));
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		freeaddrinfo(res);
		elastic__errorf(err, "out of memory");
		return NULL;
	}
	for (int i = 0; i < METRICS_CONNS; i++)
		m->conns[i].fd = -1;
	m->lfd = socket(res->ai_family, res->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			res->ai_protocol);
	if (m->lfd < 0 ||
	    setsockopt(m->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0 ||
	    bind(m->lfd, res->ai_addr, res->ai_addrlen) < 0 || listen(m->lfd, 16) < 0) {
		elastic__errorf(err, "MetricsAddress=%s: %s", addr, strerror(errno));
		freeaddrinfo(res);
		ed_metrics_destroy(m);
		return NULL;
	}
	freeaddrinfo(res);
	m->render = render;
	m->rarg = arg;
	return m;
}

static void _mclose(struct _mconn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

void ed_metrics_destroy(ed_metrics_t *m)
{
	if (!m)
		return;
	for (int i = 0; i < METRICS_CONNS; i++)
		_mclose(&m->conns[i]);
	if (m->lfd >= 0)
		close(m->lfd);
	free(m);
}

int ed_metrics_port(const ed_metrics_t *m)
{
	struct sockaddr_storage sa;
	socklen_t sl = sizeof(sa);
	char port[16];
	if (getsockname(m->lfd, (struct sockaddr *)&sa, &sl) < 0 ||
	    getnameinfo((struct sockaddr *)&sa, sl, NULL, 0, port, sizeof(port),
			NI_NUMERICSERV) != 0)
		return -1;
	return atoi(port);
}

/* The whole answer of a verdict, in c->out. */
static void _answer(ed_metrics_t *m, struct _mconn *c, enum elastic_http_verdict v)
{
	char *body = NULL, head[256];
	size_t blen = 0;
	const char *text, *type = "text/plain; charset=utf-8";
	int code = elastic__http_status(v, &text), hlen;
	FILE *f;

	if (v == ELASTIC_HTTP_METRICS && (f = open_memstream(&body, &blen))) {
		m->render(m->rarg, f);
		if (fclose(f) != 0 || blen > METRICS_BODY_MAX) {
			free(body);
			body = NULL;
		}
		if (!body)
			code = 500, text = "Internal Server Error";
		else
			type = "application/openmetrics-text; version=1.0.0; charset=utf-8";
		m->scrapes++;
	}
	if (!body) {
		body = malloc(64);
		if (!body) {
			_mclose(c);
			return;
		}
		blen = (size_t)snprintf(body, 64, "%d %s\n", code, text);
	}
	hlen = snprintf(head, sizeof(head),
			"HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
			"Connection: close\r\n%s\r\n",
			code, text, type, blen, code == 405 ? "Allow: GET\r\n" : "");
	c->out = malloc((size_t)hlen + blen);
	if (!c->out) {
		free(body);
		_mclose(c);
		return;
	}
	memcpy(c->out, head, (size_t)hlen);
	memcpy(c->out + hlen, body, blen);
	c->outlen = (size_t)hlen + blen;
	c->outoff = 0;
	free(body);
}

int ed_metrics_pollfds(ed_metrics_t *m, struct pollfd *pf, int max)
{
	int n = 0;
	uint64_t now = ed_now_ms();

	if (!m || max < 1)
		return 0;
	pf[n].fd = m->lfd;
	pf[n].events = POLLIN;
	pf[n++].revents = 0;
	for (int i = 0; i < METRICS_CONNS && n < max; i++) {
		struct _mconn *c = &m->conns[i];
		if (c->fd < 0)
			continue;
		if (now - c->opened_ms > METRICS_TIMEOUT_MS) {
			_mclose(c);
			continue;
		}
		pf[n].fd = c->fd;
		pf[n].events = c->out && !c->draining ? POLLOUT : POLLIN;
		pf[n++].revents = 0;
	}
	return n;
}

static void _readable(ed_metrics_t *m, struct _mconn *c)
{
	ssize_t r = read(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen);
	enum elastic_http_verdict v;
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR)) {
		_mclose(c);
		return;
	}
	if (r < 0)
		return;
	c->inlen += (size_t)r;
	v = elastic__http_request(c->in, c->inlen);
	if (v == ELASTIC_HTTP_MORE && c->inlen == sizeof(c->in))
		v = ELASTIC_HTTP_TOO_LARGE;
	if (v != ELASTIC_HTTP_MORE)
		_answer(m, c, v);
}

static void _writable(struct _mconn *c)
{
	ssize_t w = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);
	if (w < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (w <= 0) {
		_mclose(c);
		return;
	}
	c->outoff += (size_t)w;
	if (c->outoff == c->outlen) {
		/* Connection: close. Closing with bytes of the client unread
		 * (a request body, the rest of a head too large) would reset
		 * the connection and could lose the answer on its way: end our
		 * side, then read until the client closes (or the timeout). */
		shutdown(c->fd, SHUT_WR);
		c->draining = 1;
	}
}

static void _drain(struct _mconn *c)
{
	char sink[4096];
	ssize_t r = read(c->fd, sink, sizeof(sink));
	if (r == 0 || (r < 0 && errno != EAGAIN && errno != EINTR))
		_mclose(c);
}

void ed_metrics_handle(ed_metrics_t *m, const struct pollfd *pf, int n)
{
	if (!m)
		return;
	for (int k = 1; k < n; k++) {
		struct _mconn *c = NULL;
		for (int i = 0; i < METRICS_CONNS; i++)
			if (m->conns[i].fd == pf[k].fd)
				c = &m->conns[i];
		if (!c || !pf[k].revents)
			continue;
		if (c->draining)
			_drain(c);
		else if (c->out && (pf[k].revents & (POLLOUT | POLLERR | POLLHUP)))
			_writable(c);
		else if (!c->out && (pf[k].revents & (POLLIN | POLLERR | POLLHUP)))
			_readable(m, c);
	}
	if (n > 0 && (pf[0].revents & POLLIN)) {
		for (;;) {
			int fd = accept4(m->lfd, NULL, NULL,
					 SOCK_CLOEXEC | SOCK_NONBLOCK),
			    slot = -1;
			if (fd < 0)
				break;
			for (int i = 0; i < METRICS_CONNS && slot < 0; i++)
				if (m->conns[i].fd < 0)
					slot = i;
			if (slot < 0) {
				close(fd); /* full: the scraper retries at its next interval */
				continue;
			}
			m->conns[slot].fd = fd;
			m->conns[slot].opened_ms = ed_now_ms();
		}
	}
}
