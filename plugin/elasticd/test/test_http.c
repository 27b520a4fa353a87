/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/test/test_http.c: the metrics endpoint's request check, as a
 * table of requests and verdicts. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "http.h"

static void verdicts(void **state)
{
	static const struct {
		const char *req;
		enum elastic_http_verdict v;
	} cases[] = {
		{"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", ELASTIC_HTTP_METRICS},
		{"GET /metrics HTTP/1.0\n\n", ELASTIC_HTTP_METRICS},
		{"GET /metrics?name[]=x HTTP/1.1\r\n\r\n", ELASTIC_HTTP_METRICS},
		{"GET /metricsx HTTP/1.1\r\n\r\n", ELASTIC_HTTP_NOT_FOUND},
		{"GET / HTTP/1.1\r\n\r\n", ELASTIC_HTTP_NOT_FOUND},
		{"POST /metrics HTTP/1.1\r\n\r\n", ELASTIC_HTTP_METHOD},
		{"HEAD /metrics HTTP/1.1\r\n\r\n", ELASTIC_HTTP_METHOD},
		{"GET /metrics HTTP/2.0\r\n\r\n", ELASTIC_HTTP_BAD},
		{"GET /metrics\r\n\r\n", ELASTIC_HTTP_BAD},
		{"GET  /metrics HTTP/1.1\r\n\r\n", ELASTIC_HTTP_BAD},
		{"\r\n\r\n", ELASTIC_HTTP_BAD},
		{"GET /metrics HTTP/1.1\r\n", ELASTIC_HTTP_MORE},
		{"GET /met", ELASTIC_HTTP_MORE},
		{"", ELASTIC_HTTP_MORE},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum elastic_http_verdict v =
			elastic__http_request(cases[i].req, strlen(cases[i].req));
		if (v != cases[i].v)
			fail_msg("'%s': verdict %d, expected %d", cases[i].req, v,
				 cases[i].v);
	}
}

/* A head without its end is refused once it fills the buffer, not before;
 * bytes after the head do not change the verdict; a NUL is a bad request. */
static void bounds(void **state)
{
	static char big[ELASTIC_HTTP_HEAD_MAX + 100];
	const char *text;
	(void)state;
	memset(big, 'a', sizeof(big));
	memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
	assert_int_equal(elastic__http_request(big, ELASTIC_HTTP_HEAD_MAX - 1),
			 ELASTIC_HTTP_MORE);
	assert_int_equal(elastic__http_request(big, ELASTIC_HTTP_HEAD_MAX),
			 ELASTIC_HTTP_TOO_LARGE);
	assert_int_equal(elastic__http_request(big, sizeof(big)), ELASTIC_HTTP_TOO_LARGE);
	const char body[] = "GET /metrics HTTP/1.1\r\n\r\nGARBAGE\r\n\r\n";
	assert_int_equal(elastic__http_request(body, sizeof(body) - 1),
			 ELASTIC_HTTP_METRICS);
	const char nul[] = "GET /me\0rics HTTP/1.1\r\n\r\n";
	assert_int_equal(elastic__http_request(nul, sizeof(nul) - 1), ELASTIC_HTTP_BAD);
	assert_int_equal(elastic__http_status(ELASTIC_HTTP_TOO_LARGE, &text), 431);
	assert_int_equal(elastic__http_status(ELASTIC_HTTP_METHOD, &text), 405);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(verdicts),
		cmocka_unit_test(bounds),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
