/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/elasticd.c: elasticd's main: its start (a list of stages), the
 * event loop, SIGHUP's re-read, and its stop (the stages in reverse). */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "channel.h"
#include "ctl.h"
#include "hint.h"
#include "lease.h"
#include "log.h"
#include "metrics.h"
#include "options.h"
#include "plan.h"
#include "site_conf.h"
#include "slurm.h"

static volatile sig_atomic_t _stop, _hup;

/* The elastic jobs and grants are checked for changes every EVENT_POLL_MS between
 * ticks, every EVENT_POLL_BUSY_MS while a change is under way (a grant to
 * see start, a release to finish): the next step of a resize waits for it. */
#define EVENT_POLL_MS	   250
#define EVENT_POLL_BUSY_MS 50
/* While a ping is out ahead of a tick or a look, the loop looks whether it
 * is back this often. */
#define READY_POLL_MS 5
/* Hints: at most one look at the elastic jobs per HINT_MIN_MS, however
 * many come; the plugin says "alive" every tick, and HINT_ALIVE_TICKS
 * ticks without a hint put the polling back. */
#define HINT_MIN_MS	 100
#define HINT_ALIVE_TICKS 3
/* The controller role's lease (lease.h): read, and renewed by the active
 * elasticd, every LEASE_PERIOD_MS; a claim is read back LEASE_SETTLE_MS
 * after it was written. */
#define LEASE_PERIOD_MS 1000
#define LEASE_SETTLE_MS 500

static void _on_signal(int sig)
{
	_stop = sig;
}

static void _on_hup(int sig)
{
	_hup = 1;
}

/* What the daemon runs with: the stages set it up, _reload replaces what a
 * re-read may change, the loop reads it. */
struct ed_daemon {
	struct ed_opts opt;
	char conf_path[PATH_MAX]; /* the file read, or looked for */
	int conf_defaults;	  /* not found: the built-in defaults */
	struct elastic_site_conf conf;
	struct ed_ctl_conf cc;
	elastic_auth_t *auth;
	ed_channel_t *ch;
	struct ed_ctl *ctl;
	ed_metrics_t *metrics; /* NULL: MetricsAddress not set */
	ed_hint_t *hint;       /* NULL: no UDP socket (the elastic jobs are polled) */
	int hints_alive;       /* hints arrived lately: elastic jobs not polled */
	char self[ED_LEASE_ADDR_MAX]; /* HOST:PORT the channel listens on */
	char lease_path[4200];	      /* "": no lease, this elasticd acts alone */
	struct ed_lease lease;
	uint64_t next_lease;	   /* when the lease is read next */
	uint64_t lease_err_logged; /* last time its file failed, logged */
	int lease_logged;	   /* the standby said whom it waits on */
	/* ELASTICD_TIMING=slow (elasticd(8), for benches): events every
	 * EVENT_POLL_MS whatever is under way, and a job just started held by
	 * the cool-down before it grows. */
	int slow;
};

/* The settings a re-read may change: policy, its parameters, log level. */
static void _apply(struct ed_daemon *d)
{
	d->cc.plan.mode = (enum elastic_policy_mode)d->conf.policy_mode;
	d->cc.plan.min_change = (int)d->conf.hysteresis;
	d->cc.plan.min_gain_pct = (int)d->conf.throughput_min_gain;
	d->cc.plan.fair_floor_pct = (int)d->conf.fair_share_floor;
	d->cc.plan.cooldown = d->conf.cool_down;
	d->cc.plan.cooldown_from_start = d->slow;
	ed_log_set_level(d->opt.verbose || d->conf.debug ? ED_LOG_DEBUG : ED_LOG_INFO);
	if (d->ctl)
		ed_ctl_set_plan(d->ctl, &d->cc.plan);
}

/* A key of the new file that only a restart can apply: say so and keep
 * the value in use (the listening socket, munge, the grants' names). */
static void _keep_string(char **fresh, const char *used, const char *key)
{
	char *dup;
	if (strcmp(*fresh, used) == 0 || !(dup = strdup(used)))
		return;
	ed_notice("SIGHUP: %s=%s takes effect when elasticd restarts; keeping %s=%s", key,
		  *fresh, key, used);
	free(*fresh);
	*fresh = dup;
}

