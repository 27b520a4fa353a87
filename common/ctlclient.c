/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/ctlclient.c: the job side of the controller channel (common/proto):
 * munge-sealed messages over one TCP connection, reconnecting with backoff. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ctlclient.h"
#include "site_conf.h" /* ELASTIC_SLURM_SYSCONFDIR */

static double _mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* SlurmUser of slurm.conf ($SLURM_CONF, which slurmd also sets for jobs of a
 * configless cluster, else Slurm's sysconfdir): the user slurmctld and
 * elasticd run as. 0 (root) when the key is absent, as in Slurm, or the
 * file or the user cannot be read. */
static uid_t _slurm_user(void)
{
	const char *env = getenv("SLURM_CONF");
	char line[1024], name[256];
	struct passwd *pw;
	uid_t uid = 0;
	FILE *f;

	if (env && *env)
		f = fopen(env, "r");
	else
		f = fopen(ELASTIC_SLURM_SYSCONFDIR "/slurm.conf", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *p = line;
		while (isspace((unsigned char)*p))
			p++;
		if (strncasecmp(p, "SlurmUser", 9) != 0)
			continue;
		p += 9;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p++ != '=' || sscanf(p, " %255[^ \t\r\n#]", name) != 1)
			continue;
		if ((pw = getpwnam(name)))
			uid = pw->pw_uid;
		else if (strspn(name, "0123456789") == strlen(name))
			uid = (uid_t)strtoul(name, NULL, 10);
	}
	fclose(f);
	return uid;
}

void elastic__ctl_init_at(struct elastic_ctlclient *c, const char *host, int port,
			  uint32_t job)
{
	memset(c, 0, sizeof(*c));
	c->fd = -1;
	snprintf(c->host, sizeof(c->host), "%s", host);
	c->port = port;
	snprintf(c->addr[0].host, sizeof(c->addr[0].host), "%s", host);
	c->addr[0].port = port;
	c->naddr = 1;
	c->job = job;
	gethostname(c->node, sizeof(c->node) - 1);
	c->connect_ms = 2000;
	c->backoff_min = c->backoff = 0.5;
	c->backoff_max = 8;
	c->auth_retry = 5;
	c->slurm_user = _slurm_user();
}

/* One "host:port" of ELASTIC_CONTROLLER (len bytes of spec). */
static int _addr(const char *spec, size_t len, char *host, size_t hlen, int *port,
		 elastic_error_t *err)
{
	const char *colon = memrchr(spec, ':', len);
	char num[8];
	char *end;
	long p;

	if (!colon || colon == spec || (size_t)(colon - spec) >= hlen)
		return elastic__fail(err, EINVAL,
				     "ELASTIC_CONTROLLER: '%.*s' is not host:port",
				     (int)len, spec);
	if ((size_t)(spec + len - colon - 1) >= sizeof(num))
		return elastic__fail(
			err, EINVAL,
			"ELASTIC_CONTROLLER: '%.*s': port is not in [1, 65535]", (int)len,
			spec);
	memcpy(num, colon + 1, (size_t)(spec + len - colon - 1));
	num[spec + len - colon - 1] = '\0';
	p = strtol(num, &end, 10);
	if (*end || end == num || p < 1 || p > 65535)
		return elastic__fail(
			err, EINVAL,
			"ELASTIC_CONTROLLER: '%.*s': port is not in [1, 65535]", (int)len,
			spec);
	memcpy(host, spec, (size_t)(colon - spec));
	host[colon - spec] = '\0';
	*port = (int)p;
	return 0;
}

int elastic__ctl_init(struct elastic_ctlclient *c, const char *spec, uint32_t job,
		      elastic_error_t *err)
{
	char host[ELASTIC_CTL_ADDRS][sizeof(c->host)];
	int port[ELASTIC_CTL_ADDRS], n = 0;
	const char *p = spec;

	if (!spec || !*spec)
		return elastic__fail(err, EINVAL, "ELASTIC_CONTROLLER is empty");
	for (;;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : strlen(p);
		if (n == ELASTIC_CTL_ADDRS)
			return elastic__fail(
				err, EINVAL,
				"ELASTIC_CONTROLLER=%s: more than %d addresses", spec,
				ELASTIC_CTL_ADDRS);
		if (_addr(p, len, host[n], sizeof(host[n]), &port[n], err) < 0)
			return -1;
		n++;
		if (!comma)
			break;
		p = comma + 1;
	}
	elastic__ctl_init_at(c, host[0], port[0], job);
	for (int i = 1; i < n; i++) {
		snprintf(c->addr[i].host, sizeof(c->addr[i].host), "%s", host[i]);
		c->addr[i].port = port[i];
	}
	c->naddr = n;
	return 0;
}

