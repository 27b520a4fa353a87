/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_gpuset.c: unit tests of elastic-run's GPU set: parsing
 * `scontrol show job -d` as Slurm 24.11 prints it, trimming to the allowed
 * sizes, and the hostfile. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "gpuset.h"

/* Text captured from the testbed (slurm 24.11.5), trimmed. */
static const char leader[] = "JobId=10 JobName=wrap\n"
			     "   UserId=root(0) GroupId=root(0) MCS_label=N/A\n"
			     "   JobState=RUNNING Reason=None Dependency=(null)\n"
			     "   NodeList=node[1-2]\n"
			     "   JOB_GRES=gpu:6\n"
			     "     Nodes=node[1-2] CPU_IDs=0 Mem=0 GRES=gpu:3(IDX:0-2)\n"
			     "   MinCPUsNode=1 MinMemoryNode=0 MinTmpDiskNode=0\n";
static const char grant_oneline[] =
	"JobId=11 JobName=elastic:10 UserId=root(0) JobState=RUNNING Reason=None NodeList=node1 JOB_GRES=gpu:1   Nodes=node1 CPU_IDs=1 Mem=0 GRES=gpu:1(IDX:3) MinCPUsNode=1\n";
static const char typed[] =
	"JobState=RUNNING\n"
	"     Nodes=node7 CPU_IDs=0-3 Mem=0 GRES=gpu:a100:2(IDX:1,3)\n"
	"     Nodes=node8 CPU_IDs=0 Mem=0 GRES=gpu:a100:1(IDX:0)\n";
static const char pending[] = "JobId=12 JobState=PENDING Reason=Resources\n";
static const char nogpu[] = "JobState=RUNNING\n     Nodes=node3 CPU_IDs=0 Mem=0\n";

static char *expand(const char *hl, void *arg)
{
	/* The hostlists of the samples above. */
	if (strcmp(hl, "node[1-2]") == 0)
		return strdup("node1\nnode2\n");
	if (strchr(hl, '['))
		return NULL;
	char *s = malloc(strlen(hl) + 2);
	sprintf(s, "%s\n", hl);
	return s;
}

static void parse_idx_lists(void **state)
{
	int idx[8];
	assert_int_equal(elastic__parse_idx("0-2,5", idx, 8), 4);
	assert_int_equal(idx[0], 0);
	assert_int_equal(idx[2], 2);
	assert_int_equal(idx[3], 5);
	assert_int_equal(elastic__parse_idx("7", idx, 8), 1);
	assert_int_equal(elastic__parse_idx("", idx, 8), 0);
	assert_int_equal(elastic__parse_idx("0-9", idx, 8), -1); /* more than max */
	assert_int_equal(elastic__parse_idx("3-1", idx, 8), -1);
	assert_int_equal(elastic__parse_idx("a", idx, 8), -1);
	assert_int_equal(elastic__parse_idx("1,,2", idx, 8), -1);
	assert_int_equal(elastic__parse_idx("-1", idx, 8), -1);
}

/* A map's GPU list names the job of a GPU held by another job than the
 * host's: its rank runs in that job's step. */
static void parse_idx_owner_lists(void **state)
{
	int idx[8];
	unsigned long own[8];

	(void)state;
	assert_int_equal(elastic__parse_idx_owner("0,1@77,2-3@78", 5, idx, own, 8), 4);
	assert_int_equal(idx[0], 0);
	assert_int_equal(own[0], 5);
	assert_int_equal(idx[1], 1);
	assert_int_equal(own[1], 77);
	assert_int_equal(idx[3], 3);
	assert_int_equal(own[3], 78);
	assert_int_equal(elastic__parse_idx_owner("2", 5, idx, own, 8), 1);
	assert_int_equal(own[0], 5);
	const char *bad[] = {"1@", "1@x", "1@0", "@5", "1,", "1,,2", "0-3", "a"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		errno = 0;
		int n = elastic__parse_idx_owner(bad[i], 5, idx, own, i == 6 ? 2 : 8);
		assert_int_equal(n, -1);
		assert_int_equal(errno, EINVAL);
	}
}

