/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/test/test_proto.c: unit tests of the job channel framing and message codec. */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "proto.h"

static struct elastic_msg _hello(void)
{
	struct elastic_msg m = {.type = ELASTIC_MSG_HELLO,
				.present = ELASTIC_K_JOB | ELASTIC_K_HOST |
					   ELASTIC_K_GPUS | ELASTIC_K_STEP |
					   ELASTIC_K_RATE,
				.job = 42,
				.gpus = 4,
				.step = 1234567890123ULL,
				.rate = 1510.25};
	strcpy(m.host, "node1");
	return m;
}

/* Encode then decode m; the result must equal m field by field. */
static void _roundtrip(const struct elastic_msg *m)
{
	char buf[ELASTIC_PROTO_MAX_PAYLOAD + 1];
	struct elastic_msg back;
	elastic_error_t err = {""};
	int n = elastic_proto_encode(m, buf, sizeof(buf), &err);
	if (n < 0)
		fail_msg("encode: %s", err.text);
	assert_int_equal((size_t)n, strlen(buf));
	if (elastic_proto_decode(buf, (size_t)n, &back, &err) < 0)
		fail_msg("decode of '%s': %s", buf, err.text);
	assert_int_equal(back.type, m->type);
	assert_int_equal(back.present, m->present);
	assert_int_equal(back.job, m->job);
	assert_string_equal(back.host, m->host);
	assert_int_equal(back.gpus, m->gpus);
	assert_true(back.step == m->step);
	assert_true(fabs(back.rate - m->rate) < 0.001);
	assert_true(back.order == m->order);
	assert_int_equal(back.grant, m->grant);
	assert_string_equal(back.node, m->node);
	assert_true(back.deadline_ms == m->deadline_ms);
	assert_int_equal(back.target, m->target);
	assert_int_equal(back.result, m->result);
	assert_string_equal(back.reason, m->reason);
	assert_string_equal(back.user, m->user);
	assert_int_equal(back.min, m->min);
	assert_int_equal(back.max, m->max);
	assert_string_equal(back.nodes, m->nodes);
	assert_int_equal(back.state, m->state);
	assert_true(back.resized == m->resized);
	assert_int_equal(back.connected, m->connected);
	assert_int_equal(back.grants, m->grants);
	assert_int_equal(back.count, m->count);
	assert_memory_equal(&back.rec, &m->rec, sizeof(m->rec));
}

