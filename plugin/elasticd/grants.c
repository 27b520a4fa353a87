/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/grants.c: pure grant arithmetic: GPU counts in GRES strings, which
 * grants to release. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grants.h"

int elastic__gres_gpus(const char *gres)
{
	int total = 0;
	const char *p = gres;
	if (!p)
		return 0;
	while (*p) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[128];
		if (len >= sizeof(item))
			len = sizeof(item) - 1;
		memcpy(item, p, len);
		item[len] = '\0';
		char *paren = strchr(item, '(');
		if (paren)
			*paren = '\0';
		char *name = item;
		if (strncmp(name, "gres/", 5) == 0 || strncmp(name, "gres:", 5) == 0)
			name += 5;
		if (strncmp(name, "gpu", 3) == 0 && (name[3] == ':' || name[3] == '\0')) {
			char *colon = strrchr(name, ':');
			if (colon && colon[1]) {
				char *e;
				long n = strtol(colon + 1, &e, 10);
				if (*e == '\0' && n > 0 && n < 100000)
					total += (int)n;
			} else if (!colon) {
				total += 1; /* "gpu" alone means one */
			}
		}
		if (!end)
			break;
		p = end + 1;
	}
	return total;
}

int elastic__pick_release(const int *gpus, int n, int excess, int *pick, int max_pick)
{
	int exact = -1, cover = -1, npick = 0, left = excess;
	char *used;

	if (excess <= 0 || n <= 0 || max_pick <= 0)
		return 0;
	for (int i = 0; i < n; i++) {
		if (gpus[i] == excess && exact < 0)
			exact = i;
		if (gpus[i] > excess && (cover < 0 || gpus[i] < gpus[cover]))
			cover = i;
	}
	if (exact >= 0 || cover >= 0) {
		pick[0] = exact >= 0 ? exact : cover;
		return 1;
	}
	/* None covers it alone: the largest first until covered. */
	used = calloc((size_t)n, 1);
	if (!used)
		return -1;
	while (left > 0 && npick < max_pick) {
		int best = -1;
		for (int i = 0; i < n; i++)
			if (!used[i] && gpus[i] > 0 && (best < 0 || gpus[i] > gpus[best]))
				best = i;
		if (best < 0)
			break;
		used[best] = 1;
		pick[npick++] = best;
		left -= gpus[best];
	}
	free(used);
	return npick;
}
