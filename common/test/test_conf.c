/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/test/test_conf.c: unit tests of the Key=Value configuration parser. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "conf.h"

struct cfg {
	char *host;
	long port;
	int debug;
	int mode;
};

static const struct elastic_conf_key keys[] = {
	{"ControllerHost", ELASTIC_CONF_STRING, offsetof(struct cfg, host), "localhost"},
	{"ControllerPort", ELASTIC_CONF_INT, offsetof(struct cfg, port), "6820", 1,
	 65535},
	{"Debug", ELASTIC_CONF_BOOL, offsetof(struct cfg, debug), "no"},
	{"PolicyMode", ELASTIC_CONF_ENUM, offsetof(struct cfg, mode), "priority", 0, 0,
	 "priority|fairshare|fifo"},
	{NULL},
};

static void defaults_are_applied(void **state)
{
	struct cfg c;
	elastic_error_t err;
	assert_int_equal(elastic_conf_defaults(keys, &c, sizeof(c), &err), 0);
	assert_string_equal(c.host, "localhost");
	assert_int_equal(c.port, 6820);
	assert_int_equal(c.debug, 0);
	assert_int_equal(c.mode, 0);
	elastic_conf_free(keys, &c);
}

static void parses_keys_comments_and_spaces(void **state)
{
	struct cfg c;
	elastic_error_t err;
	elastic_conf_defaults(keys, &c, sizeof(c), NULL);
	assert_int_equal(
		elastic_conf_parse_text(keys, &c, sizeof(c),
					"# comment\n\n  controllerhost = ctl01 # x\n"
					"ControllerPort=7000\nDebug=YES\nPolicyMode=fifo",
					"t.conf", &err),
		0);
	assert_string_equal(c.host, "ctl01");
	assert_int_equal(c.port, 7000);
	assert_int_equal(c.debug, 1);
	assert_int_equal(c.mode, 2);
	elastic_conf_free(keys, &c);
}

/* Each bad line: the message names file:line and the problem, and the
 * struct keeps every earlier value (a failed parse changes nothing). */
static void bad_input_is_named_and_changes_nothing(void **state)
{
	static const struct {
		const char *text, *expect;
	} cases[] = {
		{"ControllerPort=7000\nBogus=1\n",
		 "t.conf:2: unknown key 'Bogus' (known: ControllerHost, ControllerPort, Debug, PolicyMode)"},
		{"ControlerPort=7000\n",
		 "t.conf:1: unknown key 'ControlerPort' (did you mean 'ControllerPort'?)"},
		{"ControllerPort=70000\n",
		 "t.conf:1: ControllerPort=70000 is out of range [1, 65535]"},
		{"ControllerPort=12ab\n",
		 "t.conf:1: ControllerPort=12ab is not an integer"},
		{"ControllerPort=\n", "t.conf:1: ControllerPort= is not an integer"},
		{"ControllerPort=99999999999999999999999\n", "is not an integer"},
		{"Debug=maybe\n", "t.conf:1: Debug=maybe is not a boolean"},
		{"PolicyMode=random\n", "is not one of priority|fairshare|fifo"},
		{"ControllerHost=x\njust words\n", "t.conf:2: expected Key=Value"},
		{" =3\n", "t.conf:1: empty key"},
		/* A key given twice, even with the same value or another case:
		 * which line counts would be a guess. */
		{"ControllerPort=7000\nDebug=yes\ncontrollerport=7001\n",
		 "t.conf:3: ControllerPort given a second time (first at t.conf:1); each key may appear once"},
		{"Debug=no\nDebug=no\n",
		 "t.conf:2: Debug given a second time (first at t.conf:1)"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cfg c;
		elastic_error_t err = {""};
		elastic_conf_defaults(keys, &c, sizeof(c), NULL);
		errno = 0;
		assert_int_equal(elastic_conf_parse_text(keys, &c, sizeof(c),
							 cases[i].text, "t.conf", &err),
				 -1);
		assert_int_equal(errno, EINVAL);
		if (!strstr(err.text, cases[i].expect))
			fail_msg("case %zu: got '%s', want '%s'", i, err.text,
				 cases[i].expect);
		assert_string_equal(c.host, "localhost");
		assert_int_equal(c.port, 6820);
		elastic_conf_free(keys, &c);
	}
}

static void long_line_is_refused(void **state)
{
	struct cfg c;
	elastic_error_t err;
	size_t n = 10000;
	char *text = malloc(n + 1);
	memset(text, 'x', n);
	memcpy(text, "ControllerHost=", 15);
	text[n] = '\0';
	elastic_conf_defaults(keys, &c, sizeof(c), NULL);
	assert_int_equal(
		elastic_conf_parse_text(keys, &c, sizeof(c), text, "t.conf", &err), -1);
	assert_non_null(strstr(err.text, "t.conf:1: line longer than"));
	assert_string_equal(c.host, "localhost");
	elastic_conf_free(keys, &c);
	free(text);
}

static void file_errors_name_the_file(void **state)
{
	struct cfg c;
	elastic_error_t err;
	char path[] = "/tmp/test_conf.XXXXXX";
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "ControllerPort=5\nDebug=on\n", 26), 26);
	close(fd);
	elastic_conf_defaults(keys, &c, sizeof(c), NULL);
	assert_int_equal(elastic_conf_parse_file(keys, &c, sizeof(c), path, &err), 0);
	assert_int_equal(c.port, 5);
	assert_int_equal(c.debug, 1);
	unlink(path);
	assert_int_equal(elastic_conf_parse_file(keys, &c, sizeof(c), path, &err), -1);
	assert_int_equal(errno, ENOENT);
	assert_non_null(strstr(err.text, path));
	assert_non_null(strstr(err.text, "cannot open"));
	elastic_conf_free(keys, &c);
	elastic_conf_free(keys, NULL);
}

/* What elastic_conf_print writes reads back as the same values. */
static void print_writes_what_parses_back(void **state)
{
	struct cfg c, back;
	elastic_error_t err = {""};
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	elastic_conf_defaults(keys, &c, sizeof(c), NULL);
	assert_int_equal(
		elastic_conf_parse_text(keys, &c, sizeof(c),
					"ControllerHost=ctl1\nControllerPort=7000\n"
					"Debug=yes\nPolicyMode=fifo\n",
					"t.conf", &err),
		0);
	assert_non_null(f = open_memstream(&text, &len));
	assert_int_equal(elastic_conf_print(keys, &c, f), 0);
	fclose(f);
	assert_string_equal(text, "ControllerHost=ctl1\nControllerPort=7000\nDebug=yes\n"
				  "PolicyMode=fifo\n");
	elastic_conf_defaults(keys, &back, sizeof(back), NULL);
	assert_int_equal(
		elastic_conf_parse_text(keys, &back, sizeof(back), text, "p", &err), 0);
	assert_string_equal(back.host, "ctl1");
	assert_int_equal(back.port, 7000);
	assert_int_equal(back.debug, 1);
	assert_int_equal(back.mode, 2);
	free(text);
	elastic_conf_free(keys, &c);
	elastic_conf_free(keys, &back);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_are_applied),
		cmocka_unit_test(parses_keys_comments_and_spaces),
		cmocka_unit_test(bad_input_is_named_and_changes_nothing),
		cmocka_unit_test(long_line_is_refused),
		cmocka_unit_test(file_errors_name_the_file),
		cmocka_unit_test(print_writes_what_parses_back),
	};
	return cmocka_run_group_tests_name("conf", tests, NULL, NULL);
}