static void roundtrip_every_type(void **state)
{
	struct elastic_msg m = _hello();
	_roundtrip(&m);

	m = (struct elastic_msg){.type = ELASTIC_MSG_STATUS,
				 .present =
					 ELASTIC_K_JOB | ELASTIC_K_GPUS | ELASTIC_K_STEP,
				 .job = 7,
				 .gpus = 0,
				 .step = 0};
	_roundtrip(&m);

	m = (struct elastic_msg){.type = ELASTIC_MSG_GRANT,
				 .present = ELASTIC_K_JOB | ELASTIC_K_ORDER |
					    ELASTIC_K_GRANT | ELASTIC_K_NODE |
					    ELASTIC_K_GPUS,
				 .job = 7,
				 .order = 3,
				 .grant = 99,
				 .gpus = 2};
	strcpy(m.node, "node-2.cluster_a");
	_roundtrip(&m);

	m = (struct elastic_msg){.type = ELASTIC_MSG_RELEASE,
				 .present = ELASTIC_K_JOB | ELASTIC_K_ORDER |
					    ELASTIC_K_GRANT | ELASTIC_K_DEADLINE,
				 .job = 7,
				 .order = UINT64_MAX,
				 .grant = UINT32_MAX - 1,
				 .deadline_ms = 1795000000123ULL};
	_roundtrip(&m);

	m = (struct elastic_msg){.type = ELASTIC_MSG_TARGET,
				 .present = ELASTIC_K_JOB | ELASTIC_K_ORDER |
					    ELASTIC_K_TARGET,
				 .job = 1,
				 .order = 1,
				 .target = 8};
	_roundtrip(&m);

	m = (struct elastic_msg){.type = ELASTIC_MSG_ACK,
				 .present = ELASTIC_K_JOB | ELASTIC_K_ORDER |
					    ELASTIC_K_RESULT | ELASTIC_K_GRANT |
					    ELASTIC_K_REASON,
				 .job = 1,
				 .order = 5,
				 .grant = 12,
				 .result = ELASTIC_ACK_REFUSED};
	strcpy(m.reason, "step 17 not committed yet: retry");
	_roundtrip(&m);

	m = (struct elastic_msg){.type = ELASTIC_MSG_QUERY};
	_roundtrip(&m);
	m.present = ELASTIC_K_JOB;
	m.job = 5;
	_roundtrip(&m);

	m = (struct elastic_msg){
		.type = ELASTIC_MSG_JOBINFO,
		.present = ELASTIC_K_JOB | ELASTIC_K_USER | ELASTIC_K_MIN |
			   ELASTIC_K_MAX | ELASTIC_K_TARGET | ELASTIC_K_GPUS |
			   ELASTIC_K_STATE | ELASTIC_K_RESIZED | ELASTIC_K_CONNECTED |
			   ELASTIC_K_GRANTS | ELASTIC_K_NODES,
		.job = 3,
		.min = 1,
		.max = 8,
		.target = 5,
		.gpus = 3,
		.state = ELASTIC_STATE_GROWING,
		.resized = 1795000000,
		.connected = 1,
		.grants = 2};
	strcpy(m.user, "alice");
	strcpy(m.nodes, "node[1-2],node4");
	_roundtrip(&m);
	m.present |= ELASTIC_K_STEP | ELASTIC_K_RATE;
	m.step = 1200;
	m.rate = 310.5;
	_roundtrip(&m);
	m.present |= ELASTIC_K_EFFICIENCY;
	m.efficiency = 0.875;
	_roundtrip(&m);
	m.present |= ELASTIC_K_MODEL;
	strcpy(m.model, "2:180.3:181.2:0.95:m,3::262:0.92:i,5:401.7:402:0.88:m");
	_roundtrip(&m);
	/* the longest of every key still fits one payload */
	m.job = UINT32_MAX - 1;
	m.min = m.max = m.target = m.gpus = m.grants = 999999;
	m.resized = m.step = UINT64_MAX;
	m.rate = m.efficiency = 999999999999.999;
	memset(m.user, 'u', sizeof(m.user) - 1);
	memset(m.nodes, 'n', sizeof(m.nodes) - 1);
	memset(m.model, '9', sizeof(m.model) - 1);
	m.user[sizeof(m.user) - 1] = m.nodes[sizeof(m.nodes) - 1] =
		m.model[sizeof(m.model) - 1] = '\0';
	_roundtrip(&m);

	m = (struct elastic_msg){
		.type = ELASTIC_MSG_END, .present = ELASTIC_K_COUNT, .count = 2};
	_roundtrip(&m);
	m.present |= ELASTIC_K_REASON;
	strcpy(m.reason, "paused (no grow, no shrink); drained: node2");
	_roundtrip(&m);

	m = (struct elastic_msg){.type = ELASTIC_MSG_ADMIN, .present = ELASTIC_K_ACTION};
	strcpy(m.action, "pause");
	_roundtrip(&m);
	m.present |= ELASTIC_K_NODE;
	strcpy(m.action, "drain");
	strcpy(m.node, "node2");
	_roundtrip(&m);
}

static void encode_writes_expected_text(void **state)
{
	struct elastic_msg m = _hello();
	char buf[256];
	int n = elastic_proto_encode(&m, buf, sizeof(buf), NULL);
	assert_int_equal(n, (int)strlen(buf));
	assert_string_equal(buf,
			    "type=hello\njob=42\nhost=node1\ngpus=4\nstep=1234567890123\n"
			    "rate=1510.250\n");
}

/* decode must fail with errno e and an error text containing what. */
static void _rejects(const char *text, int e, const char *what)
{
	struct elastic_msg m;
	elastic_error_t err = {""};
	memset(&m, 0x5a, sizeof(m));
	struct elastic_msg before = m;
	errno = 0;
	if (elastic_proto_decode(text, strlen(text), &m, &err) != -1)
		fail_msg("accepted: '%s'", text);
	assert_int_equal(errno, e);
	if (!strstr(err.text, what))
		fail_msg("error for '%s' is '%s', wanted '%s'", text, err.text, what);
	/* A failed decode changes nothing. */
	assert_memory_equal(&m, &before, sizeof(m));
}

/* A decode refusal (EINVAL): the text, words of the error. */
struct reject {
	const char *text, *what;
};

