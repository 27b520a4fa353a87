/* SPDX-License-Identifier: GPL-2.0-or-later */
/* launcher/test/test_orders.c: unit tests of elastic-run's book of the
 * controller's orders: which orders re-form the job, which grants stay
 * out, which releases are acknowledged and when. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "orders.h"

static char said[4096];

static void say(const char *fmt, ...)
{
	va_list ap;
	size_t n = strlen(said);
	va_start(ap, fmt);
	vsnprintf(said + n, sizeof(said) - n, fmt, ap);
	va_end(ap);
	strncat(said, "\n", sizeof(said) - strlen(said) - 1);
}

static struct elastic_msg msg(int type, uint32_t job, uint64_t order, uint32_t grant)
{
	struct elastic_msg m = {.type = type, .job = job, .order = order, .grant = grant};
	snprintf(m.node, sizeof(m.node), "node2");
	m.gpus = 2;
	return m;
}

static void release_once(void **state)
{
	struct elastic_orders o;
	struct elastic_msg m = msg(ELASTIC_MSG_RELEASE, 7, 41, 12);
	elastic__orders_init(&o, 7);
	said[0] = '\0';
	assert_false(elastic__orders_released(&o, 12));
	assert_int_equal(elastic__orders_take(&o, &m, say), 1);
	assert_true(elastic__orders_released(&o, 12));
	assert_non_null(strstr(said, "release grant 12 (order 41)"));
	/* the same grant again under a new order: nothing new to do, the ack
	 * goes under the new order */
	m.order = 42;
	assert_int_equal(elastic__orders_take(&o, &m, say), 0);
	assert_int_equal(o.nrel, 1);
	/* not acknowledged before the job runs without it */
	assert_int_equal(elastic__orders_next_ack(&o), -1);
	elastic__orders_releases_done(&o);
	assert_int_equal(o.ack_due, 1);
	assert_int_equal(elastic__orders_next_ack(&o), 0);
	assert_int_equal(o.rel[0].order, 42);
	o.rel[0].acked = 1;
	o.ack_due = 0;
	assert_int_equal(elastic__orders_next_ack(&o), -1);
	/* ordered again once acknowledged (an elasticd that took over): the
	 * ack goes again, at once, as the job already runs without it */
	m.order = 43;
	said[0] = '\0';
	assert_int_equal(elastic__orders_take(&o, &m, say), 0);
	assert_int_equal(o.ack_due, 1);
	assert_int_equal(elastic__orders_next_ack(&o), 0);
	assert_int_equal(o.rel[0].order, 43);
	assert_non_null(strstr(said, "release grant 12 (order 43) again"));
}

/* A release that arrives after releases_done waits for the next launch. */
static void release_after_done(void **state)
{
	struct elastic_orders o;
	struct elastic_msg a = msg(ELASTIC_MSG_RELEASE, 7, 1, 10);
	struct elastic_msg b = msg(ELASTIC_MSG_RELEASE, 7, 2, 11);
	elastic__orders_init(&o, 7);
	elastic__orders_take(&o, &a, say);
	elastic__orders_releases_done(&o);
	elastic__orders_take(&o, &b, say);
	assert_int_equal(elastic__orders_next_ack(&o), 0);
	o.rel[0].acked = 1;
	assert_int_equal(elastic__orders_next_ack(&o), -1);
	elastic__orders_releases_done(&o);
	assert_int_equal(elastic__orders_next_ack(&o), 1);
}

static int _uses_11(uint32_t grant, const void *arg)
{
	(void)arg;
	return grant == 11;
}

/* A planned shrink in place: of two released grants, only the one whose
 * ranks left is done; the other waits (its ranks still run). */
static void release_done_unless_in_use(void **state)
{
	struct elastic_orders o;
	struct elastic_msg a = msg(ELASTIC_MSG_RELEASE, 7, 1, 10);
	struct elastic_msg b = msg(ELASTIC_MSG_RELEASE, 7, 2, 11);
	elastic__orders_init(&o, 7);
	elastic__orders_take(&o, &a, say);
	elastic__orders_take(&o, &b, say);
	elastic__orders_releases_done_unless(&o, _uses_11, NULL);
	assert_int_equal(elastic__orders_next_ack(&o), 0);
	o.rel[0].acked = 1;
	assert_int_equal(elastic__orders_next_ack(&o), -1);
	elastic__orders_releases_done_unless(&o, NULL, NULL);
	assert_int_equal(elastic__orders_next_ack(&o), 1);
}

