/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/elasticd.c: elasticd main: options, elastic.conf, logging, event loop.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "site_conf.h"
#include "elasticd.h"

static FILE *_logf;		 /* NULL: syslog */
static char _log_path[PATH_MAX]; /* of _logf, "" when it is stderr or syslog */
static int _log_level = ED_LOG_INFO;
static volatile sig_atomic_t _stop, _hup;

/* The elastic jobs and grants are checked for changes every EVENT_POLL_MS between
 * ticks, every EVENT_POLL_BUSY_MS while a change is under way (a grant to
 * see start, a release to finish): the next step of a resize waits for it. */
#define EVENT_POLL_MS	   250
#define EVENT_POLL_BUSY_MS 50

uint64_t ed_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

void ed_log(int level, const char *fmt, ...)
{
	va_list ap;
	if (level > _log_level)
		return;
	va_start(ap, fmt);
	if (_logf) {
		struct timespec ts;
		struct tm tm;
		char stamp[32];
		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S", &tm);
		fprintf(_logf, "[%s.%03ld] elasticd: %s", stamp, ts.tv_nsec / 1000000L,
			level == ED_LOG_ERROR	? "error: "
			: level == ED_LOG_DEBUG ? "debug: "
						: "");
		vfprintf(_logf, fmt, ap);
		fputc('\n', _logf);
		fflush(_logf);
	} else {
		vsyslog(level == ED_LOG_ERROR	? LOG_ERR
			: level == ED_LOG_DEBUG ? LOG_DEBUG
						: LOG_INFO,
			fmt, ap);
	}
	va_end(ap);
}

static void _on_signal(int sig)
{
	_stop = sig;
}

static void _on_hup(int sig)
{
	_hup = 1;
}

/* The command line. */
struct ed_opts {
	const char *conf_path; /* -f; NULL: the default path */
	const char *log_path;  /* -L; NULL: LogFile */
	int foreground, port, verbose, dry, test;
};

/* What the daemon runs with: main sets it up, _reload replaces what a
 * re-read may change, the loop reads it. */
struct ed_daemon {
	struct ed_opts opt;
	char conf_path[PATH_MAX]; /* the file read, or looked for */
	struct elastic_site_conf conf;
	struct ed_ctl_conf cc;
	elastic_auth_t *auth;
	ed_channel_t *ch;
	struct ed_ctl *ctl;
	ed_metrics_t *metrics; /* NULL: MetricsAddress not set */
	int fast;
};

static void _usage(FILE *f)
{
	fprintf(f,
		"usage: elasticd [-D] [-f elastic.conf] [-L logfile] [-p port] [-v] [-n]\n"
		"       elasticd -t [-f elastic.conf]\n"
		"  -D                 stay in the foreground, log to stderr (unless -L)\n"
		"  -f FILE            elastic.conf to read (default: $ELASTIC_CONF, else next to slurm.conf)\n"
		"  -L FILE            append the log to FILE (overrides LogFile)\n"
		"  -p PORT            listen on PORT (overrides ControllerPort; 0: any free port)\n"
		"  -v                 debug logging\n"
		"  -n                 dry run: compute and log decisions, change nothing\n"
		"  -t, --test-config  check elastic.conf, print the values elasticd would use, exit 0 (usable) or 1\n"
		"  -V, --version      print the version\n"
		"  -h, --help         print this help\n"
		"SIGHUP re-reads elastic.conf and reopens the log file. See elasticd(8).\n");
}

