/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/fuzz_http.c: libFuzzer target for the metrics endpoint's
 * HTTP request check. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* A copy of exactly size bytes, so that ASan sees any read past it. */
	char *b = malloc(size ? size : 1);
	enum elastic_http_verdict v, w;
	const char *text;

	if (!b)
		return 0;
	memcpy(b, data, size);
	v = elastic__http_request(b, size);
	/* Bytes arrive in pieces: once the head is complete the verdict no
	 * longer changes with more bytes, and every prefix of a decided head
	 * is undecided or decided the same way. */
	for (size_t k = 0; k < size; k++) {
		w = elastic__http_request(b, k);
		if (w != ELASTIC_HTTP_MORE && w != v)
			abort();
	}
	if (v != ELASTIC_HTTP_MORE && elastic__http_status(v, &text) < 200)
		abort();
	if (size < ELASTIC_HTTP_HEAD_MAX && v == ELASTIC_HTTP_TOO_LARGE)
		abort();
	free(b);
	return 0;
}