static void leader_and_grant_share_a_node(void **state)
{
	static struct elastic_gpuset set;
	elastic_error_t err;
	char desc[256];
	memset(&set, 0, sizeof(set));
	assert_int_equal(elastic__gpuset_add_job(&set, 10, leader, expand, NULL, &err),
			 6);
	assert_int_equal(
		elastic__gpuset_add_job(&set, 11, grant_oneline, expand, NULL, &err), 1);
	assert_int_equal(set.total, 7);
	assert_int_equal(set.nhosts, 2);
	assert_string_equal(set.host[0].name, "node1");
	assert_int_equal(set.host[0].ngpus, 4);
	assert_int_equal(set.host[0].gpu[3], 3);
	assert_int_equal(set.host[0].gpu_job[3], 11);
	assert_int_equal(set.host[0].job, 10); /* the daemon runs in the leader */
	elastic__gpuset_describe(&set, desc, sizeof(desc));
	assert_string_equal(desc, "node1:4 GPUs (job 10), node2:3 GPUs (job 10)");
}

static void typed_gres_and_cpu_only_jobs(void **state)
{
	static struct elastic_gpuset set;
	elastic_error_t err;
	memset(&set, 0, sizeof(set));
	assert_int_equal(elastic__gpuset_add_job(&set, 5, typed, expand, NULL, &err), 3);
	assert_int_equal(set.host[0].gpu[1], 3);
	assert_int_equal(elastic__gpuset_add_job(&set, 6, nogpu, expand, NULL, &err), 1);
	assert_int_equal(set.host[2].gpu[0], -1);
}

static void bad_text_is_refused(void **state)
{
	static struct elastic_gpuset set;
	elastic_error_t err;
	memset(&set, 0, sizeof(set));
	assert_int_equal(elastic__gpuset_add_job(&set, 12, pending, expand, NULL, &err),
			 -1);
	assert_int_equal(errno, EAGAIN);
	assert_non_null(strstr(err.text, "job 12 is PENDING"));
	assert_int_equal(elastic__gpuset_add_job(&set, 13, "garbage", expand, NULL, &err),
			 -1);
	assert_non_null(strstr(err.text, "no JobState"));
	assert_int_equal(
		elastic__gpuset_add_job(&set, 14,
					"JobState=RUNNING\n Nodes=x[ GRES=gpu:1(IDX:0)",
					expand, NULL, &err),
		-1);
	assert_non_null(strstr(err.text, "cannot expand host list"));
	assert_int_equal(
		elastic__gpuset_add_job(&set, 15,
					"JobState=RUNNING\n Nodes=n1 GRES=gpu:1(IDX:zz)",
					expand, NULL, &err),
		-1);
	assert_non_null(strstr(err.text, "bad GPU index list"));
	assert_int_equal(elastic__gpuset_add_job(&set, 16, "JobState=RUNNING\n", expand,
						 NULL, &err),
			 -1);
	assert_int_equal(set.total, 0);
}

static void trim_to_max_and_sizes(void **state)
{
	static struct elastic_gpuset set;
	elastic_error_t err;
	struct elastic_request pow2 = {1, 100, 30, 1, {ELASTIC_SIZES_POW2}};
	struct elastic_request any3 = {1, 3, 30, 1, {ELASTIC_SIZES_ANY}};
	struct elastic_request list48 = {1, 8, 30, 1, {ELASTIC_SIZES_LIST, 2, {4, 8}}};
	struct elastic_request pow2min3 = {3, 8, 30, 1, {ELASTIC_SIZES_POW2}};
	memset(&set, 0, sizeof(set));
	elastic__gpuset_add_job(&set, 10, leader, expand, NULL, &err);
	elastic__gpuset_add_job(&set, 11, grant_oneline, expand, NULL, &err);
	/* 7 GPUs, pow2: 4. */
	assert_int_equal(set.total, 7);
	assert_int_equal(set.raw, 7);
	assert_int_equal(elastic__gpuset_trim(&set, &pow2), 4);
	/* what was held before the trim, and every job added, stay known */
	assert_int_equal(set.raw, 7);
	assert_true(elastic__gpuset_has_job(&set, 10));
	assert_true(elastic__gpuset_has_job(&set, 11));
	assert_false(elastic__gpuset_has_job(&set, 12));
	/* GPUs go from the hosts added last: node2 first. */
	assert_int_equal(set.nhosts, 1);
	assert_int_equal(set.host[0].ngpus, 4);
	assert_int_equal(elastic__gpuset_trim(&set, &any3), 3);
	assert_int_equal(elastic__gpuset_trim(&set, &list48), 0); /* no size fits */
	/* pow2 at MIN 3 on 3 GPUs: 2 would be below MIN, so none fits. */
	memset(&set, 0, sizeof(set));
	elastic__gpuset_add_job(&set, 10, leader, expand, NULL, &err);
	set.host[0].ngpus = 3, set.total = 3;
	assert_int_equal(elastic__gpuset_trim(&set, &pow2min3), 0);
}

