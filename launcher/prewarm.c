/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/prewarm.c: warm Python interpreters for relaunches (prewarm.h): the
 * zygotes' lifecycle on elastic-run's side. The rank wrapper's side, which
 * hands its rank to its node's zygote, is warm_rank.c. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "prewarm.h"
#include "process.h"

#define MAX_FLAGS  8
#define MAX_ZYGOTE 64

static struct {
	int on, verbose;
	void (*say)(const char *fmt, ...);
	char key[96];
	/* the interpreter and its FLAGS, as the program names them */
	char *argv[MAX_FLAGS + 8];
	int nflags;
	const char *script;
	struct {
		char host[64];
		unsigned long job; /* the job in whose step it runs */
		pid_t pid;
		int lifeline; /* the zygote's stdin: it ends when this closes */
		int out; /* its stdout: "ready" once it serves (-1: read to its end) */
		int ready;
	} z[MAX_ZYGOTE];
	int nz;
	/* zygotes that ended on their own (refused to serve, failed, lost):
	 * not started again for that host and job */
	struct {
		char host[64];
		unsigned long job;
	} ended[MAX_ZYGOTE];
	int nended;
} pw;

/* "python", "python3", "python3.13", with or without a directory. */
static int _is_python(const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	if (strncmp(b, "python", 6) != 0)
		return 0;
	return strspn(b + 6, "0123456789.") == strlen(b + 6);
}

/* Interpreter flags that take no argument and can be given to the zygote as
 * well (-u, -B, -O, ...); -c, -m, -W, -X and the rest are not run warm. */
static int _plain_flag(const char *a)
{
	return a[0] == '-' && a[1] && strspn(a + 1, "bBEIOqsSu") == strlen(a + 1);
}

int elastic__prewarm_setup(char **prog, unsigned long jobid, int verbose,
			   void (*say)(const char *fmt, ...))
{
	const char *mode = getenv("ELASTIC_WARM");
	int i = 1;

	pw.verbose = verbose;
	pw.say = say;
	if (mode && (!strcmp(mode, "off") || !strcmp(mode, "0") || !strcmp(mode, "no"))) {
		if (verbose)
			say("warm interpreters off (ELASTIC_WARM=%s)", mode);
		return 0;
	}
	if (mode && *mode && strcmp(mode, "auto") && strcmp(mode, "on") &&
	    strcmp(mode, "1"))
		say("ELASTIC_WARM=%s is not auto, on or off: taken as auto", mode);
	if (!prog[0] || !_is_python(prog[0]))
		return 0; /* not a Python rank: nothing to say */
	while (prog[i] && _plain_flag(prog[i]) && i <= MAX_FLAGS)
		i++;
	if (!prog[i] || prog[i][0] == '-') {
		if (verbose)
			say("warm interpreters off: only '%s [FLAGS] SCRIPT ARGS' is run warm, not %s",
			    prog[0], prog[i] ? prog[i] : "(no script)");
		return 0;
	}
	pw.nflags = i - 1;
	pw.script = prog[i];
	snprintf(
		pw.key, sizeof(pw.key), "elastic-warm.%lu.%ld.%lx", jobid, (long)getpid(),
		(unsigned long)(elastic__wall() * 1e6) ^ ((unsigned long)getpid() << 20));
	setenv("ELASTIC_RUN_WARM", pw.key, 1);
	if (verbose) {
		char v[8];
		snprintf(v, sizeof(v), "%d", verbose);
		setenv("ELASTIC_RUN_VERBOSE", v, 1);
	}
	pw.on = 1;
	if (verbose)
		say("warm interpreters on: a zygote (%s -m slurm_elastic.warm %s) on each node; ELASTIC_WARM=off turns them off",
		    prog[0], pw.script);
	for (int f = 0; f <= pw.nflags; f++)
		pw.argv[f] = prog[f];
	return 1;
}

/* Start the zygote of host for the ranks on GPUs of job: srun into that
 * job's step there (a rank runs in the step of the job holding its GPU:
 * rank.c), named KEY.HOST.JOB. */
