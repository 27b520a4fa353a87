/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tests/slurm_side/submit_api.c: submit a held batch job through libslurm with a chosen
 * SPANK job environment, bypassing sbatch and its SPANK checks. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

/* usage: submit_api NAME [--admin-comment=TEXT] [VAR=VALUE...]
 * The VAR=VALUE words become job_desc.spank_job_env, as sbatch would send
 * its SPANK option values. Prints the job id (exit 0), or the error
 * (exit 1); slurmctld's message is printed by libslurm on stderr. */
int main(int argc, char **argv)
{
	static char *env[] = {"PATH=/usr/bin:/bin", NULL};
	char *spank[64];
	job_desc_msg_t d;
	submit_response_msg_t *resp = NULL;
	uint32_t n = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s NAME [--admin-comment=TEXT] [VAR=VALUE...]\n",
			argv[0]);
		return 2;
	}
	slurm_init(NULL);
	slurm_init_job_desc_msg(&d);
	d.name = argv[1];
	for (int i = 2; i < argc; i++) {
		if (strncmp(argv[i], "--admin-comment=", 16) == 0)
			d.admin_comment = argv[i] + 16;
		else if (strchr(argv[i], '=') && n < 63)
			spank[n++] = argv[i];
		else {
			fprintf(stderr, "submit_api: bad argument '%s'\n", argv[i]);
			return 2;
		}
	}
	spank[n] = NULL;
	d.spank_job_env = n ? spank : NULL;
	d.spank_job_env_size = n;
	d.script = "#!/bin/sh\ntrue\n";
	d.environment = env;
	d.env_size = 1;
	d.user_id = getuid();
	d.group_id = getgid();
	d.work_dir = "/tmp";
	d.std_out = "/dev/null";
	d.min_nodes = 1;
	d.priority = 0; /* held */
	if (slurm_submit_batch_job(&d, &resp) != SLURM_SUCCESS) {
		int e = errno;
		printf("refused: %s\n", slurm_strerror(e));
		if (resp && resp->job_submit_user_msg)
			printf("message: %s\n", resp->job_submit_user_msg);
		return 1;
	}
	/* Slurm 26.05 carries the id in step_id (config/elastic_slurm_api.m4). */
#ifdef HAVE_SUBMIT_RESPONSE_MSG_T_STEP_ID_JOB_ID
	printf("%u\n", resp->step_id.job_id);
#else
	printf("%u\n", resp->job_id);
#endif
	if (resp->job_submit_user_msg)
		printf("message: %s\n", resp->job_submit_user_msg);
	slurm_free_submit_response_response_msg(resp);
	slurm_fini();
	return 0;
}
