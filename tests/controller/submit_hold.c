/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tests/controller/submit_hold.c: preloaded into a test's elasticd
 * (LD_PRELOAD): once $SUBMIT_HOLD_DIR/arm exists, elasticd's next grant
 * submission makes $SUBMIT_HOLD_DIR/waiting and waits (30 s at most) for
 * $SUBMIT_HOLD_DIR/go before it goes to slurmctld, so that a test stops
 * slurmctld exactly while elasticd submits a grant. The submission itself
 * is Slurm's own call, made as it would be. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int slurm_submit_batch_job(void *req, void **resp);

int slurm_submit_batch_job(void *req, void **resp)
{
	static int (*real)(void *, void **);
	const char *d = getenv("SUBMIT_HOLD_DIR");
	char p[4096];
	int fd;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "slurm_submit_batch_job");
	snprintf(p, sizeof(p), "%s/arm", d ? d : "/nonexistent");
	if (d && unlink(p) == 0) {
		snprintf(p, sizeof(p), "%s/waiting", d);
		if ((fd = open(p, O_CREAT | O_WRONLY, 0644)) >= 0)
			close(fd);
		snprintf(p, sizeof(p), "%s/go", d);
		for (int i = 0; i < 300 && access(p, F_OK); i++)
			usleep(100000);
	}
	return real(req, resp);
}