static void _rejects_all(const struct reject *cases, size_t n)
{
	for (size_t i = 0; i < n; i++)
		_rejects(cases[i].text, EINVAL, cases[i].what);
}

/* A status with the re-form and recovery counts: every key optional, each
 * list of its exact length, written as the decoder reads it. */
static void status_recovery_counts(void **state)
{
	struct elastic_msg m = {.type = ELASTIC_MSG_STATUS,
				.present = ELASTIC_K_JOB | ELASTIC_K_GPUS |
					   ELASTIC_K_STEP | ELASTIC_K_REFORMS |
					   ELASTIC_K_INPLACE | ELASTIC_K_RECOVERY |
					   ELASTIC_K_RECOVERY_MS,
				.job = 7,
				.gpus = 4,
				.step = 99,
				.rec = {.reforms = {1, 2, 3, 4294967295u, 7},
					.in_place = {5, 0, 6},
					.bucket = {1, 0, 0, 2, 0, 0, 0, 0, 0, 3},
					.sum_ms = 123456}};
	char buf[ELASTIC_PROTO_MAX_PAYLOAD + 1];
	elastic_error_t err = {""};
	(void)state;
	_roundtrip(&m);
	assert_true(elastic_proto_encode(&m, buf, sizeof(buf), &err) > 0);
	assert_non_null(strstr(buf,
			       "\nreforms=1,2,3,4294967295,7\ninplace=5,0,6\n"
			       "recovery=1,0,0,2,0,0,0,0,0,3\nrecovery_ms=123456\n"));
	/* each alone (the others stay zero) */
	m.present = ELASTIC_K_JOB | ELASTIC_K_GPUS | ELASTIC_K_STEP | ELASTIC_K_RECOVERY;
	memset(m.rec.reforms, 0, sizeof(m.rec.reforms));
	memset(m.rec.in_place, 0, sizeof(m.rec.in_place));
	m.rec.sum_ms = 0;
	_roundtrip(&m);
	static const struct reject cases[] = {
		{"type=status\njob=1\ngpus=1\nstep=1\nreforms=1,2,3,4\n",
		 "key 'reforms'"},
		{"type=status\njob=1\ngpus=1\nstep=1\nreforms=1,2,3,4,5,6\n",
		 "key 'reforms'"},
		{"type=status\njob=1\ngpus=1\nstep=1\nreforms=1,2,,4\n", "key 'reforms'"},
		{"type=status\njob=1\ngpus=1\nstep=1\nreforms=1,2,3,4,5,\n",
		 "key 'reforms'"},
		{"type=status\njob=1\ngpus=1\nstep=1\nreforms=,1,2,3\n", "key 'reforms'"},
		{"type=status\njob=1\ngpus=1\nstep=1\ninplace=1,01,2\n", "key 'inplace'"},
		{"type=status\njob=1\ngpus=1\nstep=1\ninplace=1,2,4294967296\n",
		 "key 'inplace'"},
		{"type=status\njob=1\ngpus=1\nstep=1\nrecovery=1,2\n", "key 'recovery'"},
		{"type=status\njob=1\ngpus=1\nstep=1\nrecovery_ms=-1\n",
		 "key 'recovery_ms'"},
		{"type=hello\njob=1\nhost=a\ngpus=1\nstep=1\ninplace=1,2,3\n",
		 "key 'inplace' is not allowed in a hello message"},
	};
	_rejects_all(cases, sizeof(cases) / sizeof(cases[0]));
}

/* Both halves of an upgrade: a status without the counts (an older
 * elastic-run) decodes as before, with the counts zero; a key the decoder
 * does not know is refused with its name, which is what an elasticd older
 * than the counts answers a newer elastic-run (elastic__ctl_refuses_rec
 * then leaves them out: test_ctlclient.c). */
static void status_across_versions(void **state)
{
	static const char old[] = "type=status\njob=3\ngpus=2\nstep=10\nrate=5.000\n";
	static const struct elastic_recovery_counts zero;
	struct elastic_msg m;
	elastic_error_t err = {""};
	(void)state;
	assert_int_equal(elastic_proto_decode(old, strlen(old), &m, &err), 0);
	assert_int_equal(m.present & (ELASTIC_K_REFORMS | ELASTIC_K_INPLACE |
				      ELASTIC_K_RECOVERY | ELASTIC_K_RECOVERY_MS),
			 0);
	assert_memory_equal(&m.rec, &zero, sizeof(zero));
	_rejects("type=status\njob=3\ngpus=2\nstep=10\nreforms2=1,0,0,0\n", EINVAL,
		 "line 5: unknown key 'reforms2'");
}