void elastic__ctl_fini(struct elastic_ctlclient *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	elastic_auth_destroy(c->auth);
	c->auth = NULL;
}

/* Close and plan the next attempt: the next address at once; once every
 * address was tried, after backoff_min, doubling up to backoff_max. */
static void _drop(struct elastic_ctlclient *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	c->stashed = 0;
	c->failures++;
	if (c->naddr > 1) {
		c->cur = (c->cur + 1) % c->naddr;
		memcpy(c->host, c->addr[c->cur].host, sizeof(c->host));
		c->port = c->addr[c->cur].port;
		if (c->cur != 0) {
			c->next_try = _mono();
			return;
		}
	}
	c->next_try = _mono() + c->backoff;
	if (c->backoff < c->backoff_max)
		c->backoff *= 2;
	if (c->backoff > c->backoff_max)
		c->backoff = c->backoff_max;
}

static enum elastic_ctl_ev_type
_down(struct elastic_ctlclient *c, struct elastic_ctl_ev *ev, enum elastic_ctl_down why)
{
	ev->type = ELASTIC_CTL_EV_DOWN;
	ev->down = why;
	snprintf(ev->where, sizeof(ev->where), "%s:%d", c->host, c->port);
	if (why == ELASTIC_CTL_DOWN_AUTH)
		c->next_try = _mono() + c->auth_retry;
	else
		_drop(c);
	ev->failures = c->failures;
	return ev->type;
}

static int _send(struct elastic_ctlclient *c, const struct elastic_msg *m,
		 elastic_error_t *err)
{
	if (c->fd < 0) {
		elastic__fail(err, ENOTCONN, "controller %s:%d: not connected", c->host,
			      c->port);
		return -1;
	}
	if (elastic_proto_send(c->fd, c->auth, m, err) < 0) {
		_drop(c);
		return -1;
	}
	return 0;
}

/* How long a new connection waits for a standby's refusal of its hello. */
#define HELLO_ANSWER_MS 100

int elastic__ctl_is_standby(const struct elastic_msg *m)
{
	return m->type == ELASTIC_MSG_ERROR &&
	       strncmp(m->reason, ELASTIC_STANDBY_PREFIX,
		       strlen(ELASTIC_STANDBY_PREFIX)) == 0;
}

/* Connect and say hello: EV_HELLO or EV_DOWN. */
static enum elastic_ctl_ev_type _connect(struct elastic_ctlclient *c,
					 struct elastic_ctl_ev *ev)
{
	if (!c->auth && !(c->auth = elastic_auth_create(c->munge_socket, &ev->err)))
		return _down(c, ev, ELASTIC_CTL_DOWN_AUTH);
	if ((c->fd = elastic_proto_connect(c->host, c->port, c->connect_ms, &ev->err)) <
	    0)
		return _down(c, ev, ELASTIC_CTL_DOWN_CONNECT);
	struct elastic_msg h = {.type = ELASTIC_MSG_HELLO,
				.present = ELASTIC_K_JOB | ELASTIC_K_HOST |
					   ELASTIC_K_GPUS | ELASTIC_K_STEP,
				.job = c->job,
				.gpus = (uint32_t)c->gpus,
				.step = c->step};
	snprintf(h.host, sizeof(h.host), "%s", c->node);
	if (elastic_proto_send(c->fd, c->auth, &h, &ev->err) < 0)
		return _down(c, ev, ELASTIC_CTL_DOWN_HELLO);
	/* A standby elasticd refuses the hello at once: wait that long for
	 * its answer, so that a standby never counts as a registration (an
	 * active elasticd sends nothing in return; what it does send is kept
	 * for the next call). */
	gid_t gid;
	int rc = elastic_proto_recv(c->fd, c->auth, &c->stash, &c->stash_uid, &gid,
				    HELLO_ANSWER_MS, &ev->err);
	if (rc < 0)
		return _down(c, ev, ELASTIC_CTL_DOWN_LOST);
	if (rc > 0 && elastic__ctl_is_standby(&c->stash)) {
		elastic__fail(&ev->err, EAGAIN, "%s", c->stash.reason);
		return _down(c, ev, ELASTIC_CTL_DOWN_STANDBY);
	}
	c->stashed = rc > 0;
	c->backoff = c->backoff_min;
	c->failures = 0;
	return ev->type = ELASTIC_CTL_EV_HELLO;
}

enum elastic_ctl_ev_type elastic__ctl_next(struct elastic_ctlclient *c, int timeout_ms,
					   struct elastic_ctl_ev *ev)
{
	gid_t gid;
	int rc;

