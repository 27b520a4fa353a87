/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_devcheck.c: unit tests of a rank's device check: the
 * device file paths made from a site's pattern, and the verdict on what a
 * rank could open (its own GPU's file and no other). */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "devcheck.h"

static void paths(void **state)
{
	char buf[64];

	(void)state;
	assert_int_equal(
		elastic__devcheck_path("/dev/nvidia%g", "n1", 3, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/dev/nvidia3");
	assert_int_equal(
		elastic__devcheck_path("/x/%h/gpu%g%%", "node2", 12, buf, sizeof(buf)),
		0);
	assert_string_equal(buf, "/x/node2/gpu12%");
	errno = 0;
	assert_int_equal(elastic__devcheck_path("/dev/%d", "n1", 0, buf, sizeof(buf)),
			 -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(elastic__devcheck_path("/dev/nvidia%g", "n1", 0, buf, 8), -1);
	assert_int_equal(errno, ENAMETOOLONG);
}

/* Each row: what the rank reached, what its step holds, its GPU, the
 * verdict and the file the text must name. */
static void verdicts(void **state)
{
	static const struct {
		int reach[4], held[4], n, own, rc, err;
		const char *names;
	} row[] = {
		{{1, 0, 0, 0}, {1, 0, 0, 0}, 4, 0, 0, 0, NULL}, /* confined to its own */
		{{0, 0, 1, 1}, {0, 0, 1, 1}, 4, 2, 0, 0, NULL}, /* its step's two GPUs */
		{{1, 1, 1, 1},
		 {0, 1, 0, 0},
		 4,
		 1,
		 -1,
		 EACCES,
		 "/d/h/g0"}, /* no confinement */
		{{0, 1, 1, 0}, {0, 1, 0, 0}, 4, 1, -1, EACCES, "/d/h/g2"},
		{{1, 1, 1, 1},
		 {0, 0, 0, 0},
		 4,
		 1,
		 -1,
		 EACCES,
		 "/d/h/g0"}, /* outside any step */
		{{0, 1, 0, 0},
		 {0, 0, 0, 0},
		 4,
		 1,
		 -1,
		 EPERM,
		 "/d/h/g1"}, /* not its step's */
		{{1, 0, 0, 0},
		 {1, 0, 0, 0},
		 4,
		 1,
		 -1,
		 EPERM,
		 "/d/h/g1"}, /* another step */
		{{0, 0, 0, 0},
		 {0, 0, 0, 1},
		 4,
		 3,
		 -1,
		 EPERM,
		 "/d/h/g3"}, /* held, refused */
		{{1, 0, 0, 0},
		 {1, 0, 0, 0},
		 1,
		 2,
		 -1,
		 ENOENT,
		 "/d/h/g2"}, /* no such file */
	};
	for (size_t i = 0; i < sizeof(row) / sizeof(row[0]); i++) {
		elastic_error_t e = {{0}};
		errno = 0;
		assert_int_equal(elastic__devcheck_verdict(row[i].reach, row[i].held,
							   row[i].n, row[i].own,
							   "/d/%h/g%g", "h", &e),
				 row[i].rc);
		if (row[i].rc == 0)
			continue;
		assert_int_equal(errno, row[i].err);
		assert_non_null(strstr(e.text, row[i].names));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(paths),
		cmocka_unit_test(verdicts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
