/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/hint.c: the hint socket (hint.h). */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "hint.h"
#include "log.h"

/* Datagrams read a poll at most: a flood costs a bounded time a loop. */
#define HINT_READS 64

struct ed_hint {
	int fd;
	int named;		   /* a job was named since ed_hint_take */
	uint32_t ids[ED_HINT_IDS]; /* which, each once */
	int nids;		   /* -1: more than fit */
	uint64_t last_ms;	   /* when the last hint came (0: never) */
	uint64_t count, bad;
};

ed_hint_t *ed_hint_create(const char *host, int port, elastic_error_t *err)
{
	struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_PASSIVE},
			*res = NULL;
	char service[16];
	ed_hint_t *h = calloc(1, sizeof(*h));
	int rc;

	if (!h) {
		elastic__errorf(err, "out of memory");
		return NULL;
	}
	snprintf(service, sizeof(service), "%d", port);
	rc = getaddrinfo(host && *host ? host : NULL, service, &hints, &res);
	if (rc != 0) {
		elastic__errorf(err, "hint address %s:%d: %s", host ? host : "*", port,
				gai_strerror(rc));
		free(h);
		return NULL;
	}
	h->fd = socket(res->ai_family, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (h->fd < 0 || bind(h->fd, res->ai_addr, res->ai_addrlen) < 0) {
		elastic__errorf(err, "cannot receive hints on UDP %s:%d: %s",
				host && *host ? host : "*", port, strerror(errno));
		if (h->fd >= 0)
			close(h->fd);
		freeaddrinfo(res);
		free(h);
		return NULL;
	}
	freeaddrinfo(res);
	return h;
}

void ed_hint_destroy(ed_hint_t *h)
{
	if (!h)
		return;
	close(h->fd);
	free(h);
}

int ed_hint_pollfds(ed_hint_t *h, struct pollfd *pf, int max)
{
	if (!h || max < 1)
		return 0;
	pf[0] = (struct pollfd){.fd = h->fd, .events = POLLIN};
	return 1;
}

/* "elastic-hint alive" or "elastic-hint job N": 1 alive, 2 job (*job = N),
 * 0 not a hint. */
static int _parse(const char *b, uint32_t *job)
{
	unsigned long v;
	char tail;

	if (strcmp(b, "elastic-hint alive") == 0)
		return 1;
	if (sscanf(b, "elastic-hint job %lu%c", &v, &tail) == 1 && v > 0 &&
	    v < UINT32_MAX) {
		*job = (uint32_t)v;
		return 2;
	}
	return 0;
}

static void _name(ed_hint_t *h, uint32_t job)
{
	h->named = 1;
	if (h->nids < 0)
		return;
	for (int i = 0; i < h->nids; i++)
		if (h->ids[i] == job)
			return;
	if (h->nids < ED_HINT_IDS)
		h->ids[h->nids++] = job;
	else
		h->nids = -1;
}

void ed_hint_handle(ed_hint_t *h, const struct pollfd *pf, int n)
{
	char b[64];

	if (!h || n < 1 || !(pf[0].revents & POLLIN))
		return;
	for (int i = 0; i < HINT_READS; i++) {
		ssize_t r = recv(h->fd, b, sizeof(b) - 1, 0);
		uint32_t job = 0;
		int kind;
		if (r < 0)
			break; /* EAGAIN: all read */
		b[r] = '\0';
		if (r > 0 && b[r - 1] == '\n')
			b[r - 1] = '\0';
		if (!(kind = _parse(b, &job))) {
			if (!h->bad++)
				ed_info("a datagram on the hint port is not a hint (%zd bytes): ignored (said once)",
					r);
			continue;
		}
		h->count++;
		h->last_ms = ed_now_ms();
		if (kind == 2)
			_name(h, job);
	}
}

int ed_hint_take(ed_hint_t *h, uint32_t *ids, int *nids)
{
	int named = h && h->named;

	*nids = 0;
	if (!named)
		return 0;
	*nids = h->nids;
	if (h->nids > 0)
		memcpy(ids, h->ids, (size_t)h->nids * sizeof(*ids));
	h->named = 0;
	h->nids = 0;
	return 1;
}

int ed_hint_named(const ed_hint_t *h)
{
	return h && h->named;
}

int ed_hint_alive(const ed_hint_t *h, uint64_t now_ms, uint64_t window_ms)
{
	return h && h->last_ms && now_ms < h->last_ms + window_ms;
}

uint64_t ed_hint_count(const ed_hint_t *h)
{
	return h ? h->count : 0;
}

uint64_t ed_hint_bad(const ed_hint_t *h)
{
	return h ? h->bad : 0;
}