/* admin: an action is required, a node optional, nothing else. */
static void admin_rules(void **state)
{
	static const struct reject cases[] = {
		{"type=admin\nnode=node2\n", "action"},
		{"type=admin\naction=drain\njob=3\n", "job"},
		{"type=admin\naction=pause now\n", "action"},
	};
	(void)state;
	_rejects_all(cases, sizeof(cases) / sizeof(cases[0]));
}

static void decode_rejects_bad_structure(void **state)
{
	static const struct reject cases[] = {
		{"", "empty payload"},
		{"type=hello\njob=1\nhost=a\ngpus=1\nstep=1", "newline"},
		{"job=1\ntype=status\n", "first line is not type"},
		{"type=launch\n", "unknown message type 'launch'"},
		{"type=\n", "unknown message type"},
		{"type=status\njob=1\ngpus 1\nstep=1\n", "line 3 is not Key=Value"},
		{"type=status\njob=1\n\nstep=1\n", "line 3 is not Key=Value"},
		{"type=status\njob=1\ngpus=1\nstep=1\nuid=0\n", "unknown key 'uid'"},
		{"type=status\njob=1\ngpus=1\njob=2\nstep=1\n", "key 'job' given twice"},
		{"type=status\njob=1\ngpus=1\n", "without required key 'step'"},
		{"type=hello\njob=1\ngpus=1\nstep=1\n", "without required key 'host'"},
		{"type=status\njob=1\ngpus=1\nstep=1\ngrant=4\n",
		 "key 'grant' is not allowed in a status message"},
		{"type=end\n", "without required key 'count'"},
	};
	_rejects_all(cases, sizeof(cases) / sizeof(cases[0]));
	/* Oversized payload. */
	char big[ELASTIC_PROTO_MAX_PAYLOAD + 64];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	_rejects(big, EMSGSIZE, "over the limit");
}

static void decode_rejects_bad_values(void **state)
{
	static const struct reject cases[] = {
		{"type=status\njob=0\ngpus=1\nstep=1\n",
		 "key 'job': '0' is not a number"},
		{"type=status\njob=-1\ngpus=1\nstep=1\n", "key 'job'"},
		{"type=status\njob=+1\ngpus=1\nstep=1\n", "key 'job'"},
		{"type=status\njob=01\ngpus=1\nstep=1\n", "key 'job'"},
		{"type=status\njob= 1\ngpus=1\nstep=1\n", "key 'job'"},
		{"type=status\njob=4294967295\ngpus=1\nstep=1\n", "key 'job'"},
		{"type=status\njob=1\ngpus=1048577\nstep=1\n", "key 'gpus'"},
		{"type=status\njob=1\ngpus=1\nstep=18446744073709551616\n", "key 'step'"},
		{"type=status\njob=1\ngpus=1\nstep=1x\n", "key 'step'"},
		{"type=status\njob=1\ngpus=1\nstep=\n", "key 'step'"},
		{"type=status\njob=1\ngpus=1\nstep=1\nrate=1.2.3\n", "key 'rate'"},
		{"type=status\njob=1\ngpus=1\nstep=1\nrate=1.1234567\n", "key 'rate'"},
		{"type=status\njob=1\ngpus=1\nstep=1\nrate=1.\n", "key 'rate'"},
		{"type=status\njob=1\ngpus=1\nstep=1\nrate=nan\n", "key 'rate'"},
		{"type=status\njob=1\ngpus=1\nstep=1\nrate=1e9\n", "key 'rate'"},
		{"type=hello\njob=1\nhost=no de\ngpus=1\nstep=1\n",
		 "key 'host': character 0x20"},
		{"type=hello\njob=1\nhost=a;rm\ngpus=1\nstep=1\n",
		 "key 'host': character 0x3b"},
		{"type=hello\njob=1\nhost=\ngpus=1\nstep=1\n",
		 "key 'host': value length 0"},
		{"type=ack\njob=1\norder=1\nresult=maybe\n", "'maybe' is not ok|refused"},
		{"type=ack\njob=1\norder=1\nresult=ok\nreason=tab\there\n",
		 "key 'reason': character 0x09"},
		{"type=jobinfo\njob=1\nuser=a\nmin=1\nmax=2\ntarget=1\ngpus=1\nstate=idle\n"
		 "resized=0\nconnected=0\ngrants=0\n",
		 "key 'state'"},
		{"type=jobinfo\njob=1\nuser=a\nmin=1\nmax=2\ntarget=1\ngpus=1\nstate=steady\n"
		 "resized=0\nconnected=2\ngrants=0\n",
		 "key 'connected'"},
		/* high-bit bytes in text */
		{"type=ack\njob=1\norder=1\nresult=refused\nreason=\xc3\xa9\n",
		 "character 0xc3"},
	};
	_rejects_all(cases, sizeof(cases) / sizeof(cases[0]));
	char longhost[200];
	snprintf(longhost, sizeof(longhost),
		 "type=hello\njob=1\nhost=%064d\ngpus=1\nstep=1\n", 0);
	_rejects(longhost, EINVAL, "key 'host': value length 64");
	/* A NUL byte inside a line. */
	const char nul[] = "type=status\njob=1\ngpus=1\nstep=1\0\n";
	struct elastic_msg m;
	elastic_error_t err;
	assert_int_equal(elastic_proto_decode(nul, sizeof(nul) - 1, &m, &err), -1);
	assert_non_null(strstr(err.text, "NUL"));
}

