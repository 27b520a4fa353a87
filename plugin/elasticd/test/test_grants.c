/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/test/test_grants.c: unit tests of elasticd's grant arithmetic (GRES
 * counts, release choice). */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "grants.h"

static void gres_counts(void **state)
{
	static const struct {
		const char *gres;
		int gpus;
	} cases[] = {
		{"gpu:4", 4},
		{"gpu:4(S:0)", 4},
		{"gpu:2(IDX:0-1)", 2},
		{"gpu:a100:2(IDX:0,3)", 2},
		{"gres/gpu:3", 3},
		{"gres:gpu:1", 1},
		{"gpu", 1},
		{"gpu:tesla:1,gpu:k80:2", 3},
		{"gpu:2(S:0),mps:100", 2},
		{"mps:100", 0},
		{"gpus:4", 0}, /* another GRES whose name starts with gpu */
		{"gpu:0(IDX:N/A)", 0},
		{"gpu:abc", 0},
		{"gpu:-2", 0},
		{"", 0},
		{"N/A", 0},
		{"(null)", 0},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (elastic__gres_gpus(cases[i].gres) != cases[i].gpus)
			fail_msg("'%s': %d GPUs, expected %d", cases[i].gres,
				 elastic__gres_gpus(cases[i].gres), cases[i].gpus);
	assert_int_equal(elastic__gres_gpus(NULL), 0);
	char big[600];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "gpu:2,", 6);
	assert_int_equal(elastic__gres_gpus(big),
			 2); /* an overlong entry is cut, not overrun */
}

/* Which grants a release of excess GPUs picks: the grants' GPUs in g (n,
 * at most 8), the indexes picked in want (nwant). */
static const struct pick_case {
	int g[8], n, excess;
	int want[8], nwant;
	const char *why;
} pick_cases[] = {
	{{3, 1, 4, 2}, 4, 1, {1}, 1, "exact: the 1-GPU grant"},
	{{3, 1, 4, 2}, 4, 2, {3}, 1, "exact: the 2-GPU grant"},
	{{3, 1, 4, 2}, 4, 4, {2}, 1, "exact"},
	{{3, 1, 4, 2}, 4, 0, {0}, 0, "nothing to release"},
	{{3, 1, 4, 2}, 4, -3, {0}, 0, "nothing to release (negative)"},
	{{4, 4}, 2, 3, {0}, 1, "smallest that covers, first of equals"},
	{{1, 2, 2, 1}, 4, 5, {0, 1, 2}, 3, "exact: 1 + 2 + 2"},
	{{2, 2}, 2, 3, {0, 1}, 2, "no exact way, none covers: largest first"},
	{{1, 2, 2, 1}, 4, 9, {1, 2, 0, 3}, 4, "not enough: all of them"},
	{{1, 2, 2, 1}, 0, 1, {0}, 0, "no grants"},
	{{0, 0}, 2, 1, {0}, 0, "grants of 0 GPUs never help"},
	{{4, 2, 1}, 3, 3, {1, 2}, 2, "2 + 1: exact, not the 4"},
	{{4, 2, 1}, 3, 5, {0, 2}, 2, "4 + 1"},
	{{4, 2, 1}, 3, 6, {0, 1}, 2, "4 + 2"},
	{{4, 2, 1}, 3, 7, {0, 1, 2}, 3, "4 + 2 + 1"},
	{{3, 3}, 2, 2, {0}, 1, "no exact subset: smallest cover"},
	{{2, 2, 1}, 3, 4, {0, 1}, 2, "fewest grants among exact subsets"},
};

static void release_choice(void **state)
{
	(void)state;
	for (size_t c = 0; c < sizeof(pick_cases) / sizeof(pick_cases[0]); c++) {
		const struct pick_case *pc = &pick_cases[c];
		int out[16], k = elastic__pick_release(pc->g, pc->n, pc->excess, out, 16);
		if (k != pc->nwant)
			fail_msg("'%s': excess %d: picked %d grants, expected %d",
				 pc->why, pc->excess, k, pc->nwant);
		for (int i = 0; i < k; i++)
			if (out[i] != pc->want[i])
				fail_msg(
					"'%s': excess %d: pick %d is grant %d, expected %d",
					pc->why, pc->excess, i, out[i], pc->want[i]);
	}
	/* max_pick bounds it */
	const int k[] = {1, 2, 2, 1};
	int out[2];
	assert_int_equal(elastic__pick_release(k, 4, 6, out, 2), 2);
}

/* How a grow of gpus onto grants of have (nhave) GPUs is split into new
 * grants: the parts in want (nwant). */
static const struct split_case {
	int have[4], nhave, gpus;
	int want[8], nwant;
	const char *why;
} split_cases[] = {
	{{0}, 0, 7, {1, 2, 4}, 3, "7 from nothing"},
	{{0}, 0, 4, {1, 2, 1}, 3, "not one 4: 4 -> 3 must be exact"},
	{{0}, 0, 3, {1, 2}, 2, "3 from nothing"},
	{{0}, 0, 1, {1}, 1, "1 from nothing"},
	{{0}, 0, 5, {1, 2, 2}, 3, "5 from nothing"},
	{{4}, 1, 3, {1, 2}, 2, "fills the gap under the 4"},
	{{2, 1}, 2, 1, {1}, 1, "{1, 2} reaches 3: a 1 more"},
	{{1, 2}, 2, 4, {4}, 1, "reach 3: one 4 keeps it"},
	{{2, 4}, 2, 2, {1, 1}, 2, "a released 1 comes back as 1"},
};