static void _start(const char *host, unsigned long job)
{
	char jobopt[48], name[sizeof(pw.key) + 100];
	const char *av[32 + MAX_FLAGS];
	int n = 0;

	for (int i = 0; i < pw.nended; i++)
		if (pw.ended[i].job == job && !strcmp(pw.ended[i].host, host))
			return;
	if (pw.nz >= MAX_ZYGOTE) {
		if (pw.verbose)
			pw.say("no warm interpreter on %s for job %lu: at most %d zygotes",
			       host, job, MAX_ZYGOTE);
		return;
	}
	snprintf(jobopt, sizeof(jobopt), "--jobid=%lu", job);
	snprintf(name, sizeof(name), "%s.%s.%lu", pw.key, host, job);
	av[n++] = "srun";
	av[n++] = jobopt;
	av[n++] = "--overlap";
	av[n++] = "-N1";
	av[n++] = "-n1";
	av[n++] = "--kill-on-bad-exit=0";
	av[n++] = "-w";
	av[n++] = host;
	for (int f = 0; f <= pw.nflags; f++)
		av[n++] = pw.argv[f];
	av[n++] = "-m";
	av[n++] = "slurm_elastic.warm";
	av[n++] = "--lifeline";
	if (pw.verbose)
		av[n++] = "-v";
	av[n++] = name;
	av[n++] = pw.script;
	av[n] = NULL;
	/* srun forwards its stdin to the zygote: a pipe that elastic-run holds
	 * (close-on-exec: mpirun and the ranks do not), so that the zygote ends
	 * when elastic-run closes it or dies, and its step ends quietly */
	int p[2], o[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return;
	if (pipe2(o, O_CLOEXEC) < 0) {
		close(p[0]);
		close(p[1]);
		return;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		close(o[0]);
		close(o[1]);
		return;
	}
	if (pid == 0) {
		dup2(p[0], 0);
		dup2(o[1], 1);
		execvp("srun", (char **)av);
		_exit(127);
	}
	close(p[0]);
	close(o[1]);
	fcntl(o[0], F_SETFL, O_NONBLOCK);
	snprintf(pw.z[pw.nz].host, sizeof(pw.z[0].host), "%s", host);
	pw.z[pw.nz].job = job;
	pw.z[pw.nz].lifeline = p[1];
	pw.z[pw.nz].out = o[0];
	pw.z[pw.nz].ready = 0;
	pw.z[pw.nz++].pid = pid;
}

/* Read what zygote i wrote on its stdout: "ready" marks it ready, anything
 * else is passed on to elastic-run's stdout; at its end, out closes. */
static void _drain(int i)
{
	char buf[4096];
	for (;;) {
		if (pw.z[i].out < 0)
			return;
		ssize_t n = read(pw.z[i].out, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return; /* EAGAIN: nothing more now */
		if (n == 0) {
			close(pw.z[i].out);
			pw.z[i].out = -1;
			return;
		}
		/* the zygote writes "ready\n" on a line of its own, once,
		 * before serving */
		size_t len = (size_t)n, at = len;
		for (size_t k = 0; !pw.z[i].ready && k + 6 <= len; k++)
			if ((k == 0 || buf[k - 1] == '\n') &&
			    !memcmp(buf + k, "ready\n", 6)) {
				at = k;
				pw.z[i].ready = 1;
			}
		if (at > 0 && write(1, buf, at) < 0)
			return;
		if (at + 6 < len && write(1, buf + at + 6, len - at - 6) < 0)
			return;
	}
}

int elastic__prewarm_on(void)
{
	return pw.on;
}

int elastic__prewarm_ready(const struct elastic_gpuset *set, char *wait, size_t len)
{
	size_t used = 0;
	int all = 1;

	if (wait && len)
		wait[0] = '\0';
	for (int i = 0; i < pw.nz; i++) {
		_drain(i);
		if (pw.z[i].ready || pw.z[i].out < 0)
			continue; /* ready, or ended (its ranks start cold) */
		int in_set = 0;
		for (int h = 0; h < set->nhosts && !in_set; h++)
			for (int g = 0; g < set->host[h].ngpus && !in_set; g++)
				in_set = set->host[h].gpu_job[g] == pw.z[i].job &&
					 !strcmp(set->host[h].name, pw.z[i].host);
		if (!in_set)
			continue;
		all = 0;
		if (wait && used + 1 < len)
			used += (size_t)snprintf(wait + used, len - used,
						 "%s%s (job %lu)", used ? ", " : "",
						 pw.z[i].host, pw.z[i].job);
	}
	return all;
}

/* ELASTIC_RUN_WARM_LIVE for the ranks of the next launch: "HOST.JOB ..." of
 * the zygotes started and not known to have ended. A rank whose zygote is
 * listed waits for it to listen (srun is still starting it) and to finish
 * its imports, rather than starting cold beside it. */
static void _setenv_live(void)
{
	char live[MAX_ZYGOTE * 88];
	size_t used = 0;
	live[0] = '\0';
	for (int i = 0; i < pw.nz && used + 88 < sizeof(live); i++)
		used += (size_t)snprintf(live + used, sizeof(live) - used, "%s%s.%lu",
					 used ? " " : "", pw.z[i].host, pw.z[i].job);
	setenv("ELASTIC_RUN_WARM_LIVE", live, 1);
}

void elastic__prewarm_launch(const struct elastic_gpuset *set, double t_end)
{
	double now = elastic__wall();
	elastic__setenv_time("ELASTIC_RUN_T_LAUNCH", now);
	if (t_end > 0)
		elastic__setenv_time("ELASTIC_RUN_T_END", now - (elastic__now() - t_end));
	elastic__prewarm_hosts(set);
}

void elastic__prewarm_hosts(const struct elastic_gpuset *set)
{
	if (!pw.on)
		return;
	/* forget the zygotes that ended (their node lost, or they failed),
	 * and start none again there for that job: the ranks would wait for
	 * each new one and start cold after all */
	for (int i = 0; i < pw.nz;) {
		if (waitpid(pw.z[i].pid, NULL, WNOHANG) == pw.z[i].pid) {
			if (pw.verbose)
				pw.say("the warm interpreter on %s for job %lu ended",
				       pw.z[i].host, pw.z[i].job);
			if (pw.nended < MAX_ZYGOTE) {
				memcpy(pw.ended[pw.nended].host, pw.z[i].host,
				       sizeof(pw.ended[0].host));
				pw.ended[pw.nended++].job = pw.z[i].job;
			}
			close(pw.z[i].lifeline);
			if (pw.z[i].out >= 0)
				close(pw.z[i].out);
			pw.z[i] = pw.z[--pw.nz];
		} else
			i++;
	}
	/* one per job holding GPUs on a host: its ranks run in its step */
	for (int h = 0; h < set->nhosts; h++) {
		const struct elastic_host *x = &set->host[h];
		for (int g = 0; g < x->ngpus; g++) {
			int have = 0;
			for (int i = 0; i < pw.nz && !have; i++)
				have = pw.z[i].job == x->gpu_job[g] &&
				       !strcmp(pw.z[i].host, x->name);
			if (!have)
				_start(x->name, x->gpu_job[g]);
		}
	}
	_setenv_live();
}

void elastic__prewarm_stop(void)
{
	for (int i = 0; i < pw.nz; i++) {
		close(pw.z[i].lifeline);
		if (pw.z[i].out >= 0)
			close(pw.z[i].out);
	}
	for (int t = 0; t < 100 && pw.nz; t++) {
		if (t == 50) /* 1 s: the zygotes did not see the end of stdin */
			for (int i = 0; i < pw.nz; i++)
				kill(pw.z[i].pid, SIGTERM);
		for (int i = 0; i < pw.nz;) {
			if (waitpid(pw.z[i].pid, NULL, WNOHANG) != 0)
				pw.z[i] = pw.z[--pw.nz];
			else
				i++;
		}
		if (pw.nz)
			usleep(20000);
	}
	for (int i = 0; i < pw.nz; i++) {
		kill(pw.z[i].pid, SIGKILL);
		waitpid(pw.z[i].pid, NULL, 0);
	}
	pw.nz = 0;
}