static void _keep_long(long *fresh, long used, const char *key)
{
	if (*fresh == used)
		return;
	ed_notice("SIGHUP: %s=%ld takes effect when elasticd restarts; keeping %s=%ld",
		  key, *fresh, key, used);
	*fresh = used;
}

/* SIGHUP: reopen the log, re-read elastic.conf; a file that cannot be used
 * is logged and the configuration in use kept. */
static void _reload(struct ed_daemon *d)
{
	struct elastic_site_conf fresh;
	elastic_error_t err = {""};
	int rc;

	if (ed_log_path()[0] && ed_log_open(ed_log_path()) < 0)
		ed_error("SIGHUP: cannot reopen the log file %s: %s", ed_log_path(),
			 strerror(errno));
	rc = elastic_site_conf_load(&fresh, d->conf_path, d->opt.conf_path == NULL, &err);
	if (rc < 0) {
		ed_error(
			"SIGHUP: %s; keeping the configuration in use (PolicyMode=%s TickSeconds=%ld)",
			err.text, ed_plan_mode_name(d->cc.plan.mode),
			d->conf.tick_seconds);
		return;
	}
	_keep_string(&fresh.controller_host, d->conf.controller_host, "ControllerHost");
	_keep_long(&fresh.controller_port, d->conf.controller_port, "ControllerPort");
	_keep_string(&fresh.backup_controller_host, d->conf.backup_controller_host,
		     "BackupControllerHost");
	_keep_long(&fresh.takeover_timeout, d->conf.takeover_timeout, "TakeoverTimeout");
	_keep_long(&fresh.channel_idle_timeout, d->conf.channel_idle_timeout,
		   "ChannelIdleTimeout");
	_keep_string(&fresh.munge_socket, d->conf.munge_socket, "MungeSocket");
	_keep_string(&fresh.grant_qos, d->conf.grant_qos, "GrantQos");
	_keep_string(&fresh.grant_name_prefix, d->conf.grant_name_prefix,
		     "GrantNamePrefix");
	_keep_string(&fresh.metrics_address, d->conf.metrics_address, "MetricsAddress");
	_keep_string(&fresh.state_file, d->conf.state_file, "StateFile");
	/* A new LogFile is opened at once where elasticd logs to a file
	 * already (and -L does not override it); a switch between a file and
	 * stderr or syslog waits for a restart. */
	if (!d->opt.log_path && strcmp(fresh.log_file, d->conf.log_file) != 0) {
		if (!ed_log_path()[0] || !*fresh.log_file) {
			_keep_string(&fresh.log_file, d->conf.log_file, "LogFile");
		} else if (ed_log_open(fresh.log_file) < 0) {
			ed_error("SIGHUP: cannot open LogFile=%s: %s; logging to %s",
				 fresh.log_file, strerror(errno), ed_log_path());
			_keep_string(&fresh.log_file, d->conf.log_file, "LogFile");
		}
	}
	elastic_site_conf_free(&d->conf);
	d->conf = fresh;
	_apply(d);
	ed_info("SIGHUP: re-read %s%s: PolicyMode=%s TickSeconds=%ld Hysteresis=%ld CoolDown=%ld ThroughputMinGain=%ld FairShareFloor=%ld Debug=%s",
		d->conf_path, rc == 1 ? " (not found: built-in defaults)" : "",
		ed_plan_mode_name(d->cc.plan.mode), d->conf.tick_seconds,
		d->conf.hysteresis, d->conf.cool_down, d->conf.throughput_min_gain,
		d->conf.fair_share_floor, d->conf.debug ? "yes" : "no");
}

/* Hints from job_submit/elastic (hint.h) that came within HINT_ALIVE_TICKS
 * ticks: elasticd then learns of updates of jobs from them, stops polling
 * its elastic jobs between ticks and reads a new plain job once; without
 * hints it polls again. */
