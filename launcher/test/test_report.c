/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_report.c: unit tests of the rank-end report lines:
 * what a rank wrapper sends (with where it ran) is what elastic-run reads,
 * lines of another run, launch or shape are dropped, and which GPUs hold a
 * rank that ended. */
#include "config.h"

#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "gpuset.h"
#include "report.h"

/* A report book for a launch of n ranks, without its socket. */
static void book(struct elastic_report *r, int n)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
	snprintf(r->token, sizeof(r->token), "00112233445566778899aabbccddeeff");
	assert_int_equal(elastic__report_begin(r, n), 0);
}

/* A report book for a launch of n ranks, listening: to is where a rank on
 * this host sends ("127.0.0.1:PORT", at least 64 bytes). */
static void listening(struct elastic_report *r, int n, char *to)
{
	elastic_error_t err;

	assert_int_equal(elastic__report_open(r, &err), 0);
	assert_int_equal(elastic__report_begin(r, n), 0);
	snprintf(to, 64, "127.0.0.1%s", strrchr(r->addr, ':'));
}

static void round_trip(void **state)
{
	struct elastic_report r;
	struct elastic_rank_end e;
	char line[200];
	int rank = -1;

	(void)state;
	book(&r, 4);
	elastic__report_format(line, sizeof(line), r.token, r.gen, 3,
			       ELASTIC_RANK_SIGNALED, 9, "node2", 1);
	assert_non_null(strstr(line, " signal 9 node2 1\n"));
	assert_int_equal(elastic__report_parse(&r, line, &rank, &e), 0);
	assert_int_equal(rank, 3);
	assert_int_equal(e.how, ELASTIC_RANK_SIGNALED);
	assert_int_equal(e.value, 9);
	assert_string_equal(e.host, "node2");
	assert_int_equal(e.gpu, 1);
	/* without where it ran (no host, or one that cannot be a field) */
	elastic__report_format(line, sizeof(line), r.token, r.gen, 2, ELASTIC_RANK_EXITED,
			       75, NULL, 0);
	assert_int_equal(elastic__report_parse(&r, line, &rank, &e), 0);
	assert_int_equal(rank, 2);
	assert_int_equal(e.how, ELASTIC_RANK_EXITED);
	assert_string_equal(e.host, "");
	assert_int_equal(e.gpu, -1);
	elastic__report_format(line, sizeof(line), r.token, r.gen, 2, ELASTIC_RANK_EXITED,
			       0, "bad host", 0);
	assert_null(strstr(line, "bad"));
	assert_int_equal(elastic__report_parse(&r, line, &rank, &e), 0);
	assert_int_equal(e.gpu, -1);
	elastic__report_close(&r);
}

static void bad_lines(void **state)
{
	struct elastic_report r;
	struct elastic_rank_end e;
	char line[300];
	int rank;
	const char *tail[] = {
		"exit 0 node2",		/* host without its GPU */
		"exit 0 node2 x",	/* GPU not a number */
		"exit 0 node2 -2",	/* no such GPU */
		"exit 0 node2 4096",	/* no such GPU */
		"exit 0 node2 1 extra", /* a field more */
		"exit 256",		/* not an exit status */
		"stop 0",		/* not an end */
	};

	(void)state;
	book(&r, 4);
	for (size_t i = 0; i < sizeof(tail) / sizeof(tail[0]); i++) {
		snprintf(line, sizeof(line), "ELASTICRUN1 %s %u 1 %s\n", r.token, r.gen,
			 tail[i]);
		assert_int_equal(elastic__report_parse(&r, line, &rank, &e), -1);
	}
	/* another launch's, another run's, a rank out of range */
	snprintf(line, sizeof(line), "ELASTICRUN1 %s %u 1 exit 0\n", r.token, r.gen + 1);
	assert_int_equal(elastic__report_parse(&r, line, &rank, &e), -1);
	snprintf(line, sizeof(line), "ELASTICRUN1 ffff %u 1 exit 0\n", r.gen);
	assert_int_equal(elastic__report_parse(&r, line, &rank, &e), -1);
	snprintf(line, sizeof(line), "ELASTICRUN1 %s %u 4 exit 0\n", r.token, r.gen);
	assert_int_equal(elastic__report_parse(&r, line, &rank, &e), -1);
	/* a host name longer than a field */
	snprintf(line, sizeof(line), "ELASTICRUN1 %s %u 1 exit 0 %070d 1\n", r.token,
		 r.gen, 7);
	assert_int_equal(elastic__report_parse(&r, line, &rank, &e), -1);
	elastic__report_close(&r);
}

