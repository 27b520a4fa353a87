/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/slurmlist.c: the GPUs of the elastic job as Slurm lists them now
 * (scontrol, squeue): its allocation and its running grant jobs. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process.h"
#include "sets.h"
#include "slurmlist.h"

/* Run argv, capture its stdout, and its stderr too if with_err (at most
 * 1 MiB). Returns a malloc'd string or NULL; *status gets the exit status
 * (-1: could not run). */
static char *_capture(char *const argv[], int with_err, int *status)
{
	int fd[2];
	pid_t pid;
	char *buf = NULL;
	size_t len = 0, cap = 0;

	*status = -1;
	if (pipe(fd) < 0)
		return NULL;
	if ((pid = fork()) < 0) {
		close(fd[0]);
		close(fd[1]);
		return NULL;
	}
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(fd[1], 1);
		if (with_err)
			dup2(fd[1], 2);
		else if (null >= 0 && !elastic__verbose)
			dup2(null, 2);
		close(fd[0]);
		close(fd[1]);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	for (;;) {
		if (cap - len < 4096) {
			char *p = realloc(buf, cap + 65536);
			if (!p)
				break;
			buf = p;
			cap += 65536;
		}
		ssize_t n = read(fd[0], buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || len + n > (1u << 20))
			break;
		len += n;
	}
	close(fd[0]);
	int ws;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	*status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
	if (buf)
		buf[len] = '\0';
	return buf;
}

static char *_expand(const char *hostlist, void *arg)
{
	char *argv[] = {"scontrol", "show", "hostnames", (char *)hostlist, NULL};
	int st;
	char *out = _capture(argv, 0, &st);
	if (st != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* Add job's GPUs to set. -1 with err if it has none to add; *answered is
 * then 0 if Slurm could not be asked (scontrol failed, and not because
 * Slurm has no such job: a slurmctld restarting), else 1. */
static int _add_job(struct elastic_gpuset *set, unsigned long job, int *answered,
		    elastic_error_t *err)
{
	char id[32];
	snprintf(id, sizeof(id), "%lu", job);
	char *argv[] = {"scontrol", "show", "job", "-d", id, NULL};
	int st;
	/* (its stderr too: what a failure says decides what it means) */
	char *out = _capture(argv, 1, &st);
	*answered = 1;
	if (!out || st != 0) {
		char said[160] = "";
		*answered = elastic__slurm_job_unknown(out);
		if (out && *out)
			snprintf(said, sizeof(said), ": %.*s", (int)strcspn(out, "\n"),
				 out);
		free(out);
		return elastic__errorf(err,
				       "scontrol show job -d %lu failed (status %d)%s",
				       job, st, said);
	}
	int rc = elastic__gpuset_add_job(set, job, out, _expand, NULL, err);
	free(out);
	return rc;
}

/* The GPUs of the elastic job now: its own allocation, then its running
 * grant jobs in job id order. */
static int _discover(const struct run_job *job, struct elastic_gpuset *set,
		     elastic_error_t *err)
{
	unsigned long jobid = job->jobid;
	char name[64], user[64];
	int st, answered;

	memset(set, 0, sizeof(*set));
	if (_add_job(set, jobid, &answered, err) < 0)
		return -1;
	snprintf(name, sizeof(name), "elastic:%lu", jobid);
	snprintf(user, sizeof(user), "%u", (unsigned)getuid());
	char *argv[] = {"squeue", "-h",	     "-u", user, "-n",	     name,
			"-t",	  "RUNNING", "-o", "%i", "--sort=i", NULL};
	char *out = _capture(argv, 0, &st);
	if (!out || st != 0) {
		free(out);
		return elastic__errorf(
			err, "squeue for the grant jobs failed (status %d)", st);
	}
	for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		elastic_error_t e;
		unsigned long g = strtoul(line, NULL, 10);
		/* Grants ordered released stay out, even while still running. */
		if (job->have_ctl && elastic__orders_released(&job->orders, (uint32_t)g))
			continue;
		if (!g || _add_job(set, g, &answered, &e) >= 0)
			continue;
		/* A grant that ended between squeue and scontrol is just gone;
		 * one scontrol could not ask about (slurmctld restarting) may
		 * run on: the job's GPUs are not known. */
		if (answered) {
			if (elastic__verbose)
				elastic__say("grant job %lu skipped: %s", g, e.text);
			continue;
		}
		free(out);
		return elastic__errorf(err, "grant job %lu: %s", g, e.text);
	}
	free(out);
	return 0;
}

const char *elastic__self_host(void)
{
	static char hn[256];
	const char *h = getenv("SLURMD_NODENAME");

	if (h && *h)
		return h;
	if (!hn[0] && gethostname(hn, sizeof(hn) - 1) < 0)
		snprintf(hn, sizeof(hn), "localhost");
	return hn;
}

int elastic__slurm_gpus_all(struct run_job *job, struct elastic_gpuset *set,
			    elastic_error_t *err)
{
	if (_discover(job, set, err) < 0)
		return -1;
	int n = job->have_ctl ? elastic__orders_forget_ended(&job->orders,
							     elastic__grant_listed, set)
			      : 0;
	if (n && elastic__verbose)
		elastic__say(
			"%d grant%s announced as started no longer listed by Slurm (ended)",
			n, n == 1 ? "" : "s");
	return 0;
}

/* 1 if job is a grant in which a launch's step never began (a gpuset
 * callback; arg is the run's sets). */
static int _stepless(unsigned long job, const void *arg)
{
	const struct run_sets *s = arg;
	for (int i = 0; i < s->nstepless; i++)
		if (s->stepless[i] == job)
			return 1;
	return 0;
}

int elastic__slurm_gpus(struct run_job *job, const struct run_sets *sets,
			struct elastic_gpuset *set, elastic_error_t *err)
{
	if (elastic__slurm_gpus_all(job, set, err) < 0)
		return -1;
	elastic__lost_hold_out(&sets->lost, set);
	if (sets->nstepless && elastic__gpuset_drop(set, _stepless, sets)) {
		/* a host's daemon runs in a job that stays there */
		for (int h = 0; h < set->nhosts; h++)
			if (_stepless(set->host[h].job, sets))
				set->host[h].job = set->host[h].gpu_job[0];
	}
	elastic__gpuset_trim(set, &job->req);
	return 0;
}
