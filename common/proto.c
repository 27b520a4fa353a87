/* SPDX-License-Identifier: GPL-2.0-or-later */
/* common/proto.c: job channel framing and strict Key=Value message codec (no I/O). */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"

#define _fail elastic__fail

enum _kind {
	_U32,	/* uint32_t in [lo, hi] */
	_U64,	/* uint64_t */
	_RATE,	/* double, decimal with up to 6 fraction digits */
	_NAME,	/* [A-Za-z0-9._-]+ */
	_NODES, /* [A-Za-z0-9._,[]-]+ */
	_TEXT,	/* printable ASCII including space */
	_RESULT,
	_STATE,
	_LIST, /* size uint32_t in [lo, hi], comma-separated, every one given */
};

struct _key {
	const char *name;
	uint32_t bit;
	enum _kind kind;
	size_t offset;
	size_t size; /* strings: buffer size */
	uint64_t lo, hi;
};

#define _OFF(f)	 offsetof(struct elastic_msg, f)
#define _SZ(f)	 sizeof(((struct elastic_msg *)0)->f)
#define _GPU_MAX (1u << 20)
#define _N(f)	 (sizeof(((struct elastic_msg *)0)->f) / sizeof(uint32_t))

static const struct _key _keys[] = {
	{"job", ELASTIC_K_JOB, _U32, _OFF(job), 0, 1, UINT32_MAX - 1},
	{"host", ELASTIC_K_HOST, _NAME, _OFF(host), _SZ(host)},
	{"gpus", ELASTIC_K_GPUS, _U32, _OFF(gpus), 0, 0, _GPU_MAX},
	{"step", ELASTIC_K_STEP, _U64, _OFF(step)},
	{"rate", ELASTIC_K_RATE, _RATE, _OFF(rate)},
	{"order", ELASTIC_K_ORDER, _U64, _OFF(order)},
	{"grant", ELASTIC_K_GRANT, _U32, _OFF(grant), 0, 1, UINT32_MAX - 1},
	{"node", ELASTIC_K_NODE, _NAME, _OFF(node), _SZ(node)},
	{"deadline", ELASTIC_K_DEADLINE, _U64, _OFF(deadline_ms)},
	{"target", ELASTIC_K_TARGET, _U32, _OFF(target), 0, 0, _GPU_MAX},
	{"result", ELASTIC_K_RESULT, _RESULT, _OFF(result)},
	{"reason", ELASTIC_K_REASON, _TEXT, _OFF(reason), _SZ(reason)},
	{"user", ELASTIC_K_USER, _NAME, _OFF(user), _SZ(user)},
	{"min", ELASTIC_K_MIN, _U32, _OFF(min), 0, 0, _GPU_MAX},
	{"max", ELASTIC_K_MAX, _U32, _OFF(max), 0, 0, _GPU_MAX},
	{"nodes", ELASTIC_K_NODES, _NODES, _OFF(nodes), _SZ(nodes)},
	{"state", ELASTIC_K_STATE, _STATE, _OFF(state)},
	{"resized", ELASTIC_K_RESIZED, _U64, _OFF(resized)},
	{"connected", ELASTIC_K_CONNECTED, _U32, _OFF(connected), 0, 0, 1},
	{"grants", ELASTIC_K_GRANTS, _U32, _OFF(grants), 0, 0, _GPU_MAX},
	{"count", ELASTIC_K_COUNT, _U32, _OFF(count), 0, 0, UINT32_MAX},
	{"action", ELASTIC_K_ACTION, _NAME, _OFF(action), _SZ(action)},
	{"reforms", ELASTIC_K_REFORMS, _LIST, _OFF(rec.reforms), _N(rec.reforms), 0,
	 UINT32_MAX},
	{"inplace", ELASTIC_K_INPLACE, _LIST, _OFF(rec.in_place), _N(rec.in_place), 0,
	 UINT32_MAX},
	{"recovery", ELASTIC_K_RECOVERY, _LIST, _OFF(rec.bucket), _N(rec.bucket), 0,
	 UINT32_MAX},
	{"recovery_ms", ELASTIC_K_RECOVERY_MS, _U64, _OFF(rec.sum_ms)},
	{"efficiency", ELASTIC_K_EFFICIENCY, _RATE, _OFF(efficiency)},
	{"scaling", ELASTIC_K_SCALING, _U32, _OFF(scaling), 0, 1, 1},
	{"model", ELASTIC_K_MODEL, _TEXT, _OFF(model), _SZ(model)},
	{NULL},
};