static void _hints_follow(struct ed_daemon *d, uint64_t now, uint64_t tick_ms)
{
	int alive = ed_hint_alive(d->hint, now, HINT_ALIVE_TICKS * tick_ms);

	if (alive == d->hints_alive)
		return;
	d->hints_alive = alive;
	ed_slurm_hints_alive(alive);
	if (alive) {
		ed_info("hints arrive from job_submit/elastic: the elastic jobs are asked about when they change, not polled between ticks; a new plain job is read once");
	} else {
		/* a tag added while the hint went missing is found now */
		ed_slurm_want_full();
		ed_info("no hint from job_submit/elastic for %d ticks: polling the elastic jobs between ticks",
			HINT_ALIVE_TICKS);
	}
}

/* One period of the lease: read it, decide, write what the decision asks,
 * and follow a change of role. */
static void _lease_period(struct ed_daemon *d, uint64_t now)
{
	struct ed_lease_view v;
	struct ed_lease_step st;
	elastic_error_t err = {""};
	enum ed_lease_role was = d->lease.role;
	uint64_t mono = ed_mono_ms();
	char why[ELASTIC_PROTO_TEXT_MAX];

	d->next_lease = now + LEASE_PERIOD_MS;
	if (ed_lease_read(d->lease_path, &v, &err) < 0) {
		/* no decision on a lease that cannot be read: a role is kept,
		 * and another elasticd takes over an active one that stays cut
		 * off for TakeoverTimeout */
		if (now - d->lease_err_logged >= 60000) {
			ed_error("%s (the controller role stays %s)", err.text,
				 ed_lease_role_name(d->lease.role));
			d->lease_err_logged = now;
		}
		return;
	}
	st = ed_lease_decide(&d->lease, &v, mono);
	if (st.write && ed_lease_write(d->lease_path, d->self, d->lease.seq, &err) < 0 &&
	    now - d->lease_err_logged >= 60000) {
		ed_error("%s", err.text);
		d->lease_err_logged = now;
	}
	if (d->lease.role == ED_LEASE_CLAIMING)
		d->next_lease = now + LEASE_SETTLE_MS;
	if (st.claimed)
		ed_info("claiming the controller role: %s",
			!v.present ? "no lease yet"
			: strcmp(v.holder, d->self) == 0
				? "the lease is this elasticd's own, from before its start"
				: "the lease was not renewed for TakeoverTimeout");
	if (st.became_active) {
		ed_notice(
			"active: this elasticd (%s) holds the controller role and acts on the elastic jobs",
			d->self);
		ed_channel_set_standby(d->ch, NULL);
		ed_ctl_set_active(d->ctl, 1);
	}
	if (d->lease.role == ED_LEASE_STANDBY &&
	    (was != ED_LEASE_STANDBY || st.lost || !d->lease_logged)) {
		snprintf(why, sizeof(why),
			 ELASTIC_STANDBY_PREFIX " the active elasticd is %.90s",
			 v.present ? v.holder : "unknown");
		if (st.lost)
			ed_error(
				"another elasticd (%s) took the controller role: standing by",
				v.holder);
		else
			ed_notice(
				"standing by: the active elasticd is %s (taken over when its lease is not renewed for %ld s)",
				v.present ? v.holder : "unknown",
				d->conf.takeover_timeout);
		ed_channel_set_standby(d->ch, why);
		ed_ctl_set_active(d->ctl, 0);
		d->lease_logged = 1;
	}
}

/* Has what elasticd acts on changed since the last tick (the look between
 * ticks, ed_slurm_jobs_changed)? A slow look is logged as a slow tick is. */
static int _jobs_changed(struct ed_daemon *d, int jobs)
{
	struct ed_calls calls0;
	double t0 = ed_mono_s(), cpu = ed_cpu_s(), q = ed_runq_s();
	int changed;

	ed_slurm_calls(&calls0);
	changed = ed_slurm_jobs_changed(jobs);
	ed_ctl_slow(d->ctl, "a look between ticks", ed_mono_s() - t0, ed_cpu_s() - cpu,
		    ed_runq_s() - q, NULL, &calls0);
	return changed;
}

