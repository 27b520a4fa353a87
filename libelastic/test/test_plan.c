/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/test/test_plan.c: unit tests of the batch plan and the elastic sampler (no
 * MPI job: these never call MPI_Init). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "elastic/elastic.h"

/* The shares of all ranks cover [0, global) once, in rank order, and every
 * active rank does the same number of micro-batches, none over the limit. */
static void plan_covers_global_batch(void **state)
{
	for (int global = 1; global <= 70; global++)
		for (int size = 1; size <= 9; size++)
			for (int mm = 1; mm <= 40; mm += 3) {
				int next = 0, accum = -1;
				for (int r = 0; r < size; r++) {
					struct elastic_batch_plan p;
					elastic_error_t err;
					assert_int_equal(elastic_batch_plan(global, mm,
									    size, r, NULL,
									    0, &p, &err),
							 0);
					assert_int_equal(p.active, size);
					assert_int_equal(p.offset, next);
					next += p.share;
					assert_true(p.micro <= mm);
					assert_true((long)p.micro * p.accum >= p.share);
					if (accum < 0)
						accum = p.accum;
					assert_int_equal(p.accum, accum);
					/* shares differ by at most one */
					assert_true(p.share == global / size ||
						    p.share == global / size + 1);
				}
				assert_int_equal(next, global);
			}
}

/* global 256, at most 32 per micro-batch, over several world sizes */
static void plan_follows_world_size(void **state)
{
	static const struct {
		int size, rank, share, offset, accum, micro;
	} cases[] = {
		{8, 0, 32, 0, 1, 32},
		{4, 3, 64, 192, 2, 32},
		{3, 0, 86, 0, 3, 29},
		{3, 2, 85, 171, 3, 29},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct elastic_batch_plan p;
		assert_int_equal(elastic_batch_plan(256, 32, cases[i].size, cases[i].rank,
						    NULL, 0, &p, NULL),
				 0);
		assert_int_equal(p.share, cases[i].share);
		assert_int_equal(p.offset, cases[i].offset);
		assert_int_equal(p.accum, cases[i].accum);
		assert_int_equal(p.micro, cases[i].micro);
	}
}

static void plan_allowed_sizes(void **state)
{
	const int pow2[] = {1, 2, 4, 8};
	const int big[] = {4, 8};
	struct elastic_batch_plan p;
	elastic_error_t err;

	/* 7 ranks, powers of two allowed: 4 work, 3 wait */
	assert_int_equal(elastic_batch_plan(64, 64, 7, 3, pow2, 4, &p, &err), 0);
	assert_int_equal(p.active, 4);
	assert_int_equal(p.share, 16);
	assert_int_equal(elastic_batch_plan(64, 64, 7, 5, pow2, 4, &p, &err), 0);
	assert_int_equal(p.share, 0);
	assert_int_equal(p.offset, 64);
	assert_int_equal(p.accum, 1);
	errno = 0;
	assert_int_equal(elastic_batch_plan(64, 64, 3, 0, big, 2, &p, &err), -1);
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err.text, "no allowed size"));
}

/* Each bad input fails (with words of the error where given) and a failed
 * call changes nothing. */
static void plan_bad_input(void **state)
{
	static const struct {
		int global, max_micro, size, rank, nsizes, no_plan;
		const char *expect;
	} cases[] = {
		{0, 1, 1, 0, 0, 0, "global batch 0"},
		{8, 0, 1, 0, 0, 0, "micro-batch"},
		{8, 1, 2, 2, 0, 0, "rank 2"},
		{8, 1, 0, 0, 0, 0, NULL},
		{8, 1, 2, 0, 2, 0, NULL}, /* sizes NULL, but 2 of them */
		{8, 1, 2, 0, 0, 1, NULL}, /* plan NULL */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct elastic_batch_plan p, before;
		elastic_error_t err = {""};
		memset(&p, 0x5a, sizeof(p));
		before = p;
		assert_int_equal(elastic_batch_plan(cases[i].global, cases[i].max_micro,
						    cases[i].size, cases[i].rank, NULL,
						    cases[i].nsizes,
						    cases[i].no_plan ? NULL : &p, &err),
				 -1);
		if (cases[i].expect && !strstr(err.text, cases[i].expect))
			fail_msg("case %zu: message '%s' lacks '%s'", i, err.text,
				 cases[i].expect);
		assert_memory_equal(&p, &before, sizeof(p));
	}
}

static uint64_t _rng(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return *x >> 33;
}

/* Random world sizes (and allowed sizes) at every step, plus rollbacks of
 * steps that "failed": every sample is used exactly once per epoch. */
