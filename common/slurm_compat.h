/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/slurm_compat.h: what elasticd and the job_submit plugin (the code
 * that links libslurm) ask slurmctld alike: the few calls whose form changed
 * between the Slurm versions supported (24.11 and 26.05;
 * config/elastic_slurm_api.m4), and the probe for new jobs by id.
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

#if HAVE_DECL_SLURM_LOAD_JOB_STATE
/* Ids asked about at once after the last job seen. */
#define ELASTIC_SLURM_PROBE_IDS 256

/* One job-state RPC (Slurm >= 23.11) over the ELASTIC_SLURM_PROBE_IDS ids
 * from next on: Slurm numbers new jobs in order, so this finds the jobs
 * submitted since the last one seen without reading the whole list. The
 * pending or running ones go into ids (room for ELASTIC_SLURM_PROBE_IDS),
 * each once; *top is the highest id of the window Slurm knows (0: none).
 * Returns their count, or -1 when the RPC failed. */
static inline int elastic__slurm_probe(uint32_t next, uint32_t *ids, uint32_t *top)
{
	slurm_selected_step_t sel[ELASTIC_SLURM_PROBE_IDS];
	job_state_response_msg_t *st = NULL;
	int n = 0;

	*top = 0;
	for (int k = 0; k < ELASTIC_SLURM_PROBE_IDS; k++) {
		sel[k] = (slurm_selected_step_t)SLURM_SELECTED_STEP_INITIALIZER;
		sel[k].step_id.job_id = next + (uint32_t)k;
	}
	if (slurm_load_job_state(ELASTIC_SLURM_PROBE_IDS, sel, &st) != SLURM_SUCCESS)
		return -1;
	for (uint32_t i = 0; i < st->jobs_count; i++) {
		uint32_t id = st->jobs[i].job_id;
		int seen = 0;
		if (id < next || id >= next + ELASTIC_SLURM_PROBE_IDS)
			continue; /* another task of an array asked for */
		if (id > *top)
			*top = id;
		for (int k = 0; k < n && !seen; k++)
			seen = ids[k] == id;
		if (!seen && elastic__slurm_job_active(st->jobs[i].state))
			ids[n++] = id;
	}
	slurm_free_job_state_response_msg(st);
	return n;
}
#endif

#endif