/* The event loop, until SIGTERM or SIGINT. */
static void _run(struct ed_daemon *d)
{
	uint64_t next = ed_now_ms(), last_tick = 0, next_event = 0, next_hint = 0;
	/* since when a tick or a look waits for a ping, and the clocks then */
	double ready_t0 = 0, ready_cpu0 = 0, ready_q0 = 0;
	struct ed_calls ready_calls0;

	while (!_stop) {
		uint64_t tick_ms = (uint64_t)d->conf.tick_seconds * 1000u;
		uint64_t now = ed_now_ms(), dl = ed_ctl_next_deadline(d->ctl);
		if (_hup) {
			_hup = 0;
			_reload(d);
			/* A shorter TickSeconds counts from now, not from the
			 * tick the old one planned. */
			tick_ms = (uint64_t)d->conf.tick_seconds * 1000u;
			if (next > now + tick_ms)
				next = now + tick_ms;
			continue;
		}
		/* The controller role: a standby only answers that it stands
		 * by (the channel does) and serves its metrics. */
		if (d->lease_path[0]) {
			if (now >= d->next_lease)
				_lease_period(d, now);
			if (d->lease.role != ED_LEASE_ACTIVE) {
				ed_channel_poll(d->ch, (int)(d->next_lease > now
								     ? d->next_lease - now
								     : 0));
				continue;
			}
		}
		/* A deadline that a tick could not settle (slurmctld down) is
		 * retried at most every 200 ms, not in a busy loop. */
		if (dl && dl < last_tick + 200)
			dl = last_tick + 200;
		/* A tick or a look due now calls slurmctld. When the gate must
		 * ping it first, the ping goes out now and the loop serves the
		 * channel until it is back (or given up on): the tick or the
		 * look begins then, and does not wait on it. */
		int due = now >= next || now >= next_event || (dl && now >= dl) ||
			  ed_ctl_tick_wanted(d->ctl) ||
			  (now >= next_hint && ed_hint_named(d->hint));
		if (due && !ed_slurm_ready()) {
			if (!ready_t0) {
				ready_t0 = ed_mono_s();
				ready_cpu0 = ed_cpu_s();
				ready_q0 = ed_runq_s();
				ed_slurm_calls(&ready_calls0);
			}
			ed_channel_poll(d->ch, READY_POLL_MS);
			continue;
		}
		if (ready_t0) {
			ed_ctl_slow(d->ctl,
				    "a wait for slurmctld before a tick or a look",
				    ed_mono_s() - ready_t0, ed_cpu_s() - ready_cpu0,
				    ed_runq_s() - ready_q0, NULL, &ready_calls0);
			ready_t0 = 0;
		}
		/* Between ticks a change is acted on at once: an update of an
		 * elastic job that a hint names, and what a cheap check every
		 * EVENT_POLL_MS finds (a grant that started; the elastic jobs'
		 * changes too while no hints arrive). */
		int event = 0;
		_hints_follow(d, now, tick_ms);
		uint32_t hinted[ED_HINT_IDS];
		int nhinted;
		if (now >= next_hint && ed_hint_take(d->hint, hinted, &nhinted)) {
			/* A job was updated: look now (and a flood of hints
			 * costs at most one look per HINT_MIN_MS). A job not
			 * watched yet (a tag just added) is read by a tick. */
			next_hint = now + HINT_MIN_MS;
			event = now < next &&
				(ed_slurm_hinted(hinted, nhinted) || _jobs_changed(d, 1));
		}
		if (!event && now >= next_event) {
			next_event = now + (!d->slow && ed_ctl_busy(d->ctl)
						    ? EVENT_POLL_BUSY_MS
						    : EVENT_POLL_MS);
			event = now < next && _jobs_changed(d, !d->hints_alive);
		}
		if (event)
			ed_debug("slurmctld's job list changed: tick now");
		if (event || now >= next || (dl && now >= dl) ||
		    ed_ctl_tick_wanted(d->ctl)) {
			ed_ctl_tick(d->ctl);
			last_tick = now;
			now = ed_now_ms();
			if (now >= next)
				next += tick_ms;
			if (next <= now || next > now + tick_ms)
				next = now + tick_ms;
			dl = ed_ctl_next_deadline(d->ctl);
			if (dl && dl < last_tick + 200)
				dl = last_tick + 200;
		}
		uint64_t wake = next < next_event ? next : next_event;
		if (next_hint > now && next_hint < wake)
			wake = next_hint; /* a hint held back by HINT_MIN_MS */
		if (dl && dl > now && dl < wake)
			wake = dl;
		if (ed_ctl_tick_wanted(d->ctl))
			wake = now; /* what the tick left (its act budget) */
		ed_channel_poll(d->ch, (int)(wake > now ? wake - now : 0));
	}
	ed_info("stopping on signal %d", (int)_stop);
	if (d->lease_path[0] && d->lease.role == ED_LEASE_ACTIVE &&
	    ed_lease_release(d->lease_path, d->self))
		ed_info("gave up the controller role (%s removed): a standby takes it at once",
			d->lease_path);
}

