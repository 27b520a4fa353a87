/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_lost.c: unit tests of the nodes held out as lost: which
 * nodes an mpirun end marks, what the launch set loses, when Slurm's list
 * makes a node forgotten or taken again, and the longer hold of a node
 * lost twice. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "decide.h"

/* (each set is 3.5 MB: kept out of the stack) */
static struct elastic_gpuset launched, listed, ended, new_grant, set;
static struct elastic_lost book;

/* GPUs 0..n-1 of job on host name (the host's daemon runs in job). */
static void _host(struct elastic_gpuset *s, const char *name, unsigned long job, int n)
{
	struct elastic_host *h = &s->host[s->nhosts++];
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->job = job;
	h->ngpus = n;
	for (int g = 0; g < n; g++) {
		h->gpu[g] = g;
		h->gpu_job[g] = job;
	}
	s->total += n;
	s->raw = s->total;
}

/* The reports of a launch: how many ranks said how they ended, per host. */
struct reports {
	const char *host[4];
	int n[4];
};

static int _reports(const char *host, const void *arg)
{
	const struct reports *r = arg;
	for (int i = 0; i < 4 && r->host[i]; i++)
		if (!strcmp(r->host[i], host))
			return r->n[i];
	return 0;
}

static int setup(void **state)
{
	(void)state;
	memset(&book, 0, sizeof(book));
	memset(&launched, 0, sizeof(launched));
	memset(&listed, 0, sizeof(listed));
	memset(&ended, 0, sizeof(ended));
	memset(&new_grant, 0, sizeof(new_grant));
	/* the job (7) on n2 where elastic-run runs, its grant 10 on n1 */
	_host(&launched, "n2", 7, 4);
	_host(&launched, "n1", 10, 1);
	_host(&listed, "n2", 7, 4);
	_host(&listed, "n1", 10, 1);
	_host(&ended, "n2", 7, 4);
	_host(&new_grant, "n2", 7, 4);
	_host(&new_grant, "n1", 11, 1);
	return 0;
}

/* Which nodes an mpirun end marks. */
static void mark_cases(void **state)
{
	(void)state;
	static const struct {
		const char *what;
		struct reports rep;
		const char *self;
		int marked;
	} t[] = {
		{"every rank reported", {{"n2", "n1"}, {4, 1}}, "n2", 0},
		{"n1's rank silent", {{"n2"}, {4}}, "n2", 1},
		{"a rank of self silent: not self", {{"n2", "n1"}, {3, 1}}, "n2", 0},
		{"no self known: n2 silent too", {{"n2"}, {3}}, NULL, 2},
		{"nothing reported, self known", {{NULL}, {0}}, "n2", 1},
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(&book, 0, sizeof(book));
		int n = elastic__lost_mark(&book, &launched, t[i].self, _reports,
					   &t[i].rep, 100.0);
		if (n != t[i].marked)
			fail_msg("%s: %d nodes marked, expected %d", t[i].what, n,
				 t[i].marked);
		assert_int_equal(book.n, t[i].marked);
	}
}

/* A marked node leaves the launch set whole while its job is listed; a new
 * grant on the same node after is not held out. */
static void hold_out(void **state)
{
	(void)state;
	struct reports rep = {{"n2"}, {4}};
	assert_int_equal(
		elastic__lost_mark(&book, &launched, "n2", _reports, &rep, 100.0), 1);
	assert_string_equal(book.node[0].host, "n1");
	assert_true(book.node[0].until == 100.0 + ELASTIC_LOST_HOLD_S);
	memcpy(&set, &listed, sizeof(set));
	assert_int_equal(elastic__lost_hold_out(&book, &set), 1);
	assert_int_equal(set.nhosts, 1);
	assert_int_equal(set.total, 4);
	assert_string_equal(set.host[0].name, "n2");
	memcpy(&set, &new_grant, sizeof(set));
	assert_int_equal(elastic__lost_hold_out(&book, &set), 0);
	assert_int_equal(set.total, 5);
}

/* Slurm's list decides: still listed within the hold: kept; gone: forgotten;
 * still listed at the hold's end: taken again. */
