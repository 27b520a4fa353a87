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

static void pick(const int *g, int n, int excess, const int *want, int nwant)
{
	int out[16];
	int k = elastic__pick_release(g, n, excess, out, 16);
	if (k != nwant)
		fail_msg("excess %d: picked %d grants, expected %d", excess, k, nwant);
	for (int i = 0; i < k; i++)
		if (out[i] != want[i])
			fail_msg("excess %d: pick %d is grant %d, expected %d", excess, i,
				 out[i], want[i]);
}

static void release_choice(void **state)
{
	const int g[] = {3, 1, 4, 2};
	pick(g, 4, 1, (int[]){1}, 1); /* exact: the 1-GPU grant */
	pick(g, 4, 2, (int[]){3}, 1); /* exact: the 2-GPU grant */
	pick(g, 4, 4, (int[]){2}, 1); /* exact */
	pick(g, 4, 0, NULL, 0);	      /* nothing to release */
	pick(g, 4, -3, NULL, 0);
	const int h[] = {4, 4};
	pick(h, 2, 3, (int[]){0}, 1); /* smallest that covers, first of equals */
	const int k[] = {1, 2, 2, 1};
	pick(k, 4, 5, (int[]){0, 1, 2}, 3); /* exact: 1 + 2 + 2 */
	const int evens[] = {2, 2};
	pick(evens, 2, 3, (int[]){0, 1},
	     2); /* no exact way, none covers: largest first */
	pick(k, 4, 9, (int[]){1, 2, 0, 3}, 4); /* not enough: all of them */
	pick(k, 0, 1, NULL, 0);		       /* no grants */
	const int z[] = {0, 0};
	pick(z, 2, 1, NULL, 0); /* grants of 0 GPUs never help */
	int out[2];
	/* max_pick bounds it */
	assert_int_equal(elastic__pick_release(k, 4, 6, out, 2), 2);
	const int p2[] = {4, 2, 1};
	pick(p2, 3, 3, (int[]){1, 2}, 2); /* 2 + 1: exact, not the 4 */
	pick(p2, 3, 5, (int[]){0, 2}, 2); /* 4 + 1 */
	pick(p2, 3, 6, (int[]){0, 1}, 2); /* 4 + 2 */
	pick(p2, 3, 7, (int[]){0, 1, 2}, 3);
	const int odd[] = {3, 3};
	pick(odd, 2, 2, (int[]){0}, 1); /* no exact subset: smallest cover */
	const int two[] = {2, 2, 1};
	pick(two, 3, 4, (int[]){0, 1}, 2); /* fewest grants among exact subsets */
}

static void grow_split(void **state)
{
	int parts[8];
	assert_int_equal(elastic__split_grow(7, parts, 8), 3);
	assert_int_equal(parts[0], 4);
	assert_int_equal(parts[1], 2);
	assert_int_equal(parts[2], 1);
	assert_int_equal(elastic__split_grow(4, parts, 8), 1);
	assert_int_equal(parts[0], 4);
	assert_int_equal(elastic__split_grow(3, parts, 8), 2);
	assert_int_equal(parts[0] + parts[1], 3);
	assert_int_equal(elastic__split_grow(0, parts, 8), 0);
	assert_int_equal(elastic__split_grow(-2, parts, 8), 0);
	assert_int_equal(elastic__split_grow(255, parts, 3), 3); /* bounded */
	/* Every shrink of a 7-GPU grow is exact. */
	int g[3] = {4, 2, 1}, pk[3];
	for (int e = 1; e <= 7; e++) {
		int n = elastic__pick_release(g, 3, e, pk, 3), sum = 0;
		for (int i = 0; i < n; i++)
			sum += g[pk[i]];
		assert_int_equal(sum, e);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(gres_counts),
		cmocka_unit_test(release_choice),
		cmocka_unit_test(grow_split),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
