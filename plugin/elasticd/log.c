/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/log.c: elasticd's log (a file, stderr or syslog) and its clock. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

static FILE *_logf;		 /* NULL: syslog */
static char _log_path[PATH_MAX]; /* of _logf, "" when it is stderr or syslog */
static int _log_level = ED_LOG_INFO;

uint64_t ed_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

uint64_t ed_mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

double ed_mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double ed_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double ed_runq_s(void)
{
	char buf[128];
	unsigned long long run, wait;
	int fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
		return 0;
	return (double)wait / 1e9;
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
			level == ED_LOG_ERROR	 ? "error: "
			: level == ED_LOG_NOTICE ? "notice: "
			: level == ED_LOG_DEBUG	 ? "debug: "
						 : "");
		vfprintf(_logf, fmt, ap);
		fputc('\n', _logf);
		fflush(_logf);
	} else {
		vsyslog(level == ED_LOG_ERROR	 ? LOG_ERR
			: level == ED_LOG_NOTICE ? LOG_NOTICE
			: level == ED_LOG_DEBUG	 ? LOG_DEBUG
						 : LOG_INFO,
			fmt, ap);
	}
	va_end(ap);
}

void ed_log_set_level(int level)
{
	_log_level = level;
}

int ed_log_open(const char *path)
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

void ed_log_stderr(void)
{
	_logf = stderr;
}

void ed_log_syslog(void)
{
	openlog("elasticd", LOG_PID, LOG_DAEMON);
}

const char *ed_log_path(void)
{
	return _log_path;
}

int ed_log_chown(uid_t uid, gid_t gid)
{
	if (!_logf || _logf == stderr)
		return 0;
	return fchown(fileno(_logf), uid, gid);
}

void ed_log_close(void)
{
	if (_logf && _logf != stderr)
		fclose(_logf);
	_logf = NULL;
	_log_path[0] = '\0';
}