static void grants_and_others(void **state)
{
	struct elastic_orders o;
	struct elastic_msg g = msg(ELASTIC_MSG_GRANT, 7, 0, 20);
	struct elastic_msg t = msg(ELASTIC_MSG_TARGET, 7, 3, 0);
	struct elastic_msg e = msg(ELASTIC_MSG_ERROR, 7, 0, 0);
	struct elastic_msg other = msg(ELASTIC_MSG_RELEASE, 8, 5, 30);
	elastic__orders_init(&o, 7);
	said[0] = '\0';
	assert_int_equal(elastic__orders_take(&o, &g, say), 1);
	assert_non_null(strstr(said, "grant 20 started (2 GPUs on node2)"));
	assert_int_equal(elastic__orders_take(&o, &g, say), 0); /* known */
	assert_int_equal(elastic__orders_take(&o, &t, say), 0);
	assert_int_equal(elastic__orders_take(&o, &e, say), 0);
	/* an order about another job changes nothing */
	assert_int_equal(elastic__orders_take(&o, &other, say), 0);
	assert_false(elastic__orders_released(&o, 30));
	assert_non_null(strstr(said, "message about job 8 ignored (this is job 7)"));
}

/* An order that needs a re-form stays unheeded, whoever took it, until
 * one place acts on the book: a target, an error, a grant known already or
 * another job's order leave it as it was; heeding answers once. */
static void heed_once(void **state)
{
	struct elastic_orders o;
	struct elastic_msg g = msg(ELASTIC_MSG_GRANT, 7, 0, 20);
	struct elastic_msg rel = msg(ELASTIC_MSG_RELEASE, 7, 4, 21);
	struct elastic_msg t = msg(ELASTIC_MSG_TARGET, 7, 3, 0);
	struct elastic_msg other = msg(ELASTIC_MSG_GRANT, 8, 0, 30);
	elastic__orders_init(&o, 7);
	assert_int_equal(elastic__orders_heed(&o), 0);
	assert_int_equal(elastic__orders_take(&o, &t, say), 0);
	assert_int_equal(elastic__orders_take(&o, &other, say), 0);
	assert_int_equal(elastic__orders_heed(&o), 0);
	assert_int_equal(elastic__orders_take(&o, &g, say), 1);
	/* later messages that ask nothing keep it */
	assert_int_equal(elastic__orders_take(&o, &t, say), 0);
	assert_int_equal(elastic__orders_take(&o, &g, say), 0);
	assert_int_equal(elastic__orders_heed(&o), 1);
	assert_int_equal(elastic__orders_heed(&o), 0);
	assert_int_equal(elastic__orders_take(&o, &rel, say), 1);
	/* the same release again under a new order is nothing new, and
	 * answers 0 though the first is still unheeded */
	rel.order = 5;
	assert_int_equal(elastic__orders_take(&o, &rel, say), 0);
	assert_int_equal(elastic__orders_heed(&o), 1);
	assert_int_equal(elastic__orders_heed(&o), 0);
	(void)state;
}

static int known_21(uint32_t grant, const void *arg)
{
	(void)arg;
	return grant == 21;
}

/* GPUs the announced grants add by the controller's word: not those ordered
 * released, not those the caller knows (already in the launched set). */
static void new_gpus(void **state)
{
	struct elastic_orders o;
	struct elastic_msg g20 = msg(ELASTIC_MSG_GRANT, 7, 0, 20);
	struct elastic_msg g21 = msg(ELASTIC_MSG_GRANT, 7, 0, 21);
	struct elastic_msg g22 = msg(ELASTIC_MSG_GRANT, 7, 0, 22);
	struct elastic_msg r22 = msg(ELASTIC_MSG_RELEASE, 7, 9, 22);
	elastic__orders_init(&o, 7);
	assert_int_equal(elastic__orders_new_gpus(&o, known_21, NULL), 0);
	g20.gpus = 3;
	elastic__orders_take(&o, &g20, say);
	elastic__orders_take(&o, &g21, say);
	elastic__orders_take(&o, &g22, say);
	assert_int_equal(elastic__orders_new_gpus(&o, known_21, NULL), 3 + 2);
	elastic__orders_take(&o, &r22, say);
	assert_int_equal(elastic__orders_new_gpus(&o, known_21, NULL), 3);
}

/* A grant announced as started that Slurm no longer lists ended on its own
 * (a lost node): it leaves the book and adds nothing any more; one ordered
 * released stays (its acknowledgement is still due). */
static void forget_ended(void **state)
{
	struct elastic_orders o;
	struct elastic_msg g20 = msg(ELASTIC_MSG_GRANT, 7, 0, 20);
	struct elastic_msg g21 = msg(ELASTIC_MSG_GRANT, 7, 0, 21);
	struct elastic_msg g22 = msg(ELASTIC_MSG_GRANT, 7, 0, 22);
	struct elastic_msg r22 = msg(ELASTIC_MSG_RELEASE, 7, 9, 22);
	(void)state;
	elastic__orders_init(&o, 7);
	g20.gpus = 3;
	elastic__orders_take(&o, &g20, say);
	elastic__orders_take(&o, &g21, say);
	elastic__orders_take(&o, &g22, say);
	elastic__orders_take(&o, &r22, say);
	assert_int_equal(elastic__orders_forget_ended(&o, known_21, NULL), 1);
	assert_int_equal(o.ngrow, 2); /* 21 listed, 22 released */
	assert_int_equal(elastic__orders_new_gpus(&o, known_21, NULL), 0);
	assert_true(elastic__orders_released(&o, 22));
	assert_int_equal(elastic__orders_forget_ended(&o, known_21, NULL), 0);
	/* announced again (a new grant has a new id; the same id is news) */
	assert_int_equal(elastic__orders_take(&o, &g20, say), 1);
}

