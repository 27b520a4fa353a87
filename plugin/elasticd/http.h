/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/http.h: the HTTP/1.x request check of the metrics endpoint
 * (pure: bytes in, a verdict out; no sockets). */
#ifndef ELASTICD_HTTP_H
#define ELASTICD_HTTP_H

#include <stddef.h>

/* The largest request head read; a longer one is refused (431). */
#define ELASTIC_HTTP_HEAD_MAX 4096

enum elastic_http_verdict {
	ELASTIC_HTTP_MORE,	/* the head is not complete yet */
	ELASTIC_HTTP_METRICS,	/* GET /metrics (a query string is ignored) */
	ELASTIC_HTTP_NOT_FOUND, /* GET of another path (404) */
	ELASTIC_HTTP_METHOD,	/* a method other than GET (405) */
	ELASTIC_HTTP_TOO_LARGE, /* no end of head within ELASTIC_HTTP_HEAD_MAX (431) */
	ELASTIC_HTTP_BAD,	/* not an HTTP/1.x request line (400) */
};

/* The verdict on the first len bytes received on a connection. The head
 * ends with an empty line (CRLF CRLF, or LF LF); what follows it is not
 * read. Safe on any bytes, NUL included. */
enum elastic_http_verdict elastic__http_request(const char *buf, size_t len);

/* The status line's code and text of a verdict other than MORE. */
int elastic__http_status(enum elastic_http_verdict v, const char **text);

#endif
