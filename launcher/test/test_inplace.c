/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_inplace.c: unit tests of the plans of elastic-run's
 * resizes in place: the growth onto new nodes, the planned shrink of
 * released GPUs, rank 0's record of the world, the heal's look-ups, the
 * state's moves. One table per plan, one loop each. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "decide.h"

/* The GPU sets of the growth cases (each 3.5 MB: kept out of the stack). */
static struct elastic_gpuset launched, grows, more_here, same, swapped, owner_moved;

static void _host(struct elastic_gpuset *s, const char *name, unsigned long job,
		  int ngpus)
{
	struct elastic_host *h = &s->host[s->nhosts++];
	snprintf(h->name, sizeof(h->name), "%s", name);
	h->job = job;
	h->ngpus = ngpus;
	for (int g = 0; g < ngpus; g++) {
		h->gpu[g] = g;
		h->gpu_job[g] = job;
	}
	s->total += ngpus;
	s->raw = s->total;
}

static int setup_sets(void **state)
{
	(void)state;
	_host(&launched, "n1", 10, 2);
	_host(&launched, "n2", 10, 2);
	_host(&grows, "n1", 10, 2); /* a new node */
	_host(&grows, "n2", 10, 2);
	_host(&grows, "n3", 11, 2);
	_host(&more_here, "n1", 10, 3); /* a GPU more on a node of the launch */
	_host(&more_here, "n2", 10, 2);
	_host(&same, "n1", 10, 2);
	_host(&same, "n2", 10, 2);
	_host(&swapped, "n1", 10, 2); /* n2 gone, n3 new */
	_host(&swapped, "n3", 11, 2);
	_host(&owner_moved, "n1", 10, 2); /* n2's GPUs now another job's */
	_host(&owner_moved, "n2", 12, 2);
	_host(&owner_moved, "n3", 11, 2);
	return 0;
}

static char *prog[] = {"python3", "train.py", NULL};
static char *prog_nl[] = {"python3", "-c", "print(1)\nprint(2)", NULL};

#define IDLE	ELASTIC_INPLACE_IDLE
#define JOINING ELASTIC_INPLACE_JOINING
#define LEAVING ELASTIC_INPLACE_LEAVING
#define HEALING ELASTIC_INPLACE_HEALING

/* ---- growth */

static const struct {
	const char *claim;
	struct elastic_grow_in in;
	enum elastic_grow_what what;
	int add;
	const char *why;
} grow_cases[] = {
	{"a new node joins in place",
	 {1, IDLE, 0, 4, &launched, &grows, prog},
	 ELASTIC_GROW_JOIN,
	 2,
	 NULL},
	{"a heal's wait does not block a growth",
	 {1, HEALING, 0, 4, &launched, &grows, prog},
	 ELASTIC_GROW_JOIN,
	 2,
	 NULL},
	{"a runtime that cannot grow in place: not considered",
	 {0, IDLE, 0, 4, &launched, &grows, prog},
	 ELASTIC_GROW_NONE,
	 0,
	 NULL},
	{"a growth under way: not another",
	 {1, JOINING, 0, 4, &launched, &grows, prog},
	 ELASTIC_GROW_NONE,
	 0,
	 NULL},
	{"ranks leaving: no growth",
	 {1, LEAVING, 0, 4, &launched, &grows, prog},
	 ELASTIC_GROW_NONE,
	 0,
	 NULL},
	{"GPUs of released grants in the set: no growth",
	 {1, IDLE, 1, 4, &launched, &grows, prog},
	 ELASTIC_GROW_NONE,
	 0,
	 NULL},
	{"a world smaller than the set (healed): no growth",
	 {1, IDLE, 0, 3, &launched, &grows, prog},
	 ELASTIC_GROW_NONE,
	 0,
	 NULL},
	{"a GPU more on a node of the launch: re-form",
	 {1, IDLE, 0, 4, &launched, &more_here, prog},
	 ELASTIC_GROW_REFORM,
	 0,
	 "the new GPUs are on a node the job runs on"},
	{"a node of the launch gone: re-form",
	 {1, IDLE, 0, 4, &launched, &swapped, prog},
	 ELASTIC_GROW_REFORM,
	 0,
	 "the new GPUs are on a node the job runs on"},
	{"a node's GPUs held by another job now: re-form",
	 {1, IDLE, 0, 4, &launched, &owner_moved, prog},
	 ELASTIC_GROW_REFORM,
	 0,
	 "the new GPUs are on a node the job runs on"},
	{"the same set: re-form",
	 {1, IDLE, 0, 4, &launched, &same, prog},
	 ELASTIC_GROW_REFORM,
	 0,
	 "the set does not only grow"},
	{"an argument with a newline cannot go in the join file: re-form",
	 {1, IDLE, 0, 4, &launched, &grows, prog_nl},
	 ELASTIC_GROW_REFORM,
	 0,
	 "an argument of the program has a newline"},
};