/* The channel's poll also watches the hint socket (first) and the
 * metrics endpoint's sockets. */
static int _extra_fill(void *arg, struct pollfd *pf, int max)
{
	struct ed_daemon *d = arg;
	int n = ed_hint_pollfds(d->hint, pf, max);
	if (d->metrics)
		n += ed_metrics_pollfds(d->metrics, pf + n, max - n);
	return n;
}

static void _extra_ready(void *arg, const struct pollfd *pf, int n)
{
	struct ed_daemon *d = arg;
	int h = d->hint ? 1 : 0;
	if (h && n >= 1)
		ed_hint_handle(d->hint, pf, 1);
	if (d->metrics && n > h)
		ed_metrics_handle(d->metrics, pf + h, n - h);
}

/* ---- the stages of the start, each undone in reverse at the stop ---- */

/* elastic.conf (its path kept absolute for SIGHUP), the timing, the
 * settings a re-read may change. */
static int _conf_init(struct ed_daemon *d)
{
	elastic_error_t err = {""};
	int rc = ed_options_load_conf(d->opt.conf_path, &d->conf, d->conf_path,
				      sizeof(d->conf_path), &err);

	if (rc < 0) {
		fprintf(stderr, "elasticd: %s\n", err.text);
		return -1;
	}
	d->conf_defaults = rc == 1;
	if (d->opt.conf_path && d->conf_path[0] != '/') {
		/* The daemon leaves its directory; SIGHUP must find the file. */
		char abs[PATH_MAX];
		if (realpath(d->conf_path, abs))
			snprintf(d->conf_path, sizeof(d->conf_path), "%s", abs);
	}
	const char *timing = getenv("ELASTICD_TIMING");
	d->slow = timing && strcmp(timing, "slow") == 0;
	_apply(d);
	return 0;
}

static void _conf_fini(struct ed_daemon *d)
{
	elastic_site_conf_free(&d->conf);
}

/* The log: -L, else LogFile, else stderr in the foreground, else syslog. */
static int _log_init(struct ed_daemon *d)
{
	const char *log_path = d->opt.log_path;

	if (!log_path && d->conf.log_file && *d->conf.log_file)
		log_path = d->conf.log_file;
	if (log_path) {
		if (ed_log_open(log_path) < 0) {
			fprintf(stderr, "elasticd: cannot open log file %s: %s\n",
				log_path, strerror(errno));
			return -1;
		}
	} else if (d->opt.foreground) {
		ed_log_stderr();
	} else {
		ed_log_syslog();
	}
	return 0;
}

static void _log_fini(struct ed_daemon *d)
{
	(void)d;
	ed_log_close();
}

/* The daemon's process: detached (unless -D), room for connections,
 * signals. */
static int _process_init(struct ed_daemon *d)
{
	struct rlimit rl;

	if (!d->opt.foreground && daemon(0, ed_log_path()[0] ? 1 : 0) < 0) {
		fprintf(stderr, "elasticd: daemon: %s\n", strerror(errno));
		return -1;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Room for every channel connection besides our own files. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096 &&
	    rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	struct sigaction sa = {.sa_handler = _on_signal}, hup = {.sa_handler = _on_hup};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &hup, NULL);
	return 0;
}

