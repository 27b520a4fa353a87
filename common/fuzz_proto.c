/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/fuzz_proto.c: libFuzzer target for the job channel header, body and payload
 * decoders. */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct elastic_proto_header h;
	struct elastic_msg m, back;
	char text[ELASTIC_PROTO_MAX_PAYLOAD + 1];
	elastic_error_t err;

	/* As a frame: header, then a body as elasticd would check it. */
	if (size >= ELASTIC_PROTO_HDR_LEN &&
	    elastic_proto_header_parse(data, &h, &err) == 0) {
		size_t blen = size - ELASTIC_PROTO_HDR_LEN;
		if (blen > h.length)
			blen = h.length;
		elastic_proto_body_check((const char *)data + ELASTIC_PROTO_HDR_LEN, blen,
					 &err);
	}
	/* As a payload (what munge hands over after decoding a credential). */
	if (elastic_proto_decode((const char *)data, size, &m, &err) == 0) {
		/* Whatever decodes must encode again and decode to the same. */
		int n = elastic_proto_encode(&m, text, sizeof(text), &err);
		if (n < 0)
			abort();
		if (elastic_proto_decode(text, (size_t)n, &back, &err) != 0)
			abort();
		if (back.type != m.type || back.present != m.present ||
		    back.job != m.job || back.step != m.step || back.order != m.order ||
		    back.grant != m.grant || strcmp(back.host, m.host) ||
		    strcmp(back.reason, m.reason) || strcmp(back.nodes, m.nodes))
			abort();
	}
	return 0;
}