static void encode_rejects_bad_messages(void **state)
{
	struct elastic_msg m = _hello();
	char buf[ELASTIC_PROTO_MAX_PAYLOAD + 1];
	elastic_error_t err;

	strcpy(m.host, "bad host");
	assert_int_equal(elastic_proto_encode(&m, buf, sizeof(buf), &err), -1);
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(err.text, "host"));

	m = _hello();
	m.present &= ~ELASTIC_K_STEP;
	assert_int_equal(elastic_proto_encode(&m, buf, sizeof(buf), &err), -1);
	assert_non_null(strstr(err.text, "required key 'step'"));

	m = _hello();
	m.present |= ELASTIC_K_GRANT;
	assert_int_equal(elastic_proto_encode(&m, buf, sizeof(buf), &err), -1);
	assert_non_null(strstr(err.text, "'grant' is not allowed"));

	m = _hello();
	m.rate = NAN;
	assert_int_equal(elastic_proto_encode(&m, buf, sizeof(buf), &err), -1);
	assert_non_null(strstr(err.text, "rate"));

	m = _hello();
	m.type = 0;
	assert_int_equal(elastic_proto_encode(&m, buf, sizeof(buf), &err), -1);
	m.type = ELASTIC_MSG_TYPE_MAX + 1;
	assert_int_equal(elastic_proto_encode(&m, buf, sizeof(buf), &err), -1);
	assert_non_null(strstr(err.text, "unknown message type"));

	m = _hello();
	m.job = 0;
	assert_int_equal(elastic_proto_encode(&m, buf, sizeof(buf), &err), -1);
	assert_int_equal(elastic_proto_check(&m, &err), -1);
	m.job = 1;
	assert_int_equal(elastic_proto_check(&m, &err), 0);

	m = _hello();
	assert_int_equal(elastic_proto_encode(&m, buf, 20, &err), -1);
	assert_int_equal(errno, EMSGSIZE);
}

static void header_roundtrip_and_rejections(void **state)
{
	uint8_t h[ELASTIC_PROTO_HDR_LEN], bad[ELASTIC_PROTO_HDR_LEN];
	struct elastic_proto_header ph = {0}, before;
	elastic_error_t err;

	elastic_proto_header_pack(h, ELASTIC_MSG_ACK, 300);
	assert_memory_equal(h, "ELJC\x01\x06\x00\x00\x00\x00\x01\x2c", 12);
	assert_int_equal(elastic_proto_header_parse(h, &ph, &err), 0);
	assert_int_equal(ph.type, ELASTIC_MSG_ACK);
	assert_int_equal(ph.length, 300);

	struct {
		int at;
		uint8_t value;
		const char *what;
	} cases[] = {
		{0, 'X', "bad magic"},
		{3, 'D', "bad magic"},
		{4, 0, "version 0"},
		{4, 2, "version 2"},
		{5, 0, "unknown message type 0"},
		{5, ELASTIC_MSG_TYPE_MAX + 1, "unknown message type"},
		{6, 1, "reserved"},
		{7, 0x80, "reserved"},
		{8, 0x01, "body length"}, /* 16777516 */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		memcpy(bad, h, sizeof(h));
		bad[cases[i].at] = cases[i].value;
		before = ph;
		errno = 0;
		assert_int_equal(elastic_proto_header_parse(bad, &ph, &err), -1);
		assert_int_equal(errno, EPROTO);
		if (!strstr(err.text, cases[i].what))
			fail_msg("case %zu: '%s' lacks '%s'", i, err.text, cases[i].what);
		assert_memory_equal(&ph, &before, sizeof(ph));
	}
	elastic_proto_header_pack(bad, ELASTIC_MSG_HELLO, 0);
	assert_int_equal(elastic_proto_header_parse(bad, &ph, &err), -1);
	assert_non_null(strstr(err.text, "body length 0"));
	elastic_proto_header_pack(bad, ELASTIC_MSG_HELLO, ELASTIC_PROTO_MAX_BODY + 1);
	assert_int_equal(elastic_proto_header_parse(bad, &ph, &err), -1);
	elastic_proto_header_pack(bad, ELASTIC_MSG_HELLO, ELASTIC_PROTO_MAX_BODY);
	assert_int_equal(elastic_proto_header_parse(bad, &ph, &err), 0);
}