struct _rule {
	const char *name;
	uint32_t required, optional;
};

static const struct _rule _rules[ELASTIC_MSG_TYPE_MAX + 1] = {
	[ELASTIC_MSG_HELLO] = {"hello",
			       ELASTIC_K_JOB | ELASTIC_K_HOST | ELASTIC_K_GPUS |
				       ELASTIC_K_STEP,
			       ELASTIC_K_RATE},
	[ELASTIC_MSG_STATUS] = {"status", ELASTIC_K_JOB | ELASTIC_K_GPUS | ELASTIC_K_STEP,
				ELASTIC_K_RATE | ELASTIC_K_REFORMS | ELASTIC_K_INPLACE |
					ELASTIC_K_RECOVERY | ELASTIC_K_RECOVERY_MS},
	[ELASTIC_MSG_GRANT] = {"grant",
			       ELASTIC_K_JOB | ELASTIC_K_ORDER | ELASTIC_K_GRANT |
				       ELASTIC_K_NODE | ELASTIC_K_GPUS,
			       0},
	[ELASTIC_MSG_RELEASE] = {"release",
				 ELASTIC_K_JOB | ELASTIC_K_ORDER | ELASTIC_K_GRANT |
					 ELASTIC_K_DEADLINE,
				 0},
	[ELASTIC_MSG_TARGET] = {"target",
				ELASTIC_K_JOB | ELASTIC_K_ORDER | ELASTIC_K_TARGET, 0},
	[ELASTIC_MSG_ACK] = {"ack", ELASTIC_K_JOB | ELASTIC_K_ORDER | ELASTIC_K_RESULT,
			     ELASTIC_K_GRANT | ELASTIC_K_REASON},
	[ELASTIC_MSG_QUERY] = {"query", 0, ELASTIC_K_JOB | ELASTIC_K_SCALING},
	[ELASTIC_MSG_JOBINFO] = {"jobinfo",
				 ELASTIC_K_JOB | ELASTIC_K_USER | ELASTIC_K_MIN |
					 ELASTIC_K_MAX | ELASTIC_K_TARGET |
					 ELASTIC_K_GPUS | ELASTIC_K_STATE |
					 ELASTIC_K_RESIZED | ELASTIC_K_CONNECTED |
					 ELASTIC_K_GRANTS,
				 ELASTIC_K_NODES | ELASTIC_K_STEP | ELASTIC_K_RATE |
					 ELASTIC_K_EFFICIENCY | ELASTIC_K_MODEL},
	[ELASTIC_MSG_END] = {"end", ELASTIC_K_COUNT, ELASTIC_K_REASON},
	[ELASTIC_MSG_ERROR] = {"error", ELASTIC_K_REASON, ELASTIC_K_JOB},
	[ELASTIC_MSG_ADMIN] = {"admin", ELASTIC_K_ACTION, ELASTIC_K_NODE},
	[ELASTIC_MSG_GIVEBACK] = {"giveback", ELASTIC_K_JOB | ELASTIC_K_GRANT,
				  ELASTIC_K_REASON},
};

static const char *_states[] = {"steady", "growing", "shrinking", "pending"};
static const char *_results[] = {"ok", "refused"};
static const char *_causes[] = {"failure", "grow", "shrink", "other", "replace"};
static const char *_kinds[] = {"heal", "grow", "shrink"};

const double elastic_recovery_le[ELASTIC_RECOVERY_BUCKETS - 1] = {
	0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
};

const char *elastic_reform_cause_name(int cause)
{
	return cause >= 0 && cause < ELASTIC_REFORM_CAUSES ? _causes[cause] : "unknown";
}