static void grow_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(grow_cases) / sizeof(grow_cases[0]); i++) {
		struct elastic_grow_plan p =
			elastic__inplace_plan_grow(&grow_cases[i].in);
		print_message("grow: %s\n", grow_cases[i].claim);
		assert_int_equal(p.what, grow_cases[i].what);
		assert_int_equal(p.add, grow_cases[i].add);
		if (grow_cases[i].why)
			assert_string_equal(p.why, grow_cases[i].why);
		else
			assert_null(p.why);
	}
}

/* ---- planned shrink (leave) */

static const struct elastic_request any = {.min_gpus = 1, .max_gpus = 8};
static const struct elastic_request pow2 = {
	.min_gpus = 1, .max_gpus = 8, .sizes = {.kind = ELASTIC_SIZES_POW2}};
static const struct elastic_request min4 = {.min_gpus = 4, .max_gpus = 8};

/* in_place, state, daemon_host, world, live, total, grants_add, released,
 * idle_released, target, req */
static const struct {
	const char *claim;
	struct elastic_leave_in in;
	enum elastic_leave_what what;
	int leaving;
} leave_cases[] = {
	{"2 of 6 released: their ranks leave in place",
	 {1, IDLE, -1, 6, 6, 6, 0, 2, 0, 0, &any},
	 ELASTIC_LEAVE_IN_PLACE,
	 2},
	{"during a heal's wait too",
	 {1, HEALING, -1, 6, 6, 6, 0, 2, 0, 4, &any},
	 ELASTIC_LEAVE_IN_PLACE,
	 2},
	{"an idle GPU among the released has no rank to leave",
	 {1, IDLE, -1, 6, 6, 6, 0, 3, 1, 0, &any},
	 ELASTIC_LEAVE_IN_PLACE,
	 2},
	{"released GPUs all idle: acknowledged at once",
	 {1, IDLE, -1, 6, 6, 6, 0, 2, 2, 0, &any},
	 ELASTIC_LEAVE_ACK,
	 0},
	{"a released grant hosts the daemon of ranks that stay: all re-form",
	 {1, IDLE, 1, 6, 6, 6, 0, 2, 0, 0, &any},
	 ELASTIC_LEAVE_REFORM_DAEMON,
	 0},
	{"that daemon check waits while ranks leave",
	 {1, LEAVING, 1, 6, 6, 6, 0, 2, 0, 0, &any},
	 ELASTIC_LEAVE_REFORM,
	 0},
	{"a runtime that does not survive a lost daemon: re-form",
	 {0, IDLE, 1, 6, 6, 6, 0, 2, 0, 0, &any},
	 ELASTIC_LEAVE_REFORM,
	 0},
	{"a shrink already under way: re-form",
	 {1, LEAVING, -1, 6, 6, 6, 0, 2, 0, 0, &any},
	 ELASTIC_LEAVE_REFORM,
	 0},
	{"a world that does not match the live GPUs: re-form",
	 {1, IDLE, -1, 5, 6, 6, 0, 2, 0, 0, &any},
	 ELASTIC_LEAVE_REFORM,
	 0},
	{"grants add GPUs at the same time: re-form onto both",
	 {1, IDLE, -1, 6, 6, 6, 1, 2, 0, 0, &any},
	 ELASTIC_LEAVE_REFORM,
	 0},
	{"no released GPU in the set: re-form",
	 {1, IDLE, -1, 6, 6, 6, 0, 0, 0, 0, &any},
	 ELASTIC_LEAVE_REFORM,
	 0},
	{"too many released GPUs to list: re-form",
	 {1, IDLE, -1, 6, 6, 6, 0, -1, 0, 0, &any},
	 ELASTIC_LEAVE_REFORM,
	 0},
	{"every GPU released: re-form",
	 {1, IDLE, -1, 6, 6, 6, 0, 6, 0, 0, &any},
	 ELASTIC_LEAVE_REFORM,
	 0},
	{"a target above what is left (re-shape): re-form onto the new grant",
	 {1, IDLE, -1, 6, 6, 6, 0, 3, 0, 4, &any},
	 ELASTIC_LEAVE_REFORM,
	 0},
	{"a target not below the set is an older grow's: in place",
	 {1, IDLE, -1, 6, 6, 6, 0, 3, 0, 6, &any},
	 ELASTIC_LEAVE_IN_PLACE,
	 3},
	{"what is left is no allowed size (pow2): re-form",
	 {1, IDLE, -1, 6, 6, 6, 0, 3, 0, 0, &pow2},
	 ELASTIC_LEAVE_REFORM,
	 0},
	{"what is left is an allowed size (pow2): in place",
	 {1, IDLE, -1, 6, 6, 6, 0, 2, 0, 0, &pow2},
	 ELASTIC_LEAVE_IN_PLACE,
	 2},
	{"what is left is below the minimum: re-form",
	 {1, IDLE, -1, 6, 6, 6, 0, 3, 0, 0, &min4},
	 ELASTIC_LEAVE_REFORM,
	 0},
};

