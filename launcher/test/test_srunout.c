/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_srunout.c: unit tests of the split of an srun's stderr:
 * srun's own lines go one way, whole; the tasks' bytes the other, at once
 * and unchanged, however the stream is cut. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "srunout.h"

struct sink {
	char passed[1024];
	size_t np;
	char said[1024]; /* lines, each ended by '|' */
};

static void pass(const char *p, size_t n, void *arg)
{
	struct sink *k = arg;
	assert_true(k->np + n < sizeof(k->passed));
	memcpy(k->passed + k->np, p, n);
	k->np += n;
	k->passed[k->np] = '\0';
}

static void said(const char *line, void *arg)
{
	struct sink *k = arg;
	size_t o = strlen(k->said);
	snprintf(k->said + o, sizeof(k->said) - o, "%s|", line);
}

static const char stream[] =
	"srun: Cancelled pending job step with signal 15\n"
	"Traceback (most recent call last):\n"
	"sru not srun's\n"
	"srun: error: Unable to create step for job 7: Job/step already completing\n"
	"progress 10%\rprogress 20%\r"
	"\nsrun:no blank\n"
	"srun: warning: the last, unended";

static void split(const char *in, size_t n, size_t cut, struct sink *k)
{
	struct elastic_srunout s;
	memset(k, 0, sizeof(*k));
	elastic__srunout_init(&s, pass, said, k);
	for (size_t i = 0; i < n; i += cut)
		elastic__srunout_feed(&s, in + i, i + cut < n ? cut : n - i);
	elastic__srunout_end(&s);
}

static void whole_and_cut(void **state)
{
	(void)state;
	/* the same split whether the bytes come at once or one by one */
	for (size_t cut = 1; cut <= sizeof(stream); cut++) {
		struct sink k;
		split(stream, sizeof(stream) - 1, cut, &k);
		assert_string_equal(
			k.said,
			"Cancelled pending job step with signal 15|"
			"error: Unable to create step for job 7: Job/step already completing|"
			"warning: the last, unended|");
		assert_string_equal(k.passed, "Traceback (most recent call last):\n"
					      "sru not srun's\n"
					      "progress 10%\rprogress 20%\r\n"
					      "srun:no blank\n");
	}
}

/* A task's partial line goes on at once: nothing of it waits for its end. */
static void partial_at_once(void **state)
{
	struct elastic_srunout s;
	struct sink k;

	(void)state;
	memset(&k, 0, sizeof(k));
	elastic__srunout_init(&s, pass, said, &k);
	elastic__srunout_feed(&s, "epoch 1: ", 9);
	assert_string_equal(k.passed, "epoch 1: ");
	elastic__srunout_feed(&s, "sru", 3); /* (mid-line: not a prefix) */
	assert_string_equal(k.passed, "epoch 1: sru");
	elastic__srunout_feed(&s, "\nsru", 4); /* held: may be srun's */
	assert_string_equal(k.passed, "epoch 1: sru\n");
	elastic__srunout_feed(&s, "x", 1);
	assert_string_equal(k.passed, "epoch 1: sru\nsrux");
	assert_string_equal(k.said, "");
}

/* srun's line longer than the book holds is cut, not split in two. */
static void long_line(void **state)
{
	char in[1200];
	struct sink k;

	(void)state;
	memcpy(in, "srun: ", 6);
	memset(in + 6, 'a', 1000);
	memcpy(in + 1006, "\nok\n", 4);
	split(in, 1010, 64, &k);
	assert_int_equal(strlen(k.said), ELASTIC_REPORT_SRUN_TEXT + 8 - 1 - 6 + 1);
	assert_string_equal(k.passed, "ok\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(whole_and_cut),
		cmocka_unit_test(partial_at_once),
		cmocka_unit_test(long_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