static void sampler_exactly_once_across_resizes(void **state)
{
	const uint64_t n = 1000;
	const int global = 64;
	const int pow2[] = {1, 2, 4, 8};
	elastic_sampler_t *s;
	uint64_t idx[global];
	unsigned *uses = calloc(n, sizeof(unsigned));
	uint64_t x = 42;
	int epochs_done = 0, rollbacks = 0;

	assert_int_equal(elastic_sampler_create(n, 7, 1, &s, NULL), 0);
	while (epochs_done < 5) {
		uint64_t e0 = elastic_sampler_epoch(s), c0 = elastic_sampler_consumed(s);
		uint64_t ns = elastic_sampler_step_samples(s, global);
		int size = 1 + (int)(_rng(&x) % 9), fail = _rng(&x) % 5 == 0;
		int use_pow2 = _rng(&x) % 2;
		uint64_t got = 0;
		for (int r = 0; r < size; r++) {
			struct elastic_batch_plan p;
			size_t k;
			assert_int_equal(elastic_batch_plan((int)ns, 16, size, r,
							    use_pow2 ? pow2 : NULL,
							    use_pow2 ? 4 : 0, &p, NULL),
					 0);
			assert_int_equal(
				elastic_sampler_indices(s, &p, idx, global, &k, NULL), 0);
			for (size_t i = 0; i < k && !fail; i++)
				uses[idx[i]]++;
			got += k;
		}
		assert_int_equal(got, ns);
		if (fail) {
			/* the step is redone: the position does not move */
			rollbacks++;
			continue;
		}
		if (elastic_sampler_advance(s, global)) {
			assert_int_equal(elastic_sampler_epoch(s), e0 + 1);
			for (uint64_t i = 0; i < n; i++) {
				assert_int_equal(uses[i], 1);
				uses[i] = 0;
			}
			epochs_done++;
		} else {
			assert_int_equal(elastic_sampler_consumed(s), c0 + ns);
		}
	}
	assert_true(rollbacks > 0);
	elastic_sampler_destroy(s);
	free(uses);
}

static void sampler_order_is_deterministic_per_epoch(void **state)
{
	elastic_sampler_t *a, *b;
	struct elastic_batch_plan p;
	uint64_t ia[100], ib[100];
	size_t na, nb;

	assert_int_equal(elastic_sampler_create(100, 3, 1, &a, NULL), 0);
	assert_int_equal(elastic_sampler_create(100, 3, 1, &b, NULL), 0);
	assert_int_equal(elastic_batch_plan(100, 100, 1, 0, NULL, 0, &p, NULL), 0);
	assert_int_equal(elastic_sampler_seek(b, 2, 0, NULL), 0);
	assert_int_equal(elastic_sampler_advance(a, 100), 1);
	assert_int_equal(elastic_sampler_advance(a, 100), 1);
	assert_int_equal(elastic_sampler_indices(a, &p, ia, 100, &na, NULL), 0);
	assert_int_equal(elastic_sampler_indices(b, &p, ib, 100, &nb, NULL), 0);
	assert_int_equal(na, 100);
	assert_memory_equal(ia, ib, sizeof(ia));
	/* shuffled, and differently from epoch 0 */
	assert_int_equal(elastic_sampler_seek(b, 0, 0, NULL), 0);
	assert_int_equal(elastic_sampler_indices(b, &p, ib, 100, &nb, NULL), 0);
	assert_memory_not_equal(ia, ib, sizeof(ia));
	int inorder = 1;
	for (int i = 0; i < 100; i++)
		inorder &= ia[i] == (uint64_t)i;
	assert_false(inorder);
	elastic_sampler_destroy(a);
	elastic_sampler_destroy(b);
}

static void sampler_bad_input(void **state)
{
	elastic_sampler_t *s = NULL;
	elastic_error_t err;
	struct elastic_batch_plan p;
	uint64_t idx[4];
	size_t n;

	assert_int_equal(elastic_sampler_create(0, 1, 1, &s, &err), -1);
	assert_non_null(strstr(err.text, "no samples"));
	assert_int_equal(elastic_sampler_create(10, 1, 1, NULL, &err), -1);
	assert_int_equal(elastic_sampler_create(10, 1, 0, &s, &err), 0);
	assert_int_equal(elastic_batch_plan(8, 8, 1, 0, NULL, 0, &p, NULL), 0);
	errno = 0;
	assert_int_equal(elastic_sampler_indices(s, &p, idx, 4, &n, &err), -1);
	assert_int_equal(errno, ERANGE);
	assert_int_equal(elastic_sampler_advance(s, 8), 0);
	/* 2 left; a plan for 8 goes past the epoch */
	uint64_t big[8];
	assert_int_equal(elastic_sampler_indices(s, &p, big, 8, &n, &err), -1);
	assert_non_null(strstr(err.text, "past the epoch"));
	assert_int_equal(elastic_sampler_step_samples(s, 8), 2);
	assert_int_equal(elastic_sampler_seek(s, 0, 10, &err), -1);
	assert_int_equal(elastic_sampler_register(NULL, s, &err), -1);
	assert_int_equal(elastic_sampler_register(NULL, NULL, &err), -1);
	elastic_sampler_destroy(s);
	elastic_sampler_destroy(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(plan_covers_global_batch),
		cmocka_unit_test(plan_follows_world_size),
		cmocka_unit_test(plan_allowed_sizes),
		cmocka_unit_test(plan_bad_input),
		cmocka_unit_test(sampler_exactly_once_across_resizes),
		cmocka_unit_test(sampler_order_is_deterministic_per_epoch),
		cmocka_unit_test(sampler_bad_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