static void leave_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(leave_cases) / sizeof(leave_cases[0]); i++) {
		struct elastic_leave_plan p =
			elastic__inplace_plan_leave(&leave_cases[i].in);
		print_message("leave: %s\n", leave_cases[i].claim);
		assert_int_equal(p.what, leave_cases[i].what);
		assert_int_equal(p.leaving, leave_cases[i].leaving);
	}
}

/* ---- rank 0's record of the world size */

/* in_place, state, size, world, leave_end, join_end, heal_open */
static const struct {
	const char *claim;
	struct elastic_record_in in;
	enum elastic_record_what what;
} record_cases[] = {
	{"no size in the record: nothing", {1, IDLE, 0, 4, 0, 0, 0}, ELASTIC_RECORD_NONE},
	{"the same world: nothing", {1, IDLE, 4, 4, 0, 0, 0}, ELASTIC_RECORD_NONE},
	{"a smaller world: healed", {1, IDLE, 3, 4, 0, 0, 0}, ELASTIC_RECORD_HEALED},
	{"a smaller world without heals in place: nothing",
	 {0, IDLE, 3, 4, 0, 0, 0},
	 ELASTIC_RECORD_NONE},
	{"a heal's set waiting: look again",
	 {1, HEALING, 3, 3, 0, 0, 1},
	 ELASTIC_RECORD_HEAL_LOOK},
	{"the leaving ranks left", {1, LEAVING, 4, 6, 4, 0, 0}, ELASTIC_RECORD_LEFT},
	{"leaving, a world of another size: healed",
	 {1, LEAVING, 3, 6, 4, 0, 0},
	 ELASTIC_RECORD_HEALED},
	{"the joining ranks joined (no heals in place)",
	 {0, JOINING, 6, 4, 0, 6, 0},
	 ELASTIC_RECORD_JOINED},
	{"joining, not yet grown: nothing",
	 {0, JOINING, 4, 4, 0, 6, 0},
	 ELASTIC_RECORD_NONE},
};

static void record_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(record_cases) / sizeof(record_cases[0]); i++) {
		print_message("record: %s\n", record_cases[i].claim);
		assert_int_equal(elastic__inplace_on_record(&record_cases[i].in),
				 record_cases[i].what);
	}
}

/* ---- the heal's look-ups at Slurm */

