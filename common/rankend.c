/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/rankend.c: one rank's end as a line to elastic-run (rankend.h). */
#include "config.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "rankend.h"

void elastic__report_format(char *buf, size_t len, const char *token, unsigned gen,
			    int rank, int how, int value, const char *host, int gpu)
{
	int n = snprintf(buf, len, "%s %s %u %d %s %d", ELASTIC_REPORT_MAGIC, token, gen,
			 rank, how == ELASTIC_RANK_SIGNALED ? "signal" : "exit", value);
	/* where it ran, when the name fits a line and has no blank */
	if (host && *host && strlen(host) < ELASTIC_REPORT_HOST &&
	    !strpbrk(host, " \t\r\n") && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, " %s %d", host,
			      gpu < 0 ? -1 : gpu);
	if (n > 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, "\n");
}

int elastic__report_send(const char *addr, const char *line)
{
	char host[256];
	const char *colon = strrchr(addr, ':');
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM},
			*ai = NULL;
	struct timeval tv = {.tv_sec = 5};
	int fd = -1, rc = -1;

	if (!colon || (size_t)(colon - addr) >= sizeof(host))
		return -1;
	memcpy(host, addr, colon - addr);
	host[colon - addr] = '\0';
	if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
		return -1;
	if ((fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    send(fd, line, strlen(line), MSG_NOSIGNAL) == (ssize_t)strlen(line))
			rc = 0;
		close(fd);
	}
	freeaddrinfo(ai);
	return rc;
}

int elastic__report_to(const char **addr, const char **token, unsigned *gen, int *rank)
{
	const char *g = getenv("ELASTIC_RUN_GEN"), *rk = getenv("OMPI_COMM_WORLD_RANK"),
		   *base = getenv("ELASTIC_RUN_JOIN_BASE");

	*addr = getenv("ELASTIC_RUN_REPORT");
	*token = getenv("ELASTIC_RUN_TOKEN");
	if (!*addr || !*token || !g || !rk)
		return -1;
	*gen = (unsigned)strtoul(g, NULL, 10);
	*rank = atoi(rk) + (base ? atoi(base) : 0);
	return 0;
}

int elastic__report_end(int how, int value)
{
	const char *addr, *token;
	const char *host = getenv("SLURMD_NODENAME"), *gpu = getenv("ELASTIC_GPU");
	char line[200], hn[256] = "";
	unsigned gen;
	int rank;

	if (elastic__report_to(&addr, &token, &gen, &rank) < 0)
		return 1;
	if (!host) {
		gethostname(hn, sizeof(hn) - 1);
		host = hn;
	}
	elastic__report_format(line, sizeof(line), token, gen, rank, how, value, host,
			       gpu ? atoi(gpu) : -1);
	return elastic__report_send(addr, line);
}