/* Returns -1 to go on, else the status to exit with. */
static int _parse_options(int argc, char **argv, struct ed_opts *o)
{
	static const struct option longopts[] = {
		{"test-config", no_argument, NULL, 't'},
		{"version", no_argument, NULL, 'V'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	int opt;

	memset(o, 0, sizeof(*o));
	o->port = -1;
	while ((opt = getopt_long(argc, argv, "Df:L:p:vntVh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'D':
			o->foreground = 1;
			break;
		case 'f':
			o->conf_path = optarg;
			break;
		case 'L':
			o->log_path = optarg;
			break;
		case 'p': {
			char *e;
			long v = strtol(optarg, &e, 10);
			if (*e || v < 0 || v > 65535) {
				fprintf(stderr,
					"elasticd: -p %s: not a port number (0-65535)\n",
					optarg);
				return 2;
			}
			o->port = (int)v;
			break;
		}
		case 'v':
			o->verbose = 1;
			break;
		case 'n':
			o->dry = 1;
			break;
		case 't':
			o->test = 1;
			break;
		case 'V':
			printf("elasticd %s\n", PACKAGE_VERSION);
			return 0;
		case 'h':
			_usage(stdout);
			return 0;
		default:
			_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "elasticd: unexpected argument '%s'\n", argv[optind]);
		_usage(stderr);
		return 2;
	}
	return -1;
}

/* elastic.conf: the file named (it must exist), else the default path,
 * where no file means the built-in defaults. Sets path to the file used.
 * Returns 0 (read), 1 (defaults) or -1 with err. */
static int _load_conf(const char *named, struct elastic_site_conf *conf, char *path,
		      size_t size, elastic_error_t *err)
{
	if (named)
		snprintf(path, size, "%s", named);
	else if (elastic_site_conf_path(path, size, err) < 0)
		return -1;
	return elastic_site_conf_load(conf, path, named == NULL, err);
}

/* elasticd -t: the configuration, checked, and every value it would use. */
static int _test_config(const struct ed_opts *o)
{
	struct elastic_site_conf conf;
	char path[PATH_MAX] = "";
	elastic_error_t err = {""};
	int rc = _load_conf(o->conf_path, &conf, path, sizeof(path), &err);

	if (rc < 0) {
		fprintf(stderr, "elasticd: %s\n", err.text);
		fprintf(stderr, "elasticd: configuration %s is NOT usable\n", path);
		return 1;
	}
	printf("# %s: %s\n", path,
	       rc == 1 ? "not found: elasticd uses the built-in defaults" : "usable");
	if (o->port >= 0)
		printf("# -p %d overrides ControllerPort\n", o->port);
	elastic_conf_print(elastic_site_conf_keys, &conf, stdout);
	elastic_site_conf_free(&conf);
	return fflush(stdout) == 0 ? 0 : 1;
}

/* (Re)open the log file at path (made absolute: the daemon leaves its
 * directory). On failure the log stays where it was. */
static int _open_log(const char *path)
{
	char abs[PATH_MAX];
	FILE *f;

	if (path[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)) ||
		    snprintf(abs, sizeof(abs), "%s/%s", cwd, path) >= (int)sizeof(abs)) {
			errno = ENAMETOOLONG;
			return -1;
		}
	} else {
		snprintf(abs, sizeof(abs), "%s", path);
	}
	if (!(f = fopen(abs, "a")))
		return -1;
	if (_logf && _logf != stderr)
		fclose(_logf);
	_logf = f;
	snprintf(_log_path, sizeof(_log_path), "%s", abs);
	return 0;
}

static const char *_mode_name(int mode)
{
	return mode == ELASTIC_POLICY_FAIRSHARE ? "fairshare"
	       : mode == ELASTIC_POLICY_FIFO	? "fifo"
						: "priority";
}

/* The settings a re-read may change: policy, its parameters, log level. */
static void _apply(struct ed_daemon *d)
{
	d->cc.plan.mode = d->conf.policy_mode;
	d->cc.plan.min_change = (int)d->conf.hysteresis;
	d->cc.plan.cooldown = d->conf.cool_down;
	d->cc.plan.cooldown_from_start = !d->fast;
	_log_level = d->opt.verbose || d->conf.debug ? ED_LOG_DEBUG : ED_LOG_INFO;
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
	ed_error("SIGHUP: %s=%s takes effect when elasticd restarts; keeping %s=%s", key,
		 *fresh, key, used);
	free(*fresh);
	*fresh = dup;
}

static void _keep_long(long *fresh, long used, const char *key)
{
	if (*fresh == used)
		return;
	ed_error("SIGHUP: %s=%ld takes effect when elasticd restarts; keeping %s=%ld",
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

	if (_log_path[0] && _open_log(_log_path) < 0)
		ed_error("SIGHUP: cannot reopen the log file %s: %s", _log_path,
			 strerror(errno));
	rc = elastic_site_conf_load(&fresh, d->conf_path, d->opt.conf_path == NULL, &err);
	if (rc < 0) {
		ed_error(
			"SIGHUP: %s; keeping the configuration in use (PolicyMode=%s TickSeconds=%ld)",
			err.text, _mode_name(d->cc.plan.mode), d->conf.tick_seconds);
		return;
	}
	_keep_string(&fresh.controller_host, d->conf.controller_host, "ControllerHost");
	_keep_long(&fresh.controller_port, d->conf.controller_port, "ControllerPort");
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
		if (!_log_path[0] || !*fresh.log_file) {
			_keep_string(&fresh.log_file, d->conf.log_file, "LogFile");
		} else if (_open_log(fresh.log_file) < 0) {
			ed_error("SIGHUP: cannot open LogFile=%s: %s; logging to %s",
				 fresh.log_file, strerror(errno), _log_path);
			_keep_string(&fresh.log_file, d->conf.log_file, "LogFile");
		}
	}
	elastic_site_conf_free(&d->conf);
	d->conf = fresh;
	_apply(d);
	ed_info("SIGHUP: re-read %s%s: PolicyMode=%s TickSeconds=%ld Hysteresis=%ld CoolDown=%ld Debug=%s",
		d->conf_path, rc == 1 ? " (not found: built-in defaults)" : "",
		_mode_name(d->cc.plan.mode), d->conf.tick_seconds, d->conf.hysteresis,
		d->conf.cool_down, d->conf.debug ? "yes" : "no");
}

/* The event loop, until SIGTERM or SIGINT. */
static void _run(struct ed_daemon *d)
{
	uint64_t next = ed_now_ms(), last_tick = 0, next_event = 0;

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
		/* A deadline that a tick could not settle (slurmctld down) is
		 * retried at most every 200 ms, not in a busy loop. */
		if (dl && dl < last_tick + 200)
			dl = last_tick + 200;
		/* Between ticks, a cheap check every EVENT_POLL_MS: a change of
		 * an elastic job or grant (a priority update, a job started or
		 * ended) is acted on at once. */
		int event = 0;
		if (now >= next_event) {
			next_event =
				now + (d->fast && ed_ctl_busy(d->ctl) ? EVENT_POLL_BUSY_MS
								      : EVENT_POLL_MS);
			event = now < next && ed_slurm_jobs_changed();
			if (event)
				ed_debug("slurmctld's job list changed: tick now");
		}
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
		if (dl && dl > now && dl < wake)
			wake = dl;
		ed_channel_poll(d->ch, (int)(wake > now ? wake - now : 0));
	}
	ed_info("stopping on signal %d", (int)_stop);
}

