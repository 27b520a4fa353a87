/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/process.c: elastic-run's process (process.h). */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "process.h"
#include "report.h"

/* ==== elastic-run's clock and its log lines on stderr. */

int elastic__verbose;

double elastic__now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double elastic__wall(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

void elastic__setenv_time(const char *name, double t)
{
	char v[32];
	snprintf(v, sizeof(v), "%.6f", t);
	setenv(name, v, 1);
}

void elastic__say(const char *fmt, ...)
{
	va_list ap;
	struct timespec now;
	struct tm tm;
	char ts[16], msg[1024];
	clock_gettime(CLOCK_REALTIME, &now);
	strftime(ts, sizeof(ts), "%H:%M:%S", localtime_r(&now.tv_sec, &tm));
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* one fprintf, one write(2): the ranks' output shares this stream,
	 * and a line written in pieces could take a rank's line in between */
	fprintf(stderr, "elastic-run %s.%03ld: %s\n", ts, now.tv_nsec / 1000000, msg);
}

void elastic__say_srun(const struct elastic_srun *s, const char *text)
{
	elastic__say("srun into job %lu on %s: %s", s->job, s->host, text);
}

/* ==== the signals of an elastic-run process (launcher or rank
 * wrapper): what it got, and the child it passes them on to. */

volatile sig_atomic_t elastic__got_signal;
volatile sig_atomic_t elastic__usr1_pending;
pid_t elastic__child = -1;
volatile sig_atomic_t elastic__child_in_group;

void elastic__on_parent_death(int sig)
{
	if (elastic__child <= 0)
		return;
	if (sig == SIGHUP) {
		kill(elastic__child, SIGTERM);
		alarm(5);
	} else {
		kill(elastic__child, SIGKILL);
	}
}

void elastic__on_signal(int sig)
{
	elastic__got_signal = sig;
	/* Not twice to a child in the group: a second SIGUSR1, late under load,
	 * is a second request (a planned re-form after the shrink in place that
	 * the first one asked for). */
	if (elastic__child > 0 && !elastic__child_in_group)
		kill(elastic__child, sig);
}

void elastic__on_usr1(int sig)
{
	(void)sig;
	elastic__usr1_pending = 1;
}

/* The parent of pid from /proc/PID/stat (after the command's parenthesis,
 * which may hold blanks), or -1; its command name (comm) into comm. */
static pid_t _parent_of(pid_t pid, char *comm, size_t clen)
{
	char path[64], buf[512];
	FILE *f;
	size_t n;

	comm[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *open = strchr(buf, '('), *close = strrchr(buf, ')');
	int ppid;
	char state;
	if (!open || !close || close < open ||
	    sscanf(close + 1, " %c %d", &state, &ppid) != 2)
		return -1;
	size_t cl = (size_t)(close - open - 1);
	if (cl >= clen)
		cl = clen - 1;
	memcpy(comm, open + 1, cl);
	comm[cl] = '\0';
	return (pid_t)ppid;
}

/* sig to root's descendants (and root) whose command is only, or to all
 * of them (only NULL). */
static int _kill_tree(pid_t root, int sig, const char *only)
{
	pid_t *pid = NULL, *ppid = NULL;
	char(*comm)[16] = NULL;
	size_t n = 0, cap = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	int sent = 0;

	while (d && (e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		if (n == cap) {
			size_t c = cap ? 2 * cap : 256;
			pid_t *a = realloc(pid, c * sizeof(*a)), *b;
			if (!a)
				break;
			pid = a;
			if (!(b = realloc(ppid, c * sizeof(*b))))
				break;
			ppid = b;
			char(*k)[16] = realloc(comm, c * sizeof(*k));
			if (!k)
				break;
			comm = k;
			cap = c;
		}
		pid[n] = (pid_t)atoi(e->d_name);
		ppid[n] = _parent_of(pid[n], comm[n], sizeof(comm[n]));
		n++;
	}
	if (d)
		closedir(d);
	/* descendants: a process whose chain of parents reaches root (depth
	 * bounded: a chain that loops through a reused pid ends) */
	for (size_t i = 0; i < n; i++) {
		pid_t p = pid[i];
		for (int depth = 0; depth < 64 && p > 1 && p != root; depth++) {
			size_t j = 0;
			while (j < n && pid[j] != p)
				j++;
			p = j < n ? ppid[j] : -1;
		}
		if (p == root && pid[i] != root && (!only || !strcmp(comm[i], only)) &&
		    kill(pid[i], sig) == 0)
			sent++;
	}
	free(pid);
	free(ppid);
	free(comm);
	if (!only && kill(root, sig) == 0)
		sent++;
	return sent;
}

int elastic__kill_tree(pid_t root, int sig)
{
	return _kill_tree(root, sig, NULL);
}

int elastic__kill_tree_only(pid_t root, int sig, const char *comm)
{
	return _kill_tree(root, sig, comm);
}
