/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_watchclock.c: unit tests of a running launch's clocks:
 * the launch bound (a growth in place's too), the end of a launch whose
 * ranks all ended while mpirun runs on, SIGKILL after a SIGTERM that did
 * not end it. One table: a clock, what the watch saw, what it must answer
 * and the clock after. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "decide.h"

#define UNTRAINED ELASTIC_CLOCK_UNTRAINED
#define LINGERING ELASTIC_CLOCK_LINGERING
#define KILL	  ELASTIC_CLOCK_KILL
#define GO_ON	  ELASTIC_CLOCK_GO_ON

/* Each row: the claim; the clock before {t_first, slowest_first, t_bound,
 * bound_killed, t_all_ended}; what the watch saw {now, t0, committed,
 * all_ended, launch_timeout, t_join}; the answer; the clock after; the
 * bound. */
static const struct {
	const char *claim;
	struct elastic_watch_clock before;
	struct elastic_watch_seen seen;
	enum elastic_watch_clock_act act;
	struct elastic_watch_clock after;
	double bound;
} cases[] = {
	{"before any commit, within the configured bound: on",
	 {0, 0, 0, 0, 0},
	 {100, 0, 0, 0, 300},
	 GO_ON,
	 {0, 0, 0, 0, 0},
	 300},
	{"the first commit is noted, and its time is the run's slowest",
	 {0, 0, 0, 0, 0},
	 {140, 100, 1, 0, 300},
	 GO_ON,
	 {140, 40, 0, 0, 0},
	 300},
	{"a faster first commit leaves the run's slowest",
	 {0, 40, 0, 0, 0},
	 {110, 100, 1, 0, 300},
	 GO_ON,
	 {110, 40, 0, 0, 0},
	 120},
	{"no commit at the configured bound: the launch trains nothing",
	 {0, 0, 0, 0, 0},
	 {400, 100, 0, 0, 300},
	 UNTRAINED,
	 {0, 0, 0, 0, 0},
	 300},
	{"a commit in the very turn of the bound wins",
	 {0, 0, 0, 0, 0},
	 {400, 100, 1, 0, 300},
	 GO_ON,
	 {400, 300, 0, 0, 0},
	 300},
	{"--launch-timeout 0: no bound, ever",
	 {0, 0, 0, 0, 0},
	 {1e6, 0, 0, 0, 0},
	 GO_ON,
	 {0, 0, 0, 0, 0},
	 0},
	{"after a first commit in 0.3 s, a relaunch has 30 s (the floor)",
	 {0, 0.3, 0, 0, 0},
	 {130, 100, 0, 0, 300},
	 UNTRAINED,
	 {0, 0.3, 0, 0, 0},
	 30},
	{"...and not less",
	 {0, 0.3, 0, 0, 0},
	 {129.9, 100, 0, 0, 300},
	 GO_ON,
	 {0, 0.3, 0, 0, 0},
	 30},
	{"after a first commit in 40 s, a relaunch has 120 s",
	 {0, 40, 0, 0, 0},
	 {220, 100, 0, 0, 300},
	 UNTRAINED,
	 {0, 40, 0, 0, 0},
	 120},
	{"a launch that committed is never ended for its bound",
	 {105, 5, 0, 0, 0},
	 {1e5, 100, 0, 0, 300},
	 GO_ON,
	 {105, 5, 0, 0, 0},
	 30},
	{"every rank ended: the clock of mpirun running on starts",
	 {105, 5, 0, 0, 0},
	 {150, 100, 0, 1, 300},
	 GO_ON,
	 {105, 5, 0, 0, 150},
	 30},
	{"every rank ended 10 s ago and mpirun runs on: ended",
	 {105, 5, 0, 0, 150},
	 {160, 100, 0, 1, 300},
	 LINGERING,
	 {105, 5, 0, 0, 150},
	 30},
	{"...not before",
	 {105, 5, 0, 0, 150},
	 {159.9, 100, 0, 1, 300},
	 GO_ON,
	 {105, 5, 0, 0, 150},
	 30},
	{"a rank not ended (a report lost, then one that came) starts the clock again",
	 {105, 5, 0, 0, 150},
	 {158, 100, 0, 0, 300},
	 GO_ON,
	 {105, 5, 0, 0, 0},
	 30},
	{"ranks ended and none committed: the launch bound comes first",
	 {0, 0, 0, 0, 100},
	 {400, 100, 0, 1, 300},
	 UNTRAINED,
	 {0, 0, 0, 0, 100},
	 300},
	{"ended at a bound: mpirun has 5 s after SIGTERM",
	 {0, 0, 400, 0, 0},
	 {405, 100, 0, 0, 300},
	 GO_ON,
	 {0, 0, 400, 0, 0},
	 300},
	{"...then SIGKILL",
	 {0, 0, 400, 0, 0},
	 {405.1, 100, 0, 0, 300},
	 KILL,
	 {0, 0, 400, 1, 0},
	 300},
	{"...once",
	 {0, 0, 400, 1, 0},
	 {500, 100, 0, 0, 300},
	 GO_ON,
	 {0, 0, 400, 1, 0},
	 300},
	{"a growth in place not joined within the bound: the launch ends",
	 {105, 5, 0, 0, 0},
	 {230, 100, 0, 0, 300, 200},
	 ELASTIC_CLOCK_JOIN_STALLED,
	 {105, 5, 0, 0, 0},
	 30},
	{"...not before",
	 {105, 5, 0, 0, 0},
	 {229.9, 100, 0, 0, 300, 200},
	 GO_ON,
	 {105, 5, 0, 0, 0},
	 30},
	{"--launch-timeout 0: a growth in place is not bounded either",
	 {105, 5, 0, 0, 0},
	 {1e6, 100, 0, 0, 0, 200},
	 GO_ON,
	 {105, 5, 0, 0, 0},
	 0},
	{"a growth in place in the first launch before any commit: the launch bound first",
	 {0, 0, 0, 0, 0},
	 {400, 100, 0, 0, 300, 350},
	 UNTRAINED,
	 {0, 0, 0, 0, 0},
	 300},
	{"ended at a bound: no other end, no first commit noted",
	 {0, 0, 400, 1, 0},
	 {1e5, 100, 1, 1, 300},
	 GO_ON,
	 {0, 0, 400, 1, 0},
	 300},
};

static void table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct elastic_watch_clock c = cases[i].before;
		double bound = -1;
		enum elastic_watch_clock_act a =
			elastic__watch_clock(&c, &cases[i].seen, &bound);
		const struct elastic_watch_clock *w = &cases[i].after;
		if (a != cases[i].act)
			fail_msg("%s: answered %d, not %d", cases[i].claim, a,
				 cases[i].act);
		if (c.t_first != w->t_first || c.slowest_first != w->slowest_first ||
		    c.t_bound != w->t_bound || c.bound_killed != w->bound_killed ||
		    c.t_all_ended != w->t_all_ended)
			fail_msg("%s: clock after {%g, %g, %g, %d, %g}", cases[i].claim,
				 c.t_first, c.slowest_first, c.t_bound, c.bound_killed,
				 c.t_all_ended);
		if (bound != cases[i].bound)
			fail_msg("%s: bound %g, not %g", cases[i].claim, bound,
				 cases[i].bound);
	}
}

