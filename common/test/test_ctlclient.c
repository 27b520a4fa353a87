/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/test/test_ctlclient.c: unit tests of the job-side channel client
 * without a controller: the address it takes, and how it reports and
 * retries a controller that is not there or a hello that cannot be sealed. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "ctlclient.h"

static void spec(void **state)
{
	struct elastic_ctlclient c;
	elastic_error_t err;
	assert_int_equal(elastic__ctl_init(&c, "ctl.example:6820", 7, &err), 0);
	assert_string_equal(c.host, "ctl.example");
	assert_int_equal(c.port, 6820);
	assert_int_equal(c.job, 7);
	assert_false(elastic__ctl_connected(&c));
	assert_int_equal(elastic__ctl_init(&c, "[::1]:1", 7, &err), 0); /* last colon */
	assert_string_equal(c.host, "[::1]");
	/* a primary and its backup, tried in that order */
	assert_int_equal(elastic__ctl_init(&c, "ctl1:6820,ctl2:6821", 7, &err), 0);
	assert_int_equal(c.naddr, 2);
	assert_string_equal(c.host, "ctl1");
	assert_string_equal(c.addr[1].host, "ctl2");
	assert_int_equal(c.addr[1].port, 6821);
	const char *bad[] = {
		"nocolon", ":6820", "h:",	   "h:0",	   "h:65536",
		"h:12x",   "h:1,",  "h:1,nocolon", "h:1,h2:99999", "a:1,b:1,c:1,d:1,e:1",
		NULL};
	for (int i = 0; bad[i]; i++) {
		errno = 0;
		assert_int_equal(elastic__ctl_init(&c, bad[i], 7, &err), -1);
		assert_int_equal(errno, EINVAL);
		assert_non_null(strstr(err.text, strrchr(bad[i], ',')
							 ? strrchr(bad[i], ',') + 1
							 : bad[i]));
	}
}

/* Not connected: status and ack fail, and change nothing but the step. */
static void not_connected(void **state)
{
	struct elastic_ctlclient c;
	elastic_error_t err;
	elastic__ctl_init_at(&c, "127.0.0.1", 9, 7);
	assert_int_equal(elastic__ctl_status(&c, 12, -1, &err), -1);
	assert_int_equal(c.step, 12); /* the next hello carries it */
	assert_int_equal(elastic__ctl_ack(&c, 1, 2, ELASTIC_ACK_OK, NULL, &err), -1);
	assert_false(elastic__ctl_connected(&c));
	elastic__ctl_fini(&c);
}

/* A TCP port on 127.0.0.1: listening (backlog only) or, closed, refusing. */
static int _port(int *fd, int listening)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	*fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*fd >= 0);
	assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
	if (listening)
		assert_int_equal(listen(*fd, 4), 0);
	else
		close(*fd);
	return ntohs(a.sin_port);
}

/* Nobody listens: each attempt is one DOWN (CONNECT) event, counted; the
 * next waits for the backoff, which doubles up to its maximum. */
static void refused(void **state)
{
	struct elastic_ctlclient c;
	struct elastic_ctl_ev ev;
	int fd;
	elastic__ctl_init_at(&c, "127.0.0.1", _port(&fd, 0), 7);
	c.backoff_min = c.backoff = 0.01;
	c.backoff_max = 0.04;
	assert_int_equal(elastic__ctl_next(&c, 0, &ev), ELASTIC_CTL_EV_DOWN);
	assert_int_equal(ev.down, ELASTIC_CTL_DOWN_CONNECT);
	assert_int_equal(ev.failures, 1);
	assert_true(ev.err.text[0]);
	/* not due yet: nothing, at once */
	assert_int_equal(elastic__ctl_next(&c, 0, &ev), ELASTIC_CTL_EV_NONE);
	/* due within the timeout: the next attempt */
	assert_int_equal(elastic__ctl_next(&c, 1000, &ev), ELASTIC_CTL_EV_DOWN);
	assert_int_equal(ev.failures, 2);
	assert_int_equal(elastic__ctl_next(&c, 1000, &ev), ELASTIC_CTL_EV_DOWN);
	assert_int_equal(elastic__ctl_next(&c, 1000, &ev), ELASTIC_CTL_EV_DOWN);
	assert_int_equal(ev.failures, 4);
	assert_true(c.backoff <= c.backoff_max);
	elastic__ctl_fini(&c);
}

