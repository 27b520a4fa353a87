/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/srunpipe.c: an srun starting a step for a launch, its own words
 * sent to elastic-run as it says them (srunpipe.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "process.h"
#include "report.h"
#include "srunout.h"
#include "srunpipe.h"

struct _dest {
	const char *addr, *token;
	unsigned gen;
	unsigned long job;
	const char *host;
};

/* Where the launch's reports go; 0, or -1 outside a launch. */
static int _dest(struct _dest *d, unsigned long job, const char *host)
{
	const char *g = getenv("ELASTIC_RUN_GEN");
	d->addr = getenv("ELASTIC_RUN_REPORT");
	d->token = getenv("ELASTIC_RUN_TOKEN");
	d->job = job;
	d->host = host;
	if (!d->addr || !d->token || !g || !job || !host || !*host ||
	    strpbrk(host, " \t\r\n"))
		return -1;
	d->gen = (unsigned)strtoul(g, NULL, 10);
	return 0;
}

static void _write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void _pass(const char *p, size_t n, void *arg)
{
	(void)arg;
	_write_all(STDERR_FILENO, p, n);
}

static void _said(const char *line, void *arg)
{
	const struct _dest *d = arg;
	char buf[ELASTIC_REPORT_SRUN_LINE];

	if (d->addr) {
		elastic__report_format_srun(buf, sizeof(buf), d->token, d->gen, d->job,
					    d->host, line);
		if (elastic__report_send(d->addr, buf) == 0)
			return;
	}
	fprintf(stderr, "srun: %s\n", line);
}

void elastic__step_started(unsigned long job, const char *host)
{
	struct _dest d;
	char buf[ELASTIC_REPORT_SRUN_LINE];

	if (_dest(&d, job, host) < 0)
		return;
	elastic__report_format_srun(buf, sizeof(buf), d.token, d.gen, job, host, NULL);
	elastic__report_send(d.addr, buf);
}

int elastic__step_started_main(void)
{
	const char *j = getenv("SLURM_JOB_ID"), *h = getenv("SLURMD_NODENAME");
	char hn[256] = "";

	if (!h && gethostname(hn, sizeof(hn) - 1) == 0)
		h = hn;
	if (j)
		elastic__step_started(strtoul(j, NULL, 10), h);
	return 0;
}

int elastic__srun_piped(char *const av[], unsigned long job, const char *host, int *ws)
{
	struct _dest d;
	struct elastic_srunout out;
	pid_t parent = getpid();
	int pfd[2];

	if (_dest(&d, job, host) < 0)
		d.addr = NULL;
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		fprintf(stderr, "elastic-run: pipe: %s\n", strerror(errno));
		return -1;
	}
	if ((elastic__child = fork()) < 0) {
		fprintf(stderr, "elastic-run: fork: %s\n", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		return -1;
	}
	if (elastic__child == 0) {
		/* srun passes SIGTERM on to the step; a SIGKILLed srun would
		 * leave the step's processes running */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		dup2(pfd[1], STDERR_FILENO);
		execvp(av[0], av);
		fprintf(stderr, "srun: error: elastic-run cannot run %s: %s\n", av[0],
			strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	elastic__srunout_init(&out, _pass, _said, &d);
	char buf[4096];
	for (;;) {
		ssize_t n = read(pfd[0], buf, sizeof(buf));
		if (n > 0)
			elastic__srunout_feed(&out, buf, (size_t)n);
		else if (n == 0 || errno != EINTR)
			break;
	}
	elastic__srunout_end(&out);
	close(pfd[0]);
	while (waitpid(elastic__child, ws, 0) < 0 && errno == EINTR)
		;
	elastic__child = -1;
	return 0;
}
