/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_ldpath.c: unit tests of the library path the MPI
 * runtime adds for its remote daemons: found in PRRTE's daemon command
 * lines (as Open MPI 5.0.7 writes them), stripped from a rank's path. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "ldpath.h"

static void added(void **state)
{
	static const struct {
		const char *cmd, *want; /* NULL: none */
	} t[] = {
		{"PRTE_PREFIX=/usr;export PRTE_PREFIX;LD_LIBRARY_PATH=/usr/lib:/usr/lib/x86_64-linux-gnu/pmix2/lib:$LD_LIBRARY_PATH;export LD_LIBRARY_PATH;DYLD_LIBRARY_PATH=/usr/lib:$DYLD_LIBRARY_PATH;export DYLD_LIBRARY_PATH;/usr/bin/prted --allow-run-as-root",
		 "/usr/lib:/usr/lib/x86_64-linux-gnu/pmix2/lib"},
		{"LD_LIBRARY_PATH=/opt/ompi/lib:${LD_LIBRARY_PATH} ; export LD_LIBRARY_PATH; prted",
		 "/opt/ompi/lib"},
		{"/usr/bin/prted --prtemca ess env", NULL},
		{"DYLD_LIBRARY_PATH=/usr/lib:$DYLD_LIBRARY_PATH;prted", NULL},
		{"LD_LIBRARY_PATH=/usr/lib;export LD_LIBRARY_PATH;prted", NULL},
		{"LD_LIBRARY_PATH=:$LD_LIBRARY_PATH;prted", NULL},
		{"LD_LIBRARY_PATH=/a b:$LD_LIBRARY_PATH;prted", NULL},
		{"LD_LIBRARY_PATH=/a'b:$LD_LIBRARY_PATH;prted", NULL},
	};
	char out[256];

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		int rc = elastic__ld_added(t[i].cmd, out, sizeof(out));
		if (!t[i].want) {
			if (rc != -1)
				fail_msg("case %zu: found '%s' in %s", i, out, t[i].cmd);
			continue;
		}
		if (rc != 0 || strcmp(out, t[i].want))
			fail_msg("case %zu: got rc %d '%s', expected '%s'", i, rc,
				 rc ? "" : out, t[i].want);
	}
	assert_int_equal(elastic__ld_added(t[0].cmd, out, 8), -1); /* too small */
}

static void strip(void **state)
{
	const char *a = "/usr/lib:/usr/lib/x86_64-linux-gnu/pmix2/lib";

	(void)state;
	assert_string_equal(
		elastic__ld_strip("/usr/lib:/usr/lib/x86_64-linux-gnu/pmix2/lib:", a),
		"");
	assert_string_equal(
		elastic__ld_strip(
			"/usr/lib:/usr/lib/x86_64-linux-gnu/pmix2/lib:/home/u/lib", a),
		"/home/u/lib");
	assert_string_equal(
		elastic__ld_strip("/usr/lib:/usr/lib/x86_64-linux-gnu/pmix2/lib", a), "");
	assert_string_equal(elastic__ld_strip("/home/u/lib", a), "/home/u/lib");
	assert_string_equal(elastic__ld_strip("/usr/lib:/other", a), "/usr/lib:/other");
	assert_string_equal(elastic__ld_strip("/usr/lib:/x", NULL), "/usr/lib:/x");
	assert_string_equal(elastic__ld_strip("/usr/lib:/x", ""), "/usr/lib:/x");
}

static const struct CMUnitTest tests[] = {
	cmocka_unit_test(added),
	cmocka_unit_test(strip),
};

int main(void)
{
	return cmocka_run_group_tests(tests, NULL, NULL);
}
