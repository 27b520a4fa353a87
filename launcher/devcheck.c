/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/devcheck.c: a rank's check that its job step confines it to its
 * own GPU's device file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "devcheck.h"
#include "gpuset.h" /* elastic__parse_idx */

int elastic__devcheck_path(const char *pattern, const char *host, int gpu, char *buf,
			   size_t len)
{
	size_t used = 0;
	int n;

	for (const char *p = pattern; *p; p++) {
		char num[16];
		const char *add = num;
		if (*p != '%') {
			num[0] = *p, num[1] = '\0';
		} else if (p[1] == 'h') {
			add = host, p++;
		} else if (p[1] == 'g') {
			snprintf(num, sizeof(num), "%d", gpu), p++;
		} else if (p[1] == '%') {
			num[0] = '%', num[1] = '\0', p++;
		} else {
			errno = EINVAL;
			return -1;
		}
		n = snprintf(buf + used, len - used, "%s", add);
		if (n < 0 || (size_t)n >= len - used) {
			errno = ENAMETOOLONG;
			return -1;
		}
		used += (size_t)n;
	}
	if (used == 0 && len > 0)
		buf[0] = '\0';
	return 0;
}

int elastic__devcheck_verdict(const int *reach, const int *held, int n, int own,
			      const char *pattern, const char *host, elastic_error_t *err)
{
	char path[512];

	if (elastic__devcheck_path(pattern, host, own, path, sizeof(path)) < 0)
		path[0] = '\0';
	if (own < 0 || own >= n)
		return elastic__fail(err, ENOENT, "GPU %d: no device file %s on %s", own,
				     path, host);
	if (!reach[own])
		return elastic__fail(err, EPERM,
				     "GPU %d: its device file %s is refused to this rank",
				     own, path);
	for (int i = 0; i < n; i++) {
		if (i == own || !reach[i] || held[i])
			continue;
		elastic__devcheck_path(pattern, host, i, path, sizeof(path));
		return elastic__fail(
			err, EACCES,
			"GPU %d: this rank can also open %s (GPU %d), which its job step does not hold: devices are not confined",
			own, path, i);
	}
	if (!held[own])
		return elastic__fail(
			err, EPERM,
			"GPU %d: the job step this rank runs in does not hold it (%s)",
			own, path);
	return 0;
}

int elastic__devcheck(const char *pattern, const char *host, int own,
		      const char *step_gpus, elastic_error_t *err)
{
	int reach[ELASTIC_DEVCHECK_MAX], held[ELASTIC_DEVCHECK_MAX] = {0}, n = 0;
	int idx[ELASTIC_DEVCHECK_MAX], k = 0;
	char path[512];
	struct stat st;

	if (elastic__devcheck_path(pattern, host, 0, path, sizeof(path)) < 0)
		return elastic__fail(err, errno, "GPU device pattern '%s': %s", pattern,
				     strerror(errno));
	if (step_gpus && *step_gpus &&
	    (k = elastic__parse_idx(step_gpus, idx, ELASTIC_DEVCHECK_MAX)) < 0)
		return elastic__fail(err, EINVAL, "the step's GPU list '%s' is malformed",
				     step_gpus);
	for (int i = 0; i < k; i++)
		if (idx[i] >= 0 && idx[i] < ELASTIC_DEVCHECK_MAX)
			held[idx[i]] = 1;
	for (; n < ELASTIC_DEVCHECK_MAX; n++) {
		if (elastic__devcheck_path(pattern, host, n, path, sizeof(path)) < 0 ||
		    stat(path, &st) < 0)
			break;
		int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		reach[n] = fd >= 0 || errno != EPERM;
		if (fd >= 0)
			close(fd);
	}
	return elastic__devcheck_verdict(reach, held, n, own, pattern, host, err);
}
