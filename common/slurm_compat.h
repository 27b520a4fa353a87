/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/slurm_compat.h: the few libslurm calls whose form changed between
 * the Slurm versions supported (24.11 and 26.05; config/elastic_slurm_api.m4),
 * for the code that links libslurm: elasticd and the job_submit plugin.
 * Header only: common/'s libraries do not link libslurm. */
#ifndef ELASTIC_SLURM_COMPAT_H
#define ELASTIC_SLURM_COMPAT_H

#include <stdint.h>

#include <slurm/slurm.h>

/* One job's record (slurm_load_job takes a step id from Slurm 26.05 on). */
static inline int elastic__slurm_load_job(uint32_t id, job_info_msg_t **m, uint16_t flags)
{
#ifdef HAVE_SLURM_LOAD_JOB_STEP_ID
	slurm_step_id_t s = {0};
	s.job_id = id;
	s.step_het_comp = NO_VAL;
	s.step_id = NO_VAL;
	return slurm_load_job(m, s, flags);
#else
	return slurm_load_job(m, id, flags);
#endif
}

/* Pending or running, and not completing: a job that may still hold or
 * take GPUs, or be updated. */
static inline int elastic__slurm_job_active(uint32_t state)
{
	uint32_t base = state & JOB_STATE_BASE;
	return (base == JOB_RUNNING || base == JOB_PENDING) && !(state & JOB_COMPLETING);
}

#endif