/* The book is bounded: the oldest release is forgotten. */
static void release_overflow(void **state)
{
	struct elastic_orders o;
	elastic__orders_init(&o, 7);
	for (uint32_t g = 1; g <= ELASTIC_ORDERS_MAX + 1; g++) {
		struct elastic_msg m = msg(ELASTIC_MSG_RELEASE, 7, g, g);
		assert_int_equal(elastic__orders_take(&o, &m, say), 1);
		said[0] = '\0';
	}
	assert_int_equal(o.nrel, ELASTIC_ORDERS_MAX);
	assert_false(elastic__orders_released(&o, 1));
	assert_true(elastic__orders_released(&o, ELASTIC_ORDERS_MAX + 1));
}

/* A job resized for days: grants started and released by the thousand.
 * Each new grant must still count (the book once stopped recording grants
 * after 64 announcements: the job never grew again), and each released one
 * must stay out. */
static int known_none(uint32_t grant, const void *arg)
{
	(void)grant;
	(void)arg;
	return 0;
}

static void long_resize(void **state)
{
	struct elastic_orders o;
	elastic__orders_init(&o, 7);
	for (uint32_t g = 100; g < 100 + 10 * ELASTIC_ORDERS_MAX; g++) {
		struct elastic_msg gm = msg(ELASTIC_MSG_GRANT, 7, 0, g);
		struct elastic_msg rm = msg(ELASTIC_MSG_RELEASE, 7, g, g);
		assert_int_equal(elastic__orders_take(&o, &gm, say), 1);
		assert_int_equal(elastic__orders_new_gpus(&o, known_none, NULL), 2);
		assert_int_equal(elastic__orders_take(&o, &rm, say), 1);
		assert_true(elastic__orders_released(&o, g));
		assert_int_equal(elastic__orders_new_gpus(&o, known_none, NULL), 0);
		elastic__orders_releases_done(&o);
		int i = elastic__orders_next_ack(&o);
		assert_true(i >= 0);
		assert_int_equal(o.rel[i].grant, g);
		o.rel[i].acked = 1;
		said[0] = '\0';
	}
	assert_true(o.ngrow <= ELASTIC_ORDERS_MAX && o.nrel <= ELASTIC_ORDERS_MAX);
}

/* Grants given back while the controller does not answer wait in the
 * book, once each, the oldest dropped when it is full. */
static void give_back_book(void **state)
{
	struct elastic_orders o;
	struct elastic_ctlclient c;
	(void)state;
	elastic__orders_init(&o, 7);
	elastic__ctl_init_at(&c, "127.0.0.1", 1, 7); /* never connected */
	said[0] = '\0';
	elastic__orders_give_back(&o, &c, 12, "no step began there", say);
	assert_int_equal(o.ngive, 1);
	assert_int_equal(o.give[0].told, 0);
	assert_string_equal(o.give[0].reason, "no step began there");
	assert_non_null(
		strstr(said, "not connected: grant 12 is given back once it answers"));
	/* the same grant again: one entry, the latest reason */
	elastic__orders_give_back(&o, &c, 12, "again", say);
	assert_int_equal(o.ngive, 1);
	assert_string_equal(o.give[0].reason, "again");
	for (uint32_t g = 100; g < 100 + ELASTIC_ORDERS_MAX; g++)
		elastic__orders_give_back(&o, &c, g, NULL, say);
	assert_int_equal(o.ngive, ELASTIC_ORDERS_MAX);
	assert_int_equal(o.give[0].grant, 100);
	assert_int_equal(o.give[ELASTIC_ORDERS_MAX - 1].grant,
			 100 + ELASTIC_ORDERS_MAX - 1);
	assert_string_equal(o.give[1].reason, "");
	elastic__ctl_fini(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(release_once),
		cmocka_unit_test(release_after_done),
		cmocka_unit_test(grants_and_others),
		cmocka_unit_test(heed_once),
		cmocka_unit_test(new_gpus),
		cmocka_unit_test(forget_ended),
		cmocka_unit_test(release_overflow),
		cmocka_unit_test(long_resize),
		cmocka_unit_test(release_done_unless_in_use),
		cmocka_unit_test(give_back_book),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
