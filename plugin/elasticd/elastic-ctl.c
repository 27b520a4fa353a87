/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/elastic-ctl.c: elastic-ctl: status of elastic jobs, and channel test
 * tools. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "site_conf.h"
#include "snapshots.h"
#include "proto.h"

static const char *_ctl_addr, *_conf_path, *_munge_socket;

static void _usage(FILE *f)
{
	fprintf(f,
		"usage: elastic-ctl [-c HOST:PORT] [-f elastic.conf] [-S munge-socket] COMMAND ...\n"
		"commands:\n"
		"  status [-j JOBID] [-p]     elastic jobs as elasticd sees them (-p: parsable)\n"
		"  proto-client -j JOBID [-H HOST] [-g GPUS] [-a SECONDS | -N | -R]\n"
		"               [-s SECONDS] [-x SECONDS] [-r]\n"
		"                             stand in for an elastic job on the channel:\n"
		"                             -a ack releases after SECONDS (default 0),\n"
		"                             -N never answer, -R refuse, -s status period,\n"
		"                             -x exit after SECONDS, -r reconnect when closed\n"
		"  seal TYPE KEY=VALUE...     write one sealed frame to stdout\n"
		"  send [-w SECONDS]          send stdin's bytes as they are; print replies\n"
		"  snapshots [-r] [JOBID...]  list this node's job snapshot files (-r: remove\n"
		"                             those of the given jobs)\n"
		"The controller is -c, else $ELASTIC_CONTROLLER, else ControllerHost:ControllerPort\n"
		"of elastic.conf. See elastic-ctl(1).\n");
}

static int _connect(elastic_error_t *err)
{
	char host[256];
	int port = 0;
	const char *addr = _ctl_addr ? _ctl_addr : getenv(ELASTIC_ENV_CONTROLLER);
	if (addr && *addr) {
		const char *colon = strrchr(addr, ':');
		char *e;
		if (!colon || colon == addr || (size_t)(colon - addr) >= sizeof(host))
			return elastic__errorf(err, "controller '%s' is not HOST:PORT",
					       addr);
		port = (int)strtol(colon + 1, &e, 10);
		if (*e || port <= 0 || port > 65535)
			return elastic__errorf(err, "controller '%s': bad port", addr);
		memcpy(host, addr, (size_t)(colon - addr));
		host[colon - addr] = '\0';
	} else {
		struct elastic_site_conf c;
		if (elastic_site_conf_load(&c, _conf_path, 1, err) < 0)
			return -1;
		snprintf(host, sizeof(host), "%s", c.controller_host);
		port = (int)c.controller_port;
		if (!_munge_socket && c.munge_socket && *c.munge_socket)
			_munge_socket = strdup(c.munge_socket);
		elastic_site_conf_free(&c);
	}
	return elastic_proto_connect(host, port, 5000, err);
}

static void _fmt_time(uint64_t t, char *buf, size_t size)
{
	struct tm tm;
	time_t tt = (time_t)t;
	if (!t) {
		snprintf(buf, size, "-");
		return;
	}
	localtime_r(&tt, &tm);
	strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
}