/* Logging, the daemon's process settings, signals. */
static int _start_process(struct ed_daemon *d)
{
	const char *log_path = d->opt.log_path;
	struct rlimit rl;

	if (!log_path && d->conf.log_file && *d->conf.log_file)
		log_path = d->conf.log_file;
	if (log_path) {
		if (_open_log(log_path) < 0) {
			fprintf(stderr, "elasticd: cannot open log file %s: %s\n",
				log_path, strerror(errno));
			return -1;
		}
	} else if (d->opt.foreground) {
		_logf = stderr;
	} else {
		openlog("elasticd", LOG_PID, LOG_DAEMON);
	}
	if (!d->opt.foreground && daemon(0, log_path ? 1 : 0) < 0) {
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

static int _metrics_fill(void *m, struct pollfd *pf, int max)
{
	return ed_metrics_pollfds(m, pf, max);
}

static void _metrics_ready(void *m, const struct pollfd *pf, int n)
{
	ed_metrics_handle(m, pf, n);
}

/* libslurm, munge, the channel, the controller and the metrics endpoint. */
static int _start_controller(struct ed_daemon *d)
{
	elastic_error_t err = {""};

	if (ed_slurm_init(&err) < 0) {
		ed_error("%s", err.text);
		return -1;
	}
	d->auth = elastic_auth_create(d->conf.munge_socket, &err);
	if (!d->auth) {
		ed_error("%s", err.text);
		return -1;
	}
	d->ch = ed_channel_create(d->conf.controller_host,
				  d->opt.port >= 0 ? d->opt.port
						   : (int)d->conf.controller_port,
				  (int)d->conf.channel_idle_timeout, d->auth, &err);
	if (!d->ch) {
		ed_error("%s", err.text);
		return -1;
	}
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
	if (d->conf.metrics_address && *d->conf.metrics_address) {
		d->metrics = ed_metrics_create(d->conf.metrics_address, ed_ctl_metrics,
					       d->ctl, &err);
		if (!d->metrics) {
			ed_error("%s", err.text);
			return -1;
		}
		struct ed_poll_extra x = {_metrics_fill, _metrics_ready, d->metrics};
		ed_channel_set_extra(d->ch, &x);
		ed_info("serving OpenMetrics on %s (port %d), GET /metrics",
			d->conf.metrics_address, ed_metrics_port(d->metrics));
	}
	return 0;
}

/* Started as root, elasticd becomes SlurmUser once its socket is bound and
 * its log open, as slurmctld does: it needs slurmctld's administrator
 * rights, which SlurmUser has, and nothing of root's (elasticd(8),
 * PRIVILEGES). Started as any other user, it stays that user. */
static int _become_slurm_user(void)
{
	uid_t uid = ed_slurm_user();
	struct passwd *pw;

	if (getuid() != 0 || uid == 0)
		return 0;
	if (!(pw = getpwuid(uid))) {
		ed_error("SlurmUser (uid %u) has no passwd entry: cannot give up root",
			 (unsigned)uid);
		return -1;
	}
	/* SIGHUP reopens the log as SlurmUser. */
	if (_logf && _logf != stderr && fchown(fileno(_logf), uid, pw->pw_gid) < 0)
		ed_error(
			"cannot hand the log file %s to SlurmUser %s: %s (SIGHUP may not reopen it)",
			_log_path, pw->pw_name, strerror(errno));
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
static void _restore_admin(struct ed_daemon *d)
{
	char path[4096] = "";
	const char *f = d->conf.state_file ? d->conf.state_file : "";
	const char *dir = ed_slurm_state_dir();

	if (strcmp(f, "none") == 0)
		return;
	if (*f)
		snprintf(path, sizeof(path), "%s", f);
	else if (dir && *dir)
		snprintf(path, sizeof(path), "%s/elasticd.state", dir);
	else
		ed_info("slurmctld has no StateSaveLocation and elastic.conf no StateFile: "
			"pauses and drains are not kept across a restart");
	ed_ctl_admin_restore(d->ctl, path[0] ? path : NULL);
}

/* "slurm (uid 64030)": the user the daemon runs as, for its first line. */
static const char *_whoami(char *buf, size_t size)
{
	struct passwd *pw = getpwuid(getuid());
	snprintf(buf, size, "%s (uid %u)", pw ? pw->pw_name : "?", (unsigned)getuid());
	return buf;
}

int main(int argc, char **argv)
{
	char who[96];
	static struct ed_daemon d;
	elastic_error_t err = {""};
	int rc, loaded;

	if ((rc = _parse_options(argc, argv, &d.opt)) >= 0)
		return rc;
	if (d.opt.test)
		return _test_config(&d.opt);
	loaded = _load_conf(d.opt.conf_path, &d.conf, d.conf_path, sizeof(d.conf_path),
			    &err);
	if (loaded < 0) {
		fprintf(stderr, "elasticd: %s\n", err.text);
		return 1;
	}
	if (d.opt.conf_path && d.conf_path[0] != '/') {
		/* The daemon leaves its directory; SIGHUP must find the file. */
		char abs[PATH_MAX];
		if (realpath(d.conf_path, abs))
			snprintf(d.conf_path, sizeof(d.conf_path), "%s", abs);
	}
	/* ELASTICD_FAST=0: the timing before issue 13 part 3 (benches compare
	 * both in one run): events every EVENT_POLL_MS whatever is under way,
	 * and a job just started held by the cool-down before it grows. */
	const char *fast_env = getenv("ELASTICD_FAST");
	d.fast = !(fast_env && strcmp(fast_env, "0") == 0);
	_apply(&d);
	rc = 1;
	if (_start_process(&d) < 0 || _start_controller(&d) < 0 ||
	    _become_slurm_user() < 0)
		goto out;
	_restore_admin(&d);
	ed_info("started (pid %d): listening on %s:%d, tick %ld s, policy %s, grant QOS '%s', prefix '%s', SlurmUser uid %u, running as %s, job queries %s%s",
		(int)getpid(),
		d.conf.controller_host && *d.conf.controller_host ? d.conf.controller_host
								  : "*",
		ed_channel_port(d.ch), d.conf.tick_seconds,
		_mode_name(d.conf.policy_mode), d.cc.grant_qos, d.cc.grant_prefix,
		(unsigned)ed_slurm_user(), _whoami(who, sizeof(who)),
		ed_slurm_query_mode(), d.opt.dry ? ", DRY RUN" : "");
	if (loaded == 1)
		ed_info("%s not found: the built-in defaults (see elasticd -t)",
			d.conf_path);
	if (!d.fast)
		ed_info("ELASTICD_FAST=0: events every %d ms, new jobs held by the cool-down (the timing before issue 13 part 3)",
			EVENT_POLL_MS);
	_run(&d);
	rc = 0;
out:
	ed_metrics_destroy(d.metrics);
	ed_ctl_destroy(d.ctl);
	ed_channel_destroy(d.ch);
	elastic_auth_destroy(d.auth);
	ed_slurm_fini();
	elastic_site_conf_free(&d.conf);
	if (_logf && _logf != stderr)
		fclose(_logf);
	return rc;
}