/* The bounded waits: each row a clock before, now, the limit, the answer
 * and the clock after. */
static const struct {
	const char *claim;
	double since, now, limit;
	enum elastic_wait act;
	double after;
} waits[] = {
	{"not begun: it begins now", 0, 100, 0.5, ELASTIC_WAIT_BEGUN, 100},
	{"within the limit: on", 100, 100.4, 0.5, ELASTIC_WAIT_ON, 100},
	{"at the limit: over", 100, 100.5, 0.5, ELASTIC_WAIT_OVER, 100},
	{"long past: over, the clock kept (its owner resets it)", 100, 1e4, 0.5,
	 ELASTIC_WAIT_OVER, 100},
	{"a clock ahead of now: on until then and the limit after", 110, 105, 2,
	 ELASTIC_WAIT_ON, 110},
	{"...over once both passed", 110, 112, 2, ELASTIC_WAIT_OVER, 110},
	{"no limit: over as it begins", 0, 100, 0, ELASTIC_WAIT_OVER, 100},
};

static void wait_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++) {
		double since = waits[i].since;
		enum elastic_wait a = elastic__wait(&since, waits[i].now, waits[i].limit);
		if (a != waits[i].act)
			fail_msg("%s: answered %d, not %d", waits[i].claim, a,
				 waits[i].act);
		if (since != waits[i].after)
			fail_msg("%s: clock %g after, not %g", waits[i].claim, since,
				 waits[i].after);
	}
}

/* A launch from its start to SIGKILL, and the next one: its clocks start
 * at 0, the run's slowest first commit kept, and its bound is 3x that. */
static void two_launches(void **state)
{
	struct elastic_watch_clock c = {0};
	struct elastic_watch_seen s = {.t0 = 0, .launch_timeout = 300};
	double bound;

	(void)state;
	elastic__watch_clock_start(&c);
	assert_true(elastic__watch_clock_awaits_commit(&c));
	s.now = 50, s.committed = 1;
	assert_int_equal(elastic__watch_clock(&c, &s, &bound), GO_ON);
	assert_true(c.t_first == 50 && c.slowest_first == 50);
	assert_false(elastic__watch_clock_awaits_commit(&c));
	s.now = 60, s.all_ended = 1;
	assert_int_equal(elastic__watch_clock(&c, &s, &bound), GO_ON);
	s.now = 70;
	assert_int_equal(elastic__watch_clock(&c, &s, &bound), LINGERING);
	elastic__watch_clock_ended(&c, 70.5);
	s.now = 75.5;
	assert_int_equal(elastic__watch_clock(&c, &s, &bound), GO_ON);
	s.now = 75.6;
	assert_int_equal(elastic__watch_clock(&c, &s, &bound), KILL);

	elastic__watch_clock_start(&c);
	assert_true(c.t_first == 0 && c.t_bound == 0 && !c.bound_killed &&
		    c.t_all_ended == 0 && c.slowest_first == 50);
	s = (struct elastic_watch_seen){.now = 249, .t0 = 100, .launch_timeout = 300};
	assert_int_equal(elastic__watch_clock(&c, &s, &bound), GO_ON);
	assert_true(bound == 3 * 50);
	s.now = 250;
	assert_int_equal(elastic__watch_clock(&c, &s, &bound), UNTRAINED);
	assert_true(elastic__watch_clock_awaits_commit(&c));
	elastic__watch_clock_ended(&c, 250);
	assert_false(elastic__watch_clock_awaits_commit(
		&c)); /* no record read after the end */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table),
		cmocka_unit_test(wait_table),
		cmocka_unit_test(two_launches),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