static void body_check(void **state)
{
	elastic_error_t err;
	const char *good = "MUNGE:AwQFAAB+abc/=:";
	assert_int_equal(elastic_proto_body_check(good, strlen(good), &err), 0);
	assert_int_equal(elastic_proto_body_check("MUNGE:", 6, &err), -1);
	assert_int_equal(elastic_proto_body_check("HELLO:abc", 9, &err), -1);
	assert_non_null(strstr(err.text, "not a munge credential"));
	assert_int_equal(elastic_proto_body_check("MUNGE:a b:", 10, &err), -1);
	assert_non_null(strstr(err.text, "0x20 at offset 7"));
	assert_int_equal(elastic_proto_body_check("MUNGE:a\0b:", 10, &err), -1);
	assert_int_equal(errno, EPROTO);
}

static void names(void **state)
{
	for (int t = ELASTIC_MSG_HELLO; t <= ELASTIC_MSG_TYPE_MAX; t++)
		assert_int_equal(elastic_msg_type_from_name(elastic_msg_type_name(t)), t);
	assert_null(elastic_msg_type_name(0));
	assert_null(elastic_msg_type_name(-3));
	assert_int_equal(elastic_msg_type_from_name("nope"), 0);
	assert_string_equal(elastic_job_state_name(ELASTIC_STATE_SHRINKING), "shrinking");
	assert_string_equal(elastic_job_state_name(17), "unknown");
}

/* Every byte string of a truncated good message must be rejected or decode
 * to something valid; never crash. */
static void truncations_and_bitflips(void **state)
{
	struct elastic_msg m = _hello(), out;
	char buf[512], mut[512];
	int n = elastic_proto_encode(&m, buf, sizeof(buf), NULL);
	assert_true(n > 0);
	/* Cut anywhere but after a line: rejected. After the optional last
	 * line ("rate="): still a valid hello without it. */
	for (int len = 0; len < n; len++) {
		int rc = elastic_proto_decode(buf, (size_t)len, &out, NULL);
		if (len > 0 && buf[len - 1] == '\n' &&
		    strncmp(buf + len, "rate=", 5) == 0) {
			assert_int_equal(rc, 0);
			assert_false(out.present & ELASTIC_K_RATE);
		} else {
			assert_int_equal(rc, -1);
		}
	}
	for (int i = 0; i < n; i++)
		for (int bit = 0; bit < 8; bit++) {
			memcpy(mut, buf, (size_t)n);
			mut[i] ^= (char)(1 << bit);
			if (elastic_proto_decode(mut, (size_t)n, &out, NULL) == 0)
				assert_int_equal(elastic_proto_check(&out, NULL), 0);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(roundtrip_every_type),
		cmocka_unit_test(encode_writes_expected_text),
		cmocka_unit_test(decode_rejects_bad_structure),
		cmocka_unit_test(decode_rejects_bad_values),
		cmocka_unit_test(encode_rejects_bad_messages),
		cmocka_unit_test(header_roundtrip_and_rejections),
		cmocka_unit_test(body_check),
		cmocka_unit_test(names),
		cmocka_unit_test(truncations_and_bitflips),
		cmocka_unit_test(admin_rules),
		cmocka_unit_test(status_recovery_counts),
		cmocka_unit_test(status_across_versions),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
