/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/grants.h: pure grant arithmetic of elasticd (unit-tested without
 * Slurm). */
#ifndef ELASTICD_GRANTS_H
#define ELASTICD_GRANTS_H

/* GPUs in a GRES list as slurmctld reports them: node gres ("gpu:4",
 * "gpu:a100:2(S:0-1)"), per-node allocation details ("gpu:2(IDX:0-1)"),
 * requests ("gres/gpu:3"); the sum over gpu entries, other GRES ignored,
 * "gpu" alone is one. 0 for NULL, "" or no GPU entry. */
int elastic__gres_gpus(const char *gres);

/* Split a grow of gpus GPUs on one node into grants of powers of two,
 * largest first (7 -> 4, 2, 1): later shrinks of any size can then release
 * exactly, never more than asked (which would have to be granted again).
 * Returns the number of parts written (at most max_parts). */
int elastic__split_grow(int gpus, int *parts, int max_parts);

/* Which of n grants (gpus[i] GPUs each, on one node) to release so that at
 * least excess GPUs go: one grant of exactly excess if there is one, else
 * the fewest grants adding up to exactly excess (searched when n <= 16),
 * else the smallest grant larger than excess, else the largest ones first
 * until covered. Writes indexes into pick (at most max_pick); returns how
 * many, 0 if nothing is to go, -1 (ENOMEM). */
int elastic__pick_release(const int *gpus, int n, int excess, int *pick, int max_pick);

#endif
