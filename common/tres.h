/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/tres.h: GPU counts in Slurm TRES strings. */
#ifndef ELASTIC_COMMON_TRES_H
#define ELASTIC_COMMON_TRES_H

/* The GPU count in a TRES list as job_desc/job_info carry them:
 * tres_per_job/tres_per_node ("gres/gpu:4", "gres/gpu:a100:2", "gres/gpu"
 * = 1) and allocation strings ("cpu=2,mem=1G,gres/gpu=4,gres/gpu:a100=4").
 * Entries are separated by ',' or ';'. Untyped gpu entries are summed; typed
 * ones only count when no untyped entry is present (Slurm lists both the
 * total and the per-type counts). Returns 1 with *count, 0 when the string
 * has no GPU entry (*count 0), -1 (EINVAL) when a GPU count is unreadable. */
int elastic_tres_gpus(const char *tres, long *count);

#endif