static void look_cases(void **state)
{
	(void)state;
	struct reports rep = {{"n2"}, {4}};
	struct elastic_lost_look k;

	elastic__lost_mark(&book, &launched, "n2", _reports, &rep, 100.0);
	k = elastic__lost_look(&book, &listed, 101.0);
	assert_int_equal(k.gone + k.released, 0);
	assert_int_equal(book.n, 1);
	k = elastic__lost_look(&book, &new_grant, 102.0); /* grant 10 gone, 11 new */
	assert_int_equal(k.gone, 1);
	assert_int_equal(k.released, 0);
	assert_string_equal(k.host, "n1");
	assert_true(k.held_for == 2.0);
	assert_int_equal(book.n, 0);

	memset(&book, 0, sizeof(book));
	elastic__lost_mark(&book, &launched, "n2", _reports, &rep, 100.0);
	k = elastic__lost_look(&book, &listed, 100.0 + ELASTIC_LOST_HOLD_S);
	assert_int_equal(k.released, 1);
	assert_int_equal(k.gone, 0);
	assert_int_equal(book.n, 0);
	/* the same node lost again: held twice as long, up to the maximum */
	elastic__lost_mark(&book, &launched, "n2", _reports, &rep, 200.0);
	assert_true(book.node[0].until == 200.0 + 2 * ELASTIC_LOST_HOLD_S);
	for (int i = 0; i < 10; i++) {
		elastic__lost_look(&book, &listed, 1e6 + i * 1e3);
		elastic__lost_mark(&book, &launched, "n2", _reports, &rep, 1e6 + i * 1e3);
	}
	assert_true(book.node[0].until - book.node[0].since == ELASTIC_LOST_HOLD_MAX);
	/* and a node with nothing listed at all is forgotten */
	k = elastic__lost_look(&book, &ended, 2e6);
	assert_int_equal(k.gone, 1);
}

/* The grant that hosted a node's daemon ended, the node's other grant is
 * listed still: its ranks went with that grant, not with the node, so the
 * node is not held out, and the next look forgets it at once. */
static void daemon_grant_ended(void **state)
{
	(void)state;
	static struct elastic_gpuset two, after;
	struct reports rep = {{"n2"}, {4}};
	struct elastic_lost_look k;

	memset(&two, 0, sizeof(two));
	memset(&after, 0, sizeof(after));
	/* n1: grant 10 (1 GPU, its step hosts the daemon) and grant 12 (2) */
	_host(&two, "n2", 7, 4);
	_host(&two, "n1", 10, 1);
	struct elastic_host *h = &two.host[1];
	h->gpu[1] = 1, h->gpu_job[1] = 12;
	h->gpu[2] = 2, h->gpu_job[2] = 12;
	h->ngpus = 3;
	two.total = two.raw = 7;
	assert_int_equal(elastic__lost_mark(&book, &two, "n2", _reports, &rep, 100.0), 1);
	assert_int_equal(book.node[0].daemon, 10);
	/* while both grants are listed the node is held out (its daemon's
	 * grant lives: the node or its daemon was lost) */
	memcpy(&set, &two, sizeof(set));
	assert_int_equal(elastic__lost_hold_out(&book, &set), 3);
	/* grant 10 ended: grant 12's GPUs are taken at once */
	_host(&after, "n2", 7, 4);
	_host(&after, "n1", 12, 2);
	after.host[1].gpu[0] = 1, after.host[1].gpu[1] = 2;
	memcpy(&set, &after, sizeof(set));
	assert_int_equal(elastic__lost_hold_out(&book, &set), 0);
	assert_int_equal(set.total, 6);
	k = elastic__lost_look(&book, &after, 101.0);
	assert_int_equal(k.released, 1);
	assert_int_equal(k.daemon_gone, 1);
	assert_int_equal(book.n, 0);
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test_setup(mark_cases, setup),
	cmocka_unit_test_setup(hold_out, setup),
	cmocka_unit_test_setup(look_cases, setup),
	cmocka_unit_test_setup(daemon_grant_ended, setup),
};

int main(void)
{
	return cmocka_run_group_tests(tests, NULL, NULL);
}