/* libslurm and slurmctld's configuration (SlurmUser, StateSaveLocation). */
static int _slurm_init(struct ed_daemon *d)
{
	elastic_error_t err = {""};

	(void)d;
	if (ed_slurm_init(&err) < 0) {
		ed_error("%s", err.text);
		return -1;
	}
	return 0;
}

static void _slurm_fini(struct ed_daemon *d)
{
	(void)d;
	ed_slurm_fini();
}

/* munge, which authenticates the channel's peers. */
static int _auth_init(struct ed_daemon *d)
{
	elastic_error_t err = {""};

	d->auth = elastic_auth_create(d->conf.munge_socket, &err);
	if (!d->auth) {
		ed_error("%s", err.text);
		return -1;
	}
	return 0;
}

static void _auth_fini(struct ed_daemon *d)
{
	elastic_auth_destroy(d->auth);
}

/* The job channel's listening socket (-p overrides ControllerPort). */
static int _channel_init(struct ed_daemon *d)
{
	elastic_error_t err = {""};

	int port = d->opt.port >= 0 ? d->opt.port : (int)d->conf.controller_port;
	const char *host = d->conf.controller_host,
		   *backup = d->conf.backup_controller_host;

	d->ch = ed_channel_create(host, port, (int)d->conf.channel_idle_timeout, d->auth,
				  &err);
	/* Not this host's address (the backup controller host), or taken by
	 * the elasticd on this host: the backup's address. */
	if (!d->ch && backup && *backup) {
		elastic_error_t e2 = {""};
		ed_info("%s: listening on BackupControllerHost=%s", err.text, backup);
		host = backup;
		d->ch = ed_channel_create(host, port, (int)d->conf.channel_idle_timeout,
					  d->auth, &e2);
		if (!d->ch)
			snprintf(err.text, sizeof(err.text), "%s", e2.text);
	}
	if (!d->ch) {
		ed_error("%s", err.text);
		return -1;
	}
	snprintf(d->self, sizeof(d->self), "%s:%d", host && *host ? host : "*",
		 ed_channel_port(d->ch));
	return 0;
}

static void _channel_fini(struct ed_daemon *d)
{
	ed_channel_destroy(d->ch);
}

/* The controller, and its handlers for the channel's frames. */
static int _ctl_init(struct ed_daemon *d)
{
	snprintf(d->cc.grant_prefix, sizeof(d->cc.grant_prefix), "%s",
		 d->conf.grant_name_prefix);
	snprintf(d->cc.grant_qos, sizeof(d->cc.grant_qos), "%s",
		 d->conf.grant_qos ? d->conf.grant_qos : "");
	d->cc.dry_run = d->opt.dry;
	d->ctl = ed_ctl_create(&d->cc, d->ch);
	if (!d->ctl) {
		ed_error("out of memory");
		return -1;
	}
	ed_channel_set_handlers(d->ch, &ed_ctl_handlers, d->ctl);
	return 0;
}

static void _ctl_fini(struct ed_daemon *d)
{
	ed_ctl_destroy(d->ctl);
}

/* The metrics endpoint (MetricsAddress), whose sockets the channel's
 * poll watches. */
static int _metrics_init(struct ed_daemon *d)
{
	elastic_error_t err = {""};

	if (!d->conf.metrics_address || !*d->conf.metrics_address)
		return 0;
	d->metrics =
		ed_metrics_create(d->conf.metrics_address, ed_ctl_metrics, d->ctl, &err);
	if (!d->metrics) {
		ed_error("%s", err.text);
		return -1;
	}
	ed_info("serving OpenMetrics on %s (port %d), GET /metrics",
		d->conf.metrics_address, ed_metrics_port(d->metrics));
	return 0;
}

static void _metrics_fini(struct ed_daemon *d)
{
	ed_metrics_destroy(d->metrics);
}

/* The hint socket: UDP on the channel's address and port. Optional: without
 * it the elastic jobs are polled between ticks, as without the plugin. */
