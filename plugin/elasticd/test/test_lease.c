/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/test/test_lease.c: the controller role's lease (lease.h):
 * a standby takes over only a lease that stopped moving for the timeout;
 * of two claims the later wins; an active that finds another's lease stands
 * by; the file reads back what was written. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lease.h"

#define T  10000 /* timeout, ms */
#define ST 1000	 /* settle, ms */

static struct ed_lease_view held(const char *holder, uint64_t seq)
{
	struct ed_lease_view v = {.present = 1, .seq = seq};
	snprintf(v.holder, sizeof(v.holder), "%s", holder);
	return v;
}

/* No lease at all: claimed at once, active after the settle time, then
 * renewed with a growing sequence. */
static void first_start(void **state)
{
	struct ed_lease l;
	struct ed_lease_view none = {0}, v;
	struct ed_lease_step s;

	(void)state;
	ed_lease_init(&l, "a:6820", T, ST, 0);
	s = ed_lease_decide(&l, &none, 0);
	assert_true(s.write && s.claimed && !s.became_active);
	assert_int_equal(l.role, ED_LEASE_CLAIMING);
	v = held("a:6820", l.seq);
	s = ed_lease_decide(&l, &v, 500);
	assert_false(s.write || s.became_active);
	s = ed_lease_decide(&l, &v, 1000);
	assert_true(s.write && s.became_active);
	assert_int_equal(l.role, ED_LEASE_ACTIVE);
	for (uint64_t t = 2000; t < 5000; t += 1000) {
		uint64_t before = l.seq;
		v = held("a:6820", l.seq);
		s = ed_lease_decide(&l, &v, t);
		assert_true(s.write && !s.lost);
		assert_true(l.seq > before);
	}
	assert_string_equal(ed_lease_role_name(l.role), "active");
}

/* A standby never claims a lease that moves; one that stops moving is
 * claimed after the timeout, not before, by the standby's own clock. */
static void standby_waits_for_a_stale_lease(void **state)
{
	struct ed_lease l;
	struct ed_lease_view v;
	struct ed_lease_step s;
	uint64_t t;

	(void)state;
	ed_lease_init(&l, "b:6820", T, ST, 100000);
	for (t = 100000; t < 160000; t += 1000) {
		v = held("a:6820", t / 1000);
		s = ed_lease_decide(&l, &v, t);
		assert_false(s.write || s.claimed);
	}
	/* a:6820 stops renewing at seq 159 */
	v = held("a:6820", 159);
	for (; t < 159000 + T; t += 1000) {
		s = ed_lease_decide(&l, &v, t);
		assert_false(s.write);
	}
	s = ed_lease_decide(&l, &v, 159000 + T);
	assert_true(s.write && s.claimed);
	assert_int_equal(l.seq, 160);
	assert_int_equal(l.role, ED_LEASE_CLAIMING);
}

/* Two standbys claim together: the claim renamed last is what both read
 * back; its writer is active, the other stands by again. */
static void later_claim_wins(void **state)
{
	struct ed_lease a, b;
	struct ed_lease_view stale = held("old:6820", 7), v;
	struct ed_lease_step s;

	(void)state;
	ed_lease_init(&a, "a:6820", T, ST, 0);
	ed_lease_init(&b, "b:6820", T, ST, 0);
	ed_lease_decide(&a, &stale, 0);
	ed_lease_decide(&b, &stale, 0);
	assert_true(ed_lease_decide(&a, &stale, T).claimed);
	assert_true(ed_lease_decide(&b, &stale, T).claimed);
	v = held("b:6820", b.seq); /* b renamed its claim last */
	s = ed_lease_decide(&a, &v, T + ST);
	assert_false(s.write || s.became_active);
	assert_int_equal(a.role, ED_LEASE_STANDBY);
	s = ed_lease_decide(&b, &v, T + ST);
	assert_true(s.became_active && s.write);
	/* a does not claim again while b renews */
	for (uint64_t t = T + 2 * ST; t < 3 * T; t += 1000) {
		v = held("b:6820", b.seq);
		ed_lease_decide(&b, &v, t);
		assert_false(ed_lease_decide(&a, &v, t).write);
	}
}

/* An active that finds another's lease (it could not renew for longer than
 * the timeout, and was taken over) stands by at once and writes nothing. */
static void active_steps_down(void **state)
{
	struct ed_lease l;
	struct ed_lease_view v = {0};
	struct ed_lease_step s;

	(void)state;
	ed_lease_init(&l, "a:6820", T, ST, 0);
	ed_lease_decide(&l, &v, 0);
	v = held("a:6820", l.seq);
	ed_lease_decide(&l, &v, ST);
	assert_int_equal(l.role, ED_LEASE_ACTIVE);
	v = held("b:6820", 99);
	s = ed_lease_decide(&l, &v, 30000);
	assert_true(s.lost);
	assert_false(s.write);
	assert_int_equal(l.role, ED_LEASE_STANDBY);
	/* and waits out the timeout before it would claim back */
	assert_false(ed_lease_decide(&l, &v, 30000 + T - 1).write);
}

/* A lease held by this elasticd's own address is left from before its
 * restart: claimed at once. */
static void own_lease_is_taken_back(void **state)
{
	struct ed_lease l;
	struct ed_lease_view v = held("a:6820", 41);

	(void)state;
	ed_lease_init(&l, "a:6820", T, ST, 5);
	assert_true(ed_lease_decide(&l, &v, 5).claimed);
	assert_int_equal(l.seq, 42);
}

static void file_round_trip(void **state)
{
	char dir[] = "/tmp/test_lease.XXXXXX", path[64];
	struct ed_lease_view v;
	elastic_error_t err;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/elasticd.lease", dir);
	assert_int_equal(ed_lease_read(path, &v, &err), 0);
	assert_false(v.present);
	assert_int_equal(ed_lease_write(path, "ctl1:6820", 12345, &err), 0);
	assert_int_equal(ed_lease_read(path, &v, &err), 0);
	assert_true(v.present);
	assert_string_equal(v.holder, "ctl1:6820");
	assert_int_equal(v.seq, 12345);
	/* something else in the file reads as no lease */
	f = fopen(path, "w");
	fputs("garbage\n", f);
	fclose(f);
	assert_int_equal(ed_lease_read(path, &v, &err), 0);
	assert_false(v.present);
	/* released by its holder only */
	assert_int_equal(ed_lease_write(path, "ctl1:6820", 7, &err), 0);
	assert_int_equal(ed_lease_release(path, "ctl2:6820"), 0);
	assert_int_equal(ed_lease_read(path, &v, &err), 0);
	assert_true(v.present);
	assert_int_equal(ed_lease_release(path, "ctl1:6820"), 1);
	assert_int_equal(ed_lease_read(path, &v, &err), 0);
	assert_false(v.present);
	/* a directory that is not there cannot take a lease */
	snprintf(path, sizeof(path), "%s/no/elasticd.lease", dir);
	assert_int_equal(ed_lease_write(path, "ctl1:6820", 1, &err), -1);
	assert_non_null(strstr(err.text, "lease"));
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(first_start),
		cmocka_unit_test(standby_waits_for_a_stale_lease),
		cmocka_unit_test(later_claim_wins),
		cmocka_unit_test(active_steps_down),
		cmocka_unit_test(own_lease_is_taken_back),
		cmocka_unit_test(file_round_trip),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
