/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/test/test_ctld_gate.c: the gate in front of libslurm
 * (ctld_gate.h), as one table of events, each with the decision that must
 * follow it: calls go through while slurmctld answers, a ping comes first
 * after a pause or a failed call, and nothing waits while it is down. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cmocka.h>

#include "ctld_gate.h"

enum ev { DECIDE, PINGED, BACK_OK, BACK_NO, WAIT_OVER, CALL_OK, CALL_FAIL };

struct row {
	uint64_t at_ms;
	enum ev ev;
	enum ed_gate_do want; /* for DECIDE */
	int down;	      /* g.down after the event */
};

#define C ED_GATE_CALL
#define P ED_GATE_PING
#define R ED_GATE_REFUSE

static const struct row rows[] = {
	/* start: nothing known, ping first */
	{1000, DECIDE, P, 0},
	{1000, PINGED, 0, 0},
	{1000, DECIDE, R, 0}, /* the ping is out: nothing else goes */
	{1001, BACK_OK, 0, 0},
	{1001, DECIDE, C, 0},
	{1002, CALL_OK, 0, 0},
	/* calls within ED_GATE_FRESH_MS of an answer go straight through */
	{1002 + ED_GATE_FRESH_MS - 1, DECIDE, C, 0},
	{1002 + ED_GATE_FRESH_MS, DECIDE, P, 0},
	{1030, PINGED, 0, 0},
	{1031, BACK_OK, 0, 0},
	{1031, DECIDE, C, 0},
	/* a failed call: the next one pings first, however soon */
	{1032, CALL_FAIL, 0, 0},
	{1033, DECIDE, P, 0},
	{1033, PINGED, 0, 0},
	{1034, BACK_NO, 0, 1}, /* refused: slurmctld is down */
	{1035, DECIDE, R, 1},
	{1033 + ED_GATE_RETRY_MS - 1, DECIDE, R, 1},
	{1033 + ED_GATE_RETRY_MS, DECIDE, P, 1},
	{2033, PINGED, 0, 1},
	{2034, BACK_NO, 0, 1},
	{2500, DECIDE, R, 1},
	/* slurmctld back */
	{3034, DECIDE, P, 1},
	{3034, PINGED, 0, 1},
	{3035, BACK_OK, 0, 0},
	{3035, DECIDE, C, 0},
	{3036, CALL_OK, 0, 0},
	/* a slurmctld that accepts and does not answer: the wait ends, the
	 * ping stays out, every call is refused until it comes back */
	{5000, DECIDE, P, 0},
	{5000, PINGED, 0, 0},
	{5000 + ED_GATE_WAIT_MS, WAIT_OVER, 0, 1},
	{5400, DECIDE, R, 1},
	{9000, DECIDE, R, 1},
	{15000, BACK_NO, 0, 1}, /* after MessageTimeout */
	{15001, DECIDE, P, 1},	/* pinged long ago: at once */
	{15001, PINGED, 0, 1},
	{15002, BACK_OK, 0, 0},
	{15002, DECIDE, C, 0},
};

static void table(void **state)
{
	struct ed_gate g = {0};
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		switch (r->ev) {
		case DECIDE:
			if (ed_gate_decide(&g, r->at_ms) != r->want)
				fail_msg("row %zu (t=%llu): decided %d, not %d", i,
					 (unsigned long long)r->at_ms,
					 (int)ed_gate_decide(&g, r->at_ms), (int)r->want);
			break;
		case PINGED:
			ed_gate_pinged(&g, r->at_ms);
			break;
		case BACK_OK:
			ed_gate_ping_back(&g, 1, r->at_ms);
			break;
		case BACK_NO:
			ed_gate_ping_back(&g, 0, r->at_ms);
			break;
		case WAIT_OVER:
			ed_gate_wait_over(&g, r->at_ms);
			break;
		case CALL_OK:
			ed_gate_call_back(&g, 1, r->at_ms);
			break;
		case CALL_FAIL:
			ed_gate_call_back(&g, 0, r->at_ms);
			break;
		}
		if (g.down != r->down)
			fail_msg("row %zu (t=%llu): down is %d, not %d", i,
				 (unsigned long long)r->at_ms, g.down, r->down);
	}
}

/* While down, down_since_ms is when it first stopped answering. */
static void down_since(void **state)
{
	struct ed_gate g = {0};
	(void)state;
	ed_gate_pinged(&g, 100);
	ed_gate_ping_back(&g, 0, 110);
	ed_gate_pinged(&g, 1200);
	ed_gate_ping_back(&g, 0, 1210);
	assert_int_equal(g.down_since_ms, 110);
	ed_gate_pinged(&g, 2300);
	ed_gate_ping_back(&g, 1, 2310);
	ed_gate_pinged(&g, 9000);
	ed_gate_wait_over(&g, 9300);
	assert_int_equal(g.down_since_ms, 9300);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table),
		cmocka_unit_test(down_since),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
