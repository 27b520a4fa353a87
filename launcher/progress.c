/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/progress.c: rank 0's progress record (ELASTIC_RUN_PROGRESS): read
 * for the current launch, and forwarded to elasticd. */
#include "config.h"

#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "orders.h"
#include "progress.h"
#include "runlog.h"

/* Was a file last written (st) after the current mpirun was started? */
static int _since_launch(const struct elastic_progress *p, const struct stat *st)
{
	return st->st_mtim.tv_sec > p->since.tv_sec ||
	       (st->st_mtim.tv_sec == p->since.tv_sec &&
		st->st_mtim.tv_nsec > p->since.tv_nsec);
}

int elastic__progress_read(const struct elastic_progress *p, unsigned long long *step,
			   unsigned long long *seen, double *t, int *size)
{
	char buf[96];
	struct stat st;
	int fd;
	ssize_t n;

	if ((fd = open(p->path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1; /* no record yet */
	if (fstat(fd, &st) < 0 || !_since_launch(p, &st)) {
		close(fd);
		return -1;
	}
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	*size = 0;
	return sscanf(buf, "%llu %llu %lf %d", step, seen, t, size) >= 3 ? 0 : -1;
}

int elastic__progress_committed(const struct elastic_progress *p)
{
	unsigned long long step, seen;
	double t;
	int size;

	return elastic__progress_read(p, &step, &seen, &t, &size) == 0;
}

void elastic__progress_forward(struct elastic_progress *pr, struct elastic_ctlclient *ctl)
{
	unsigned long long step, seen;
	double t;
	int size;

	if (elastic__now() - pr->t_read < 1.0)
		return;
	pr->t_read = elastic__now();
	if (elastic__progress_read(pr, &step, &seen, &t, &size) < 0 ||
	    (pr->have_last && step == pr->step_last))
		return;
	/* The rate between two records, by the writer's clock: a measurement
	 * of the job at its size only when one world committed both
	 * (elasticd's throughput policy fits its scaling to it); across a
	 * change of size none is sent. */
	if (pr->have_last && seen >= pr->seen_last && t > pr->t_last)
		pr->rate = (double)(seen - pr->seen_last) / (t - pr->t_last);
	if (size > 0 && size != pr->size_last)
		pr->rate = -1;
	pr->step_last = step, pr->seen_last = seen, pr->t_last = t;
	pr->size_last = size;
	pr->have_last = 1;
	elastic__orders_status(ctl, step, pr->rate, elastic__say);
}

int elastic__ranks_ready(const struct elastic_progress *p, double t0)
{
	struct stat st;
	if (elastic__now() - t0 > 10.0)
		return 1;
	return stat(p->path, &st) == 0 && _since_launch(p, &st);
}