/* Two addresses: a failed one is followed at once by the next; once both
 * failed, the backoff applies. */
static void next_address(void **state)
{
	struct elastic_ctlclient c;
	struct elastic_ctl_ev ev;
	elastic_error_t err;
	char spec[64];
	int fd1, fd2, p1 = _port(&fd1, 0), p2 = _port(&fd2, 0);

	snprintf(spec, sizeof(spec), "127.0.0.1:%d,127.0.0.1:%d", p1, p2);
	assert_int_equal(elastic__ctl_init(&c, spec, 7, &err), 0);
	c.backoff_min = c.backoff = 5;
	assert_int_equal(elastic__ctl_next(&c, 0, &ev), ELASTIC_CTL_EV_DOWN);
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", p1);
	assert_string_equal(ev.where, spec);
	assert_int_equal(c.port, p2); /* the next, due now */
	assert_int_equal(elastic__ctl_next(&c, 0, &ev), ELASTIC_CTL_EV_DOWN);
	snprintf(spec, sizeof(spec), "127.0.0.1:%d", p2);
	assert_string_equal(ev.where, spec);
	assert_int_equal(c.port, p1); /* back to the first, after the backoff */
	assert_int_equal(elastic__ctl_next(&c, 0, &ev), ELASTIC_CTL_EV_NONE);
	elastic__ctl_fini(&c);
}

/* Connected, but the hello cannot be sealed (no munged there): DOWN
 * (HELLO), the connection closed again. */
static void hello_unsealed(void **state)
{
	struct elastic_ctlclient c;
	struct elastic_ctl_ev ev;
	int fd;
	elastic__ctl_init_at(&c, "127.0.0.1", _port(&fd, 1), 7);
	c.munge_socket = "/nonexistent/munge.socket";
	assert_int_equal(elastic__ctl_next(&c, 0, &ev), ELASTIC_CTL_EV_DOWN);
	assert_int_equal(ev.down, ELASTIC_CTL_DOWN_HELLO);
	assert_int_equal(ev.failures, 1);
	assert_false(elastic__ctl_connected(&c));
	elastic__ctl_fini(&c);
	close(fd);
}

/* An elasticd older than the re-form counts refuses them as unknown keys
 * (its decoder's words, then it closes): recognised, so that the client
 * leaves them out from then on; other refusals are not that. */
static void old_controller_refuses_counts(void **state)
{
	struct elastic_msg m = {.type = ELASTIC_MSG_ERROR, .present = ELASTIC_K_REASON};
	(void)state;
	strcpy(m.reason, "line 5: unknown key 'reforms'");
	assert_true(elastic__ctl_refuses_rec(&m));
	strcpy(m.reason, "payload: line 6: unknown key 'recovery_ms'");
	assert_true(elastic__ctl_refuses_rec(&m));
	strcpy(m.reason, "line 5: unknown key 'recovery'");
	assert_true(elastic__ctl_refuses_rec(&m));
	strcpy(m.reason, "line 5: unknown key 'uid'");
	assert_false(elastic__ctl_refuses_rec(&m));
	strcpy(m.reason, "job 3 is not yours");
	assert_false(elastic__ctl_refuses_rec(&m));
	m.type = ELASTIC_MSG_END;
	strcpy(m.reason, "line 5: unknown key 'reforms'");
	assert_false(elastic__ctl_refuses_rec(&m));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(spec),
		cmocka_unit_test(not_connected),
		cmocka_unit_test(refused),
		cmocka_unit_test(next_address),
		cmocka_unit_test(hello_unsealed),
		cmocka_unit_test(old_controller_refuses_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
