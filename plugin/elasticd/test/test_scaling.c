/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/test/test_scaling.c: the measured scaling model: fits of
 * known shapes, decay, confidence, the state line. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "scaling.h"

/* Observe t(n) = a/n + b + c*log2(n) + d*n at the sizes in `at`. */
static void shape(struct elastic_scaling *s, double a, double b, double c, double d,
		  const int *at, int nat)
{
	memset(s, 0, sizeof(*s));
	for (int i = 0; i < nat; i++) {
		double t = a / at[i] + b + c * log2(at[i]) + d * at[i];
		assert_int_equal(elastic_scaling_observe(s, at[i], 1.0 / t, 1000, 600),
				 0);
	}
}

#define near(x, want, tol)                                                               \
	do {                                                                             \
		double _x = (x), _w = (want);                                            \
		if (!(fabs(_x - _w) <= (tol)))                                           \
			fail_msg("%s = %.6f, want %.6f", #x, _x, _w);                    \
	} while (0)

/* Known shapes come back from their sizes, and predict the sizes not seen. */
static void fits_known_shapes(void **state)
{
	static const int at[] = {1, 2, 4, 8}, far[] = {2, 4, 8, 16};
	struct elastic_scaling s;

	/* linear: alpha alone */
	shape(&s, 4, 0, 0, 0, at, 4);
	assert_int_equal(s.terms, 1);
	near(elastic_scaling_speedup(&s, 16), 16, 1e-6);
	/* Amdahl: a serial fifth at one GPU */
	shape(&s, 1, 0.25, 0, 0, at, 4);
	assert_int_equal(s.terms, 2);
	near(s.coef[0], 1, 1e-6);
	near(s.coef[1], 0.25, 1e-6);
	near(elastic_scaling_speedup(&s, 16), 1.25 / (1.0 / 16 + 0.25), 1e-6);
	/* a per-rank cost: faster up to about 7 GPUs, slower past it */
	shape(&s, 1, 0, 0, 0.02, far, 4);
	assert_true(elastic_scaling_speedup(&s, 7) > elastic_scaling_speedup(&s, 4));
	assert_true(elastic_scaling_speedup(&s, 32) < elastic_scaling_speedup(&s, 8));
	near(elastic_scaling_rate(&s, 32), 1.0 / (1.0 / 32 + 0.64), 1e-6);
	/* a tree collective: a + c log2 n */
	shape(&s, 2, 0, 0.1, 0, far, 4);
	near(elastic_scaling_rate(&s, 64), 1.0 / (2.0 / 64 + 0.6), 1e-6);
	/* one size: read as linear, the guess the policy may try */
	shape(&s, 1, 0.5, 0, 0, at + 2, 1);
	assert_int_equal(s.terms, 1);
	assert_true(s.coef[0] > 0);
	near(elastic_scaling_speedup(&s, 8), 8, 1e-9);
	/* nothing observed */
	memset(&s, 0, sizeof(s));
	assert_true(elastic_scaling_rate(&s, 4) == 0);
	assert_true(elastic_scaling_speedup(&s, 4) == 0);
}

/* Noisy measurements of an Amdahl job: the fit stays close. */
static void fits_noisy_measurements(void **state)
{
	struct elastic_scaling s = {0};
	uint64_t r = 1;
	for (int k = 0; k < 40; k++) {
		int n = 1 << (k % 4);
		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		double noise = 1 + ((double)(r >> 11) / 9007199254740992.0 - 0.5) * 0.06;
		double t = (1.0 / n + 0.1) * noise;
		assert_int_equal(elastic_scaling_observe(&s, n, 1.0 / t, 1000 + k, 600),
				 0);
	}
	near(elastic_scaling_speedup(&s, 8), 1.1 / (1.0 / 8 + 0.1), 0.15);
	near(elastic_scaling_speedup(&s, 16), 1.1 / (1.0 / 16 + 0.1), 0.4);
}

/* A size's average decays: a rate measured one half-life ago weighs half. */
static void decays_toward_recent(void **state)
{
	struct elastic_scaling s = {0};

	assert_int_equal(elastic_scaling_observe(&s, 2, 100, 0, 60), 0);
	assert_int_equal(elastic_scaling_observe(&s, 2, 50, 60, 60), 0);
	near(s.obs[0].rate, (100 * 0.5 + 50) / 1.5, 1e-9);
	near(s.obs[0].weight, 1.5, 1e-9);
	/* half-life 0: the newest alone */
	assert_int_equal(elastic_scaling_observe(&s, 2, 10, 61, 0), 0);
	near(s.obs[0].rate, 10, 1e-12);
	/* bad input changes nothing */
	errno = 0;
	assert_int_equal(elastic_scaling_observe(&s, 0, 10, 62, 60), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(elastic_scaling_observe(&s, 2, -1, 62, 60), -1);
	assert_int_equal(elastic_scaling_observe(&s, 2, NAN, 62, 60), -1);
	assert_int_equal(elastic_scaling_observe(&s, 2, INFINITY, 62, 60), -1);
	assert_int_equal(s.nobs, 1);
	/* more sizes than kept: the one seen longest ago goes */
	for (int n = 1; n <= ELASTIC_SCALING_SIZES + 1; n++)
		assert_int_equal(elastic_scaling_observe(&s, 100 + n, 1, 100 + n, 60), 0);
	assert_int_equal(s.nobs, ELASTIC_SCALING_SIZES);
	for (int i = 0; i < s.nobs; i++)
		assert_int_not_equal(s.obs[i].n, 2);
}

static void confidence_per_size(void **state)
{
	static const int at[] = {2, 8};
	struct elastic_scaling s;

	memset(&s, 0, sizeof(s));
	assert_int_equal(elastic_scaling_confidence(&s, 4), ELASTIC_SCALING_UNKNOWN);
	shape(&s, 1, 0.1, 0, 0, at, 2);
	assert_int_equal(elastic_scaling_confidence(&s, 2), ELASTIC_SCALING_MEASURED);
	assert_int_equal(elastic_scaling_confidence(&s, 4), ELASTIC_SCALING_INTERPOLATED);
	assert_int_equal(elastic_scaling_confidence(&s, 16),
			 ELASTIC_SCALING_EXTRAPOLATED);
	assert_int_equal(elastic_scaling_confidence(&s, 1), ELASTIC_SCALING_EXTRAPOLATED);
	assert_string_equal(elastic_scaling_confidence_name(ELASTIC_SCALING_INTERPOLATED),
			    "interpolated");
	assert_null(elastic_scaling_confidence_name((enum elastic_scaling_confidence)9));
}

/* elastic-ctl's table: each size measured or asked for, ascending, with
 * its prediction, efficiency and confidence; what does not fit is left
 * out, the sizes asked for last. */
static void table_rows(void **state)
{
	static const int at[] = {2, 8}, also[] = {4, 16};
	struct elastic_scaling s;
	char buf[ELASTIC_SCALING_SIZES * 32];
	int n;

	memset(&s, 0, sizeof(s));
	assert_int_equal(elastic_scaling_table(&s, also, 2, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "");
	shape(&s, 1, 0.1, 0, 0, at, 2);
	n = elastic_scaling_table(&s, also, 2, buf, sizeof(buf));
	assert_int_equal(n, (int)strlen(buf));
	assert_string_equal(buf, "2:1.667:1.667:0.92:m,4::2.857:0.79:i,"
				 "8:4.444:4.444:0.61:m,16::6.154:0.42:e");
	/* the GPUs held count once; no size asked for: the measured ones */
	n = elastic_scaling_table(&s, (const int[]){8, 8}, 2, buf, sizeof(buf));
	assert_int_equal(n, (int)strlen(buf));
	assert_string_equal(buf, "2:1.667:1.667:0.92:m,8:4.444:4.444:0.61:m");
	elastic_scaling_table(&s, NULL, 0, buf, sizeof(buf));
	assert_string_equal(buf, "2:1.667:1.667:0.92:m,8:4.444:4.444:0.61:m");
	elastic_scaling_table(&s, also, 2, buf, 40);
	assert_string_equal(buf, "4::2.857:0.79:i,16::6.154:0.42:e");
}

/* The state line reads back to the same model; a damaged line is refused
 * and changes nothing. */
static void state_line_round_trip(void **state)
{
	static const int at[] = {1, 2, 4, 8};
	static const char *const bad[] = {
		"2:1:1",     "0:1:1:5",	  "2:-1:1:5",	     "2:1:0:5",
		"2:1:1:-5",  "2:1:1:5,",  "2:1:1:5,2:1:1:6", "x",
		"2:1:1:5;3", "2:nan:1:5", "2:inf:1:5",
	};
	struct elastic_scaling s, t;
	char line[1024];

	shape(&s, 1, 0.25, 0, 0.01, at, 4);
	assert_true(elastic_scaling_format(&s, line, sizeof(line)) > 0);
	memset(&t, 0, sizeof(t));
	assert_int_equal(elastic_scaling_parse(&t, line), 0);
	assert_int_equal(t.nobs, 4);
	for (int n = 1; n <= 64; n *= 2)
		near(elastic_scaling_rate(&t, n), elastic_scaling_rate(&s, n),
		     1e-6 * elastic_scaling_rate(&s, n));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct elastic_scaling u = t;
		errno = 0;
		if (elastic_scaling_parse(&u, bad[i]) != -1 || errno != EINVAL)
			fail_msg("'%s' was not refused", bad[i]);
		assert_memory_equal(&u, &t, sizeof(u));
	}
	/* empty: no observations */
	assert_int_equal(elastic_scaling_parse(&t, ""), 0);
	assert_int_equal(t.nobs, 0);
	assert_int_equal(elastic_scaling_format(&t, line, sizeof(line)), 0);
	assert_string_equal(line, "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fits_known_shapes),
		cmocka_unit_test(fits_noisy_measurements),
		cmocka_unit_test(decays_toward_recent),
		cmocka_unit_test(confidence_per_size),
		cmocka_unit_test(state_line_round_trip),
		cmocka_unit_test(table_rows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
