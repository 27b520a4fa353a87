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

#include "ctlclient.h"
#include "site_conf.h"
#include "snapshots.h"
#include "proto.h"

static const char *_ctl_addr, *_conf_path, *_munge_socket;

static void _usage(FILE *f)
{
	fprintf(f,
		"usage: elastic-ctl [-c HOST:PORT] [-f elastic.conf] [-S munge-socket] COMMAND ...\n"
		"       elastic-ctl -h|--help | -V|--version\n"
		"commands:\n"
		"  status [-j JOBID] [-p]     elastic jobs as elasticd sees them (-p: parsable)\n"
		"  scaling [-j JOBID] [-p]    each job's measured samples/s per GPU count, its\n"
		"                             model's prediction, efficiency and confidence\n"
		"  proto-client -j JOBID [-H HOST] [-g GPUS] [-a SECONDS | -N | -R]\n"
		"               [-s SECONDS] [-x SECONDS] [-r] [-b FILE]\n"
		"                             stand in for an elastic job on the channel:\n"
		"                             -a ack releases after SECONDS (default 0),\n"
		"                             -N never answer, -R refuse, -s status period,\n"
		"                             -x exit after SECONDS, -r reconnect when closed,\n"
		"                             -b give back its grants while FILE exists\n"
		"  seal TYPE KEY=VALUE...     write one sealed frame to stdout\n"
		"  send [-w SECONDS]          send stdin's bytes as they are; print replies\n"
		"  snapshots [-r] [JOBID...]  list this node's job snapshot files (-r: remove\n"
		"                             those of the given jobs)\n"
		"  pause [NODE]               no grow or shrink (NODE: no new grants there)\n"
		"  drain [NODE]               no new grants; grants there are released\n"
		"  resume [NODE]              undo pause and drain (no NODE: all of them)\n"
		"  show                       what is paused or drained\n"
		"The controller is -c, else $ELASTIC_CONTROLLER, else ControllerHost:ControllerPort\n"
		"of elastic.conf. See elastic-ctl(1).\n");
}

/* The controllers, in the order they are tried: -c, else
 * $ELASTIC_CONTROLLER (HOST:PORT, or a list of them), else ControllerHost
 * and BackupControllerHost on ControllerPort of elastic.conf (which may
 * also name the munge socket). A standby answers that it stands by: the
 * next is tried (_next_controller). */
static struct {
	char host[256];
	int port;
} _ctls[ELASTIC_CTL_ADDRS];
static int _nctls, _cur;

static int _controllers(elastic_error_t *err)
{
	const char *addr = _ctl_addr ? _ctl_addr : getenv(ELASTIC_ENV_CONTROLLER);

	if (_nctls)
		return 0;
	if (addr && *addr) {
		struct elastic_ctlclient c;
		if (elastic__ctl_init(&c, addr, 0, err) < 0)
			return -1;
		for (int i = 0; i < c.naddr; i++) {
			snprintf(_ctls[i].host, sizeof(_ctls[i].host), "%s",
				 c.addr[i].host);
			_ctls[i].port = c.addr[i].port;
		}
		_nctls = c.naddr;
	} else {
		struct elastic_site_conf c;
		if (elastic_site_conf_load(&c, _conf_path, 1, err) < 0)
			return -1;
		snprintf(_ctls[0].host, sizeof(_ctls[0].host), "%s", c.controller_host);
		_ctls[0].port = (int)c.controller_port;
		_nctls = 1;
		if (c.backup_controller_host && *c.backup_controller_host) {
			snprintf(_ctls[1].host, sizeof(_ctls[1].host), "%s",
				 c.backup_controller_host);
			_ctls[1].port = (int)c.controller_port;
			_nctls = 2;
		}
		if (!_munge_socket && c.munge_socket && *c.munge_socket)
			_munge_socket = strdup(c.munge_socket);
		elastic_site_conf_free(&c);
	}
	return 0;
}

/* The next controller to try; 0 when every one was tried. */
static int _next_controller(void)
{
	if (_cur + 1 >= _nctls)
		return 0;
	_cur++;
	return 1;
}

/* After a standby's refusal: the next controller; once every one stood by
 * and one of them was still starting (it claims the role in its first half
 * second: `systemctl start elasticd; elastic-ctl status`), all of them
 * again 0.25 s later, for STARTING_WAIT_MS at most. */
