/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/tres.c: GPU counts in Slurm TRES strings (tres.h). */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "contract.h"
#include "tres.h"

int elastic_tres_gpus(const char *tres, long *count)
{
	long untyped = 0, typed = 0;
	int have_untyped = 0, have_typed = 0;

	*count = 0;
	if (!tres)
		return 0;
	for (const char *p = tres; *p;) {
		size_t n = strcspn(p, ",;");
		const char *end = p + n, *c;
		int is_typed = 0;
		long v = 1;

		if (n >= 8 && strncmp(p, "gres/gpu", 8) == 0 &&
		    (n == 8 || p[8] == ':' || p[8] == '=')) {
			/* gres/gpu[:TYPE][:N|=N]: typed when a name follows "gpu:". */
			is_typed =
				p[8] == ':' && p + 9 < end && (p[9] < '0' || p[9] > '9');
			/* The count: after the last ':' or '=' when it is numeric. */
			c = end;
			while (c > p + 8 && c[-1] != ':' && c[-1] != '=')
				c--;
			if (c > p + 8 && c < end && c[0] >= '0' && c[0] <= '9') {
				int r = elastic__decimal(c, (size_t)(end - c), &v);
				if (r != 0)
					return errno = EINVAL, -1;
			} else if (c > p + 8 && (c == end || c[-1] == '=')) {
				/* "gres/gpu=", "gres/gpu=x", "gres/gpu:" */
				return errno = EINVAL, -1;
			}
			if (is_typed) {
				typed += v;
				have_typed = 1;
			} else {
				untyped += v;
				have_untyped = 1;
			}
		}
		p = end;
		if (*p)
			p++;
	}
	*count = have_untyped ? untyped : typed;
	return have_untyped || have_typed;
}
