/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_stopask.c: unit tests of the ranks' stop at a step
 * boundary: when SIGUSR1 goes (a table), and a launch's stops in order. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "decide.h"

#define WAIT	  ELASTIC_STOP_WAIT
#define SEND	  ELASTIC_STOP_SEND
#define SEND_WARM ELASTIC_STOP_SEND_WARM

/* Each row: the claim; the stop {due, sent, now}; the ranks can take a
 * signal; the stop asks a growth in place; the answer. */
static const struct {
	const char *claim;
	struct elastic_stop s;
	int ready, joining;
	enum elastic_stop_act act;
} cases[] = {
	{"nothing due: nothing sent", {0, 0, 0}, 1, 0, WAIT},
	{"a re-form due, ranks ready: sent once the zygotes serve",
	 {1, 0, 0},
	 1,
	 0,
	 SEND_WARM},
	{"a growth in place due, ranks ready: sent now (no relaunch)",
	 {1, 0, 0},
	 1,
	 1,
	 SEND},
	{"due, the ranks not ready for a signal: wait", {1, 0, 0}, 0, 0, WAIT},
	{"a growth in place, the ranks not ready: wait", {1, 0, 0}, 0, 1, WAIT},
	{"due and sent: never twice", {1, 1, 0}, 1, 0, WAIT},
	{"a rank failed on its own error: sent at once, ready or not",
	 {1, 0, 1},
	 0,
	 0,
	 SEND},
	{"...and not twice", {1, 1, 1}, 1, 0, WAIT},
};

static void when_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum elastic_stop_act a =
			elastic__stop_when(&cases[i].s, cases[i].ready, cases[i].joining);
		if (a != cases[i].act)
			fail_msg("%s: answered %d, not %d", cases[i].claim, a,
				 cases[i].act);
	}
}

/* A launch: an order makes a stop due, no other change is planned until it
 * is over; a growth in place took effect: open again; a planned change
 * that needs no stop leaves it open; a rank's own failure stops now; the
 * next launch starts with none. */
static void a_launch(void **state)
{
	struct elastic_stop s = {1, 1, 1};

	(void)state;
	elastic__stop_start(&s);
	assert_true(elastic__stop_open(&s) && !elastic__stop_pending(&s));
	elastic__stop_set_due(&s, 0); /* a release acknowledged at once */
	assert_true(elastic__stop_open(&s));
	elastic__stop_set_due(&s, 1);
	assert_false(elastic__stop_open(&s));
	assert_true(elastic__stop_pending(&s));
	assert_int_equal(elastic__stop_when(&s, 1, 1), SEND);
	elastic__stop_sent(&s);
	assert_false(elastic__stop_open(&s));
	assert_false(elastic__stop_pending(&s));
	elastic__stop_done(&s); /* the joiners joined */
	assert_true(elastic__stop_open(&s));
	elastic__stop_failed(&s);
	assert_false(elastic__stop_open(&s));
	assert_int_equal(elastic__stop_when(&s, 0, 0), SEND);
	elastic__stop_start(&s);
	assert_true(elastic__stop_open(&s) && !s.now);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(when_table),
		cmocka_unit_test(a_launch),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
