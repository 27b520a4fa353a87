/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/fuzz_proto.c: libFuzzer target for the job channel header, body and payload
 * decoders, and the contract's parsers of what users and admins write (tag, sizes). */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "contract.h"
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
		    strcmp(back.reason, m.reason) || strcmp(back.nodes, m.nodes) ||
		    memcmp(&back.rec, &m.rec, sizeof(m.rec)))
			abort();
	}
	/* As an AdminComment tag and a size list: what parses formats back to
	 * text that parses to the same. */
	if (size < ELASTIC_TAG_MAX) {
		struct elastic_request r, r2;
		struct elastic_sizes s, s2;
		char in[ELASTIC_TAG_MAX], out[ELASTIC_TAG_MAX];
		memcpy(in, data, size);
		in[size] = '\0';
		if (elastic_tag_parse(in, &r, &err) == 0 &&
		    (elastic_tag_format(&r, out, sizeof(out)) < 0 ||
		     elastic_tag_parse(out, &r2, &err) != 0 ||
		     memcmp(&r, &r2, sizeof(r))))
			abort();
		if (elastic_sizes_parse(in, ',', &s, &err) == 0 &&
		    (elastic_sizes_format(&s, ',', out, sizeof(out)) < 0 ||
		     elastic_sizes_parse(out, ',', &s2, &err) != 0 ||
		     memcmp(&s, &s2, sizeof(s))))
			abort();
	}
	return 0;
}