static int _status(int argc, char **argv)
{
	uint32_t job = 0;
	int parsable = 0, opt, fd, rc, n = 0;
	elastic_error_t err;
	elastic_auth_t *a;
	struct elastic_msg q = {.type = ELASTIC_MSG_QUERY}, m;

	optind = 1;
	while ((opt = getopt(argc, argv, "j:p")) != -1) {
		if (opt == 'j') {
			char *e;
			unsigned long v = strtoul(optarg, &e, 10);
			if (*e || v == 0 || v >= UINT32_MAX) {
				fprintf(stderr,
					"elastic-ctl status: -j %s: not a job id\n",
					optarg);
				return 2;
			}
			job = (uint32_t)v;
		} else if (opt == 'p') {
			parsable = 1;
		} else {
			_usage(stderr);
			return 2;
		}
	}
	if ((fd = _connect(&err)) < 0 ||
	    !(a = elastic_auth_create(_munge_socket, &err))) {
		fprintf(stderr, "elastic-ctl: %s\n", err.text);
		return 1;
	}
	if (job) {
		q.present = ELASTIC_K_JOB;
		q.job = job;
	}
	if (elastic_proto_send(fd, a, &q, &err) < 0) {
		fprintf(stderr, "elastic-ctl: %s\n", err.text);
		rc = 1;
		goto out;
	}
	if (!parsable)
		printf("%-8s %-10s %4s %4s %6s %5s %-9s %6s %-7s %-19s %8s %9s %s\n",
		       "JOBID", "USER", "MIN", "MAX", "TARGET", "GPUS", "STATE", "GRANTS",
		       "CHANNEL", "LAST_RESIZE", "STEP", "RATE", "NODES");
	for (;;) {
		rc = elastic_proto_recv(fd, a, &m, NULL, NULL, 10000, &err);
		if (rc <= 0) {
			fprintf(stderr, "elastic-ctl: %s\n",
				rc == 0 ? "no answer from elasticd in 10 s" : err.text);
			rc = 1;
			goto out;
		}
		if (m.type == ELASTIC_MSG_END)
			break;
		if (m.type == ELASTIC_MSG_ERROR) {
			fprintf(stderr, "elastic-ctl: elasticd refused: %s\n", m.reason);
			rc = 1;
			goto out;
		}
		if (m.type != ELASTIC_MSG_JOBINFO)
			continue;
		char when[32];
		_fmt_time(m.resized, when, sizeof(when));
		char step[24] = "-", rate[24] = "-";
		if (m.present & ELASTIC_K_STEP)
			snprintf(step, sizeof(step), "%" PRIu64, m.step);
		if (m.present & ELASTIC_K_RATE)
			snprintf(rate, sizeof(rate), "%.1f", m.rate);
		if (parsable)
			printf("%u|%s|%u|%u|%u|%u|%s|%u|%u|%" PRIu64 "|%s|%s|%s\n", m.job,
			       m.user, m.min, m.max, m.target, m.gpus,
			       elastic_job_state_name(m.state), m.grants, m.connected,
			       m.resized, m.nodes[0] ? m.nodes : "-", step, rate);
		else
			printf("%-8u %-10s %4u %4u %6u %5u %-9s %6u %-7s %-19s %8s %9s %s\n",
			       m.job, m.user, m.min, m.max, m.target, m.gpus,
			       elastic_job_state_name(m.state), m.grants,
			       m.connected ? "up" : "down", when, step, rate,
			       m.nodes[0] ? m.nodes : "-");
		n++;
	}
	if (job && n == 0) {
		fprintf(stderr, "elastic-ctl: elasticd knows no elastic job %u\n", job);
		rc = 1;
		goto out;
	}
	rc = 0;
out:
	close(fd);
	elastic_auth_destroy(a);
	return rc;
}