static void ended_on(void **state)
{
	struct elastic_report r;

	(void)state;
	book(&r, 4);
	assert_false(elastic__report_ended_on(&r, "node2", 0)); /* nothing reported */
	r.end[3] = (struct elastic_rank_end){
		.how = ELASTIC_RANK_SIGNALED, .value = 9, .host = "node2", .gpu = 1};
	r.end[1] = (struct elastic_rank_end){
		.how = ELASTIC_RANK_EXITED, .value = 1, .gpu = -1};
	assert_true(elastic__report_ended_on(&r, "node2", 1));
	assert_false(elastic__report_ended_on(&r, "node2", 0));
	assert_false(elastic__report_ended_on(&r, "node1", 1));
	assert_false(
		elastic__report_ended_on(&r, "", -1)); /* one that did not say where */
	/* a new launch forgets the ends of the last */
	assert_int_equal(elastic__report_begin(&r, 4), 0);
	assert_false(elastic__report_ended_on(&r, "node2", 1));
	elastic__report_close(&r);
}

/* Which ends are failures (a GPU left with no rank), and the ranks that
 * reported from a host (lost.c's count). */
static void failed_on_and_from(void **state)
{
	struct elastic_report r;
	static const struct {
		int how, value, failed;
	} t[] = {
		{ELASTIC_RANK_SIGNALED, 9, 1}, {ELASTIC_RANK_EXITED, 1, 1},
		{ELASTIC_RANK_EXITED, 0, 0},   {ELASTIC_RANK_EXITED, 75, 0},
		{ELASTIC_RANK_EXITED, 76, 0},  {ELASTIC_RANK_UNKNOWN, 0, 0},
	};

	(void)state;
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		book(&r, 2);
		r.end[1] = (struct elastic_rank_end){
			.how = t[i].how, .value = t[i].value, .host = "node2", .gpu = 3};
		if (elastic__report_failed_on(&r, "node2", 3) != t[i].failed)
			fail_msg("how %d value %d: expected failed %d", t[i].how,
				 t[i].value, t[i].failed);
		assert_false(elastic__report_failed_on(&r, "node2", 2));
		assert_false(elastic__report_failed_on(&r, "node1", 3));
		assert_int_equal(elastic__report_from(&r, "node2"),
				 t[i].how != ELASTIC_RANK_UNKNOWN);
		assert_int_equal(elastic__report_from(&r, "node1"), 0);
		elastic__report_close(&r);
	}
}

