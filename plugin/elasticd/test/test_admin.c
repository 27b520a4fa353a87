/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/test/test_admin.c: unit tests of administrators' pause,
 * drain and resume (admin.c): the state, its description, and the bounds on a
 * tick's plan; the plan itself (plan.c); and the state files (statefile.c): pauses and drains, and the
 * jobs' measured scaling. */
#include "config.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <unistd.h>
#include <cmocka.h>
#include <math.h>

#include "admin.h"
#include "statefile.h"

static void apply_and_describe(void **state)
{
	struct ed_admin a;
	elastic_error_t err;
	char buf[128];

	(void)state;
	memset(&a, 0, sizeof(a));
	ed_admin_describe(&a, buf, sizeof(buf));
	assert_string_equal(buf, "");
	assert_int_equal(ed_admin_apply(&a, "drain", "node2", &err), 0);
	assert_int_equal(ed_admin_apply(&a, "pause", "node3", &err), 0);
	assert_int_equal(ed_admin_apply(&a, "drain", "node4", &err), 0);
	ed_admin_describe(&a, buf, sizeof(buf));
	assert_string_equal(buf, "drained: node2,node4; no new grants: node3");
	assert_int_equal(ed_admin_node(&a, "node2"), ED_ADMIN_DRAIN);
	assert_int_equal(ed_admin_node(&a, "node1"), ED_ADMIN_NONE);
	assert_int_equal(ed_admin_apply(&a, "pause", NULL, &err), 0);
	ed_admin_describe(&a, buf, sizeof(buf));
	assert_string_equal(
		buf,
		"paused (no grow, no shrink); drained: node2,node4; no new grants: node3");
	/* a failed call changes nothing */
	assert_int_equal(ed_admin_apply(&a, "halt", "node1", &err), -1);
	assert_non_null(strstr(err.text, "unknown action 'halt'"));
	assert_int_equal(ed_admin_node(&a, "node1"), ED_ADMIN_NONE);
	assert_int_equal(ed_admin_apply(&a, "resume", "node2", &err), 0);
	assert_int_equal(ed_admin_node(&a, "node2"), ED_ADMIN_NONE);
	assert_int_equal(ed_admin_apply(&a, "drain", "", &err), 0);
	assert_int_equal(ed_admin_node(&a, "node1"), ED_ADMIN_DRAIN);
	assert_int_equal(ed_admin_apply(&a, "resume", NULL, &err), 0);
	ed_admin_describe(&a, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

/* Two nodes of 4 GPUs; job 0 holds 1 (its own) + 3 (grants) on node 0 and a
 * 2-GPU grant on node 1; node 1 has 1 GPU busy with other work. */
static void bounds(void **state)
{
	struct ed_node nodes[2] = {{"node1", 4, 0, 0}, {"node2", 4, 1, 0}};
	struct ed_job job = {.id = 7};
	struct ed_snapshot s = {.nnodes = 2, .njobs = 1, .nodes = nodes, .jobs = &job};
	struct elastic_policy_place h[2] = {{0, 4, 1}, {1, 2, 0}}, k[2];
	const struct elastic_policy_place *held[1] = {h};
	struct elastic_policy_place *kept[1] = {k};
	int nheld[1] = {2}, nkept[1];
	struct ed_admin a;
	elastic_error_t err;

	(void)state;
	memset(&a, 0, sizeof(a));
	/* nothing set: all kept, capacities as they are */
	ed_admin_bound(&a, &s, held, nheld, kept, nkept);
	assert_int_equal(nkept[0], 2);
	assert_int_equal(nodes[0].gpus, 4);
	assert_int_equal(nodes[1].gpus, 4);
	/* node2 paused: its capacity is what is there (1 busy + 2 held) */
	assert_int_equal(ed_admin_apply(&a, "pause", "node2", &err), 0);
	ed_admin_bound(&a, &s, held, nheld, kept, nkept);
	assert_int_equal(nkept[0], 2);
	assert_int_equal(nodes[1].gpus, 3);
	/* node1 drained: only the job's own GPU counts there; grants are excess */
	nodes[1].gpus = 4;
	assert_int_equal(ed_admin_apply(&a, "drain", "node1", &err), 0);
	ed_admin_bound(&a, &s, held, nheld, kept, nkept);
	assert_int_equal(nkept[0], 2);
	assert_int_equal(k[0].node, 0);
	assert_int_equal(k[0].gpus, 1);
	assert_int_equal(nodes[0].gpus, 1);
	/* node2 drained too: the grant there is not kept at all */
	nodes[0].gpus = nodes[1].gpus = 4;
	assert_int_equal(ed_admin_apply(&a, "drain", "node2", &err), 0);
	ed_admin_bound(&a, &s, held, nheld, kept, nkept);
	assert_int_equal(nkept[0], 1);
	assert_int_equal(nodes[1].gpus, 1);
}

static void hold_plan(void **state)
{
	struct ed_node nodes[2] = {{"node1", 4, 0, 0}, {"node2", 4, 0, 0}};
	struct ed_job jobs[2] = {{.id = 7}, {.id = 8}};
	struct ed_snapshot s = {.nnodes = 2, .njobs = 2, .nodes = nodes, .jobs = jobs};
	struct elastic_policy_place h0[2] = {{0, 3, 1}, {1, 2, 0}}, h1[1] = {{1, 1, 1}};
	const struct elastic_policy_place *held[2] = {h0, h1};
	int nheld[2] = {2, 1};
	struct ed_plan p;

	(void)state;
	assert_int_equal(ed_admin_hold_plan(&s, held, nheld, &p), 0);
	assert_int_equal(p.ntargets, 2);
	assert_int_equal(p.targets[0].job, 7);
	assert_int_equal(p.targets[0].gpus, 5);
	assert_int_equal(p.targets[0].nplace, 2);
	assert_int_equal(p.targets[0].place[1].gpus, 2);
	assert_int_equal(p.targets[1].gpus, 1);
	assert_non_null(strstr(p.targets[1].explain, "paused by an administrator"));
	ed_plan_free(&p);
}

/* The plan is the policy's decision for the snapshot: job 7 (held: its own
 * GPU on node1) unchanged since it started grows to what job 8 leaves free;
 * job 8, resized 5 s ago, is held by the 60 s cool-down. With
 * cooldown_from_start, job 7 is held too. What the jobs hold is not
 * changed, and each target has its own places. */
static void plan_compute(void **state)
{
	time_t now = 100000;
	struct ed_node nodes[2] = {{"node1", 4, 0, 0}, {"node2", 4, 0, 0}};
	struct ed_job jobs[2] = {
		{.id = 7,
		 .running = 1,
		 .min = 1,
		 .max = 8,
		 .weight = 1,
		 .priority = 100,
		 .submit = now - 20,
		 .start = now - 10},
		{.id = 8,
		 .running = 1,
		 .min = 1,
		 .max = 4,
		 .weight = 1,
		 .priority = 100,
		 .submit = now - 2000,
		 .start = now - 1000},
	};
	struct ed_snapshot s = {.nnodes = 2, .njobs = 2, .nodes = nodes, .jobs = jobs};
	struct elastic_policy_place h0[1] = {{0, 1, 1}}, h1[2] = {{1, 1, 1}, {0, 2, 0}};
	const struct elastic_policy_place *held[2] = {h0, h1};
	int nheld[2] = {1, 2};
	time_t last[2] = {now - 10, now - 5};
	struct ed_plan_params prm = {
		.mode = ELASTIC_POLICY_PRIORITY, .min_change = 1, .cooldown = 60};
	struct ed_plan p;
	elastic_error_t err;
	int sum;

	(void)state;
	assert_int_equal(
		ed_plan_compute(&s, held, nheld, last, NULL, &prm, now, &p, &err), 0);
	assert_int_equal(p.ntargets, 2);
	assert_int_equal(p.targets[0].job, 7);
	assert_int_equal(p.targets[0].cur, 1);
	assert_int_equal(p.targets[0].gpus, 5);
	assert_int_equal(p.targets[1].job, 8);
	assert_int_equal(p.targets[1].gpus, 3);
	assert_non_null(strstr(p.targets[1].explain, "cool-down"));
	for (int i = 0; i < 2; i++) {
		sum = 0;
		for (int k = 0; k < p.targets[i].nplace; k++)
			sum += p.targets[i].place[k].gpus;
		assert_int_equal(sum, p.targets[i].gpus);
		assert_ptr_not_equal(p.targets[i].place, held[i]);
	}
	assert_int_equal(p.targets[0].place[0].pinned, 1); /* its own GPU stays */
	assert_int_equal(h0[0].gpus, 1);
	assert_int_equal(h1[1].gpus, 2);
	ed_plan_free(&p);

	prm.cooldown_from_start = 1;
	assert_int_equal(
		ed_plan_compute(&s, held, nheld, last, NULL, &prm, now, &p, &err), 0);
	assert_int_equal(p.targets[0].gpus, 1);
	assert_non_null(strstr(p.targets[0].explain, "cool-down"));
	ed_plan_free(&p);

	s.nnodes = 0;
	assert_int_equal(
		ed_plan_compute(&s, held, nheld, last, NULL, &prm, now, &p, &err), -1);
	assert_non_null(strstr(err.text, "no nodes"));
}

/* The nodes as the policy reads them hold together with what the jobs hold.
 * node1 is read full (4 busy) while job 8 holds a pending grant of 1 there,
 * kept a tick more without room (reconcile.c): the plan decides, keeping
 * it, instead of refusing an over-commit. So it does for a pending grant on
 * node2, drained since (its snapshot offers only the grants running there:
 * none). A node that takes no new work is not read smaller than its
 * snapshot: a tick after slurmctld restarts, nodes not responding yet would
 * shrink every job. */
static void plan_holds_together(void **state)
{
	time_t now = 100000;
	struct ed_node nodes[2] = {{"node1", 4, 0, 0}, {"node2", 4, 0, 1}};
	struct ed_job jobs[2] = {
		{.id = 7,
		 .running = 1,
		 .min = 1,
		 .max = 1,
		 .weight = 1,
		 .priority = 100,
		 .submit = now - 2000,
		 .start = now - 1000},
		{.id = 8,
		 .running = 1,
		 .min = 1,
		 .max = 8,
		 .weight = 1,
		 .priority = 100,
		 .submit = now - 20,
		 .start = now - 10},
	};
	struct ed_snapshot s = {.nnodes = 2, .njobs = 2, .nodes = nodes, .jobs = jobs};
	struct elastic_policy_place h0[1] = {{0, 1, 1}}, h1[2] = {{0, 1, 1}, {0, 0, 0}};
	const struct elastic_policy_place *held[2] = {h0, h1};
	int nheld[2] = {1, 1};
	time_t last[2] = {now - 1000, now - 10};
	struct ed_plan_params prm = {.mode = ELASTIC_POLICY_PRIORITY, .min_change = 1};
	struct ed_plan p;
	elastic_error_t err;

	(void)state;
	/* node2 not responding (as for a tick after slurmctld restarts),
	 * counting 4 GPUs of grants being released there: not less room */
	assert_int_equal(
		ed_plan_compute(&s, held, nheld, last, NULL, &prm, now, &p, &err), 0);
	assert_int_equal(p.targets[1].gpus, 7);
	ed_plan_free(&p);

	/* node1 read full; job 8's pending grant of 1 there kept (node2 with
	 * nothing left) */
	nodes[0].busy = 4;
	nodes[1].gpus = 0;
	h1[0].gpus = 2;
	assert_int_equal(
		ed_plan_compute(&s, held, nheld, last, NULL, &prm, now, &p, &err), 0);
	assert_int_equal(p.targets[1].gpus, 2);
	ed_plan_free(&p);

	/* a pending grant of 1 on node2, drained since: held, no over-commit */
	nodes[0].busy = 0;
	h1[0].gpus = 1;
	h1[1] = (struct elastic_policy_place){1, 1, 0};
	nheld[1] = 2;
	assert_int_equal(
		ed_plan_compute(&s, held, nheld, last, NULL, &prm, now, &p, &err), 0);
	assert_int_equal(p.targets[1].cur, 2);
	ed_plan_free(&p);
}

/* What is saved is what is loaded; a missing file is nothing paused; a line
 * not ours is refused with the path and line, leaving nothing applied. */
static void save_and_load(void **state)
{
	struct ed_admin a, b;
	elastic_error_t err;
	char dir[] = "/tmp/test_admin.XXXXXX", path[64], d1[128], d2[128];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/elasticd.state", dir);
	assert_int_equal(ed_admin_load(&b, path, &err), 0);
	ed_admin_describe(&b, d2, sizeof(d2));
	assert_string_equal(d2, "");
	memset(&a, 0, sizeof(a));
	assert_int_equal(ed_admin_apply(&a, "drain", "node2", &err), 0);
	assert_int_equal(ed_admin_apply(&a, "pause", "node3", &err), 0);
	assert_int_equal(ed_admin_apply(&a, "pause", NULL, &err), 0);
	assert_int_equal(ed_admin_save(&a, path, &err), 0);
	assert_int_equal(ed_admin_load(&b, path, &err), 0);
	ed_admin_describe(&a, d1, sizeof(d1));
	ed_admin_describe(&b, d2, sizeof(d2));
	assert_string_equal(d1, d2);
	/* an edit by hand that is not ours */
	assert_non_null(f = fopen(path, "a"));
	fprintf(f, "node node4 dran\n");
	fclose(f);
	assert_int_equal(ed_admin_load(&b, path, &err), -1);
	assert_non_null(strstr(err.text, "line 5"));
	assert_non_null(strstr(err.text, "node node4 dran"));
	ed_admin_describe(&b, d2, sizeof(d2));
	assert_string_equal(d2, "");
	/* a directory that cannot take the file */
	char bad[96];
	snprintf(bad, sizeof(bad), "%s/none/elasticd.state", dir);
	assert_int_equal(ed_admin_save(&a, bad, &err), -1);
	assert_non_null(strstr(err.text, bad));
	unlink(path);
	rmdir(dir);
}

struct taken {
	int n;
	uint32_t job[4];
	struct elastic_scaling m[4];
};

static void take(void *arg, uint32_t job, const struct elastic_scaling *m)
{
	struct taken *t = arg;
	assert_true(t->n < 4);
	t->job[t->n] = job;
	t->m[t->n++] = *m;
}

/* The measured scaling written and read back; jobs without a measurement
 * are not written; a line not ours is refused, naming it, after the lines
 * before it were taken; a missing file is no model. */
static void scaling_save_and_load(void **state)
{
	struct elastic_scaling a = {0}, b = {0}, none = {0};
	const struct elastic_scaling *ms[] = {&a, &none, &b};
	const uint32_t ids[] = {7, 8, 9};
	struct taken t = {0};
	elastic_error_t err;
	char dir[] = "/tmp/test_scaling_file.XXXXXX", path[96];
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/elasticd.state.scaling", dir);
	assert_int_equal(ed_scaling_load(path, take, &t, &err), 0);
	assert_int_equal(t.n, 0);
	assert_int_equal(elastic_scaling_observe(&a, 2, 100, 50, 600), 0);
	assert_int_equal(elastic_scaling_observe(&a, 4, 180, 60, 600), 0);
	assert_int_equal(elastic_scaling_observe(&b, 1, 40, 70, 600), 0);
	assert_int_equal(ed_scaling_save(path, 3, ids, ms, &err), 0);
	assert_int_equal(ed_scaling_load(path, take, &t, &err), 0);
	assert_int_equal(t.n, 2);
	assert_int_equal(t.job[0], 7);
	assert_int_equal(t.job[1], 9);
	assert_int_equal(t.m[0].nobs, 2);
	assert_true(fabs(elastic_scaling_rate(&t.m[0], 8) - elastic_scaling_rate(&a, 8)) <
		    1e-6 * elastic_scaling_rate(&a, 8));
	assert_non_null(f = fopen(path, "a"));
	fprintf(f, "job 10 2:abc:1:5\njob 11 2:1:1:5\n");
	fclose(f);
	t.n = 0;
	assert_int_equal(ed_scaling_load(path, take, &t, &err), -1);
	assert_int_equal(t.n, 2);
	assert_non_null(strstr(err.text, "line 4"));
	assert_non_null(strstr(err.text, "job 10 2:abc:1:5"));
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(apply_and_describe),
		cmocka_unit_test(bounds),
		cmocka_unit_test(hold_plan),
		cmocka_unit_test(plan_compute),
		cmocka_unit_test(plan_holds_together),
		cmocka_unit_test(save_and_load),
		cmocka_unit_test(scaling_save_and_load),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