static void grow_split(void **state)
{
	int parts[8];
	(void)state;
	for (size_t c = 0; c < sizeof(split_cases) / sizeof(split_cases[0]); c++) {
		const struct split_case *sc = &split_cases[c];
		int got[16], n = elastic__split_grow(sc->nhave ? sc->have : NULL,
						     sc->nhave, sc->gpus, got, 16);
		if (n != sc->nwant)
			fail_msg("'%s': grow of %d onto %d grants: %d parts, expected %d",
				 sc->why, sc->gpus, sc->nhave, n, sc->nwant);
		for (int i = 0; i < n; i++)
			if (got[i] != sc->want[i])
				fail_msg(
					"'%s': grow of %d onto %d grants: part %d is %d, expected %d",
					sc->why, sc->gpus, sc->nhave, i, got[i],
					sc->want[i]);
	}
	assert_int_equal(elastic__split_grow(NULL, 0, 0, parts, 8), 0);
	assert_int_equal(elastic__split_grow(NULL, 0, -2, parts, 8), 0);
	/* bounded: the last part takes the rest */
	assert_int_equal(elastic__split_grow(NULL, 0, 255, parts, 3), 3);
	assert_int_equal(parts[0] + parts[1] + parts[2], 255);
	assert_int_equal(elastic__grant_reach((int[]){2, 4}, 2), 0);
	assert_int_equal(elastic__grant_reach((int[]){4, 1, 2}, 3), 7);
	assert_int_equal(elastic__grant_reach((int[]){1, 1, 4}, 3), 2);
}

/* Any grow from nothing onto a node of up to 16 GPUs: any shrink after it
 * releases exactly what was asked. Then a walk of shrinks and grows on 8
 * GPUs where each grow makes the grants complete again (a grow after a
 * shrink, as in the reference scenario): each shrink is exact. Two shrinks
 * in a row need not be: {1, 2, 4, 1} - 3 leaves {4, 1}. */
static void every_shrink_exact(void **state)
{
	(void)state;
	for (int total = 1; total <= 16; total++) {
		for (int e = 1; e <= total; e++) {
			int g[16], n = elastic__split_grow(NULL, 0, total, g, 16), pk[16];
			int k = elastic__pick_release(g, n, e, pk, 16), sum = 0;
			for (int i = 0; i < k; i++)
				sum += g[pk[i]];
			if (sum != e)
				fail_msg("grants of a %d-GPU grow: release of %d took %d",
					 total, e, sum);
		}
	}
	int g[32], n = elastic__split_grow(NULL, 0, 8, g, 16);
	const int walk[] = {-1, 1, -3, 4, -5, 2, -2, 3, -6};
	for (size_t w = 0; w < sizeof(walk) / sizeof(walk[0]); w++) {
		if (walk[w] > 0) {
			n += elastic__split_grow(g, n, walk[w], g + n, 32 - n);
			assert_true(elastic__grant_reach(g, n) > 0);
			continue;
		}
		int pk[32], k = elastic__pick_release(g, n, -walk[w], pk, 32), sum = 0;
		char drop[32] = {0};
		for (int i = 0; i < k; i++) {
			sum += g[pk[i]];
			drop[pk[i]] = 1;
		}
		if (sum != -walk[w])
			fail_msg("walk step %zu: release of %d took %d", w, -walk[w],
				 sum);
		int m = 0;
		for (int i = 0; i < n; i++)
			if (!drop[i])
				g[m++] = g[i];
		n = m;
	}
}

/* A grant's time limit (minutes) from its job's start, limit and now. */
static void grant_limits(void **state)
{
	const unsigned inf = 0xfffffffe;
	static const struct {
		long start;
		unsigned limit;
		long now;
		unsigned want;
		const char *why;
	} cases[] = {
		{1000, 0, 1000, 0, "no limit"},
		{1000, 0xfffffffe, 1000, 0, "infinite"},
		{1000, 60, 1000, 60, "just started"},
		{1000, 60, 1000 + 630, 49,
		 "10 min 30 s into 60: 49 whole minutes left, not 60"},
		{1000, 60, 1000 + 3590, 1, "10 s left: 1"},
		{1000, 60, 1000 + 9999, 1, "past its limit: 1"},
		{0, 30, 500, 30, "not started"},
	};

	(void)state;
	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		unsigned got = elastic__grant_minutes(cases[c].start, cases[c].limit,
						      cases[c].now, inf);
		if (got != cases[c].want)
			fail_msg("'%s': %u minutes, expected %u", cases[c].why, got,
				 cases[c].want);
	}
}

static void grant_script(void **state)
{
	char buf[1024];

	(void)state;
	assert_true(elastic__grant_script(buf, sizeof(buf), 4242, 10) > 0);
	assert_non_null(strstr(buf, "q='squeue --local --only-job-state'\n"));
	assert_non_null(strstr(buf, "s=$($q -h -j 4242 -o %T 2>&1)"));
	assert_non_null(strstr(buf, "\tsleep 10 & wait $!\n"));
	/* SIGURG (ignored by default, so an older grant outlives it) ends it
	 * with exit 0 from the wait */
	assert_non_null(strstr(buf, "trap 'kill $! 2>/dev/null; exit 0' URG\n"));
	assert_int_equal(elastic__grant_script(buf, 40, 4242, 10), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gres_counts),	cmocka_unit_test(release_choice),
		cmocka_unit_test(grow_split),	cmocka_unit_test(every_shrink_exact),
		cmocka_unit_test(grant_limits), cmocka_unit_test(grant_script),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
