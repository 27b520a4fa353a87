/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/elasticd.c: elasticd main: options, elastic.conf, logging, event loop.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "site_conf.h"
#include "elasticd.h"

static FILE *_logf; /* NULL: syslog */
static int _log_level = ED_LOG_INFO;
static volatile sig_atomic_t _stop;

/* slurmctld's job list is checked for changes every EVENT_POLL_MS between
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

static void _usage(FILE *f)
{
	fprintf(f,
		"usage: elasticd [-D] [-f elastic.conf] [-L logfile] [-p port] [-v] [-n]\n"
		"  -D          stay in the foreground, log to stderr (unless -L)\n"
		"  -f FILE     elastic.conf to read (default: $ELASTIC_CONF, else next to slurm.conf)\n"
		"  -L FILE     append the log to FILE (overrides LogFile)\n"
		"  -p PORT     listen on PORT (overrides ControllerPort; 0: any free port)\n"
		"  -v          debug logging\n"
		"  -n          dry run: compute and log decisions, change nothing\n"
		"  -V          print the version\n"
		"See elasticd(8).\n");
}

int main(int argc, char **argv)
{
	struct elastic_site_conf conf;
	const char *conf_path = NULL, *log_path = NULL;
	int foreground = 0, port = -1, verbose = 0, dry = 0, opt;
	elastic_error_t err;
	elastic_auth_t *auth = NULL;
	ed_channel_t *ch = NULL;
	struct ed_ctl *ctl = NULL;
	struct ed_ctl_conf cc;
	int rc = 1;

	while ((opt = getopt(argc, argv, "Df:L:p:vnVh")) != -1) {
		switch (opt) {
		case 'D':
			foreground = 1;
			break;
		case 'f':
			conf_path = optarg;
			break;
		case 'L':
			log_path = optarg;
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
			port = (int)v;
			break;
		}
		case 'v':
			verbose = 1;
			break;
		case 'n':
			dry = 1;
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
	if (elastic_site_conf_load(&conf, conf_path, 0, &err) < 0) {
		fprintf(stderr, "elasticd: %s\n", err.text);
		return 1;
	}
	if (!log_path && conf.log_file && *conf.log_file)
		log_path = conf.log_file;
	if (verbose || conf.debug)
		_log_level = ED_LOG_DEBUG;
	if (log_path) {
		_logf = fopen(log_path, "a");
		if (!_logf) {
			fprintf(stderr, "elasticd: cannot open log file %s: %s\n",
				log_path, strerror(errno));
			goto out;
		}
	} else if (foreground) {
		_logf = stderr;
	} else {
		openlog("elasticd", LOG_PID, LOG_DAEMON);
	}
	if (!foreground && daemon(0, log_path ? 1 : 0) < 0) {
		fprintf(stderr, "elasticd: daemon: %s\n", strerror(errno));
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	/* Room for every channel connection besides our own files. */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 4096 &&
	    rl.rlim_max > rl.rlim_cur) {
		rl.rlim_cur = rl.rlim_max < 4096 ? rl.rlim_max : 4096;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	struct sigaction sa = {.sa_handler = _on_signal};
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);

	if (ed_slurm_init(&err) < 0) {
		ed_error("%s", err.text);
		goto out;
	}
	auth = elastic_auth_create(conf.munge_socket, &err);
	if (!auth) {
		ed_error("%s", err.text);
		goto out;
	}
	ch = ed_channel_create(conf.controller_host,
			       port >= 0 ? port : (int)conf.controller_port,
			       (int)conf.channel_idle_timeout, auth, &err);
	if (!ch) {
		ed_error("%s", err.text);
		goto out;
	}
	memset(&cc, 0, sizeof(cc));
	snprintf(cc.grant_prefix, sizeof(cc.grant_prefix), "%s", conf.grant_name_prefix);
	snprintf(cc.grant_qos, sizeof(cc.grant_qos), "%s",
		 conf.grant_qos ? conf.grant_qos : "");
	cc.plan.mode = conf.policy_mode;
	cc.plan.min_change = (int)conf.hysteresis;
	cc.plan.cooldown = conf.cool_down;
	cc.dry_run = dry;
	/* ELASTICD_FAST=0: the timing before issue 13 part 3 (benches compare
	 * both in one run): events every EVENT_POLL_MS whatever is under way,
	 * and a job just started held by the cool-down before it grows. */
	const char *fast_env = getenv("ELASTICD_FAST");
	int fast = !(fast_env && strcmp(fast_env, "0") == 0);
	cc.plan.cooldown_from_start = !fast;
	ctl = ed_ctl_create(&cc, ch);
	if (!ctl) {
		ed_error("out of memory");
		goto out;
	}
	ed_channel_set_handlers(ch, &ed_ctl_handlers, ctl);
	ed_info("started (pid %d): listening on %s:%d, tick %ld s, policy %s, grant QOS '%s', prefix '%s', SlurmUser uid %u%s",
		(int)getpid(),
		conf.controller_host && *conf.controller_host ? conf.controller_host
							      : "*",
		ed_channel_port(ch), conf.tick_seconds,
		conf.policy_mode == 1	? "fairshare"
		: conf.policy_mode == 2 ? "fifo"
					: "priority",
		cc.grant_qos, cc.grant_prefix, (unsigned)ed_slurm_user(),
		dry ? ", DRY RUN" : "");
	if (!fast)
		ed_info("ELASTICD_FAST=0: events every %d ms, new jobs held by the cool-down (the timing before issue 13 part 3)",
			EVENT_POLL_MS);

	uint64_t tick_ms = (uint64_t)conf.tick_seconds * 1000u;
	uint64_t next = ed_now_ms(), last_tick = 0, next_event = 0;
	while (!_stop) {
		uint64_t now = ed_now_ms(), dl = ed_ctl_next_deadline(ctl);
		/* A deadline that a tick could not settle (slurmctld down) is
		 * retried at most every 200 ms, not in a busy loop. */
		if (dl && dl < last_tick + 200)
			dl = last_tick + 200;
		/* Between ticks, a cheap check every EVENT_POLL_MS: a job list
		 * that changed (a priority update, a job started or ended) is
		 * acted on at once. */
		int event = 0;
		if (now >= next_event) {
			next_event = now + (fast && ed_ctl_busy(ctl) ? EVENT_POLL_BUSY_MS
								     : EVENT_POLL_MS);
			event = now < next && ed_slurm_jobs_changed();
			if (event)
				ed_debug("slurmctld's job list changed: tick now");
		}
		if (event || now >= next || (dl && now >= dl) ||
		    ed_ctl_tick_wanted(ctl)) {
			ed_ctl_tick(ctl);
			last_tick = now;
			now = ed_now_ms();
			if (now >= next)
				next += tick_ms;
			if (next <= now)
				next = now + tick_ms;
			dl = ed_ctl_next_deadline(ctl);
			if (dl && dl < last_tick + 200)
				dl = last_tick + 200;
		}
		uint64_t wake = next < next_event ? next : next_event;
		if (dl && dl > now && dl < wake)
			wake = dl;
		ed_channel_poll(ch, (int)(wake > now ? wake - now : 0));
	}
	ed_info("stopping on signal %d", (int)_stop);
	rc = 0;
out:
	ed_ctl_destroy(ctl);
	ed_channel_destroy(ch);
	elastic_auth_destroy(auth);
	ed_slurm_fini();
	elastic_site_conf_free(&conf);
	if (_logf && _logf != stderr)
		fclose(_logf);
	return rc;
}