/* world, total, released, now, t_heal, t_heal_look */
static const struct {
	const char *claim;
	struct elastic_heal_in in;
	enum elastic_heal_what what;
} heal_cases[] = {
	{"just healed: look", {3, 4, 0, 100.0, 100.0, 0}, ELASTIC_HEAL_LOOK},
	{"looked 0.2 s ago: wait", {3, 4, 0, 101.0, 100.0, 100.8}, ELASTIC_HEAL_WAIT},
	{"looked 0.5 s ago: look", {3, 4, 0, 101.0, 100.0, 100.5}, ELASTIC_HEAL_LOOK},
	{"a release under way: wait", {3, 4, 1, 101.0, 100.0, 0}, ELASTIC_HEAL_WAIT},
	{"the set agrees with the world: end",
	 {4, 4, 0, 101.0, 100.0, 0},
	 ELASTIC_HEAL_END},
	{"10 s after the heal: still looks",
	 {3, 4, 0, 110.0, 100.0, 109.0},
	 ELASTIC_HEAL_LOOK},
	{"more than 10 s after the heal: end",
	 {3, 4, 0, 110.5, 100.0, 110.0},
	 ELASTIC_HEAL_END},
};

static void heal_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(heal_cases) / sizeof(heal_cases[0]); i++) {
		print_message("heal: %s\n", heal_cases[i].claim);
		assert_int_equal(elastic__inplace_heal_look(&heal_cases[i].in),
				 heal_cases[i].what);
	}
}

/* ---- the state's moves */

/* state, event, heal_open -> state */
static const struct {
	const char *claim;
	enum elastic_inplace_state from;
	enum elastic_inplace_event event;
	int heal_open;
	enum elastic_inplace_state to;
} move_cases[] = {
	{"a launch starts idle, whatever came before", LEAVING, ELASTIC_INPLACE_LAUNCHED,
	 1, IDLE},
	{"a growth planned: joining", IDLE, ELASTIC_INPLACE_JOIN_PLANNED, 0, JOINING},
	{"a growth planned while a heal's set waits: joining", HEALING,
	 ELASTIC_INPLACE_JOIN_PLANNED, 1, JOINING},
	{"a shrink planned: leaving", IDLE, ELASTIC_INPLACE_LEAVE_PLANNED, 0, LEAVING},
	{"the joiners joined: idle", JOINING, ELASTIC_INPLACE_JOINED, 0, IDLE},
	{"the joiners joined while a heal's set waits: healing", JOINING,
	 ELASTIC_INPLACE_JOINED, 1, HEALING},
	{"the leavers left and a step committed: idle", LEAVING, ELASTIC_INPLACE_RELEASED,
	 0, IDLE},
	{"...while a heal's set waits: healing", LEAVING, ELASTIC_INPLACE_RELEASED, 1,
	 HEALING},
	{"a heal from idle: healing", IDLE, ELASTIC_INPLACE_HEALED, 1, HEALING},
	{"a heal while ranks leave: still leaving (its clock runs beside)", LEAVING,
	 ELASTIC_INPLACE_HEALED, 1, LEAVING},
	{"a heal while ranks join: still joining", JOINING, ELASTIC_INPLACE_HEALED, 1,
	 JOINING},
	{"the heal's set settled: idle", HEALING, ELASTIC_INPLACE_HEAL_OVER, 0, IDLE},
	{"the heal's set settled while ranks leave: still leaving", LEAVING,
	 ELASTIC_INPLACE_HEAL_OVER, 0, LEAVING},
};

static void move_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(move_cases) / sizeof(move_cases[0]); i++) {
		enum elastic_inplace_state to = elastic__inplace_next(
			move_cases[i].from, move_cases[i].event, move_cases[i].heal_open);
		if (to != move_cases[i].to)
			fail_msg("move: %s: got state %d, not %d", move_cases[i].claim,
				 to, move_cases[i].to);
	}
}

/* One test a table, the tables' sets built once. */
static const struct CMUnitTest tables[] = {
	cmocka_unit_test(grow_table),	cmocka_unit_test(leave_table),
	cmocka_unit_test(record_table), cmocka_unit_test(heal_table),
	cmocka_unit_test(move_table),
};

int main(void)
{
	return cmocka_run_group_tests(tables, setup_sets, NULL);
}
