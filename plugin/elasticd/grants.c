/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/grants.c: pure grant arithmetic: GPU counts in GRES strings, which
 * grants to release, a grant's time limit and batch script. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grants.h"

#define EXACT_SEARCH_MAX 16 /* grants of one job on one node searched exactly */

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

/* Reach of n sizes plus extra[0..nextra) (see grants.h), skipping the
 * sizes whose bit is set in skip. Sizes are few (one job's grants on one
 * node): an insertion sort does. */
static int _reach(const int *gpus, int n, unsigned skip, const int *extra, int nextra)
{
	int sorted[64], m = 0, reach = 0;
	for (int i = 0; i < n + nextra && m < 64; i++) {
		int v = i < n ? gpus[i] : extra[i - n];
		if (i < n && i < 32 && (skip & (1u << i)))
			continue;
		if (v <= 0)
			continue;
		int k = m++;
		while (k > 0 && sorted[k - 1] > v) {
			sorted[k] = sorted[k - 1];
			k--;
		}
		sorted[k] = v;
	}
	for (int i = 0; i < m && sorted[i] <= reach + 1; i++)
		reach += sorted[i];
	return reach;
}

int elastic__grant_reach(const int *gpus, int n)
{
	return _reach(gpus, n, 0, NULL, 0);
}

int elastic__split_grow(const int *have, int nhave, int gpus, int *parts, int max_parts)
{
	int n = 0;
	if (nhave < 0 || !have)
		nhave = 0;
	while (gpus > 0 && n < max_parts) {
		int next = _reach(have, nhave, 0, parts, n) + 1;
		int p = n == max_parts - 1 || next > gpus ? gpus : next;
		parts[n++] = p;
		gpus -= p;
	}
	return n;
}

/* The grants whose sizes add up to exactly excess and leave the rest most
 * complete, then the fewest, by trying every subset (n is small: the
 * grants of one job on one node). */
static int _exact_subset(const int *gpus, int n, int excess, int *pick, int max_pick)
{
	unsigned best = 0;
	int best_count = 0, best_reach = -1;
	if (n > EXACT_SEARCH_MAX)
		return 0;
	for (unsigned m = 1; m < (1u << n); m++) {
		int sum = 0, count = 0, reach;
		for (int i = 0; i < n; i++)
			if (m & (1u << i)) {
				sum += gpus[i];
				count++;
			}
		if (sum != excess || count > max_pick)
			continue;
		reach = _reach(gpus, n, m, NULL, 0);
		if (reach > best_reach || (reach == best_reach && count < best_count)) {
			best = m;
			best_count = count;
			best_reach = reach;
		}
	}
	for (int i = 0, k = 0; i < n && best; i++)
		if (best & (1u << i))
			pick[k++] = i;
	return best_count;
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
	/* One grant of exactly excess when the search cannot run. */
	if (exact >= 0 && n > EXACT_SEARCH_MAX) {
		pick[0] = exact;
		return 1;
	}
	/* Grants that make excess exactly, leaving the rest most complete: no
	 * GPU released too many (which would have to be granted again: a
	 * second re-form), now or at the next shrink. */
	if ((npick = _exact_subset(gpus, n, excess, pick, max_pick)) > 0)
		return npick;
	if (cover >= 0) {
		pick[0] = cover;
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

unsigned elastic__grant_minutes(long lead_start, unsigned lead_limit, long now,
				unsigned no_limit)
{
	long left;

	if (lead_limit == 0 || lead_limit >= no_limit)
		return 0;
	left = (lead_start + (long)lead_limit * 60 - now) / 60;
	if (lead_start <= 0 || left > (long)lead_limit)
		left = lead_limit; /* not started, or a clock ahead: the whole limit */
	return left < 1 ? 1 : (unsigned)left;
}

int elastic__grant_script(char *buf, size_t len, unsigned long lead, int poll_s)
{
	int n = snprintf(
		buf, len,
		"#!/bin/sh\n"
		"# elasticd grant: holds GPUs for elastic job %lu, and ends when that job\n"
		"# no longer runs (asked every %d s), also while elasticd is down. Once\n"
		"# the job released it, elasticd sends SIGURG: it ends as done (exit 0).\n"
		"trap 'kill $! 2>/dev/null; exit 0' URG\n"
		"command -v squeue >/dev/null || { sleep infinity & wait $!; exit 0; }\n"
		"# one job-state RPC a question where squeue can (Slurm 24.05 on), not\n"
		"# three (the federation, the job's record, the partitions)\n"
		"q='squeue --local'\n"
		"squeue --help 2>/dev/null | grep -q -- --only-job-state &&\n"
		"\tq='squeue --local --only-job-state'\n"
		"while :; do\n"
		"\tsleep %d & wait $!\n"
		"\ts=$($q -h -j %lu -o %%T 2>&1)\n"
		"\tcase \"$?:$s\" in\n"
		"\t0:RUNNING | 0:SUSPENDED | 0:CONFIGURING | 0:RESIZING) ;;\n"
		"\t0:* | *'Invalid job id'*) exit 0 ;;\n"
		"\tesac\n"
		"done\n",
		lead, poll_s, poll_s, lead);
	return n < 0 || (size_t)n >= len ? -1 : n;
}