static void cause(void **state)
{
	struct elastic_report r;
	char buf[200];

	(void)state;
	book(&r, 4);
	assert_int_equal(elastic__report_cause(&r, 75, buf, sizeof(buf)), -1);
	r.end[0] = (struct elastic_rank_end){
		.how = ELASTIC_RANK_EXITED, .value = 0, .gpu = -1};
	r.end[1] = (struct elastic_rank_end){
		.how = ELASTIC_RANK_EXITED, .value = 75, .gpu = -1};
	r.end[2] = (struct elastic_rank_end){.how = ELASTIC_RANK_SIGNALED,
					     .value = SIGKILL,
					     .host = "node1",
					     .gpu = 0};
	/* ok, asked to re-form, killed from outside: no cause of its own */
	assert_int_equal(elastic__report_cause(&r, 75, buf, sizeof(buf)), -1);
	r.end[3] = (struct elastic_rank_end){
		.how = ELASTIC_RANK_EXITED, .value = 1, .host = "node2", .gpu = 3};
	assert_int_equal(elastic__report_cause(&r, 75, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "rank 3 on node2 GPU 3: exit status 1");
	/* a signal of its own comes before an error status */
	r.end[1] = (struct elastic_rank_end){
		.how = ELASTIC_RANK_SIGNALED, .value = SIGBUS, .host = "node1", .gpu = 1};
	assert_int_equal(elastic__report_cause(&r, 75, buf, sizeof(buf)), 0);
	assert_non_null(strstr(buf, "rank 1 on node1 GPU 1: killed by signal 7 ("));
	elastic__report_close(&r);
}

/* A line sent (connect, send, close) before elastic-run polls is taken by
 * one poll: the drain after mpirun's end stops at the first poll that
 * takes nothing. */
static void one_poll(void **state)
{
	struct elastic_report r;
	char line[200], to[64];

	(void)state;
	listening(&r, 2, to);
	elastic__report_format(line, sizeof(line), r.token, r.gen, 1, ELASTIC_RANK_EXITED,
			       75, "node1", 3);
	assert_int_equal(elastic__report_send(to, line), 0);
	assert_int_equal(elastic__report_poll(&r, 1000), 1);
	assert_int_equal(r.end[1].how, ELASTIC_RANK_EXITED);
	assert_int_equal(r.end[1].value, 75);
	assert_int_equal(r.end[0].how, ELASTIC_RANK_UNKNOWN);
	elastic__report_close(&r);
}

/* What a rank says of itself from the environment elastic-run gives it
 * (libelastic at a planned re-form, the wrapper after the program): its
 * rank in the launch's world (a joiner's after its base), where it ran, and
 * nothing at all outside elastic-run. */
static void end_from_env(void **state)
{
	struct elastic_report r;
	char to[64], gen[16];

	(void)state;
	listening(&r, 4, to);
	snprintf(gen, sizeof(gen), "%u", r.gen);
	unsetenv("ELASTIC_RUN_REPORT");
	assert_int_equal(elastic__report_end(ELASTIC_RANK_EXITED, 75), 1);
	setenv("ELASTIC_RUN_REPORT", to, 1);
	setenv("ELASTIC_RUN_TOKEN", r.token, 1);
	setenv("ELASTIC_RUN_GEN", gen, 1);
	setenv("OMPI_COMM_WORLD_RANK", "1", 1);
	setenv("ELASTIC_RUN_JOIN_BASE", "2", 1);
	setenv("SLURMD_NODENAME", "node7", 1);
	setenv("ELASTIC_GPU", "5", 1);
	assert_int_equal(elastic__report_end(ELASTIC_RANK_EXITED, 75), 0);
	assert_int_equal(elastic__report_poll(&r, 1000), 1);
	assert_int_equal(r.end[3].how, ELASTIC_RANK_EXITED);
	assert_int_equal(r.end[3].value, 75);
	assert_string_equal(r.end[3].host, "node7");
	assert_int_equal(r.end[3].gpu, 5);
	assert_int_equal(r.end[1].how, ELASTIC_RANK_UNKNOWN);
	/* the same end told twice (the program, then its wrapper) is one */
	unsetenv("ELASTIC_RUN_JOIN_BASE");
	setenv("OMPI_COMM_WORLD_RANK", "3", 1);
	assert_int_equal(elastic__report_end(ELASTIC_RANK_EXITED, 75), 0);
	assert_int_equal(elastic__report_poll(&r, 1000), 0);
	/* nobody listening: -1, within the send's bound */
	elastic__report_close(&r);
	assert_int_equal(elastic__report_end(ELASTIC_RANK_EXITED, 75), -1);
	const char *vars[] = {"ELASTIC_RUN_REPORT", "ELASTIC_RUN_TOKEN",
			      "ELASTIC_RUN_GEN",    "OMPI_COMM_WORLD_RANK",
			      "SLURMD_NODENAME",    "ELASTIC_GPU"};
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		unsetenv(vars[i]);
}

/* A rank's error text: a short one arrives whole (newlines, backslashes);
 * a long one keeps its first line and its end, from a line's start; a line
 * of another launch or token is dropped; the text of the first rank that
 * sent one is kept by the poll, over a real socket. */
static void error_text(void **state)
{
	struct elastic_report r;
	static char line[ELASTIC_REPORT_ERROR_LINE], text[ELASTIC_REPORT_ERROR_MAX],
		big[8192];
	char to[64];
	int rank = -1;

	(void)state;
	book(&r, 4);
	const char *tb =
		"Traceback (most recent call last):\n  File \"a\\b.py\", line 3\n"
		"OSError: [Errno 2] no\tsuch\n\n";
	elastic__report_format_error(line, sizeof(line), r.token, r.gen, 2, tb);
	assert_ptr_equal(strchr(line, '\n'), line + strlen(line) - 1); /* one line */
	assert_int_equal(elastic__report_parse_error(&r, line, &rank, text), 0);
	assert_int_equal(rank, 2);
	assert_string_equal(text,
			    "Traceback (most recent call last):\n  File \"a\\b.py\", "
			    "line 3\nOSError: [Errno 2] no\tsuch");
	/* not an end line, and an end line is not an error line */
	struct elastic_rank_end e;
	assert_int_equal(elastic__report_parse(&r, line, &rank, &e), -1);
	char end[200];
	elastic__report_format(end, sizeof(end), r.token, r.gen, 1, ELASTIC_RANK_EXITED,
			       1, "node1", 0);
	assert_int_equal(elastic__report_parse_error(&r, end, &rank, text), -1);
	r.gen++;
	assert_int_equal(elastic__report_parse_error(&r, line, &rank, text), -1);
	r.gen--;

	/* 8 KB of frames: the first line, "  ...", then the end */
	int n = snprintf(big, sizeof(big), "Traceback (most recent call last):\n");
	for (int k = 0; n < (int)sizeof(big) - 200; k++)
		n += snprintf(big + n, sizeof(big) - n,
			      "  File \"f.py\", line %d, in g\n", k);
	snprintf(big + n, sizeof(big) - n, "ValueError: the end\n");
	elastic__report_format_error(line, sizeof(line), r.token, r.gen, 0, big);
	assert_true(strlen(line) < sizeof(line));
	assert_int_equal(elastic__report_parse_error(&r, line, &rank, text), 0);
	assert_true(strlen(text) < sizeof(text));
	assert_memory_equal(text, "Traceback (most recent call last):\n  ...\n  File ",
			    47);
	assert_non_null(strstr(text, "\nValueError: the end"));
	assert_string_equal(strstr(text, "ValueError"), "ValueError: the end");
	elastic__report_close(&r);

	/* through the socket: the first text is kept, the second is not */
	listening(&r, 2, to);
	assert_int_equal(r.err_from, 0);
	elastic__report_format_error(line, sizeof(line), r.token, r.gen, 1, big);
	assert_int_equal(elastic__report_send(to, line), 0);
	elastic__report_poll(&r, 1000);
	assert_int_equal(r.err_from, 2);
	elastic__report_format_error(line, sizeof(line), r.token, r.gen, 0, tb);
	assert_int_equal(elastic__report_send(to, line), 0);
	elastic__report_poll(&r, 1000);
	assert_int_equal(r.err_from, 2);
	assert_non_null(strstr(r.err_text, "ValueError: the end"));
	struct elastic_report_summary s;
	elastic__report_summary(&r, 75, &s);
	assert_int_equal(s.raised, 1);
	/* a new launch forgets it */
	assert_int_equal(elastic__report_begin(&r, 2), 0);
	assert_int_equal(r.err_from, 0);
	elastic__report_close(&r);
}

static const struct elastic_srun *heard;
static char heard_text[ELASTIC_REPORT_SRUN_TEXT];
static void on_said(const struct elastic_srun *s, const char *text)
{
	heard = s;
	snprintf(heard_text, sizeof(heard_text), "%s", text);
}

/* What an srun of a launch says, and a step's start, reach the book; lines
 * of another launch or run do not. */
static void srun_lines(void **state)
{
	struct elastic_report r;
	const struct elastic_srun *said;
	char line[ELASTIC_REPORT_SRUN_LINE];

	(void)state;
	book(&r, 2);
	r.on_said = on_said;
	elastic__report_format_srun(
		line, sizeof(line), r.token, r.gen, 41, "node2",
		"error: Unable to create step for job 41: Job/step already completing\\x");
	assert_int_equal(elastic__report_take_srun(&r, line, &said), 0);
	assert_non_null(said);
	assert_string_equal(
		said->said,
		"error: Unable to create step for job 41: Job/step already completing\\x");
	assert_int_equal(said->started, 0);
	assert_ptr_equal(elastic__report_srun(&r, 41, "node2"), said);
	assert_null(elastic__report_srun(&r, 41, "node1"));
	/* the step began */
	elastic__report_format_srun(line, sizeof(line), r.token, r.gen, 41, "node2",
				    NULL);
	assert_int_equal(elastic__report_take_srun(&r, line, &said), 0);
	assert_null(said);
	assert_int_equal(elastic__report_srun(&r, 41, "node2")->started, 1);
	assert_int_equal(r.nsrun, 1);
	/* another launch's, another run's, and a rank's end are not such lines */
	elastic__report_format_srun(line, sizeof(line), r.token, r.gen + 1, 42, "node2",
				    NULL);
	assert_int_equal(elastic__report_take_srun(&r, line, &said), -1);
	elastic__report_format_srun(line, sizeof(line), "ffff", r.gen, 42, "node2", NULL);
	assert_int_equal(elastic__report_take_srun(&r, line, &said), -1);
	elastic__report_format(line, sizeof(line), r.token, r.gen, 1, ELASTIC_RANK_EXITED,
			       0, "node2", 0);
	assert_int_equal(elastic__report_take_srun(&r, line, &said), -1);
	/* a new launch forgets them */
	assert_int_equal(elastic__report_begin(&r, 2), 0);
	assert_int_equal(r.nsrun, 0);
	free(r.end);
}

static void note(unsigned long job, const char *host, int daemon, int tried,
		 const struct elastic_srun *s, void *arg)
{
	char *out = arg;
	size_t o = strlen(out);
	snprintf(out + o, 512 - o, "%s%s:%lu:%s%s:%s", o ? " " : "", host, job,
		 daemon ? "daemon" : "rank", tried ? "" : "(untried)", s ? s->said : "-");
}

/* The steps a launch needs: on other hosts the daemon's in the host's job,
 * and a rank's in each other job holding a GPU; mpirun's own is not one. */
static void no_step(void **state)
{
	struct elastic_report r;
	static struct elastic_gpuset set;
	const struct elastic_srun *said;
	char line[ELASTIC_REPORT_SRUN_LINE], out[512] = "";

	(void)state;
	book(&r, 6);
	memset(&set, 0, sizeof(set));
	set.nhosts = 2;
	set.total = 6;
	/* node1: the job's own 2 GPUs and 2 of grant 12 */
	snprintf(set.host[0].name, sizeof(set.host[0].name), "node1");
	set.host[0].job = 10;
	set.host[0].ngpus = 4;
	unsigned long j1[] = {10, 10, 12, 12};
	/* node2: grant 13 hosts the daemon, grant 14 a GPU too */
	snprintf(set.host[1].name, sizeof(set.host[1].name), "node2");
	set.host[1].job = 13;
	set.host[1].ngpus = 2;
	unsigned long j2[] = {13, 14};
	for (int g = 0; g < 4; g++) {
		set.host[0].gpu[g] = g;
		set.host[0].gpu_job[g] = j1[g];
	}
	for (int g = 0; g < 2; g++) {
		set.host[1].gpu[g] = g;
		set.host[1].gpu_job[g] = j2[g];
	}
	assert_int_equal(elastic__report_no_step(&r, &set, "node1", 10, note, out), 3);
	/* (no rank's srun is tried while a daemon's step has not begun) */
	assert_string_equal(out, "node1:12:rank(untried):- node2:13:daemon:- "
				 "node2:14:rank(untried):-");
	/* grant 12's step began; 13's srun said why it has none */
	elastic__report_format_srun(line, sizeof(line), r.token, r.gen, 12, "node1",
				    NULL);
	assert_int_equal(elastic__report_take_srun(&r, line, &said), 0);
	elastic__report_format_srun(line, sizeof(line), r.token, r.gen, 13, "node2",
				    "Cancelled pending job step with signal 15");
	assert_int_equal(elastic__report_take_srun(&r, line, &said), 0);
	out[0] = '\0';
	assert_int_equal(elastic__report_no_step(&r, &set, "node1", 10, note, out), 2);
	assert_string_equal(out,
			    "node2:13:daemon:Cancelled pending job step with signal 15 "
			    "node2:14:rank(untried):-");
	/* srun's error is kept over a line it says after */
	elastic__report_format_srun(line, sizeof(line), r.token, r.gen, 13, "node2",
				    "error: Unable to create step for job 13");
	assert_int_equal(elastic__report_take_srun(&r, line, &said), 0);
	elastic__report_format_srun(line, sizeof(line), r.token, r.gen, 13, "node2",
				    "Job step aborted");
	assert_int_equal(elastic__report_take_srun(&r, line, &said), 0);
	assert_string_equal(said->said, "error: Unable to create step for job 13");
	/* the daemon began: the rank's srun on node2 is tried */
	elastic__report_format_srun(line, sizeof(line), r.token, r.gen, 13, "node2",
				    NULL);
	assert_int_equal(elastic__report_take_srun(&r, line, &said), 0);
	out[0] = '\0';
	assert_int_equal(elastic__report_no_step(&r, &set, "node1", 10, note, out), 1);
	assert_string_equal(out, "node2:14:rank:-");
	/* run from node2 (not in the set's first host): node1's daemon too */
	out[0] = '\0';
	assert_int_equal(elastic__report_no_step(&r, &set, "node2", 13, note, out), 2);
	assert_string_equal(out, "node1:10:daemon:- node2:14:rank(untried):-");
	free(r.end);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(round_trip),	      cmocka_unit_test(bad_lines),
		cmocka_unit_test(ended_on),	      cmocka_unit_test(cause),
		cmocka_unit_test(one_poll),	      cmocka_unit_test(end_from_env),
		cmocka_unit_test(failed_on_and_from), cmocka_unit_test(error_text),
		cmocka_unit_test(srun_lines),	      cmocka_unit_test(no_step),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