static double _now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void _event(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void _event(const char *fmt, ...)
{
	va_list ap;
	printf("%.3f ", _now());
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

struct _pending_ack {
	uint64_t order;
	uint32_t grant;
	double when;
};

/* A stand-in for an elastic job: registers, follows orders, reports. */
static int _proto_client(int argc, char **argv)
{
	uint32_t job = 0;
	char host[ELASTIC_PROTO_NAME_MAX] = "";
	int base = 1, mode = 0 /* 0 ack, 1 never, 2 refuse */, opt, reconnect = 0;
	double ack_delay = 0, status_every = 0, exit_after = 0;
	elastic_error_t err;
	elastic_auth_t *a;
	uint32_t grants[256];
	int grant_gpus[256], ngrants = 0;
	struct _pending_ack acks[64];
	int nacks = 0;
	uint64_t step = 0;

	optind = 1;
	while ((opt = getopt(argc, argv, "j:H:g:a:NRs:x:r")) != -1) {
		char *e = NULL;
		switch (opt) {
		case 'j':
			job = (uint32_t)strtoul(optarg, &e, 10);
			break;
		case 'H':
			snprintf(host, sizeof(host), "%s", optarg);
			break;
		case 'g':
			base = (int)strtol(optarg, &e, 10);
			break;
		case 'a':
			ack_delay = strtod(optarg, &e);
			break;
		case 'N':
			mode = 1;
			break;
		case 'R':
			mode = 2;
			break;
		case 's':
			status_every = strtod(optarg, &e);
			break;
		case 'x':
			exit_after = strtod(optarg, &e);
			break;
		case 'r':
			reconnect = 1;
			break;
		default:
			_usage(stderr);
			return 2;
		}
		if (e && *e) {
			fprintf(stderr,
				"elastic-ctl proto-client: -%c %s: not a number\n", opt,
				optarg);
			return 2;
		}
	}
	if (!job) {
		const char *env = getenv("SLURM_JOB_ID");
		job = env ? (uint32_t)strtoul(env, NULL, 10) : 0;
	}
	if (!job) {
		fprintf(stderr,
			"elastic-ctl proto-client: no job id (-j or $SLURM_JOB_ID)\n");
		return 2;
	}
	if (!host[0])
		gethostname(host, sizeof(host) - 1);
	double start = _now(), last_status = start;
	signal(SIGPIPE, SIG_IGN);

	while (1) {
		int fd = _connect(&err);
		if (fd < 0 || !(a = elastic_auth_create(_munge_socket, &err))) {
			_event("connect-failed %s", err.text);
			if (fd >= 0)
				close(fd);
			a = NULL;
			if (!reconnect)
				return 1;
			usleep(300000);
			if (exit_after > 0 && _now() - start > exit_after)
				return 0;
			continue;
		}
		int held = base;
		for (int i = 0; i < ngrants; i++)
			held += grant_gpus[i];
		struct elastic_msg h = {.type = ELASTIC_MSG_HELLO,
					.present = ELASTIC_K_JOB | ELASTIC_K_HOST |
						   ELASTIC_K_GPUS | ELASTIC_K_STEP,
					.job = job,
					.gpus = (uint32_t)held,
					.step = step};
		snprintf(h.host, sizeof(h.host), "%s", host);
		if (elastic_proto_send(fd, a, &h, &err) < 0) {
			_event("send-failed %s", err.text);
			close(fd);
			elastic_auth_destroy(a);
			if (!reconnect)
				return 1;
			usleep(300000);
			continue;
		}
		_event("hello job=%u gpus=%d", job, held);
		for (;;) {
			struct elastic_msg m;
			uid_t uid;
			double now = _now();
			int wait = 200;
			if (exit_after > 0 && now - start > exit_after) {
				_event("exit");
				close(fd);
				elastic_auth_destroy(a);
				return 0;
			}
			/* Acks that are due. */
			for (int i = 0; i < nacks;) {
				if (now >= acks[i].when) {
					struct elastic_msg k = {
						.type = ELASTIC_MSG_ACK,
						.present = ELASTIC_K_JOB |
							   ELASTIC_K_ORDER |
							   ELASTIC_K_RESULT |
							   ELASTIC_K_GRANT,
						.job = job,
						.order = acks[i].order,
						.grant = acks[i].grant,
						.result = mode == 2 ? ELASTIC_ACK_REFUSED
								    : ELASTIC_ACK_OK};
					if (mode == 2) {
						k.present |= ELASTIC_K_REASON;
						snprintf(k.reason, sizeof(k.reason),
							 "proto-client told to refuse");
					}
					if (elastic_proto_send(fd, a, &k, &err) == 0)
						_event("%s grant=%u order=%" PRIu64,
						       mode == 2 ? "refused" : "ack",
						       acks[i].grant, acks[i].order);
					if (mode != 2)
						for (int g = 0; g < ngrants; g++)
							if (grants[g] == acks[i].grant) {
								grants[g] =
									grants[--ngrants];
								grant_gpus[g] = grant_gpus
									[ngrants];
							}
					acks[i] = acks[--nacks];
				} else {
					i++;
				}
			}
			if (status_every > 0 && now - last_status >= status_every) {
				struct elastic_msg st = {.type = ELASTIC_MSG_STATUS,
							 .present = ELASTIC_K_JOB |
								    ELASTIC_K_GPUS |
								    ELASTIC_K_STEP,
							 .job = job,
							 .step = ++step};
				int g = base;
				for (int i = 0; i < ngrants; i++)
					g += grant_gpus[i];
				st.gpus = (uint32_t)g;
				elastic_proto_send(fd, a, &st, NULL);
				last_status = now;
			}
			int rc = elastic_proto_recv(fd, a, &m, &uid, NULL, wait, &err);
			if (rc == 0)
				continue;
			if (rc < 0) {
				_event("closed %s", err.text);
				break;
			}
			if (uid != 0 && uid != getuid()) {
				/* Orders come from root/SlurmUser only; here, root. */
				_event("ignored message from uid %u", (unsigned)uid);
				continue;
			}
			switch (m.type) {
			case ELASTIC_MSG_TARGET:
				_event("target %u order=%" PRIu64, m.target, m.order);
				break;
			case ELASTIC_MSG_GRANT: {
				int known = 0;
				for (int i = 0; i < ngrants; i++)
					known |= grants[i] == m.grant;
				if (!known && ngrants < 256) {
					grants[ngrants] = m.grant;
					grant_gpus[ngrants++] = (int)m.gpus;
				}
				_event("grant %u node=%s gpus=%u", m.grant, m.node,
				       m.gpus);
				break;
			}
			case ELASTIC_MSG_RELEASE: {
				double left = (double)m.deadline_ms / 1000.0 - _now();
				_event("release %u deadline_in=%.1f order=%" PRIu64,
				       m.grant, left, m.order);
				int dup = 0;
				for (int i = 0; i < nacks; i++)
					dup |= acks[i].order == m.order;
				if (mode != 1 && !dup && nacks < 64) {
					acks[nacks].order = m.order;
					acks[nacks].grant = m.grant;
					acks[nacks].when = _now() + ack_delay;
					nacks++;
				}
				break;
			}
			case ELASTIC_MSG_ERROR:
				_event("error %s", m.reason);
				if (!reconnect) {
					close(fd);
					elastic_auth_destroy(a);
					return 3;
				}
				break;
			default:
				_event("unexpected %s", elastic_msg_type_name(m.type));
			}
		}
		close(fd);
		elastic_auth_destroy(a);
		if (!reconnect)
			return 4;
		usleep(300000);
	}
}

/* seal TYPE KEY=VALUE...: build the payload text, decode it (so the rules
 * apply), seal it with the caller's credential and write the frame. */
static int _seal(int argc, char **argv)
{
	char text[ELASTIC_PROTO_MAX_PAYLOAD + 1];
	size_t n = 0;
	struct elastic_msg m;
	elastic_error_t err;
	elastic_auth_t *a;
	uint8_t *frame;
	size_t len;

	if (argc < 2) {
		_usage(stderr);
		return 2;
	}
	n += (size_t)snprintf(text, sizeof(text), "type=%s\n", argv[1]);
	for (int i = 2; i < argc && n < sizeof(text); i++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s\n", argv[i]);
	if (n >= sizeof(text)) {
		fprintf(stderr, "elastic-ctl seal: message too long\n");
		return 2;
	}
	if (elastic_proto_decode(text, n, &m, &err) < 0) {
		fprintf(stderr, "elastic-ctl seal: %s\n", err.text);
		return 2;
	}
	if (!(a = elastic_auth_create(_munge_socket, &err)) ||
	    elastic_proto_seal(a, &m, &frame, &len, &err) < 0) {
		fprintf(stderr, "elastic-ctl seal: %s\n", err.text);
		return 1;
	}
	fwrite(frame, 1, len, stdout);
	free(frame);
	elastic_auth_destroy(a);
	return 0;
}

/* send: raw bytes from stdin to the controller; print every reply, then
 * "closed" or "open" (still open after -w seconds). */
static int _send(int argc, char **argv)
{
	static uint8_t buf[1 << 20];
	size_t n = 0;
	double wait = 3;
	int opt, fd;
	elastic_error_t err;
	elastic_auth_t *a;

	optind = 1;
	while ((opt = getopt(argc, argv, "w:")) != -1) {
		if (opt == 'w')
			wait = strtod(optarg, NULL);
		else {
			_usage(stderr);
			return 2;
		}
	}
	while (n < sizeof(buf)) {
		size_t r = fread(buf + n, 1, sizeof(buf) - n, stdin);
		if (r == 0)
			break;
		n += r;
	}
	if ((fd = _connect(&err)) < 0 ||
	    !(a = elastic_auth_create(_munge_socket, &err))) {
		fprintf(stderr, "elastic-ctl: %s\n", err.text);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	for (size_t off = 0; off < n;) {
		ssize_t w = write(fd, buf + off, n - off);
		if (w <= 0) {
			printf("write-failed %s\n", strerror(errno));
			break;
		}
		off += (size_t)w;
	}
	double end = _now() + wait;
	for (;;) {
		struct elastic_msg m;
		int left = (int)((end - _now()) * 1000);
		if (left <= 0) {
			printf("open\n");
			close(fd);
			elastic_auth_destroy(a);
			return 0;
		}
		int rc = elastic_proto_recv(fd, a, &m, NULL, NULL, left, &err);
		if (rc == 0)
			continue;
		if (rc < 0) {
			printf("closed\n");
			close(fd);
			elastic_auth_destroy(a);
			return 0;
		}
		if (m.type == ELASTIC_MSG_ERROR)
			printf("error %s\n", m.reason);
		else
			printf("reply %s\n", elastic_msg_type_name(m.type));
		fflush(stdout);
	}
}

int main(int argc, char **argv)
{
	int opt;
	while ((opt = getopt(argc, argv, "+c:f:S:h")) != -1) {
		switch (opt) {
		case 'c':
			_ctl_addr = optarg;
			break;
		case 'f':
			_conf_path = optarg;
			break;
		case 'S':
			_munge_socket = optarg;
			break;
		case 'h':
			_usage(stdout);
			return 0;
		default:
			_usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		_usage(stderr);
		return 2;
	}
	const char *cmd = argv[optind];
	argc -= optind;
	argv += optind;
	if (strcmp(cmd, "status") == 0)
		return _status(argc, argv);
	if (strcmp(cmd, "proto-client") == 0)
		return _proto_client(argc, argv);
	if (strcmp(cmd, "seal") == 0)
		return _seal(argc, argv);
	if (strcmp(cmd, "send") == 0)
		return _send(argc, argv);
	if (strcmp(cmd, "snapshots") == 0)
		return elastic__ctl_snapshots(argc, argv);
	fprintf(stderr, "elastic-ctl: unknown command '%s'\n", cmd);
	_usage(stderr);
	return 2;
}