	memset(ev, 0, sizeof(*ev));
	if (c->fd < 0) {
		double wait = c->next_try - _mono();
		if (wait * 1000 > timeout_ms) {
			if (timeout_ms > 0)
				usleep(timeout_ms * 1000);
			return ev->type = ELASTIC_CTL_EV_NONE;
		}
		if (wait > 0)
			usleep((useconds_t)(wait * 1e6));
		return _connect(c, ev);
	}
	if (c->stashed) {
		ev->msg = c->stash;
		ev->uid = c->stash_uid;
		c->stashed = 0;
	} else {
		rc = elastic_proto_recv(c->fd, c->auth, &ev->msg, &ev->uid, &gid,
					timeout_ms, &ev->err);
		if (rc == 0)
			return ev->type = ELASTIC_CTL_EV_NONE;
		if (rc < 0)
			return _down(c, ev, ELASTIC_CTL_DOWN_LOST);
	}
	/* Orders come only from the controller: root or SlurmUser (or this
	 * job's own user, as elastic-ctl's stand-in job tests it). */
	if (ev->uid != 0 && ev->uid != c->slurm_user && ev->uid != geteuid())
		return ev->type = ELASTIC_CTL_EV_IGNORED;
	/* A standby elasticd (elasticd(8), BackupControllerHost) refuses the
	 * job and names the active one: try the next address. */
	if (elastic__ctl_is_standby(&ev->msg)) {
		elastic__fail(&ev->err, EAGAIN, "%s", ev->msg.reason);
		return _down(c, ev, ELASTIC_CTL_DOWN_STANDBY);
	}
	if (elastic__ctl_refuses_rec(&ev->msg))
		c->rec_refused = 1;
	return ev->type = ELASTIC_CTL_EV_MSG;
}

int elastic__ctl_refuses_rec(const struct elastic_msg *m)
{
	static const char *const keys[] = {"'reforms'", "'inplace'", "'recovery'",
					   "'recovery_ms'"};
	const char *k;

	if (m->type != ELASTIC_MSG_ERROR || !(k = strstr(m->reason, "unknown key ")))
		return 0;
	k += strlen("unknown key ");
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strncmp(k, keys[i], strlen(keys[i])) == 0)
			return 1;
	return 0;
}

/* Are there counts to send? (all zero: the status of an older job) */
static int _rec_any(const struct elastic_recovery_counts *r)
{
	static const struct elastic_recovery_counts zero;
	return memcmp(r, &zero, sizeof(zero)) != 0;
}

int elastic__ctl_status(struct elastic_ctlclient *c, uint64_t step, double rate,
			elastic_error_t *err)
{
	c->step = step;
	struct elastic_msg m = {.type = ELASTIC_MSG_STATUS,
				.present =
					ELASTIC_K_JOB | ELASTIC_K_GPUS | ELASTIC_K_STEP,
				.job = c->job,
				.gpus = (uint32_t)c->gpus,
				.step = step};
	if (rate >= 0) {
		m.present |= ELASTIC_K_RATE;
		m.rate = rate;
	}
	if (!c->rec_refused && _rec_any(&c->rec)) {
		m.present |= ELASTIC_K_REFORMS | ELASTIC_K_INPLACE | ELASTIC_K_RECOVERY |
			     ELASTIC_K_RECOVERY_MS;
		m.rec = c->rec;
	}
	return _send(c, &m, err);
}

int elastic__ctl_ack(struct elastic_ctlclient *c, uint64_t order, uint32_t grant,
		     int result, const char *reason, elastic_error_t *err)
{
	struct elastic_msg k = {.type = ELASTIC_MSG_ACK,
				.present = ELASTIC_K_JOB | ELASTIC_K_ORDER |
					   ELASTIC_K_RESULT | ELASTIC_K_GRANT,
				.job = c->job,
				.order = order,
				.grant = grant,
				.result = result};
	if (reason) {
		k.present |= ELASTIC_K_REASON;
		snprintf(k.reason, sizeof(k.reason), "%s", reason);
	}
	return _send(c, &k, err);
}

int elastic__ctl_giveback(struct elastic_ctlclient *c, uint32_t grant, const char *reason,
			  elastic_error_t *err)
{
	struct elastic_msg k = {.type = ELASTIC_MSG_GIVEBACK,
				.present = ELASTIC_K_JOB | ELASTIC_K_GRANT,
				.job = c->job,
				.grant = grant};
	if (reason && *reason) {
		k.present |= ELASTIC_K_REASON;
		snprintf(k.reason, sizeof(k.reason), "%s", reason);
	}
	return _send(c, &k, err);
}
