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

/* Split a grow of gpus GPUs of one job on one node into grant sizes, given
 * the sizes of the grants it holds there already (have[0..nhave), not those
 * being released), so that every later shrink there can release exactly
 * what the policy asks, in one re-form. Sizes sorted ascending are
 * "complete" when each is at most 1 + the sum of those before it: then
 * every count from 0 to their sum is the sum of some of them. Each part is
 * the largest that keeps the sizes complete (1 + the count reachable so
 * far), the last one the rest: from nothing 7 -> 1, 2, 4 and 4 -> 1, 2, 1;
 * onto a 4-GPU grant, 3 -> 1, 2. Returns the number of parts written (at
 * most max_parts: the last part then takes what is left). */
int elastic__split_grow(const int *have, int nhave, int gpus, int *parts, int max_parts);

/* The largest count such that every count from 0 to it is the sum of some
 * of the n sizes (0 when none is 1). */
int elastic__grant_reach(const int *gpus, int n);

/* Which of n grants (gpus[i] GPUs each, on one node) to release so that at
 * least excess GPUs go: grants adding up to exactly excess if some do
 * (searched when n <= 16; among those, the ones that leave the rest most
 * complete (elastic__grant_reach), then the fewest grants, then the lowest
 * indexes), else the smallest grant larger than excess, else the largest
 * ones first until covered. Writes indexes into pick (at most max_pick);
 * returns how many, 0 if nothing is to go, -1 (ENOMEM). */
int elastic__pick_release(const int *gpus, int n, int excess, int *pick, int max_pick);

/* Minutes a grant submitted at now for a lead job that started at
 * lead_start with a limit of lead_limit minutes may run, so that it never
 * ends after its lead could: the whole minutes left to the lead, at least
 * 1; 0 (no limit) when the lead has none (lead_limit 0 or >= no_limit,
 * Slurm's INFINITE and NO_VAL). */
unsigned elastic__grant_minutes(long lead_start, unsigned lead_limit, long now,
				unsigned no_limit);

/* The batch script of a grant for lead job `lead`, into buf (len bytes):
 * it holds the GPUs and ends by itself once squeue says the lead is no
 * longer running (polled every poll_s seconds, one job-state RPC a poll
 * where squeue has --only-job-state), so that a grant does not
 * outlive its lead while elasticd is down. An unreachable slurmctld keeps
 * it (the time limit still ends it). Returns the length, or -1 if buf is
 * too small. */
#define ELASTIC_GRANT_POLL_S 10 /* elasticd's poll_s */
int elastic__grant_script(char *buf, size_t len, unsigned long lead, int poll_s);

#endif