static int _hint_init(struct ed_daemon *d)
{
	elastic_error_t err = {""};
	struct ed_poll_extra x = {_extra_fill, _extra_ready, d};

	d->hint = ed_hint_create(d->conf.controller_host, ed_channel_port(d->ch), &err);
	if (!d->hint)
		ed_error("%s: the elastic jobs are polled between ticks", err.text);
	ed_channel_set_extra(d->ch, &x);
	return 0;
}

static void _hint_fini(struct ed_daemon *d)
{
	ed_hint_destroy(d->hint);
}

/* Started as root, elasticd becomes SlurmUser once its socket is bound and
 * its log open, as slurmctld does: it needs slurmctld's administrator
 * rights, which SlurmUser has, and nothing of root's (elasticd(8),
 * PRIVILEGES). Started as any other user, it stays that user. */
static int _user_init(struct ed_daemon *d)
{
	uid_t uid = ed_slurm_user();
	struct passwd *pw;

	(void)d;

	if (getuid() != 0 || uid == 0)
		return 0;
	if (!(pw = getpwuid(uid))) {
		ed_error("SlurmUser (uid %u) has no passwd entry: cannot give up root",
			 (unsigned)uid);
		return -1;
	}
	/* SIGHUP reopens the log as SlurmUser. */
	if (ed_log_chown(uid, pw->pw_gid) < 0)
		ed_error(
			"cannot hand the log file %s to SlurmUser %s: %s (SIGHUP may not reopen it)",
			ed_log_path(), pw->pw_name, strerror(errno));
	if (initgroups(pw->pw_name, pw->pw_gid) < 0 || setgid(pw->pw_gid) < 0 ||
	    setuid(uid) < 0) {
		ed_error("cannot become SlurmUser %s (uid %u): %s", pw->pw_name,
			 (unsigned)uid, strerror(errno));
		return -1;
	}
	/* The change of uid made the process undumpable: a crash would leave
	 * no core for the bug report. As slurmctld, dumpable again, and in a
	 * directory SlurmUser can write (the kernel's core_pattern may name a
	 * plain file there; systemd-coredump takes it whatever the directory). */
	if (prctl(PR_SET_DUMPABLE, 1) < 0)
		ed_error("cannot stay dumpable as SlurmUser: %s (a crash leaves no core)",
			 strerror(errno));
	if (access(".", W_OK) < 0 && chdir("/var/tmp") < 0)
		ed_error("no directory for core files: chdir /var/tmp: %s",
			 strerror(errno));
	return 0;
}

/* What administrators paused or drained before a restart, from StateFile
 * (default: elasticd.state in slurmctld's StateSaveLocation; "none": not
 * kept), read as SlurmUser, who writes it. */
static int _admin_init(struct ed_daemon *d)
{
	char path[4096] = "";
	const char *f = d->conf.state_file ? d->conf.state_file : "";
	const char *dir = ed_slurm_state_dir();

	if (strcmp(f, "none") == 0)
		return 0;
	if (*f)
		snprintf(path, sizeof(path), "%s", f);
	else if (dir && *dir)
		snprintf(path, sizeof(path), "%s/elasticd.state", dir);
	else
		ed_info("slurmctld has no StateSaveLocation and elastic.conf no StateFile: "
			"pauses and drains are not kept across a restart");
	ed_ctl_admin_restore(d->ctl, path[0] ? path : NULL);
	return 0;
}

/* The controller role: a lease beside StateFile (PATH.lease), else in
 * slurmctld's StateSaveLocation, which every controller host sees. Without
 * either, this elasticd acts alone (refused when a backup is configured:
 * two would act). */