#define STARTING_WAIT_MS 5000
static int _after_standby(const struct elastic_msg *m)
{
	static int starting, waited_ms;

	if (strcmp(m->reason, ELASTIC_STANDBY_STARTING) == 0)
		starting = 1;
	if (_next_controller())
		return 1;
	if (!starting || waited_ms >= STARTING_WAIT_MS)
		return 0;
	usleep(250000);
	waited_ms += 250;
	starting = 0;
	_cur = 0;
	return 1;
}

static int _connect(elastic_error_t *err)
{
	int fd;
	if (_controllers(err) < 0)
		return -1;
	/* one that does not answer: the next */
	while ((fd = elastic_proto_connect(_ctls[_cur].host, _ctls[_cur].port, 5000,
					   err)) < 0 &&
	       _next_controller())
		;
	return fd;
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

/* One JOBINFO as a row of status (-p: '|'-separated, raw values). */
static void _print_job(const struct elastic_msg *m, int parsable)
{
	char when[32], step[24] = "-", rate[24] = "-", eff[24] = "-";

	_fmt_time(m->resized, when, sizeof(when));
	if (m->present & ELASTIC_K_STEP)
		snprintf(step, sizeof(step), "%" PRIu64, m->step);
	if (m->present & ELASTIC_K_RATE)
		snprintf(rate, sizeof(rate), "%.1f", m->rate);
	if (m->present & ELASTIC_K_EFFICIENCY)
		snprintf(eff, sizeof(eff), "%.2f", m->efficiency);
	if (parsable)
		printf("%u|%s|%u|%u|%u|%u|%s|%u|%u|%" PRIu64 "|%s|%s|%s|%s\n", m->job,
		       m->user, m->min, m->max, m->target, m->gpus,
		       elastic_job_state_name(m->state), m->grants, m->connected,
		       m->resized, m->nodes[0] ? m->nodes : "-", step, rate, eff);
	else
		printf("%-8u %-10s %4u %4u %6u %5u %-9s %6u %-7s %-19s %8s %9s %4s %s\n",
		       m->job, m->user, m->min, m->max, m->target, m->gpus,
		       elastic_job_state_name(m->state), m->grants,
		       m->connected ? "up" : "down", when, step, rate, eff,
		       m->nodes[0] ? m->nodes : "-");
}

/* One JOBINFO as the rows of its measured scaling (scaling): one per size
 * in its model, or one "unknown" row at the GPUs held when nothing was
 * measured. */
static void _print_model(const struct elastic_msg *m, int parsable)
{
	static const char *const conf[] = {"m", "measured",    "i", "interpolated",
					   "e", "extrapolated"};
	char row[ELASTIC_PROTO_MODEL_MAX], *save = NULL, *r;
	int rows = 0;

	snprintf(row, sizeof(row), "%s", m->present & ELASTIC_K_MODEL ? m->model : "");
	for (r = strtok_r(row, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
		char *f[5] = {r}, *at;
		const char *c = "unknown";
		int nf = 1;
		for (char *p = r; *p && nf < 5; p++)
			if (*p == ':') {
				*p = '\0';
				f[nf++] = p + 1;
			}
		if (nf < 5)
			continue; /* not a row this elastic-ctl reads */
		for (int k = 0; k < 6; k += 2)
			if (!strcmp(f[4], conf[k]))
				c = conf[k + 1];
		int n = atoi(f[0]);
		at = n == (int)m->gpus && n == (int)m->target ? "held,target"
		     : n == (int)m->gpus		      ? "held"
		     : n == (int)m->target		      ? "target"
							      : "";
		if (parsable)
			printf("%u|%s|%d|%s|%s|%s|%s|%s\n", m->job, m->user, n,
			       *f[1] ? f[1] : "-", f[2], f[3], c, *at ? at : "-");
		else
			printf("%-8u %-10s %5d %10s %10s %5s %-12s %s\n", m->job, m->user,
			       n, *f[1] ? f[1] : "-", f[2], f[3], c, at);
		rows++;
	}
	if (rows)
		return;
	if (parsable)
		printf("%u|%s|%u|-|-|-|unknown|held\n", m->job, m->user, m->gpus);
	else
		printf("%-8u %-10s %5u %10s %10s %5s %-12s %s\n", m->job, m->user,
		       m->gpus, "-", "-", "-", "unknown", "held");
}

/* status and scaling: one query, a row per job or per job and size. */
static int _status(int argc, char **argv)
{
	const char *cmd = argv[0];
	int scaling = strcmp(cmd, "scaling") == 0;
	uint32_t job = 0;
	int parsable = 0, opt, fd, rc, n = 0, header = 0;
	elastic_error_t err;
	elastic_auth_t *a;
	struct elastic_msg q = {.type = ELASTIC_MSG_QUERY}, m;

	optind = 1;
	while ((opt = getopt(argc, argv, "j:p")) != -1) {
		if (opt == 'j') {
			char *e;
			unsigned long v = strtoul(optarg, &e, 10);
			if (*e || v == 0 || v >= UINT32_MAX) {
				fprintf(stderr, "elastic-ctl %s: -j %s: not a job id\n",
					cmd, optarg);
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
	if (!(a = elastic_auth_create(_munge_socket, &err))) {
		fprintf(stderr, "elastic-ctl: %s\n", err.text);
		return 1;
	}
	if (job) {
		q.present = ELASTIC_K_JOB;
		q.job = job;
	}
	/* Ask for the efficiencies; an elasticd older than them refuses the
	 * key: ask again without it. */
	q.present |= ELASTIC_K_SCALING;
	q.scaling = 1;
again:
	if ((fd = _connect(&err)) < 0) {
		fprintf(stderr, "elastic-ctl: %s\n", err.text);
		elastic_auth_destroy(a);
		return 1;
	}
	if (elastic_proto_send(fd, a, &q, &err) < 0) {
		fprintf(stderr, "elastic-ctl: %s\n", err.text);
		rc = 1;
		goto out;
	}
	for (;;) {
		rc = elastic_proto_recv(fd, a, &m, NULL, NULL, 10000, &err);
		if (rc <= 0) {
			fprintf(stderr, "elastic-ctl: %s\n",
				rc == 0 ? "no answer from elasticd in 10 s" : err.text);
			rc = 1;
			goto out;
		}
		if (m.type == ELASTIC_MSG_ERROR && (q.present & ELASTIC_K_SCALING) &&
		    strstr(m.reason, "unknown key 'scaling'")) {
			if (scaling) {
				fprintf(stderr,
					"elastic-ctl scaling: this elasticd keeps no measured scaling (it is older than elastic-ctl)\n");
				rc = 1;
				goto out;
			}
			close(fd);
			q.present &= ~ELASTIC_K_SCALING;
			goto again;
		}
		if (elastic__ctl_is_standby(&m) && _after_standby(&m)) {
			close(fd);
			goto again;
		}
		if (m.type == ELASTIC_MSG_ERROR) {
			fprintf(stderr, "elastic-ctl: elasticd refused: %s\n", m.reason);
			rc = 1;
			goto out;
		}
		if (!parsable && !header++) {
			if (scaling)
				printf("%-8s %-10s %5s %10s %10s %5s %-12s %s\n", "JOBID",
				       "USER", "GPUS", "MEASURED", "PREDICTED", "EFF",
				       "CONFIDENCE", "AT");
			else
				printf("%-8s %-10s %4s %4s %6s %5s %-9s %6s %-7s %-19s %8s %9s %4s %s\n",
				       "JOBID", "USER", "MIN", "MAX", "TARGET", "GPUS",
				       "STATE", "GRANTS", "CHANNEL", "LAST_RESIZE",
				       "STEP", "RATE", "EFF", "NODES");
		}
		if (m.type == ELASTIC_MSG_END) {
			if (!parsable && (m.present & ELASTIC_K_REASON))
				printf("elastic activity: %s\n", m.reason);
			break;
		}
		if (m.type != ELASTIC_MSG_JOBINFO)
			continue;
		if (scaling)
			_print_model(&m, parsable);
		else
			_print_job(&m, parsable);
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

/* pause|drain|resume [NODE], show: one admin message, the state after it. */
static int _admin(const char *action, int argc, char **argv)
{
	struct elastic_msg q = {.type = ELASTIC_MSG_ADMIN, .present = ELASTIC_K_ACTION},
			   m;
	elastic_error_t err;
	elastic_auth_t *a = NULL;
	int fd = -1, rc = 1;

	if (argc > 2 || (argc == 2 && strcmp(action, "show") == 0)) {
		_usage(stderr);
		return 2;
	}
	snprintf(q.action, sizeof(q.action), "%s", action);
	if (argc == 2) {
		if (strlen(argv[1]) >= sizeof(q.node)) {
			fprintf(stderr, "elastic-ctl %s: node name too long\n", action);
			return 2;
		}
		q.present |= ELASTIC_K_NODE;
		snprintf(q.node, sizeof(q.node), "%s", argv[1]);
	}
	int r;
again:
	if ((fd = _connect(&err)) < 0 ||
	    (!a && !(a = elastic_auth_create(_munge_socket, &err))) ||
	    elastic_proto_send(fd, a, &q, &err) < 0) {
		fprintf(stderr, "elastic-ctl: %s\n", err.text);
		goto out;
	}
	r = elastic_proto_recv(fd, a, &m, NULL, NULL, 10000, &err);
	if (r > 0 && elastic__ctl_is_standby(&m) && _after_standby(&m)) {
		close(fd);
		goto again;
	}
	if (r <= 0)
		fprintf(stderr, "elastic-ctl: %s\n",
			r == 0 ? "no answer from elasticd in 10 s" : err.text);
	else if (m.type == ELASTIC_MSG_ERROR)
		fprintf(stderr, "elastic-ctl: elasticd refused: %s\n", m.reason);
	else if (m.type != ELASTIC_MSG_END)
		fprintf(stderr, "elastic-ctl: unexpected %s message from elasticd\n",
			elastic_msg_type_name(m.type));
	else {
		printf("elastic activity: %s\n", m.reason);
		rc = 0;
	}
out:
	if (fd >= 0)
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

/* ---- proto-client: a stand-in for an elastic job on the channel. The
 * channel is common/ctlclient (as elastic-run's); what the stand-in does
 * with the orders is scripted by its options, and every event is printed
 * as one line "TIME WHAT ..." for the tests to read. */

struct _pending_ack {
	uint64_t order;
	uint32_t grant;
	double when;
};

enum { STANDIN_ACK, STANDIN_NEVER, STANDIN_REFUSE };

struct _standin {
	struct elastic_ctlclient c;
	int mode; /* STANDIN_*: what to answer a release order */
	int reconnect, base;
	double ack_delay, status_every, exit_after, start, last_status;
	const char *giveback; /* -b: while this file exists, the grants are given back */
	uint32_t grants[256];
	int grant_gpus[256], ngrants;
	struct _pending_ack acks[64];
	int nacks;
	uint64_t step;
};

/* Options; -1 to go on, else the exit status. */
static int _standin_args(struct _standin *s, int argc, char **argv, uint32_t *job,
			 char *host, size_t hlen)
{
	int opt;

	optind = 1;
	while ((opt = getopt(argc, argv, "j:H:g:a:NRs:x:rb:")) != -1) {
		char *e = NULL;
		switch (opt) {
		case 'j':
			*job = (uint32_t)strtoul(optarg, &e, 10);
			break;
		case 'H':
			snprintf(host, hlen, "%s", optarg);
			break;
		case 'g':
			s->base = (int)strtol(optarg, &e, 10);
			break;
		case 'a':
			s->ack_delay = strtod(optarg, &e);
			break;
		case 'N':
			s->mode = STANDIN_NEVER;
			break;
		case 'R':
			s->mode = STANDIN_REFUSE;
			break;
		case 's':
			s->status_every = strtod(optarg, &e);
			break;
		case 'x':
			s->exit_after = strtod(optarg, &e);
			break;
		case 'r':
			s->reconnect = 1;
			break;
		case 'b':
			s->giveback = optarg;
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
	return -1;
}

/* GPUs the job holds: its own and those of the grants not released. */
static int _standin_held(const struct _standin *s)
{
	int held = s->base;
	for (int i = 0; i < s->ngrants; i++)
		held += s->grant_gpus[i];
	return held;
}

static void _standin_forget_grant(struct _standin *s, uint32_t grant)
{
	for (int g = 0; g < s->ngrants; g++)
		if (s->grants[g] == grant) {
			s->grants[g] = s->grants[--s->ngrants];
			s->grant_gpus[g] = s->grant_gpus[s->ngrants];
		}
}

/* Answer the release orders that are due. 0, or -1 with err when a send
 * failed (the connection is closed). */
static int _standin_acks(struct _standin *s, double now, elastic_error_t *err)
{
	int refuse = s->mode == STANDIN_REFUSE, rc = 0;

	for (int i = 0; i < s->nacks;) {
		struct _pending_ack a = s->acks[i];
		if (now < a.when) {
			i++;
			continue;
		}
		if (rc == 0 &&
		    (rc = elastic__ctl_ack(&s->c, a.order, a.grant,
					   refuse ? ELASTIC_ACK_REFUSED : ELASTIC_ACK_OK,
					   refuse ? "proto-client told to refuse" : NULL,
					   err)) == 0)
			_event("%s grant=%u order=%" PRIu64, refuse ? "refused" : "ack",
			       a.grant, a.order);
		if (!refuse)
			_standin_forget_grant(s, a.grant);
		s->acks[i] = s->acks[--s->nacks];
	}
	return rc;
}

static void _standin_release(struct _standin *s, const struct elastic_msg *m)
{
	double left = (double)m->deadline_ms / 1000.0 - _now();
	int dup = 0;

	_event("release %u deadline_in=%.1f order=%" PRIu64, m->grant, left, m->order);
	for (int i = 0; i < s->nacks; i++)
		dup |= s->acks[i].order == m->order;
	if (s->mode != STANDIN_NEVER && !dup && s->nacks < 64) {
		s->acks[s->nacks].order = m->order;
		s->acks[s->nacks].grant = m->grant;
		s->acks[s->nacks].when = _now() + s->ack_delay;
		s->nacks++;
	}
}

/* A message from the controller: -1 to go on, else the exit status. */
static int _standin_msg(struct _standin *s, const struct elastic_msg *m)
{
	int known = 0;

	switch (m->type) {
	case ELASTIC_MSG_TARGET:
		_event("target %u order=%" PRIu64, m->target, m->order);
		break;
	case ELASTIC_MSG_GRANT:
		for (int i = 0; i < s->ngrants; i++)
			known |= s->grants[i] == m->grant;
		if (!known && s->ngrants < 256) {
			s->grants[s->ngrants] = m->grant;
			s->grant_gpus[s->ngrants++] = (int)m->gpus;
		}
		_event("grant %u node=%s gpus=%u", m->grant, m->node, m->gpus);
		break;
	case ELASTIC_MSG_RELEASE:
		_standin_release(s, m);
		break;
	case ELASTIC_MSG_ERROR:
		_event("error %s", m->reason);
		if (!s->reconnect)
			return 3;
		break;
	default:
		_event("unexpected %s", elastic_msg_type_name(m->type));
	}
	return -1;
}

/* A channel event: -1 to go on, else the exit status. */
static int _standin_event(struct _standin *s, const struct elastic_ctl_ev *ev)
{
	switch (ev->type) {
	case ELASTIC_CTL_EV_HELLO:
		_event("hello job=%u gpus=%d", s->c.job, s->c.gpus);
		return -1;
	case ELASTIC_CTL_EV_IGNORED:
		/* Orders come from root, SlurmUser or the job's own user only. */
		_event("ignored message from uid %u", (unsigned)ev->uid);
		return -1;
	case ELASTIC_CTL_EV_MSG:
		return _standin_msg(s, &ev->msg);
	case ELASTIC_CTL_EV_DOWN:
		if (ev->down == ELASTIC_CTL_DOWN_LOST ||
		    ev->down == ELASTIC_CTL_DOWN_STANDBY) {
			_event("closed %s %s", ev->where, ev->err.text);
			return s->reconnect ? -1 : 4;
		}
		_event("%s %s",
		       ev->down == ELASTIC_CTL_DOWN_HELLO ? "send-failed"
							  : "connect-failed",
		       ev->err.text);
		return s->reconnect ? -1 : 1;
	default:
		return -1;
	}
}

/* Give back every grant held while the -b file exists (as a job whose launch
 * found no step there). 0, or -1 with err when a send failed. */
static int _standin_giveback(struct _standin *s, elastic_error_t *err)
{
	if (!s->giveback || access(s->giveback, F_OK) != 0)
		return 0;
	while (s->ngrants > 0) {
		uint32_t g = s->grants[s->ngrants - 1];
		if (elastic__ctl_giveback(&s->c, g, "proto-client told to give it back",
					  err) < 0)
			return -1;
		_event("giveback %u", g);
		_standin_forget_grant(s, g);
	}
	return 0;
}

/* One turn while connected: due acks, give-backs and status; -1 or the
 * exit status. */
static int _standin_turn(struct _standin *s, double now)
{
	struct elastic_ctl_ev ev = {.type = ELASTIC_CTL_EV_DOWN,
				    .down = ELASTIC_CTL_DOWN_LOST};

	if (_standin_acks(s, now, &ev.err) < 0 || _standin_giveback(s, &ev.err) < 0)
		return _standin_event(s, &ev);
	if (s->status_every > 0 && now - s->last_status >= s->status_every) {
		s->c.gpus = _standin_held(s);
		if (elastic__ctl_status(&s->c, ++s->step, -1, &ev.err) < 0)
			return _standin_event(s, &ev);
		s->last_status = now;
	}
	return -1;
}

/* A stand-in for an elastic job: registers, follows orders, reports. */
static int _proto_client(int argc, char **argv)
{
	static struct _standin s = {.base = 1};
	char host[ELASTIC_PROTO_NAME_MAX] = "";
	uint32_t job = 0;
	int rc;
	elastic_error_t err;

	if ((rc = _standin_args(&s, argc, argv, &job, host, sizeof(host))) >= 0)
		return rc;
	if (!job) {
		const char *env = getenv("SLURM_JOB_ID");
		job = env ? (uint32_t)strtoul(env, NULL, 10) : 0;
	}
	if (!job) {
		fprintf(stderr,
			"elastic-ctl proto-client: no job id (-j or $SLURM_JOB_ID)\n");
		return 2;
	}
	if (_controllers(&err) < 0) {
		_event("connect-failed %s", err.text);
		return 1;
	}
	elastic__ctl_init_at(&s.c, _ctls[0].host, _ctls[0].port, job);
	for (int i = 1; i < _nctls; i++) {
		snprintf(s.c.addr[i].host, sizeof(s.c.addr[i].host), "%s", _ctls[i].host);
		s.c.addr[i].port = _ctls[i].port;
	}
	s.c.naddr = _nctls;
	if (host[0])
		snprintf(s.c.node, sizeof(s.c.node), "%s", host);
	s.c.munge_socket = _munge_socket;
	s.c.connect_ms = 5000;
	s.c.backoff_min = s.c.backoff_max = s.c.backoff = s.c.auth_retry = 0.3;
	s.start = s.last_status = _now();
	signal(SIGPIPE, SIG_IGN);
	for (rc = -1; rc < 0;) {
		struct elastic_ctl_ev ev;
		double now = _now();
		if (s.exit_after > 0 && now - s.start > s.exit_after) {
			if (elastic__ctl_connected(&s.c))
				_event("exit");
			rc = 0;
			break;
		}
		if (elastic__ctl_connected(&s.c) && (rc = _standin_turn(&s, now)) >= 0)
			break;
		s.c.gpus = _standin_held(&s);
		s.c.step = s.step;
		elastic__ctl_next(&s.c, 200, &ev);
		rc = _standin_event(&s, &ev);
	}
	elastic__ctl_fini(&s.c);
	return rc;
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
	static const struct option longopts[] = {
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{NULL, 0, NULL, 0},
	};
	int opt;
	while ((opt = getopt_long(argc, argv, "+c:f:S:hV", longopts, NULL)) != -1) {
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
		case 'V':
			printf("elastic-ctl %s\n", PACKAGE_VERSION);
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
	if (strcmp(cmd, "pause") == 0 || strcmp(cmd, "drain") == 0 ||
	    strcmp(cmd, "resume") == 0 || strcmp(cmd, "show") == 0)
		return _admin(cmd, argc, argv);
	if (strcmp(cmd, "status") == 0 || strcmp(cmd, "scaling") == 0)
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