static void hostfile_lines(void **state)
{
	static struct elastic_gpuset set;
	elastic_error_t err;
	char path[] = "/tmp/test_gpuset.XXXXXX", buf[256] = "";
	int fd = mkstemp(path);
	memset(&set, 0, sizeof(set));
	elastic__gpuset_add_job(&set, 10, leader, expand, NULL, &err);
	assert_int_equal(elastic__gpuset_write_hostfile(&set, path, &err), 0);
	assert_true(read(fd, buf, sizeof(buf) - 1) > 0);
	assert_string_equal(buf, "node1 slots=3\nnode2 slots=3\n");
	close(fd);
	unlink(path);
	assert_int_equal(elastic__gpuset_write_hostfile(&set, "/nonexistent/dir/h", &err),
			 -1);
	assert_non_null(strstr(err.text, "/nonexistent/dir/h"));
}

static int _is_11(unsigned long job, const void *arg)
{
	(void)arg;
	return job == 11;
}

/* A planned shrink in place: the ranks on job 11's GPU leave ("HOST GPU"
 * lines), and the set without them is what the others run on. */
static void leave_lines_and_drop(void **state)
{
	static struct elastic_gpuset set;
	elastic_error_t err;
	char buf[64], desc[256];
	memset(&set, 0, sizeof(set));
	elastic__gpuset_add_job(&set, 10, leader, expand, NULL, &err);
	elastic__gpuset_add_job(&set, 11, grant_oneline, expand, NULL, &err);
	assert_int_equal(elastic__gpuset_leave(&set, _is_11, NULL, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "node1 3\n");
	assert_int_equal(elastic__gpuset_leave(&set, _is_11, NULL, buf, 4), -1);
	assert_int_equal(elastic__gpuset_drop(&set, _is_11, NULL), 1);
	assert_int_equal(set.total, 6);
	elastic__gpuset_describe(&set, desc, sizeof(desc));
	assert_string_equal(desc, "node1:3 GPUs (job 10), node2:3 GPUs (job 10)");
	/* a host left with no GPU goes */
	set.host[1].gpu_job[0] = set.host[1].gpu_job[1] = set.host[1].gpu_job[2] = 11;
	assert_int_equal(elastic__gpuset_drop(&set, _is_11, NULL), 3);
	assert_int_equal(set.nhosts, 1);
	assert_int_equal(set.total, 3);
}

/* Slurm 24.11's and 26.05's words on a failed look-up: only "no such job"
 * makes a grant ended; slurmctld not answering does not. */
static void unknown_job_or_no_answer(void **state)
{
	assert_true(elastic__slurm_job_unknown(
		"slurm_load_jobs error: Invalid job id specified\n"));
	assert_false(elastic__slurm_job_unknown(
		"slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n"));
	assert_false(elastic__slurm_job_unknown(
		"slurm_load_jobs error: Socket timed out on send/recv operation\n"));
	assert_false(elastic__slurm_job_unknown(""));
	assert_false(elastic__slurm_job_unknown(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_idx_lists),
		cmocka_unit_test(parse_idx_owner_lists),
		cmocka_unit_test(leader_and_grant_share_a_node),
		cmocka_unit_test(typed_gres_and_cpu_only_jobs),
		cmocka_unit_test(bad_text_is_refused),
		cmocka_unit_test(trim_to_max_and_sizes),
		cmocka_unit_test(hostfile_lines),
		cmocka_unit_test(leave_lines_and_drop),
		cmocka_unit_test(unknown_job_or_no_answer),
	};
	return cmocka_run_group_tests_name("gpuset", tests, NULL, NULL);
}