const char *elastic_resize_kind_name(int kind)
{
	return kind >= 0 && kind < ELASTIC_RESIZE_KINDS ? _kinds[kind] : "unknown";
}

const char *elastic_msg_type_name(int type)
{
	if (type < ELASTIC_MSG_HELLO || type > ELASTIC_MSG_TYPE_MAX)
		return NULL;
	return _rules[type].name;
}

enum elastic_msg_type elastic_msg_type_from_name(const char *name)
{
	for (int t = ELASTIC_MSG_HELLO; t <= ELASTIC_MSG_TYPE_MAX; t++)
		if (strcmp(_rules[t].name, name) == 0)
			return t;
	return 0;
}

const char *elastic_job_state_name(enum elastic_job_state s)
{
	if ((unsigned)s >= sizeof(_states) / sizeof(_states[0]))
		return "unknown";
	return _states[s];
}

static int _enum_index(const char **names, size_t n, const char *v, size_t vlen)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(names[i]) == vlen && memcmp(names[i], v, vlen) == 0)
			return (int)i;
	return -1;
}

static int _name_char(int c, int nodes)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '.' || c == '_' || c == '-')
		return 1;
	return nodes && (c == ',' || c == '[' || c == ']');
}

/* Plain decimal: digits only, no leading zero unless "0", no overflow. */
static int _parse_u64(const char *v, size_t len, uint64_t *out)
{
	uint64_t x = 0;
	if (len == 0 || len > 20 || (len > 1 && v[0] == '0'))
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		unsigned d = (unsigned)(v[i] - '0');
		if (x > (UINT64_MAX - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

/* INT[.FRAC] with at most 15 integer and 6 fraction digits. */
static int _parse_rate(const char *v, size_t len, double *out)
{
	const char *dot = memchr(v, '.', len);
	size_t ilen = dot ? (size_t)(dot - v) : len;
	size_t flen = dot ? len - ilen - 1 : 0;
	uint64_t ip, fp = 0;
	if (ilen > 15 || _parse_u64(v, ilen, &ip) < 0)
		return -1;
	if (dot) {
		if (flen == 0 || flen > 6)
			return -1;
		for (size_t i = 0; i < flen; i++) {
			char c = dot[1 + i];
			if (c < '0' || c > '9')
				return -1;
			fp = fp * 10 + (uint64_t)(c - '0');
		}
	}
	double div = 1.0;
	for (size_t i = 0; i < flen; i++)
		div *= 10.0;
	*out = (double)ip + (double)fp / div;
	return 0;
}

static const struct _key *_key_by_name(const char *k, size_t klen)
{
	for (const struct _key *d = _keys; d->name; d++)
		if (strlen(d->name) == klen && memcmp(d->name, k, klen) == 0)
			return d;
	return NULL;
}

/* N,N,...: exactly d->size numbers in [d->lo, d->hi] into the uint32_t
 * array at field. */
static int _set_list(const struct _key *d, char *field, const char *v, size_t vlen,
		     elastic_error_t *err)
{
	uint32_t *out = (uint32_t *)field;
	const char *p = v, *end = v + vlen;
	uint64_t x;

	for (size_t i = 0; i < d->size; i++) {
		/* (the last number runs to the end: a comma there is no digit) */
		const char *stop =
			i + 1 < d->size ? memchr(p, ',', (size_t)(end - p)) : end;
		if (!stop || _parse_u64(p, (size_t)(stop - p), &x) < 0 || x < d->lo ||
		    x > d->hi)
			return _fail(err, EINVAL,
				     "key '%s': '%.*s' is not %zu numbers in [%" PRIu64
				     ", %" PRIu64 "] separated by commas",
				     d->name, (int)(vlen > 24 ? 24 : vlen), v, d->size,
				     d->lo, d->hi);
		out[i] = (uint32_t)x;
		p = stop + 1;
	}
	return 0;
}

/* Store value v (vlen bytes) of key d into m. */
static int _set(const struct _key *d, struct elastic_msg *m, const char *v, size_t vlen,
		elastic_error_t *err)
{
	char *field = (char *)m + d->offset;
	uint64_t x;
	int i;

	switch (d->kind) {
	case _U32:
		if (_parse_u64(v, vlen, &x) < 0 || x < d->lo || x > d->hi)
			return _fail(err, EINVAL,
				     "key '%s': '%.*s' is not a number in [%" PRIu64
				     ", %" PRIu64 "]",
				     d->name, (int)(vlen > 24 ? 24 : vlen), v, d->lo,
				     d->hi);
		*(uint32_t *)field = (uint32_t)x;
		return 0;
	case _U64:
		if (_parse_u64(v, vlen, &x) < 0)
			return _fail(err, EINVAL,
				     "key '%s': '%.*s' is not a plain decimal number",
				     d->name, (int)(vlen > 24 ? 24 : vlen), v);
		*(uint64_t *)field = x;
		return 0;
	case _RATE:
		if (_parse_rate(v, vlen, (double *)field) < 0)
			return _fail(
				err, EINVAL,
				"key '%s': '%.*s' is not a rate (INT[.FRAC], at most 6 decimals)",
				d->name, (int)(vlen > 24 ? 24 : vlen), v);
		return 0;
	case _NAME:
	case _NODES:
	case _TEXT:
		if (vlen == 0 || vlen >= d->size)
			return _fail(err, EINVAL,
				     "key '%s': value length %zu not in [1, %zu]",
				     d->name, vlen, d->size - 1);
		for (size_t j = 0; j < vlen; j++) {
			unsigned char c = (unsigned char)v[j];
			int ok = d->kind == _TEXT ? (c >= 0x20 && c < 0x7f)
						  : _name_char(c, d->kind == _NODES);
			if (!ok)
				return _fail(
					err, EINVAL,
					"key '%s': character 0x%02x at offset %zu is not allowed",
					d->name, c, j);
		}
		memcpy(field, v, vlen);
		field[vlen] = '\0';
		return 0;
	case _RESULT:
		if ((i = _enum_index(_results, 2, v, vlen)) < 0)
			return _fail(err, EINVAL,
				     "key 'result': '%.*s' is not ok|refused",
				     (int)(vlen > 24 ? 24 : vlen), v);
		m->result = i;
		return 0;
	case _STATE:
		if ((i = _enum_index(_states, 4, v, vlen)) < 0)
			return _fail(
				err, EINVAL,
				"key 'state': '%.*s' is not steady|growing|shrinking|pending",
				(int)(vlen > 24 ? 24 : vlen), v);
		m->state = i;
		return 0;
	case _LIST:
		return _set_list(d, field, v, vlen, err);
	}
	return _fail(err, EINVAL, "key '%s': internal kind error", d->name);
}

static int _check_keys(enum elastic_msg_type type, uint32_t present, elastic_error_t *err)
{
	const struct _rule *r = &_rules[type];
	uint32_t missing = r->required & ~present;
	uint32_t extra = present & ~(r->required | r->optional);
	for (const struct _key *d = _keys; d->name; d++) {
		if (missing & d->bit)
			return _fail(err, EINVAL, "%s message without required key '%s'",
				     r->name, d->name);
		if (extra & d->bit)
			return _fail(err, EINVAL,
				     "key '%s' is not allowed in a %s message", d->name,
				     r->name);
	}
	return 0;
}

int elastic_proto_decode(const char *buf, size_t len, struct elastic_msg *out,
			 elastic_error_t *err)
{
	struct elastic_msg m;
	size_t pos = 0;
	int line = 0;

	memset(&m, 0, sizeof(m));
	if (!buf || len == 0)
		return _fail(err, EINVAL, "empty payload");
	if (len > ELASTIC_PROTO_MAX_PAYLOAD)
		return _fail(err, EMSGSIZE,
			     "payload of %zu bytes is over the limit of %d", len,
			     ELASTIC_PROTO_MAX_PAYLOAD);
	if (buf[len - 1] != '\n')
		return _fail(err, EINVAL, "payload does not end with a newline");

	while (pos < len) {
		const char *l = buf + pos;
		const char *nl = memchr(l, '\n', len - pos);
		size_t llen = (size_t)(nl - l);
		const char *eq = memchr(l, '=', llen);
		line++;
		pos += llen + 1;
		if (!eq)
			return _fail(err, EINVAL, "line %d is not Key=Value", line);
		size_t klen = (size_t)(eq - l);
		const char *v = eq + 1;
		size_t vlen = llen - klen - 1;
		if (memchr(l, '\0', llen))
			return _fail(err, EINVAL, "line %d contains a NUL byte", line);
		if (line == 1) {
			if (klen != 4 || memcmp(l, "type", 4) != 0)
				return _fail(err, EINVAL, "first line is not type=NAME");
			for (int t = ELASTIC_MSG_HELLO; t <= ELASTIC_MSG_TYPE_MAX; t++)
				if (strlen(_rules[t].name) == vlen &&
				    memcmp(_rules[t].name, v, vlen) == 0)
					m.type = t;
			if (!m.type)
				return _fail(err, EINVAL, "unknown message type '%.*s'",
					     (int)(vlen > 24 ? 24 : vlen), v);
			continue;
		}
		const struct _key *d = _key_by_name(l, klen);
		if (!d)
			return _fail(err, EINVAL, "line %d: unknown key '%.*s'", line,
				     (int)(klen > 24 ? 24 : klen), l);
		if (m.present & d->bit)
			return _fail(err, EINVAL, "line %d: key '%s' given twice", line,
				     d->name);
		if (_set(d, &m, v, vlen, err) < 0)
			return -1;
		m.present |= d->bit;
	}
	if (_check_keys(m.type, m.present, err) < 0)
		return -1;
	*out = m;
	return 0;
}

int elastic_proto_check(const struct elastic_msg *m, elastic_error_t *err)
{
	char buf[ELASTIC_PROTO_MAX_PAYLOAD + 1];
	struct elastic_msg back;
	/* The one set of rules is the decoder's: encode and decode again. */
	if (elastic_proto_encode(m, buf, sizeof(buf), err) < 0)
		return -1;
	return elastic_proto_decode(buf, strlen(buf), &back, err);
}

/* Append printf-style to out; tracks *n, fails once over cap. */
static int _put(char *out, size_t cap, size_t *n, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int _put(char *out, size_t cap, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int w;
	if (*n >= cap)
		return -1;
	va_start(ap, fmt);
	w = vsnprintf(out + *n, cap - *n, fmt, ap);
	va_end(ap);
	if (w < 0 || (size_t)w >= cap - *n)
		return -1;
	*n += (size_t)w;
	return 0;
}

int elastic_proto_encode(const struct elastic_msg *m, char *out, size_t cap,
			 elastic_error_t *err)
{
	size_t n = 0;
	int rc = 0;

	if (!m || !out || cap == 0)
		return _fail(err, EINVAL, "no message or buffer");
	if (!elastic_msg_type_name((int)m->type))
		return _fail(err, EINVAL, "unknown message type %d", (int)m->type);
	if (_check_keys(m->type, m->present, err) < 0)
		return -1;
	if (cap > ELASTIC_PROTO_MAX_PAYLOAD + 1)
		cap = ELASTIC_PROTO_MAX_PAYLOAD + 1;
	rc |= _put(out, cap, &n, "type=%s\n", _rules[m->type].name);
	for (const struct _key *d = _keys; d->name && rc == 0; d++) {
		const char *field = (const char *)m + d->offset;
		if (!(m->present & d->bit))
			continue;
		switch (d->kind) {
		case _U32:
			rc |= _put(out, cap, &n, "%s=%" PRIu32 "\n", d->name,
				   *(const uint32_t *)field);
			break;
		case _U64:
			rc |= _put(out, cap, &n, "%s=%" PRIu64 "\n", d->name,
				   *(const uint64_t *)field);
			break;
		case _RATE: {
			double r = *(const double *)field;
			if (!isfinite(r) || r < 0 || r >= 1e15)
				return _fail(err, EINVAL, "rate %g is not in [0, 1e15)",
					     r);
			rc |= _put(out, cap, &n, "%s=%.3f\n", d->name, r);
			break;
		}
		case _NAME:
		case _NODES:
		case _TEXT:
			rc |= _put(out, cap, &n, "%s=%s\n", d->name, field);
			break;
		case _RESULT:
			if ((unsigned)m->result > 1)
				return _fail(err, EINVAL, "bad ack result %d",
					     (int)m->result);
			rc |= _put(out, cap, &n, "%s=%s\n", d->name, _results[m->result]);
			break;
		case _STATE:
			if ((unsigned)m->state > 3)
				return _fail(err, EINVAL, "bad job state %d",
					     (int)m->state);
			rc |= _put(out, cap, &n, "%s=%s\n", d->name, _states[m->state]);
			break;
		case _LIST:
			rc |= _put(out, cap, &n, "%s=", d->name);
			for (size_t i = 0; i < d->size; i++)
				rc |= _put(out, cap, &n, "%s%" PRIu32, i ? "," : "",
					   ((const uint32_t *)field)[i]);
			rc |= _put(out, cap, &n, "\n");
			break;
		}
	}
	if (rc)
		return _fail(err, EMSGSIZE, "%s message does not fit in %zu bytes",
			     _rules[m->type].name, cap - 1);
	/* Values must pass the decoder's checks too (names, ranges). */
	struct elastic_msg back;
	if (elastic_proto_decode(out, n, &back, err) < 0)
		return -1;
	return (int)n;
}

void elastic_proto_header_pack(uint8_t out[ELASTIC_PROTO_HDR_LEN],
			       enum elastic_msg_type type, uint32_t length)
{
	memcpy(out, ELASTIC_PROTO_MAGIC, 4);
	out[4] = ELASTIC_PROTO_VERSION;
	out[5] = (uint8_t)type;
	out[6] = 0;
	out[7] = 0;
	out[8] = (uint8_t)(length >> 24);
	out[9] = (uint8_t)(length >> 16);
	out[10] = (uint8_t)(length >> 8);
	out[11] = (uint8_t)length;
}

int elastic_proto_header_parse(const uint8_t in[ELASTIC_PROTO_HDR_LEN],
			       struct elastic_proto_header *h, elastic_error_t *err)
{
	uint32_t length;
	if (memcmp(in, ELASTIC_PROTO_MAGIC, 4) != 0)
		return _fail(err, EPROTO,
			     "bad magic %02x%02x%02x%02x (not an elastic frame)", in[0],
			     in[1], in[2], in[3]);
	if (in[4] != ELASTIC_PROTO_VERSION)
		return _fail(err, EPROTO,
			     "protocol version %u not supported (this is %d)", in[4],
			     ELASTIC_PROTO_VERSION);
	if (!elastic_msg_type_name(in[5]))
		return _fail(err, EPROTO, "unknown message type %u", in[5]);
	if (in[6] || in[7])
		return _fail(err, EPROTO, "reserved header bytes are not zero");
	length = (uint32_t)in[8] << 24 | (uint32_t)in[9] << 16 | (uint32_t)in[10] << 8 |
		 in[11];
	if (length == 0 || length > ELASTIC_PROTO_MAX_BODY)
		return _fail(err, EPROTO, "body length %" PRIu32 " not in [1, %d]",
			     length, ELASTIC_PROTO_MAX_BODY);
	h->type = in[5];
	h->length = length;
	return 0;
}

int elastic_proto_body_check(const char *body, size_t len, elastic_error_t *err)
{
	if (len < 7 || memcmp(body, "MUNGE:", 6) != 0)
		return _fail(err, EPROTO, "body is not a munge credential");
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)body[i];
		if (c < 0x21 || c > 0x7e)
			return _fail(
				err, EPROTO,
				"body byte 0x%02x at offset %zu is not printable ASCII",
				c, i);
	}
	return 0;
}
