/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/http.c: the HTTP/1.x request check of the metrics endpoint:
 * only the request line matters, headers are skipped. */
#include "config.h"

#include <string.h>

#include "http.h"

/* Where the head ends (the byte after its empty line), or 0. */
static size_t _head_end(const char *b, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (b[i] == '\n' && b[i + 1] == '\n')
			return i + 2;
		if (i + 3 < len && b[i] == '\r' && b[i + 1] == '\n' && b[i + 2] == '\r' &&
		    b[i + 3] == '\n')
			return i + 4;
	}
	return 0;
}

static int _tchar(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	       (c >= '0' && c <= '9') || (c && strchr("!#$%&'*+-.^_`|~", c));
}

enum elastic_http_verdict elastic__http_request(const char *b, size_t len)
{
	size_t end, i = 0, m, t0, t1;

	if (len > ELASTIC_HTTP_HEAD_MAX)
		len = ELASTIC_HTTP_HEAD_MAX;
	end = _head_end(b, len);
	if (!end)
		return len >= ELASTIC_HTTP_HEAD_MAX ? ELASTIC_HTTP_TOO_LARGE
						    : ELASTIC_HTTP_MORE;
	/* method SP request-target SP HTTP/1.x CRLF (RFC 9112 section 3) */
	while (i < end && _tchar(b[i]))
		i++;
	m = i;
	if (m == 0 || i >= end || b[i] != ' ')
		return ELASTIC_HTTP_BAD;
	t0 = ++i;
	while (i < end && b[i] > ' ' && b[i] < 0x7f)
		i++;
	t1 = i;
	if (t1 == t0 || i >= end || b[i] != ' ')
		return ELASTIC_HTTP_BAD;
	i++;
	if (end - i < 9 || memcmp(b + i, "HTTP/1.", 7) != 0 || b[i + 7] < '0' ||
	    b[i + 7] > '9')
		return ELASTIC_HTTP_BAD;
	i += 8;
	if (i < end && b[i] == '\r')
		i++;
	if (i >= end || b[i] != '\n')
		return ELASTIC_HTTP_BAD;
	if (m != 3 || memcmp(b, "GET", 3) != 0)
		return ELASTIC_HTTP_METHOD;
	if (t1 - t0 >= 8 && memcmp(b + t0, "/metrics", 8) == 0 &&
	    (t1 - t0 == 8 || b[t0 + 8] == '?'))
		return ELASTIC_HTTP_METRICS;
	return ELASTIC_HTTP_NOT_FOUND;
}

int elastic__http_status(enum elastic_http_verdict v, const char **text)
{
	switch (v) {
	case ELASTIC_HTTP_METRICS:
		*text = "OK";
		return 200;
	case ELASTIC_HTTP_NOT_FOUND:
		*text = "Not Found";
		return 404;
	case ELASTIC_HTTP_METHOD:
		*text = "Method Not Allowed";
		return 405;
	case ELASTIC_HTTP_TOO_LARGE:
		*text = "Request Header Fields Too Large";
		return 431;
	default:
		*text = "Bad Request";
		return 400;
	}
}
