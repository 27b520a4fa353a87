/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/snapshots.c: `elastic-ctl snapshots`: list or remove this node's
 * libelastic node snapshots (named by common/contract.h). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "contract.h"
#include "snapshots.h"

/* 1 if job is one of ids[n] (n == 0: every job). */
static int _wanted(unsigned long job, const unsigned long *ids, int n)
{
	if (n == 0)
		return 1;
	for (int i = 0; i < n; i++)
		if (ids[i] == job)
			return 1;
	return 0;
}

static int _ids(int argc, char **argv, unsigned long *ids, int cap)
{
	int n = 0;

	for (int i = 0; i < argc; i++) {
		long v;
		if (elastic__decimal(argv[i], strlen(argv[i]), &v) != 0 || v < 1) {
			fprintf(stderr, "elastic-ctl snapshots: '%s' is not a job id\n",
				argv[i]);
			return -1;
		}
		if (n == cap) {
			fprintf(stderr, "elastic-ctl snapshots: more than %d job ids\n",
				cap);
			return -1;
		}
		ids[n++] = (unsigned long)v;
	}
	return n;
}

int elastic__ctl_snapshots(int argc, char **argv)
{
	const char *dir = getenv("ELASTIC_SHM_DIR");
	unsigned long ids[256];
	int remove = 0, n, bad = 0, count = 0;
	struct dirent *e;
	DIR *d;

	if (!dir || !*dir)
		dir = ELASTIC_SNAP_DIR;
	argc--, argv++;
	if (argc && (!strcmp(argv[0], "-r") || !strcmp(argv[0], "--remove")))
		remove = 1, argc--, argv++;
	if ((n = _ids(argc, argv, ids, 256)) < 0)
		return 2;
	if (remove && n == 0) {
		fprintf(stderr,
			"elastic-ctl snapshots --remove: name the job ids whose snapshots to remove\n");
		return 2;
	}
	if (!(d = opendir(dir))) {
		fprintf(stderr, "elastic-ctl snapshots: %s: %s\n", dir, strerror(errno));
		return 1;
	}
	if (!remove)
		printf("%-10s %12s %-19s %s\n", "JOBID", "BYTES", "MODIFIED", "FILE");
	while ((e = readdir(d))) {
		char path[1024], when[32];
		unsigned long job;
		struct stat st;

		if (!elastic_snap_job_of(e->d_name, &job) || !_wanted(job, ids, n))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (remove) {
			if (unlink(path) < 0 && errno != ENOENT) {
				fprintf(stderr,
					"elastic-ctl snapshots: cannot remove %s: %s\n",
					path, strerror(errno));
				bad = 1;
			} else {
				count++;
			}
			continue;
		}
		if (lstat(path, &st) < 0)
			continue;
		strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S",
			 localtime(&st.st_mtime));
		printf("%-10lu %12lld %-19s %s\n", job, (long long)st.st_size, when,
		       path);
	}
	closedir(d);
	if (remove)
		printf("removed %d snapshot file%s\n", count, count == 1 ? "" : "s");
	return bad;
}