static int _lease_init(struct ed_daemon *d)
{
	const char *f = d->conf.state_file ? d->conf.state_file : "";
	const char *dir = ed_slurm_state_dir();
	int backup = d->conf.backup_controller_host && *d->conf.backup_controller_host;

	if (*f && strcmp(f, "none") != 0)
		snprintf(d->lease_path, sizeof(d->lease_path), "%s.lease", f);
	else if (dir && *dir)
		snprintf(d->lease_path, sizeof(d->lease_path), "%s/elasticd.lease", dir);
	if (!d->lease_path[0]) {
		if (backup) {
			ed_error(
				"BackupControllerHost=%s needs a lease both hosts see: "
				"slurmctld has no StateSaveLocation and elastic.conf no StateFile",
				d->conf.backup_controller_host);
			return -1;
		}
		ed_info("no StateSaveLocation and no StateFile: no lease; this elasticd "
			"acts alone (nothing stops a second one)");
		ed_ctl_set_active(d->ctl, 1);
		return 0;
	}
	ed_lease_init(&d->lease, d->self, (uint64_t)d->conf.takeover_timeout * 1000u,
		      LEASE_SETTLE_MS, ed_mono_ms());
	ed_channel_set_standby(d->ch, ELASTIC_STANDBY_STARTING);
	ed_ctl_set_active(d->ctl, 0);
	return 0;
}

/* "slurm (uid 64030)": the user the daemon runs as, for its first line. */
static const char *_whoami(char *buf, size_t size)
{
	struct passwd *pw = getpwuid(getuid());
	snprintf(buf, size, "%s (uid %u)", pw ? pw->pw_name : "?", (unsigned)getuid());
	return buf;
}

/* The start, in order; a stage that fails stops it there, and the stop
 * undoes the stages done, last first. */
static const struct ed_stage {
	int (*init)(struct ed_daemon *d);
	void (*fini)(struct ed_daemon *d); /* NULL: nothing to undo */
} _stages[] = {
	{_conf_init, _conf_fini},	/* elastic.conf, ELASTICD_TIMING */
	{_log_init, _log_fini},		/* -L, LogFile, stderr or syslog */
	{_process_init, NULL},		/* detached, rlimits, signals */
	{_slurm_init, _slurm_fini},	/* libslurm, slurmctld's configuration */
	{_auth_init, _auth_fini},	/* munge */
	{_channel_init, _channel_fini}, /* the job channel's socket */
	{_ctl_init, _ctl_fini},		/* the controller, the channel's handlers */
	{_metrics_init, _metrics_fini}, /* MetricsAddress */
	{_hint_init, _hint_fini},	/* hints from job_submit/elastic (UDP) */
	{_user_init, NULL},		/* SlurmUser, when started as root */
	{_admin_init, NULL},		/* pauses and drains from StateFile */
	{_lease_init, NULL},		/* the controller role's lease */
};
#define NSTAGES (sizeof(_stages) / sizeof(_stages[0]))

/* The first lines of a started daemon's log. */
static void _log_started(const struct ed_daemon *d)
{
	char who[96];

	ed_info("started (pid %d): listening on %s, tick %ld s, policy %s, grant QOS '%s', prefix '%s', SlurmUser uid %u, running as %s, job queries %s%s",
		(int)getpid(), d->self, d->conf.tick_seconds,
		ed_plan_mode_name(d->cc.plan.mode), d->cc.grant_qos, d->cc.grant_prefix,
		(unsigned)ed_slurm_user(), _whoami(who, sizeof(who)),
		ed_slurm_query_mode(), d->opt.dry ? ", DRY RUN" : "");
	if (d->conf_defaults)
		ed_info("%s not found: the built-in defaults (see elasticd -t)",
			d->conf_path);
	if (d->slow)
		ed_info("ELASTICD_TIMING=slow: events every %d ms, new jobs held by the cool-down",
			EVENT_POLL_MS);
}

int main(int argc, char **argv)
{
	static struct ed_daemon d;
	size_t done = 0;
	int rc;

	if ((rc = ed_options_parse(argc, argv, &d.opt)) >= 0)
		return rc;
	if (d.opt.test)
		return ed_options_test_config(&d.opt);
	while (done < NSTAGES && _stages[done].init(&d) == 0)
		done++;
	rc = 1;
	if (done == NSTAGES) {
		_log_started(&d);
		_run(&d);
		rc = 0;
	}
	while (done-- > 0)
		if (_stages[done].fini)
			_stages[done].fini(&d);
	return rc;
}
