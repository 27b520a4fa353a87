/* SPDX-License-Identifier: GPL-2.0-or-later */
/* plugin/elasticd/policy.c: elastic allocation policy (water-filling, rounding,
 * hysteresis, placement); the rules are written down in policy.h. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

/* Set err and errno = e; returns -1. */
#define _fail elastic__fail

/* Hysteresis re-split rounds before the last split stands. */
#define _MAX_ROUNDS 32

typedef unsigned __int128 _u128;

/* Working state of one job. */
struct _job {
	const struct elastic_policy_job *in;
	int cur, lo, hi, pinned;
	uint64_t w;   /* water-filling weight */
	int rank;     /* position in rank order */
	int admitted; /* gets at least lo */
	int frozen;   /* held at cur by hysteresis */
	int holdable; /* cur is a size it may keep */
	int cooling;  /* within the cool-down since its last resize */
	int sticky;   /* claim on its next allowed step: 2, 1, 0 (_sticky) */
	enum elastic_policy_reason hold;
	int target, want;
	int state;     /* water-filling: 0 at lo, 1 linear, 2 at hi */
	_u128 deficit; /* (ideal - target) * denominator */
	double share;
};

/* Throughput: a job's model as step-time coefficients over the time at one
 * GPU (_model). */
struct _model {
	double tc[4]; /* none: linear */
	int linear;   /* 1: no model, speedup n; -1: no rate at one GPU; 0: tc */
};

/* Throughput: what stays the same over the split rounds of one decision,
 * per job (admitted jobs only). */
struct _tm {
	struct _model m;
	double s_lo; /* speedup at lo */
	int cap;     /* largest size it may be tried at, before the fair floor */
	int nobs2;   /* measured at two sizes or more */
	int kind;    /* its allowed sizes: enum elastic_sizes_kind, */
	int nlist;   /* and list */
	const int *list;
};

/* Throughput: one active job as the marginal-gain loop sees it, all in two
 * cache lines: a step then touches no job, input or scaling record. */
struct _tj {
	_Alignas(64) int target;
	int cur, cap, hi;
	int next; /* its next step's size */
	int gkey; /* its next step's weighted gain, in 1 % buckets */
	int job;  /* index into ws->j */
	int nlist;
	uint32_t w;
	int8_t kind; /* enum elastic_sizes_kind */
	int8_t nobs2;
	int link; /* next job of its gain level (_gain_pass), -1: none */
	const int *list;
	double s_tgt, s_next; /* speedup at target, at next */
	double inv_share;     /* 1 / fair share (0: none) */
	struct _model m;
};

/* Throughput: a job of one gain level, as the level found it. */
struct _tsave {
	int a; /* position in the active jobs */
	int target, next, gkey, alive;
	double s_tgt, s_next;
};

struct _rank_key {
	uint8_t k[16]; /* id, submit time, ~priority: little-endian bytes */
	int job;
};

/* A level event of job je >> 1: enters the linear part at lo (je & 1 == 0)
 * or leaves it at hi (je & 1 == 1), at level lo / w or hi / w. */
struct _event {
	uint32_t key; /* high bits of the double level: ordered like it */
	uint32_t je;  /* job << 1 | leave */
};

struct _cand {
	_u128 deficit;
	int sticky; /* claim to keep what it holds (_sticky): served first */
	int rank;
	int job;
};

struct _ws {
	const struct elastic_policy_input *in;
	int nj, nn;
	struct _job *j;	      /* per job, at its rank: j[r] is job order[r] */
	int *order;	      /* job indices in rank order */
	int *pos;	      /* per job index: its rank */
	struct _tm *tm;	      /* throughput: per job, at its rank */
	struct _tj *tj;	      /* throughput: per active job */
	_u128 *gheap;	      /* throughput: the gain heap */
	struct _tsave *tsave; /* throughput: one gain level's jobs */
	int *act, nact;	      /* admitted, not held: job indices in rank order */
	struct _event *ev;    /* 2 per admitted job, sorted */
	struct _event *ev2;   /* radix sort scratch */
	int nev;
	struct _cand *cand;	/* scratch for rounding */
	struct _event *rk;	/* rounding: radix sort scratch */
	int *rord;		/* rounding: candidates in rounding order */
	uint64_t *rk64, *rk64b; /* ranking: packed keys, radix scratch */
	int *free;		/* per node: free GPUs for elastic jobs, after holdings */
	int *stamp;		/* per node scratch */
	int capacity;
	uint32_t *idset; /* _check_ids: open-addressing set */
	size_t idcap;
	struct _grow *grow;  /* _place: growing jobs */
	struct _heap *heaps; /* _place: per free count */
	int nheaps;
};

/* A workspace kept between decisions (policy.h): arrays grow as needed,
 * nothing in them outlives a decision. */
struct elastic_policy_ws {
	struct _ws ws;
	size_t njcap, tcap, nncap; /* room for jobs, throughput jobs, nodes */
};

static void _tm_fill(struct _ws *ws, int i);

/* ---- allowed sizes ---------------------------------------------------- */

/* Largest allowed size <= v, or 0, for sizes of that kind (and list). */
static inline int _size_floor_k(int kind, const int *list, int nlist, int v)
{
	if (v < 1)
		return 0;
	switch (kind) {
	case ELASTIC_SIZES_POW2:
		return 1 << (31 - __builtin_clz((unsigned)v));
	case ELASTIC_SIZES_LIST: {
		int lo = 0, hi = nlist; /* first index with list > v */
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			if (list[mid] <= v)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo ? list[lo - 1] : 0;
	}
	default:
		return v;
	}
}

/* Largest allowed size <= v, or 0. */
static int _size_floor(const struct elastic_policy_job *jb, int v)
{
	return _size_floor_k(jb->sizes, jb->size_list, jb->nsize_list, v);
}

/* Smallest allowed size >= v, or -1, for sizes of that kind (and list). */
static inline int _size_ceil_k(int kind, const int *list, int nlist, int v)
{
	if (v < 1)
		v = 1;
	switch (kind) {
	case ELASTIC_SIZES_POW2:
		if (v > (1 << 30))
			return -1;
		return v == 1 ? 1 : 1 << (32 - __builtin_clz((unsigned)(v - 1)));
	case ELASTIC_SIZES_LIST: {
		int lo = 0, hi = nlist; /* first index with list >= v */
		while (lo < hi) {
			int mid = lo + (hi - lo) / 2;
			if (list[mid] < v)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo < nlist ? list[lo] : -1;
	}
	default:
		return v;
	}
}

/* Smallest allowed size >= v, or -1. */
static int _size_ceil(const struct elastic_policy_job *jb, int v)
{
	return _size_ceil_k(jb->sizes, jb->size_list, jb->nsize_list, v);
}

static int _size_ok(const struct elastic_policy_job *jb, int v)
{
	return v >= 1 && _size_floor(jb, v) == v;
}

/* ---- names ------------------------------------------------------------ */

const char *elastic_policy_mode_name(enum elastic_policy_mode mode)
{
	switch (mode) {
	case ELASTIC_POLICY_PRIORITY:
		return "priority";
	case ELASTIC_POLICY_FAIRSHARE:
		return "fairshare";
	case ELASTIC_POLICY_FIFO:
		return "fifo";
	case ELASTIC_POLICY_THROUGHPUT:
		return "throughput";
	}
	return NULL;
}

const char *elastic_policy_reason_name(enum elastic_policy_reason reason)
{
	static const char *const names[] = {
		[ELASTIC_POLICY_STEADY] = "steady",
		[ELASTIC_POLICY_START] = "start",
		[ELASTIC_POLICY_GROW] = "grow",
		[ELASTIC_POLICY_SHRINK] = "shrink",
		[ELASTIC_POLICY_WAIT] = "wait",
		[ELASTIC_POLICY_STOP] = "stop",
		[ELASTIC_POLICY_HOLD_THRESHOLD] = "hold-threshold",
		[ELASTIC_POLICY_HOLD_COOLDOWN] = "hold-cooldown",
	};
	if ((unsigned)reason >= sizeof(names) / sizeof(names[0]))
		return NULL;
	return names[reason];
}

/* ---- input checks ----------------------------------------------------- */

static int _check_nodes(struct _ws *ws, elastic_error_t *err)
{
	const struct elastic_policy_input *in = ws->in;
	int64_t total = 0, capacity = 0;

	for (int n = 0; n < in->nnodes; n++) {
		int gpus = in->node_gpus[n], busy = in->node_busy ? in->node_busy[n] : 0;
		if (gpus < 0 || gpus > ELASTIC_POLICY_MAX_NODE_GPUS)
			return _fail(err, EINVAL, "node %d: %d GPUs (allowed: 0..%d)", n,
				     gpus, ELASTIC_POLICY_MAX_NODE_GPUS);
		if (busy < 0 || busy > gpus)
			return _fail(
				err, EINVAL,
				"node %d: %d GPUs busy with non-elastic jobs (allowed: 0..%d, its GPU count)",
				n, busy, gpus);
		total += gpus;
		capacity += gpus - busy;
		ws->free[n] = gpus - busy;
		ws->stamp[n] = -1;
	}
	if (total == 0)
		return _fail(err, EINVAL, "zero GPU capacity: all %d nodes have 0 GPUs",
			     in->nnodes);
	if (total > INT_MAX)
		return _fail(err, EINVAL, "%lld GPUs in all: more than %d",
			     (long long)total, INT_MAX);
	ws->capacity = (int)capacity;
	return 0;
}

static int _check_sizes(const struct elastic_policy_job *jb, elastic_error_t *err)
{
	switch (jb->sizes) {
	case ELASTIC_SIZES_ANY:
	case ELASTIC_SIZES_POW2:
		return 0;
	case ELASTIC_SIZES_LIST:
		if (!jb->size_list || jb->nsize_list < 1)
			return _fail(err, EINVAL, "job %u: allowed-size list is empty",
				     jb->id);
		for (int i = 0; i < jb->nsize_list; i++) {
			if (jb->size_list[i] < 1)
				return _fail(err, EINVAL, "job %u: allowed size %d < 1",
					     jb->id, jb->size_list[i]);
			if (i && jb->size_list[i] <= jb->size_list[i - 1])
				return _fail(
					err, EINVAL,
					"job %u: allowed sizes not ascending (%d after %d)",
					jb->id, jb->size_list[i], jb->size_list[i - 1]);
		}
		return 0;
	}
	return _fail(err, EINVAL, "job %u: allowed-size kind %d is not any, pow2 or list",
		     jb->id, (int)jb->sizes);
}

/* Check one job and fill its working state; holdings are taken off the
 * nodes' free counts (which must stay >= 0 over all jobs). */
static int _check_job(struct _ws *ws, int i, elastic_error_t *err)
{
	const struct elastic_policy_job *jb = &ws->in->jobs[i];
	struct _job *t = &ws->j[ws->pos[i]]; /* by rank (_rank comes first) */

	*t = (struct _job){.rank = ws->pos[i]};
	if (jb->id == 0)
		return _fail(err, EINVAL, "job at index %d: id 0 (Slurm job ids are > 0)",
			     i);
	if (jb->min < 1)
		return _fail(err, EINVAL, "job %u: min %d < 1", jb->id, jb->min);
	if (jb->max < jb->min)
		return _fail(err, EINVAL, "job %u: min %d > max %d", jb->id, jb->min,
			     jb->max);
	if (_check_sizes(jb, err) < 0)
		return -1;
	t->lo = _size_ceil(jb, jb->min);
	t->hi = _size_floor(jb, jb->max);
	if (t->lo < 0 || t->lo > t->hi)
		return _fail(err, EINVAL,
			     "job %u: no allowed size between min %d and max %d", jb->id,
			     jb->min, jb->max);
	if (jb->submit_time < 0)
		return _fail(err, EINVAL, "job %u: submit time %lld is negative", jb->id,
			     (long long)jb->submit_time);
	if (jb->last_resize < 0)
		return _fail(err, EINVAL, "job %u: last resize time %lld is negative",
			     jb->id, (long long)jb->last_resize);
	if (jb->nplace < 0 || (jb->nplace > 0 && !jb->place))
		return _fail(err, EINVAL,
			     "job %u: placement of %d entries is missing or negative",
			     jb->id, jb->nplace);
	t->in = jb;
	t->cur = 0;
	t->pinned = 0;
	for (int k = 0; k < jb->nplace; k++) {
		const struct elastic_policy_place *p = &jb->place[k];
		if (p->node < 0 || p->node >= ws->nn)
			return _fail(err, EINVAL,
				     "job %u: placement on node %d (nodes: 0..%d)",
				     jb->id, p->node, ws->nn - 1);
		if (p->gpus < 1)
			return _fail(err, EINVAL,
				     "job %u: %d GPUs on node %d (must be > 0)", jb->id,
				     p->gpus, p->node);
		if (p->pinned < 0 || p->pinned > p->gpus)
			return _fail(err, EINVAL,
				     "job %u: %d pinned GPUs on node %d (allowed: 0..%d)",
				     jb->id, p->pinned, p->node, p->gpus);
		if (ws->stamp[p->node] == i)
			return _fail(err, EINVAL,
				     "job %u: node %d listed twice in its placement",
				     jb->id, p->node);
		ws->stamp[p->node] = i;
		if (p->gpus > ws->free[p->node]) {
			int busy = ws->in->node_busy ? ws->in->node_busy[p->node] : 0;
			return _fail(
				err, EINVAL,
				"node %d: over-committed: job %u holds %d GPUs there, but only %d of its %d GPUs are not held by other jobs (%d busy with non-elastic jobs)",
				p->node, jb->id, p->gpus, ws->free[p->node],
				ws->in->node_gpus[p->node], busy);
		}
		ws->free[p->node] -= p->gpus;
		t->cur += p->gpus;
		t->pinned += p->pinned;
	}
	if (t->pinned > jb->min)
		return _fail(err, EINVAL, "job %u: %d pinned GPUs > min %d", jb->id,
			     t->pinned, jb->min);
	if (jb->weight > ELASTIC_WEIGHT_MAX)
		return _fail(err, EINVAL, "job %u: weight %u > %d", jb->id, jb->weight,
			     ELASTIC_WEIGHT_MAX);
	if (ws->in->mode == ELASTIC_POLICY_THROUGHPUT && jb->scaling) {
		const struct elastic_scaling *sc = jb->scaling;
		if (sc->terms < 0 || sc->terms > 4)
			return _fail(err, EINVAL, "job %u: scaling model with %d terms",
				     jb->id, sc->terms);
		for (int k = 0; k < 4; k++)
			if (!(sc->coef[k] >= 0) || !isfinite(sc->coef[k]))
				return _fail(err, EINVAL,
					     "job %u: scaling coefficient %d is %g",
					     jb->id, k, sc->coef[k]);
	}
	t->w = ws->in->mode == ELASTIC_POLICY_PRIORITY && jb->priority ? jb->priority : 1;
	t->w *= jb->weight ? jb->weight : 1;
	if (ws->in->mode == ELASTIC_POLICY_THROUGHPUT)
		_tm_fill(ws, i); /* while its scaling record is at hand */
	return 0;
}

/* Ids must be unique: an open-addressing set over a scratch array. */
static int _check_ids(struct _ws *ws, elastic_error_t *err)
{
	size_t size = 16;
	uint32_t *set;

	while (size < (size_t)ws->nj * 2)
		size <<= 1;
	if (size > ws->idcap) {
		free(ws->idset);
		ws->idcap = 0;
		if (!(ws->idset = malloc(size * sizeof(*set))))
			return _fail(err, ENOMEM, "out of memory checking %d job ids",
				     ws->nj);
		ws->idcap = size;
	}
	set = ws->idset;
	memset(set, 0, size * sizeof(*set));
	for (int i = 0; i < ws->nj; i++) {
		uint32_t id = ws->in->jobs[i].id;
		size_t h = (id * 2654435761u) & (size - 1);
		while (set[h] && set[h] != id)
			h = (h + 1) & (size - 1);
		if (set[h] == id)
			return _fail(err, EINVAL, "job %u: listed twice", id);
		set[h] = id;
	}
	return 0;
}

static int _check_input(struct _ws *ws, elastic_error_t *err)
{
	if (_check_nodes(ws, err) < 0)
		return -1;
	for (int i = 0; i < ws->nj; i++)
		if (_check_job(ws, i, err) < 0)
			return -1;
	return _check_ids(ws, err);
}

/* ---- ranking ---------------------------------------------------------- */

/* Rank order by a stable LSD radix sort over the 16 bytes of the key, least
 * significant first: id, then submit time, then inverted priority (higher
 * priority first). A byte that is the same for every job (most of the
 * submit time, all of the priority in fifo mode) costs no move pass. */
static unsigned _bitlen(uint64_t v)
{
	return v ? 64 - (unsigned)__builtin_clzll(v) : 0;
}

/* One 11-bit digit of an LSD radix sort: its counts turned into the first
 * position of each value; 0 when every key has the digit of the first (the
 * pass would move nothing and is skipped). */
static int _radix11_offsets(uint32_t *count, uint32_t first, size_t n)
{
	uint32_t pos = 0;

	if (count[first] == n)
		return 0;
	for (int v = 0; v < 2048; v++) {
		uint32_t c = count[v];
		count[v] = pos;
		pos += c;
	}
	return 1;
}

/* The same order by one 64-bit key per job when it fits (as it does for
 * real clusters): each field less its smallest value, in as many bits as
 * its range needs, above the job's index; a stable LSD radix sort of the
 * key bits in 11-bit digits. Ids are unique: keys differ above the index,
 * so the order is the 16-byte key's. Returns 1 when the key does not fit
 * (nothing done). */
static int _rank_packed(struct _ws *ws)
{
	size_t n = (size_t)ws->nj;
	uint32_t id_lo = UINT32_MAX, id_hi = 0, p_lo = UINT32_MAX, p_hi = 0;
	uint64_t s_lo = UINT64_MAX, s_hi = 0, *a, *b, *x;
	unsigned bi, bs, bp, bj, nbits, ndig;
	uint32_t count[6][2048];
	int fifo = ws->in->mode == ELASTIC_POLICY_FIFO;

	for (size_t i = 0; i < n; i++) {
		const struct elastic_policy_job *jb = &ws->in->jobs[i];
		uint32_t p = ~(fifo ? 0 : jb->priority);
		uint64_t sub = (uint64_t)jb->submit_time;
		id_lo = jb->id < id_lo ? jb->id : id_lo;
		id_hi = jb->id > id_hi ? jb->id : id_hi;
		p_lo = p < p_lo ? p : p_lo;
		p_hi = p > p_hi ? p : p_hi;
		s_lo = sub < s_lo ? sub : s_lo;
		s_hi = sub > s_hi ? sub : s_hi;
	}
	bi = _bitlen(id_hi - id_lo);
	bs = _bitlen(s_hi - s_lo);
	bp = _bitlen(p_hi - p_lo);
	bj = _bitlen(n - 1);
	nbits = bi + bs + bp;
	if (nbits + bj > 63)
		return 1;
	ndig = (nbits + 10) / 11;
	a = ws->rk64;
	b = ws->rk64b;
	memset(count, 0, sizeof(count[0]) * ndig);
	for (size_t i = 0; i < n; i++) {
		const struct elastic_policy_job *jb = &ws->in->jobs[i];
		uint64_t p = (uint32_t)~(fifo ? 0 : jb->priority) - p_lo;
		uint64_t k = p << (bs + bi) | ((uint64_t)jb->submit_time - s_lo) << bi |
			     (jb->id - id_lo);
		a[i] = k << bj | i;
		for (unsigned d = 0; d < ndig; d++)
			count[d][(k >> (11 * d)) & 2047]++;
	}
	for (unsigned d = 0; d < ndig; d++) {
		unsigned shift = bj + 11 * d;
		if (!_radix11_offsets(count[d], (a[0] >> shift) & 2047, n))
			continue;
		for (size_t i = 0; i < n; i++)
			b[count[d][(a[i] >> shift) & 2047]++] = a[i];
		x = a;
		a = b;
		b = x;
	}
	for (size_t r = 0; r < n; r++) {
		int i = (int)(a[r] & ((UINT64_C(1) << bj) - 1));
		ws->order[r] = i;
		ws->pos[i] = (int)r;
	}
	return 0;
}

static int _rank(struct _ws *ws)
{
	size_t n = (size_t)ws->nj, (*count)[256];
	struct _rank_key *a, *b, *x;

	if (n && !_rank_packed(ws))
		return 0;
	a = malloc(sizeof(*a) * (n ? n : 1));
	b = malloc(sizeof(*b) * (n ? n : 1));
	count = calloc(16, sizeof(*count));
	if (!a || !b || !count) {
		free(a);
		free(b);
		free(count);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const struct elastic_policy_job *jb = &ws->in->jobs[i];
		uint32_t prio = ws->in->mode == ELASTIC_POLICY_FIFO ? 0 : jb->priority;
		uint64_t submit = (uint64_t)jb->submit_time;
		for (int d = 0; d < 4; d++)
			a[i].k[d] = (uint8_t)(jb->id >> (8 * d));
		for (int d = 0; d < 8; d++)
			a[i].k[4 + d] = (uint8_t)(submit >> (8 * d));
		for (int d = 0; d < 4; d++)
			a[i].k[12 + d] = (uint8_t)(~prio >> (8 * d));
		a[i].job = (int)i;
		for (int d = 0; d < 16; d++)
			count[d][a[i].k[d]]++;
	}
	for (int d = 0; d < 16 && n; d++) {
		size_t pos = 0;
		if (count[d][a[0].k[d]] == n)
			continue;
		for (int v = 0; v < 256; v++) {
			size_t c = count[d][v];
			count[d][v] = pos;
			pos += c;
		}
		for (size_t i = 0; i < n; i++)
			b[count[d][a[i].k[d]]++] = a[i];
		x = a;
		a = b;
		b = x;
	}
	for (size_t r = 0; r < n; r++) {
		ws->order[r] = a[r].job;
		ws->pos[a[r].job] = (int)r;
	}
	free(a);
	free(b);
	free(count);
	return 0;
}

/* Running jobs keep their MIN while it fits (lowest rank stopped first);
 * pending jobs follow in rank order until the first that does not fit. */
static void _admit(struct _ws *ws)
{
	int64_t left = ws->capacity;

	for (int r = 0; r < ws->nj; r++) {
		struct _job *t = &ws->j[r];
		if (t->cur > 0 && t->lo <= left) {
			t->admitted = 1;
			left -= t->lo;
		}
	}
	for (int r = 0; r < ws->nj; r++) {
		struct _job *t = &ws->j[r];
		if (t->cur > 0)
			continue;
		if (t->lo > left)
			break;
		t->admitted = 1;
		left -= t->lo;
	}
	ws->nact = 0;
	for (int r = 0; r < ws->nj; r++)
		if (ws->j[r].admitted)
			ws->act[ws->nact++] = r;
}

/* ---- splitting -------------------------------------------------------- */

static uint64_t _ev_v(const struct _ws *ws, struct _event e)
{
	const struct _job *t = &ws->j[e.je >> 1];
	return (uint64_t)(e.je & 1 ? t->hi : t->lo);
}

/* Exact event order: level, then rank, then enter before leave. */
static int _ev_before(const struct _ws *ws, struct _event a, struct _event b)
{
	const struct _job *ta = &ws->j[a.je >> 1], *tb = &ws->j[b.je >> 1];
	/* v < 2^31, w < 2^32: the cross products fit in 64 bits. */
	uint64_t x = _ev_v(ws, a) * tb->w, y = _ev_v(ws, b) * ta->w;
	if (x != y)
		return x < y;
	if (ta->rank != tb->rank)
		return ta->rank < tb->rank;
	return (a.je & 1) < (b.je & 1);
}

/* Exact merge sort of a[0..n) (tmp: n more), for runs of equal keys. */
static void _ev_sort(const struct _ws *ws, struct _event *a, struct _event *tmp, int n)
{
	if (n < 2)
		return;
	if (n <= 8) {
		for (int e = 1; e < n; e++) {
			struct _event cur = a[e];
			int k = e;
			for (; k > 0 && _ev_before(ws, cur, a[k - 1]); k--)
				a[k] = a[k - 1];
			a[k] = cur;
		}
		return;
	}
	int h = n / 2, i = 0, j = h, k = 0;
	_ev_sort(ws, a, tmp, h);
	_ev_sort(ws, a + h, tmp, n - h);
	while (i < h && j < n)
		tmp[k++] = _ev_before(ws, a[j], a[i]) ? a[j++] : a[i++];
	while (i < h)
		tmp[k++] = a[i++];
	while (j < n)
		tmp[k++] = a[j++];
	memcpy(a, tmp, sizeof(*a) * n);
}

/* The high 32 bits of the double v / w: rounded division and dropping low
 * bits are both monotone, so key order never contradicts level order. */
static uint32_t _level_key(uint64_t v, uint64_t w)
{
	double d = (double)v / (double)w;
	uint64_t k;
	memcpy(&k, &d, sizeof(k));
	return (uint32_t)(k >> 32);
}

/* Stable LSD radix sort of a[0..n) by key, in 11-bit digits (b: room for n
 * more); a digit the same everywhere costs no move pass. Returns the array
 * that holds the result; *other is the other one. */
static struct _event *_key_sort(struct _event *a, struct _event *b, int n,
				struct _event **other)
{
	uint32_t count[3][2048];
	struct _event *x;

	memset(count, 0, sizeof(count));
	for (int e = 0; e < n; e++) {
		count[0][a[e].key & 2047]++;
		count[1][(a[e].key >> 11) & 2047]++;
		count[2][a[e].key >> 22]++;
	}
	for (int d = 0; d < 3 && n; d++) {
		int shift = 11 * d;
		if (!_radix11_offsets(count[d], (a[0].key >> shift) & 2047, (size_t)n))
			continue;
		for (int e = 0; e < n; e++)
			b[count[d][(a[e].key >> shift) & 2047]++] = a[e];
		x = a;
		a = b;
		b = x;
	}
	*other = b;
	return a;
}

/* Events in exact level order, in O(n) for all but pathological inputs: a
 * stable radix sort (_key_sort) of 8-byte (key, job) pairs made in rank order, then
 * each run of equal keys is checked and, only where needed, merge-sorted
 * exactly. */
static void _events(struct _ws *ws)
{
	struct _event *a = ws->ev, *b = ws->ev2;
	int n = 0;

	for (int r = 0; r < ws->nj; r++) {
		uint32_t i = (uint32_t)r;
		struct _job *t = &ws->j[i];
		if (!t->admitted)
			continue;
		a[n++] = (struct _event){_level_key(t->lo, t->w), i << 1};
		a[n++] = (struct _event){_level_key(t->hi, t->w), i << 1 | 1};
	}
	a = _key_sort(a, b, n, &b);
	for (int s = 0, e; s < n; s = e) {
		int sorted = 1;
		for (e = s + 1; e < n && a[e].key == a[s].key; e++)
			if (sorted && _ev_before(ws, a[e], a[e - 1]))
				sorted = 0;
		if (!sorted)
			_ev_sort(ws, a + s, b, e - s);
	}
	ws->ev = a;
	ws->ev2 = b;
	ws->nev = n;
}

/* Drop frozen jobs from the active list and the events (orders kept), so
 * later hysteresis rounds cost what is left, not all jobs. */
static void _compact(struct _ws *ws)
{
	int n = 0;
	for (int a = 0; a < ws->nact; a++)
		if (!ws->j[ws->act[a]].frozen)
			ws->act[n++] = ws->act[a];
	ws->nact = n;
	n = 0;
	for (int e = 0; e < ws->nev; e++)
		if (!ws->j[ws->ev[e].je >> 1].frozen)
			ws->ev[n++] = ws->ev[e];
	ws->nev = n;
}

/* Rounding order: the stronger claim to keep what it holds first (stable
 * allocations), then larger deficit, then lower rank. */
static int _cand_before(const struct _cand *a, const struct _cand *b)
{
	if (a->sticky != b->sticky)
		return a->sticky > b->sticky;
	if (a->deficit != b->deficit)
		return a->deficit > b->deficit;
	return a->rank < b->rank;
}

static int _cmp_cand(const void *a, const void *b)
{
	return _cand_before(a, b) ? -1 : _cand_before(b, a);
}

/* A rounding candidate's sort key: the claim (2 bits), then the double
 * deficit's exponent and high 19 mantissa bits (it is >= 0: no sign), all
 * inverted (ascending key: best first). Rounded conversion and dropping low
 * bits are both monotone: key order never contradicts rounding order, and
 * equal keys are settled exactly (_round_order). */
static uint32_t _cand_key(const struct _job *t)
{
	double d = t->deficit >> 64 ? (double)t->deficit : (double)(uint64_t)t->deficit;
	uint64_t k;
	memcpy(&k, &d, sizeof(k));
	return ~((uint32_t)t->sticky << 30 | (uint32_t)(k >> 33 & 0x3fffffff));
}

/* Give job t its next allowed step if it fits in *left. */
static int _step(struct _job *t, int *left)
{
	int next;
	if (t->target >= t->hi)
		return 0;
	next = _size_ceil(t->in, t->target + 1);
	if (next < 0 || next > t->hi || next - t->target > *left)
		return 0;
	*left -= next - t->target;
	t->target = next;
	return 1;
}

/* The active jobs that may step, in rounding order (_cand_before), in
 * ws->rord; returns how many. A stable LSD radix sort of 32-bit keys made
 * in rank order (11-bit digits, a digit the same everywhere costs no move
 * pass), then each run of equal keys is checked and, only where needed,
 * sorted exactly (the claim is in the key whole: equal keys differ only in
 * deficit or rank). */
static int _round_order(struct _ws *ws)
{
	struct _event *a = ws->ev2, *b = ws->rk; /* ev2: free after _events */
	int n = 0;

	for (int i = 0; i < ws->nact; i++) {
		const struct _job *t = &ws->j[ws->act[i]];
		if (t->target < t->hi) {
			uint32_t k = _cand_key(t);
			a[n++] = (struct _event){k, (uint32_t)ws->act[i]};
		}
	}
	a = _key_sort(a, b, n, &b);
	for (int s = 0, e; s < n; s = e) {
		int sorted = 1;
		for (e = s + 1; e < n && a[e].key == a[s].key; e++)
			if (sorted && ws->j[a[e].je].deficit > ws->j[a[e - 1].je].deficit)
				sorted = 0;
		if (!sorted) {
			struct _cand *c = ws->cand;
			for (int k = s; k < e; k++) {
				const struct _job *t = &ws->j[a[k].je];
				c[k - s] = (struct _cand){t->deficit, t->sticky, t->rank,
							  (int)a[k].je};
			}
			qsort(c, e - s, sizeof(*c), _cmp_cand);
			for (int k = s; k < e; k++)
				a[k].je = (uint32_t)c[k - s].job;
		}
	}
	for (int e = 0; e < n; e++)
		ws->rord[e] = (int)a[e].je;
	return n;
}

/* Hand out the left GPUs by largest remainder, one allowed step per job and
 * pass; repeat passes while some job can still take a step. */
static void _round_up(struct _ws *ws, int left)
{
	int *h = ws->rord, nc, progress = 0;

	if (left <= 0)
		return;
	nc = _round_order(ws);
	/* Pass 1, in rounding order. */
	for (int c = 0; c < nc && left > 0; c++)
		progress |= _step(&ws->j[h[c]], &left);
	if (left == 0 || !progress)
		return;
	/* Later passes keep only jobs that may still step (left only
	 * shrinks). */
	while (left > 0 && nc > 0) {
		int kept = 0;
		progress = 0;
		for (int c = 0; c < nc && left > 0; c++) {
			struct _job *t = &ws->j[h[c]];
			int next;
			if (_step(t, &left))
				progress = 1;
			next = t->target < t->hi ? _size_ceil(t->in, t->target + 1) : -1;
			if (next > 0 && next <= t->hi && next - t->target <= left)
				h[kept++] = h[c];
		}
		if (!progress)
			break;
		nc = kept;
	}
}

/* Stable allocations: job t, rounded down to target, whose share lies above
 * target and which holds the next allowed size above it (2: exactly; it is
 * within one allowed step of its share, a rounding the split could have
 * chosen, and keeps it without a re-form) or more (1: it shrinks anyway, to
 * that step, not past it, so no other job need re-form for the step); 0: no
 * claim. Claims are served before any job by largest remainder. */
static int _sticky(const struct _ws *ws, const struct _job *t)
{
	int next;

	if (ws->in->fresh_split || t->deficit == 0 || t->cur <= t->target)
		return 0;
	next = _size_ceil(t->in, t->target + 1);
	if (next < 0 || next > t->hi || t->cur < next)
		return 0;
	return t->cur == next ? 2 : 1;
}

/* Weighted water-filling of K GPUs over the active jobs: each job's share,
 * and its target rounded (round: the GPUs left by rounding down handed out
 * by largest remainder; 0: only the shares are wanted, targets are left as
 * they are unless every job gets its MAX). */
static void _split_weighted(struct _ws *ws, int K, int round)
{
	__int128 A = 0, B = 0;
	int64_t sum_hi = 0;
	int left = K;

	if (!ws->nact)
		return;
	for (int a = 0; a < ws->nact; a++) {
		struct _job *t = &ws->j[ws->act[a]];
		A += t->lo;
		sum_hi += t->hi;
		t->state = 0;
	}
	if (sum_hi <= K) {
		for (int a = 0; a < ws->nact; a++) {
			struct _job *t = &ws->j[ws->act[a]];
			t->target = t->hi;
			t->share = t->hi;
		}
		return;
	}
	/* f(L) = A + B * L on the current segment; stop at the first event
	 * whose level already gives f >= K. */
	for (int e = 0; e < ws->nev; e++) {
		struct _job *t = &ws->j[ws->ev[e].je >> 1];
		int leave = ws->ev[e].je & 1;
		__int128 v = leave ? t->hi : t->lo, w = t->w;
		if (A * w + B * v >= (__int128)K * w)
			break;
		if (!leave) {
			A -= t->lo;
			B += t->w;
			t->state = 1;
		} else {
			A += t->hi;
			B -= t->w;
			t->state = 2;
		}
	}
	/* Level = (K - A) / B; with B == 0 every job sits on a bound. Every
	 * linear job's ideal is w * (K - A) / B: w < 2^32 and K - A < 2^31,
	 * B <= jobs * 2^32 < 2^63, so 64-bit arithmetic is exact. */
	uint64_t num = (uint64_t)(K - A), den = B > 0 ? (uint64_t)B : 1;
	double inv = 1.0 / (double)den;
	for (int a = 0; a < ws->nact; a++) {
		struct _job *t = &ws->j[ws->act[a]];
		uint64_t q, r = 0;
		if (t->state == 1 && B > 0) {
			/* q, r = divmod(p, den) without a divide: the double
			 * estimate is within 1e-5 of p / den (< 2^31), so one
			 * correction step each way is enough, and q * den stays
			 * below p + den < 2^64. */
			uint64_t p = t->w * num;
			q = (uint64_t)((double)p * inv);
			while (q && q * den > p)
				q--;
			r = p - q * den;
			while (r >= den) {
				q++;
				r -= den;
			}
		} else {
			q = t->state == 2 ? (uint64_t)t->hi : (uint64_t)t->lo;
		}
		if (q > (uint64_t)t->hi) /* cannot happen; keep bounds whatever */
			q = t->hi;
		if (q < (uint64_t)t->lo)
			q = t->lo;
		t->share = (double)q + (double)r * inv;
		if (!round)
			continue; /* only the shares are wanted */
		t->target = t->in->sizes == ELASTIC_SIZES_ANY
				    ? (int)q
				    : _size_floor(t->in, (int)q);
		t->deficit = (_u128)(q - (uint64_t)t->target) * den + r;
		t->sticky = _sticky(ws, t);
		left -= t->target;
	}
	if (round)
		_round_up(ws, left);
}

/* ---- throughput ------------------------------------------------------- */

/* Job jb's model as step-time coefficients over the time at one GPU, so that
 * its speedup at n is 1 / (c0/n + c1 + c2*log2(n) + c3*n) (scaling.h). */
static void _model(const struct elastic_policy_job *jb, struct _model *m)
{
	const struct elastic_scaling *sc = jb->scaling;
	double t1;

	m->linear = !sc || !sc->terms;
	if (m->linear)
		return;
	t1 = sc->coef[0] + sc->coef[1] + sc->coef[3]; /* log2(1) = 0 */
	for (int k = 0; k < 4; k++)
		m->tc[k] = t1 > 0 ? sc->coef[k] / t1 : 0;
	m->linear = !(t1 > 0) ? -1 : 0; /* -1: no rate at one GPU: no speedup */
}

/* Predicted speedup at n GPUs by model m; a job with nothing measured
 * scales linearly. */
static inline double _speedup(const struct _model *m, int n)
{
	double d;
	if (m->linear)
		return m->linear > 0 ? (double)n : 0;
	d = m->tc[0] / n + m->tc[1] + m->tc[3] * n;
	if (m->tc[2] > 0)
		d += m->tc[2] * log2((double)n);
	return d > 0 ? 1.0 / d : 0;
}

/* What job i keeps over the rounds of a decision (set when its input is
 * checked): its model, its speedup at lo, its trial bound (twice the largest size it was measured at, or its
 * current size or lo if larger, at most hi). */
static void _tm_fill(struct _ws *ws, int i)
{
	const struct _job *t = &ws->j[ws->pos[i]];
	const struct elastic_scaling *sc = t->in->scaling;
	struct _tm *tm = &ws->tm[ws->pos[i]];
	int seen_lo, seen_hi;

	elastic_scaling_seen(sc && sc->terms ? sc : NULL, &seen_lo, &seen_hi);
	tm->cap = 2 * seen_hi;
	if (tm->cap < t->cur)
		tm->cap = t->cur;
	if (tm->cap < t->lo)
		tm->cap = t->lo;
	if (tm->cap > t->hi)
		tm->cap = t->hi;
	_model(t->in, &tm->m);
	tm->s_lo = _speedup(&tm->m, t->lo);
	tm->nobs2 = sc && sc->nobs >= 2;
	tm->kind = t->in->sizes;
	tm->list = t->in->size_list;
	tm->nlist = t->in->nsize_list;
}

/* Job x's next allowed step, in x->next and x->s_next, and its gain per
 * GPU in *gain; 0 when it has no next step within its bounds and limit (or
 * it does not fit in left, or gains under min_gain). */
static inline int _next_step(double min_gain, struct _tj *x, int limit, int left,
			     double *gain)
{
	int next = x->target < x->cap
			   ? _size_ceil_k(x->kind, x->list, x->nlist, x->target + 1)
			   : -1;

	if (next < 0 || next > x->cap || next > limit || next - x->target > left)
		return 0;
	x->next = next;
	x->s_next = _speedup(&x->m, next);
	*gain = x->s_next - x->s_tgt;
	if (next - x->target != 1) /* x / 1 is x: no divide for one GPU */
		*gain /= next - x->target;
	return *gain >= min_gain;
}

/* Weighted gain per GPU of a step (x * 1 is x). */
static inline double _wgain(const struct _tj *x, double gain)
{
	return x->w == 1 ? gain : gain * (double)x->w;
}

/* Its 1 % bucket: gains that close count as equal, and fairness decides.
 * A linear job's gain is 1 at every step: no logarithm to take. */
static inline int _gkey(const struct _tj *x, double wg)
{
	if (x->m.linear > 0 && x->w == 1)
		return 0;
	return wg > 0 ? (int)floor(log(wg) * 100.0) : INT_MIN;
}

/* The same, and the step's weighted gain bucket in x->gkey. */
static inline int _next_gain(double min_gain, struct _tj *x, int left)
{
	double gain;

	if (!_next_step(min_gain, x, INT_MAX, left, &gain))
		return 0;
	x->gkey = _gkey(x, _wgain(x, gain));
	return 1;
}

/* Job x takes its next step (x->next, set by _next_gain). */
static inline void _take_step(struct _tj *x)
{
	x->target = x->next;
	x->s_tgt = x->s_next;
}

/* Marginal-gain order as one 128-bit key, larger first: the gain bucket,
 * then how far below its fair share the job is (target / share, to 2^-20),
 * then a step it holds, then rank (active jobs are in rank order: position
 * a in it stands for the rank, and the key names the job). */
static inline _u128 _gain_key(const struct _tj *x, int a)
{
	double ratio = x->inv_share > 0 ? x->target * x->inv_share : x->target;
	double q = ratio * 1048576.0;
	uint32_t rq = q >= 4294967295.0 ? UINT32_MAX : (uint32_t)q;
	uint32_t g = (uint32_t)((int64_t)x->gkey + 0x80000000LL);
	uint64_t k1 = ((uint64_t)g << 32) | (uint32_t)(UINT32_MAX - rq);
	uint64_t k2 = ((uint64_t)(x->target < x->cur) << 32) |
		      (uint32_t)(UINT32_MAX - (uint32_t)a);

	return (_u128)k1 << 64 | k2;
}

static inline int _key_pos(_u128 k)
{
	return (int)(UINT32_MAX - (uint32_t)k);
}

/* Sift h[i] down the heap h[0..n). h[n] must be 0, below every key (a key
 * holds UINT32_MAX - rank in its low bits), so that a last child with no
 * sibling needs no test and the larger child is picked without a branch. */
static void _gain_sift(_u128 *h, int n, int i)
{
	_u128 x = h[i];
	for (;;) {
		int c = 2 * i + 1;
		if (c >= n)
			break;
		c += h[c + 1] > h[c];
		if (h[c] <= x)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* Gain levels held at once by _gain_pass (more are taken in turns). */
#define _GAIN_LEVELS 2048

/* Put active job a on the list of its gain level, or on *below if that
 * level is under the window that starts at gbase. */
static inline void _gain_file(struct _ws *ws, int *head, int64_t gbase, int *below, int a)
{
	struct _tj *x = &ws->tj[a];
	int64_t b = (int64_t)x->gkey - gbase;
	int *list = b >= 0 ? &head[b] : below;

	x->link = *list;
	*list = a;
}

/* One pass of the marginal-gain loop: hand out left GPUs one step at a time,
 * the step with the largest key first (_gain_key), while GPUs are left and
 * some job has a step; returns the GPUs left.
 *
 * Exactly what popping every step off one heap of keys does, faster. Keys
 * order by gain level (gkey) first, so the heap would pop every key of the
 * top level g before any key below it, and a job it pops keeps being popped
 * while its steps stay at level g or above: when that level is done, each of
 * its jobs has taken every step up to its first one below g, whatever the
 * order in between. So while all those steps fit in what is left, a level
 * is handed out job by job with no heap at all; only the level that does
 * not fit goes through a heap of its jobs' keys, step by step. A step that
 * does not fit is dropped at once (left only shrinks: it never fits later;
 * the heap would drop it when popped). */
static int _gain_pass(struct _ws *ws, int left)
{
	double min_gain = ws->in->min_gain;
	struct _tsave *sv = ws->tsave;
	_u128 *h = ws->gheap;
	int head[_GAIN_LEVELS], below = -1;

	for (int a = ws->nact - 1; a >= 0; a--)
		if (_next_gain(min_gain, &ws->tj[a], left)) {
			ws->tj[a].link = below;
			below = a;
		}
	while (below >= 0 && left > 0) {
		/* A window of levels from the highest one left. */
		int gmax = INT_MIN, rest = below;
		int64_t gbase;
		for (int a = below; a >= 0; a = ws->tj[a].link)
			if (ws->tj[a].gkey > gmax)
				gmax = ws->tj[a].gkey;
		gbase = (int64_t)gmax - _GAIN_LEVELS + 1;
		for (int b = 0; b < _GAIN_LEVELS; b++)
			head[b] = -1;
		below = -1;
		for (int a = rest, next; a >= 0; a = next) {
			next = ws->tj[a].link;
			_gain_file(ws, head, gbase, &below, a);
		}
		for (int b = _GAIN_LEVELS - 1; b >= 0 && left > 0; b--) {
			int g, ns = 0, n = 0;
			int64_t sum = 0;

			if (head[b] < 0)
				continue;
			g = (int)(gbase + b);
			for (int a = head[b]; a >= 0; a = ws->tj[a].link) {
				struct _tj *x = &ws->tj[a];
				if (x->next - x->target > left)
					continue; /* never fits: dropped */
				sv[ns++] =
					(struct _tsave){a, x->target, x->next,	x->gkey,
							1, x->s_tgt,  x->s_next};
			}
			head[b] = -1;
			/* Every job of the level takes its steps at level g or
			 * above, while they fit. */
			for (int k = 0; k < ns && sum <= left; k++) {
				struct _tj *x = &ws->tj[sv[k].a];
				do {
					sum += x->next - x->target;
					_take_step(x);
				} while ((sv[k].alive =
						  _next_gain(min_gain, x, INT_MAX)) &&
					 x->gkey >= g);
			}
			if (sum <= left) {
				left -= (int)sum;
				for (int k = 0; k < ns; k++)
					if (sv[k].alive)
						_gain_file(ws, head, gbase, &below,
							   sv[k].a);
				continue;
			}
			/* They do not all fit: back to the level's start, and step
			 * by step off a heap of its keys. Jobs whose next step falls
			 * below the level leave the heap for their own level. */
			for (int k = 0; k < ns; k++) {
				struct _tj *x = &ws->tj[sv[k].a];
				x->target = sv[k].target;
				x->next = sv[k].next;
				x->gkey = sv[k].gkey;
				x->s_tgt = sv[k].s_tgt;
				x->s_next = sv[k].s_next;
				h[n++] = _gain_key(x, sv[k].a);
			}
			h[n] = 0;
			for (int i = n / 2 - 1; i >= 0; i--)
				_gain_sift(h, n, i);
			while (n > 0 && left > 0) {
				int a = _key_pos(h[0]);
				struct _tj *x = &ws->tj[a];
				if (x->next - x->target <= left) {
					left -= x->next - x->target;
					_take_step(x);
				}
				int ok = _next_gain(min_gain, x, left);
				if (ok && x->gkey >= g) {
					h[0] = _gain_key(x, a);
				} else {
					if (ok) /* on to its own level */
						_gain_file(ws, head, gbase, &below, a);
					h[0] = h[--n];
					h[n] = 0;
				}
				_gain_sift(h, n, 0);
			}
		}
	}
	return left;
}

/* Throughput: fair shares first (the weighted split with equal weights),
 * each job's base (MIN, raised towards fair_floor x its fair share while the
 * steps gain min_gain), then the GPUs left by marginal gain. */
static void _split_throughput(struct _ws *ws, int K)
{
	double min_gain = ws->in->min_gain;
	int left = K;

	_split_weighted(ws, K, 0);
	for (int a = 0; a < ws->nact; a++) {
		int i = ws->act[a];
		const struct _job *t = &ws->j[i];
		struct _tj *x = &ws->tj[a];
		const struct _tm *tm = &ws->tm[i];
		int floor_size;
		double gain;

		x->target = t->lo;
		x->cur = t->cur;
		x->cap = tm->cap;
		x->hi = t->hi;
		x->job = i;
		x->kind = (int8_t)tm->kind;
		x->list = tm->list;
		x->nlist = tm->nlist;
		x->w = (uint32_t)t->w;
		x->nobs2 = (int8_t)tm->nobs2;
		x->m = tm->m;
		x->s_tgt = tm->s_lo;
		x->inv_share = t->share > 0 ? 1.0 / t->share : 0;
		floor_size = _size_floor_k(tm->kind, tm->list, tm->nlist,
					   (int)(ws->in->fair_floor * t->share));
		if (floor_size > x->cap)
			x->cap = floor_size;
		if (x->m.linear > 0) {
			/* Every step gains exactly 1 (min_gain <= 1), and the
			 * steps reach floor_size, an allowed size <= cap. */
			if (floor_size > x->target) {
				x->target = floor_size;
				x->s_tgt = (double)floor_size;
			}
		} else {
			while (x->target < floor_size &&
			       _next_step(min_gain, x, floor_size, INT_MAX, &gain))
				_take_step(x);
		}
		left -= x->target;
	}
	/* Pass 1 within each job's trial bound; pass 2 gives what is left
	 * beyond it to the jobs measured at two sizes or more, by their model's
	 * extrapolation. A job measured at one size looks linear whatever it
	 * is: beyond its bound it would keep what it got unmeasured. */
	for (int pass = 0; pass < 2 && left > 0; pass++) {
		for (int a = 0; a < ws->nact; a++)
			if (pass && ws->tj[a].nobs2)
				ws->tj[a].cap = ws->tj[a].hi;
		left = _gain_pass(ws, left);
	}
	for (int a = 0; a < ws->nact; a++)
		ws->j[ws->tj[a].job].target = ws->tj[a].target;
}

/* fifo: all MINs, then jobs in rank order take up to their MAX. */
static void _split_fifo(struct _ws *ws, int K)
{
	int64_t left = K;

	for (int a = 0; a < ws->nact; a++)
		left -= ws->j[ws->act[a]].lo;
	for (int a = 0; a < ws->nact; a++) {
		struct _job *t = &ws->j[ws->act[a]];
		int64_t up;
		up = t->lo + left < t->hi ? t->lo + left : t->hi;
		t->target = _size_floor(t->in, (int)up);
		t->share = t->target;
		left -= t->target - t->lo;
	}
}

/* A job may be held at its current size only if that size is one it may
 * have: never below MIN (so it always gets its MIN), never above MAX. */
static int _holdable(const struct _job *t)
{
	return t->cur >= t->lo && t->cur <= t->hi && _size_ok(t->in, t->cur);
}

static int _cooling(const struct _ws *ws, const struct _job *t)
{
	return ws->in->cooldown > 0 && t->in->last_resize > 0 &&
	       ws->in->now - t->in->last_resize < ws->in->cooldown;
}

/* Jobs that may be held, each once, then only their flag is read. */
static void _mark_holdable(struct _ws *ws)
{
	for (int a = 0; a < ws->nact; a++) {
		struct _job *t = &ws->j[ws->act[a]];
		t->holdable = _holdable(t);
		t->cooling = _cooling(ws, t);
	}
}

/* Why job t's change to its target would be held, or STEADY for none. */
static enum elastic_policy_reason _hold_reason(const struct _ws *ws, const struct _job *t)
{
	const struct elastic_policy_input *in = ws->in;
	int64_t d = t->target > t->cur ? t->target - t->cur : t->cur - t->target;

	if (t->cooling)
		return ELASTIC_POLICY_HOLD_COOLDOWN;
	if (d < in->min_change || d * 100 < (int64_t)in->min_change_pct * t->cur)
		return ELASTIC_POLICY_HOLD_THRESHOLD;
	return ELASTIC_POLICY_STEADY;
}

static void _freeze(struct _job *t, enum elastic_policy_reason why, int64_t *K,
		    int64_t *slack)
{
	*slack -= t->cur - t->lo;
	*K -= t->cur;
	t->frozen = 1;
	t->hold = why;
	t->want = t->target;
	t->target = t->cur;
}

/* Split, then hold the changes hysteresis suppresses and re-split around
 * them, until nothing new is held. Once anything is held, the jobs the split
 * left unchanged keep their size too when they are in their cool-down or a
 * threshold is set: a re-split would only nudge them by what the held jobs
 * did not take or give, changes that would be held in turn, one round at a
 * time. The difference is settled among jobs that change anyway, so no
 * extra job re-forms and rounds stay few. Returns the number of rounds. */
static int _split(struct _ws *ws)
{
	int64_t K = ws->capacity;
	int rounds = 0, threshold = ws->in->min_change > 1 || ws->in->min_change_pct > 0;

	_mark_holdable(ws);
	for (;;) {
		int64_t slack = K;
		int held = 0;

		if (ws->in->mode == ELASTIC_POLICY_FIFO)
			_split_fifo(ws, (int)K);
		else if (ws->in->mode == ELASTIC_POLICY_THROUGHPUT)
			_split_throughput(ws, (int)K);
		else
			_split_weighted(ws, (int)K, 1);
		if (++rounds >= _MAX_ROUNDS)
			break;
		for (int a = 0; a < ws->nact; a++)
			slack -= ws->j[ws->act[a]].lo;
		/* Held grows (and steady jobs) only free GPUs; then shrinks are
		 * held while every admitted job's MIN still fits around them. */
		for (int pass = 0; pass < 2; pass++) {
			for (int a = 0; a < ws->nact; a++) {
				struct _job *t = &ws->j[ws->act[a]];
				enum elastic_policy_reason why;
				if (t->frozen || !t->holdable)
					continue;
				if (t->target == t->cur) {
					if (pass == 0 && (t->cooling || threshold))
						_freeze(t, ELASTIC_POLICY_STEADY, &K,
							&slack);
					continue;
				}
				if ((pass == 0) != (t->target > t->cur))
					continue;
				why = _hold_reason(ws, t);
				if (why == ELASTIC_POLICY_STEADY)
					continue;
				if (pass == 1 && slack - (t->cur - t->lo) < 0)
					continue;
				_freeze(t, why, &K, &slack);
				held++;
			}
		}
		if (!held)
			break;
		_compact(ws);
	}
	return rounds;
}

/* ---- placement -------------------------------------------------------- */

/* Lazy min-heaps of node indices, one per free count: a node's entry is
 * current only while its free count equals the heap's value. */
struct _heap {
	int *a;
	int n, cap;
};

static int _heap_push(struct _heap *h, int node)
{
	int i;
	if (h->n == h->cap) {
		int cap = h->cap ? h->cap * 2 : 16;
		int *a = realloc(h->a, sizeof(*a) * cap);
		if (!a)
			return -1;
		h->a = a;
		h->cap = cap;
	}
	for (i = h->n++; i > 0 && h->a[(i - 1) / 2] > node; i = (i - 1) / 2)
		h->a[i] = h->a[(i - 1) / 2];
	h->a[i] = node;
	return 0;
}

static void _heap_pop(struct _heap *h)
{
	int last = h->a[--h->n], i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->a[c + 1] < h->a[c])
			c++;
		if (h->a[c] >= last)
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (h->n)
		h->a[i] = last;
}

/* Lowest node index with exactly v free GPUs, or -1. */
static int _heap_top(struct _heap *heaps, const int *freec, int v)
{
	struct _heap *h = &heaps[v];
	while (h->n && freec[h->a[0]] != v)
		_heap_pop(h);
	return h->n ? h->a[0] : -1;
}

struct _grow {
	int need, rank, job;
};

static int _cmp_grow(const void *pa, const void *pb)
{
	const struct _grow *a = pa, *b = pb;
	if (a->need != b->need)
		return a->need > b->need ? -1 : 1;
	return a->rank - b->rank;
}

/* Placement entry orders for _sort_place (entries per job are few). */
enum { _BY_NODE, _BY_RELEASE, _BY_OWN };

static int _place_before(const struct elastic_policy_place *a,
			 const struct elastic_policy_place *b, int by)
{
	switch (by) {
	case _BY_RELEASE: /* give back: fewest GPUs first, then higher node */
		if (a->gpus != b->gpus)
			return a->gpus < b->gpus;
		return a->node > b->node;
	case _BY_OWN: /* grow on own nodes: most GPUs first, then lower node */
		if (a->gpus != b->gpus)
			return a->gpus > b->gpus;
		return a->node < b->node;
	default:
		return a->node < b->node;
	}
}

static int _cmp_by_node(const void *a, const void *b)
{
	return _place_before(a, b, _BY_NODE) ? -1 : _place_before(b, a, _BY_NODE);
}

static int _cmp_by_release(const void *a, const void *b)
{
	return _place_before(a, b, _BY_RELEASE) ? -1 : _place_before(b, a, _BY_RELEASE);
}

static int _cmp_by_own(const void *a, const void *b)
{
	return _place_before(a, b, _BY_OWN) ? -1 : _place_before(b, a, _BY_OWN);
}

/* Most jobs hold a few entries, mostly in order already: insertion sort,
 * O(n) then; long lists go to qsort (O(n log n) whatever their order). */
static void _sort_place(struct elastic_policy_place *p, int n, int by)
{
	static int (*const cmp[])(const void *, const void *) = {
		[_BY_NODE] = _cmp_by_node,
		[_BY_RELEASE] = _cmp_by_release,
		[_BY_OWN] = _cmp_by_own,
	};
	if (n > 32) {
		qsort(p, n, sizeof(*p), cmp[by]);
		return;
	}
	for (int e = 1; e < n; e++) {
		struct elastic_policy_place cur = p[e];
		int k = e;
		while (k > 0 && _place_before(&cur, &p[k - 1], by)) {
			p[k] = p[k - 1];
			k--;
		}
		p[k] = cur;
	}
}

/* Take up to want GPUs of node n for target tg; returns how many. */
static int _take(struct _ws *ws, struct _heap *heaps, struct elastic_policy_target *tg,
		 int n, int want, int own)
{
	int got = ws->free[n] < want ? ws->free[n] : want;
	if (got <= 0)
		return 0;
	ws->free[n] -= got;
	if (ws->free[n] > 0 && _heap_push(&heaps[ws->free[n]], n) < 0)
		return -1;
	if (own) {
		for (int k = 0; k < tg->nplace; k++)
			if (tg->place[k].node == n) {
				tg->place[k].gpus += got;
				return got;
			}
	}
	tg->place[tg->nplace++] = (struct elastic_policy_place){n, got, 0};
	return got;
}

/* What each job keeps of its placement: all of it, or what is left once
 * a shrink gives back the smallest holdings first (never pinned GPUs); a
 * job stopped gives back everything. Released GPUs count as free. */
static void _keep_or_release(struct _ws *ws, struct elastic_policy_target *tg)
{
	for (int i = 0; i < ws->nj; i++) {
		const struct elastic_policy_job *jb = &ws->in->jobs[i];
		struct elastic_policy_target *t = &tg[i];
		int rel = t->cur - t->gpus;

		t->nplace = 0;
		if (t->gpus == 0) {
			for (int k = 0; k < jb->nplace; k++)
				ws->free[jb->place[k].node] += jb->place[k].gpus;
			continue;
		}
		if (jb->nplace) /* place may be NULL then */
			memcpy(t->place, jb->place, sizeof(*t->place) * jb->nplace);
		t->nplace = jb->nplace;
		if (rel <= 0)
			continue;
		_sort_place(t->place, t->nplace, _BY_RELEASE);
		for (int k = 0; k < t->nplace && rel > 0; k++) {
			struct elastic_policy_place *p = &t->place[k];
			int r = p->gpus - p->pinned < rel ? p->gpus - p->pinned : rel;
			p->gpus -= r;
			ws->free[p->node] += r;
			rel -= r;
		}
		int kept = 0;
		for (int k = 0; k < t->nplace; k++)
			if (t->place[k].gpus > 0)
				t->place[kept++] = t->place[k];
		t->nplace = kept;
	}
}

/* Place every job's target; tg[i].place points at room for its entries. */
static int _place(struct _ws *ws, struct elastic_policy_target *tg, elastic_error_t *err)
{
	struct _heap *heaps = ws->heaps;
	struct _grow *grow = ws->grow;
	int ngrow = 0, maxv = 0;

	_keep_or_release(ws, tg);

	/* Free counts by value, lowest node first. */
	for (int n = 0; n < ws->nn; n++)
		if (ws->free[n] > maxv)
			maxv = ws->free[n];
	if (maxv + 1 > ws->nheaps) {
		struct _heap *h = realloc(heaps, sizeof(*h) * (maxv + 1));
		if (!h)
			goto nomem;
		memset(h + ws->nheaps, 0, sizeof(*h) * (maxv + 1 - ws->nheaps));
		ws->heaps = heaps = h;
		ws->nheaps = maxv + 1;
	}
	for (int v = 0; v <= maxv; v++)
		heaps[v].n = 0;
	for (int n = 0; n < ws->nn; n++)
		if (ws->free[n] > 0 && _heap_push(&heaps[ws->free[n]], n) < 0)
			goto nomem;

	for (int i = 0; i < ws->nj; i++)
		if (tg[i].gpus > tg[i].cur)
			grow[ngrow++] =
				(struct _grow){tg[i].gpus - tg[i].cur, ws->pos[i], i};
	qsort(grow, ngrow, sizeof(*grow), _cmp_grow);

	for (int g = 0; g < ngrow; g++) {
		struct elastic_policy_target *t = &tg[grow[g].job];
		int rem = grow[g].need, got;

		/* Nodes the job already uses, most held first. */
		_sort_place(t->place, t->nplace, _BY_OWN);
		for (int k = 0, n0 = t->nplace; k < n0 && rem > 0; k++) {
			if ((got = _take(ws, heaps, t, t->place[k].node, rem, 1)) < 0)
				goto nomem;
			rem -= got;
		}
		while (rem > 0) {
			int node = -1, v;
			while (maxv > 0 && _heap_top(heaps, ws->free, maxv) < 0)
				maxv--;
			if (maxv == 0) {
				return _fail(
					err, EFAULT,
					"internal error: no free GPU left to place job %u (%d more GPUs)",
					t->id, rem);
			}
			/* Best fit: the smallest free count that covers rem. */
			for (v = rem; v <= maxv && node < 0; v++)
				node = _heap_top(heaps, ws->free, v);
			if (node < 0)
				node = _heap_top(heaps, ws->free, maxv);
			if ((got = _take(ws, heaps, t, node, rem, 0)) < 0)
				goto nomem;
			rem -= got;
		}
	}
	for (int i = 0; i < ws->nj; i++)
		if (tg[i].nplace > 1)
			_sort_place(tg[i].place, tg[i].nplace, _BY_NODE);
	return 0;
nomem:
	return _fail(err, ENOMEM, "out of memory placing %d jobs on %d nodes", ws->nj,
		     ws->nn);
}

/* ---- the decision ----------------------------------------------------- */

static void _ws_free(struct _ws *ws)
{
	free(ws->j);
	free(ws->pos);
	free(ws->order);
	free(ws->tm);
	free(ws->tj);
	free(ws->gheap);
	free(ws->tsave);
	free(ws->act);
	free(ws->ev);
	free(ws->ev2);
	free(ws->cand);
	free(ws->rk);
	free(ws->rord);
	free(ws->rk64);
	free(ws->rk64b);
	free(ws->free);
	free(ws->stamp);
	free(ws->grow);
	free(ws->idset);
	if (ws->heaps)
		for (int v = 0; v < ws->nheaps; v++)
			free(ws->heaps[v].a);
	free(ws->heaps);
}

static int _check_top(const struct elastic_policy_input *in,
		      struct elastic_policy_result **out, elastic_error_t *err)
{
	if (!in)
		return _fail(err, EINVAL, "no policy input");
	if (!out)
		return _fail(err, EINVAL, "no place for the policy result");
	if (!elastic_policy_mode_name(in->mode))
		return _fail(
			err, EINVAL,
			"policy mode %d is not priority, fairshare, fifo or throughput",
			(int)in->mode);
	if (in->mode == ELASTIC_POLICY_THROUGHPUT &&
	    !(in->min_gain >= 0 && in->min_gain <= 1))
		return _fail(err, EINVAL, "throughput min gain %g is outside 0..1",
			     in->min_gain);
	if (in->mode == ELASTIC_POLICY_THROUGHPUT &&
	    !(in->fair_floor >= 0 && in->fair_floor <= 1))
		return _fail(err, EINVAL, "throughput fairness floor %g is outside 0..1",
			     in->fair_floor);
	if (in->now < 0)
		return _fail(err, EINVAL, "now %lld is negative", (long long)in->now);
	if (in->min_change < 0)
		return _fail(err, EINVAL, "hysteresis min change %d GPUs is negative",
			     in->min_change);
	if (in->min_change_pct < 0 || in->min_change_pct > 100)
		return _fail(err, EINVAL, "hysteresis min change %d%% is outside 0..100",
			     in->min_change_pct);
	if (in->cooldown < 0)
		return _fail(err, EINVAL, "hysteresis cool-down %lld s is negative",
			     (long long)in->cooldown);
	if (in->nnodes <= 0)
		return _fail(err, EINVAL, "no nodes (%d)", in->nnodes);
	if (!in->node_gpus)
		return _fail(err, EINVAL, "no GPU counts for the %d nodes", in->nnodes);
	if (in->njobs < 0)
		return _fail(err, EINVAL, "job count %d is negative", in->njobs);
	if (in->njobs > 0 && !in->jobs)
		return _fail(err, EINVAL, "no job array for %d jobs", in->njobs);
	return 0;
}

/* Grow p to room for n elements of size (never shrinks, contents not
 * kept); 0 or -1. */
static int _reserve(void *pp, size_t *cap, size_t n, size_t size, size_t align)
{
	void **p = pp, *q;

	if (n <= *cap && *p)
		return 0;
	free(*p);
	*p = NULL;
	*cap = 0;
	if (align) {
		size_t bytes = (n * size + align - 1) / align * align;
		q = aligned_alloc(align, bytes);
	} else {
		q = malloc(n * size);
	}
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/* Room for nj jobs on nn nodes (throughput: its arrays too). */
static int _ws_reserve(struct elastic_policy_ws *w, int nj, int nn, int throughput)
{
	struct _ws *ws = &w->ws;
	size_t n = nj ? (size_t)nj : 1, c;
	int rc = 0;

	if (n > w->njcap) {
		c = 0;
		rc |= _reserve(&ws->j, &c, n, sizeof(*ws->j), 0);
		c = 0;
		rc |= _reserve(&ws->pos, &c, n, sizeof(*ws->pos), 0);
		c = 0;
		rc |= _reserve(&ws->order, &c, n, sizeof(*ws->order), 0);
		c = 0;
		rc |= _reserve(&ws->act, &c, n, sizeof(*ws->act), 0);
		c = 0;
		rc |= _reserve(&ws->ev, &c, 2 * n, sizeof(*ws->ev), 0);
		c = 0;
		rc |= _reserve(&ws->ev2, &c, 2 * n, sizeof(*ws->ev2), 0);
		c = 0;
		rc |= _reserve(&ws->cand, &c, n, sizeof(*ws->cand), 0);
		c = 0;
		rc |= _reserve(&ws->rk, &c, n, sizeof(*ws->rk), 0);
		c = 0;
		rc |= _reserve(&ws->rord, &c, n, sizeof(*ws->rord), 0);
		c = 0;
		rc |= _reserve(&ws->rk64, &c, n, sizeof(*ws->rk64), 0);
		c = 0;
		rc |= _reserve(&ws->rk64b, &c, n, sizeof(*ws->rk64b), 0);
		c = 0;
		rc |= _reserve(&ws->grow, &c, n, sizeof(*ws->grow), 0);
		w->njcap = rc ? 0 : n;
		if (rc)
			return -1;
	}
	if (throughput && n > w->tcap) {
		c = 0;
		rc |= _reserve(&ws->tm, &c, n, sizeof(*ws->tm), 0);
		c = 0;
		rc |= _reserve(&ws->tj, &c, n, sizeof(*ws->tj), _Alignof(struct _tj));
		c = 0;
		rc |= _reserve(&ws->gheap, &c, n + 1, sizeof(*ws->gheap), 0);
		c = 0;
		rc |= _reserve(&ws->tsave, &c, n, sizeof(*ws->tsave), 0);
		w->tcap = rc ? 0 : n;
		if (rc)
			return -1;
	}
	if ((size_t)nn > w->nncap) {
		c = 0;
		rc |= _reserve(&ws->free, &c, (size_t)nn, sizeof(*ws->free), 0);
		c = 0;
		rc |= _reserve(&ws->stamp, &c, (size_t)nn, sizeof(*ws->stamp), 0);
		w->nncap = rc ? 0 : (size_t)nn;
		if (rc)
			return -1;
	}
	return 0;
}

struct elastic_policy_ws *elastic_policy_ws_create(void)
{
	return calloc(1, sizeof(struct elastic_policy_ws));
}

void elastic_policy_ws_destroy(struct elastic_policy_ws *w)
{
	if (!w)
		return;
	_ws_free(&w->ws);
	free(w);
}

int elastic_policy_decide(const struct elastic_policy_input *in,
			  struct elastic_policy_result **out, elastic_error_t *err)
{
	struct elastic_policy_ws *w;
	int rc;

	if (_check_top(in, out, err) < 0)
		return -1;
	if (!(w = elastic_policy_ws_create()))
		return _fail(err, ENOMEM, "out of memory for %d jobs on %d nodes",
			     in->njobs, in->nnodes);
	rc = elastic_policy_decide_ws(in, w, out, err);
	elastic_policy_ws_destroy(w);
	return rc;
}

int elastic_policy_decide_ws(const struct elastic_policy_input *in,
			     struct elastic_policy_ws *w,
			     struct elastic_policy_result **out, elastic_error_t *err)
{
	struct elastic_policy_result *res = NULL;
	size_t nplaces = 0, size;
	struct _ws *ws;
	int nj;

	if (_check_top(in, out, err) < 0)
		return -1;
	if (!w)
		return _fail(err, EINVAL, "no policy workspace");
	if (_ws_reserve(w, in->njobs, in->nnodes, in->mode == ELASTIC_POLICY_THROUGHPUT) <
	    0)
		return _fail(err, ENOMEM, "out of memory for %d jobs on %d nodes",
			     in->njobs, in->nnodes);
	ws = &w->ws;
	ws->in = in;
	ws->nj = nj = in->njobs;
	ws->nn = in->nnodes;
	ws->nact = ws->nev = 0;
	ws->capacity = 0;
	/* Ranked first (only ids, submit times and priorities are read, and
	 * any values sort), so that the checks fill each job's working state
	 * at its rank: the passes in rank order read it in sequence. */
	if (_rank(ws) < 0) {
		(void)_fail(err, ENOMEM, "out of memory ranking %d jobs", nj);
		goto fail;
	}
	if (_check_input(ws, err) < 0)
		goto fail;
	_admit(ws);
	if (in->mode != ELASTIC_POLICY_FIFO)
		_events(ws);
	int rounds = _split(ws);

	/* One block: result, targets, then room for every placement. */
	for (int i = 0; i < nj; i++) {
		const struct _job *t = &ws->j[ws->pos[i]];
		int target = t->admitted ? t->target : 0;
		int add = target > t->cur ? target - t->cur : 0;
		nplaces += t->in->nplace + (add < ws->nn ? add : ws->nn);
	}
	size = sizeof(*res) + sizeof(*res->targets) * nj +
	       sizeof(*res->targets->place) * nplaces;
	if (!(res = calloc(1, size))) {
		(void)_fail(err, ENOMEM, "out of memory for the result of %d jobs", nj);
		goto fail;
	}
	res->mode = in->mode;
	res->capacity = ws->capacity;
	res->rounds = rounds;
	res->now = in->now;
	res->cooldown = in->cooldown;
	res->njobs = nj;
	res->targets = (struct elastic_policy_target *)(res + 1);
	struct elastic_policy_place *pool =
		(struct elastic_policy_place *)(res->targets + nj);
	for (int i = 0; i < nj; i++) {
		const struct _job *t = &ws->j[ws->pos[i]];
		struct elastic_policy_target *tg = &res->targets[i];
		int add;

		tg->id = t->in->id;
		tg->cur = t->cur;
		tg->min = t->lo;
		tg->max = t->hi;
		if (!t->admitted) {
			tg->gpus = tg->want = 0;
			tg->reason =
				t->cur > 0 ? ELASTIC_POLICY_STOP : ELASTIC_POLICY_WAIT;
		} else {
			tg->gpus = t->target;
			tg->want = t->frozen ? t->want : t->target;
			tg->share = t->share;
			if (t->frozen)
				tg->reason = t->hold;
			else if (t->target == t->cur)
				tg->reason = ELASTIC_POLICY_STEADY;
			else if (t->cur == 0)
				tg->reason = ELASTIC_POLICY_START;
			else
				tg->reason = t->target > t->cur ? ELASTIC_POLICY_GROW
								: ELASTIC_POLICY_SHRINK;
		}
		if (in->mode == ELASTIC_POLICY_THROUGHPUT) {
			const struct _model *m = &ws->tm[ws->pos[i]].m;
			tg->eff_cur = t->cur > 0 ? _speedup(m, t->cur) / t->cur : 0;
			tg->eff = tg->gpus > 0 ? _speedup(m, tg->gpus) / tg->gpus : 0;
		}
		res->used += tg->gpus;
		tg->place = pool;
		add = tg->gpus > tg->cur ? tg->gpus - tg->cur : 0;
		pool += t->in->nplace + (add < ws->nn ? add : ws->nn);
	}
	res->idle = res->capacity - res->used;
	if (_place(ws, res->targets, err) < 0)
		goto fail;
	*out = res;
	return 0;
fail:
	free(res);
	return -1;
}

void elastic_policy_result_destroy(struct elastic_policy_result *res)
{
	free(res);
}

int elastic_policy_explain(const struct elastic_policy_result *res, int i, char *buf,
			   size_t len)
{
	const struct elastic_policy_target *t;
	const char *mode;

	if (!res || i < 0 || i >= res->njobs || (!buf && len)) {
		errno = EINVAL;
		return -1;
	}
	t = &res->targets[i];
	mode = elastic_policy_mode_name(res->mode);
	if (res->mode == ELASTIC_POLICY_THROUGHPUT &&
	    (t->reason == ELASTIC_POLICY_GROW || t->reason == ELASTIC_POLICY_SHRINK) &&
	    t->cur >= t->min && t->cur <= t->max)
		return snprintf(
			buf, len,
			"job %u: %s %d -> %d GPUs (efficiency %.2f at %d, %.2f at %d; fair share %.2f)",
			t->id, t->reason == ELASTIC_POLICY_GROW ? "grow" : "shrink",
			t->cur, t->gpus, t->eff_cur, t->cur, t->eff, t->gpus, t->share);
	switch (t->reason) {
	case ELASTIC_POLICY_STEADY:
		return snprintf(buf, len, "job %u: steady at %d GPUs", t->id, t->gpus);
	case ELASTIC_POLICY_START:
		return snprintf(buf, len,
				"job %u: start with %d GPUs (%s share %.2f of %d)", t->id,
				t->gpus, mode, t->share, res->capacity);
	case ELASTIC_POLICY_GROW:
		if (t->cur < t->min)
			return snprintf(buf, len,
					"job %u: grow %d -> %d GPUs (below its min %d)",
					t->id, t->cur, t->gpus, t->min);
		return snprintf(buf, len,
				"job %u: grow %d -> %d GPUs (%s share %.2f of %d)", t->id,
				t->cur, t->gpus, mode, t->share, res->capacity);
	case ELASTIC_POLICY_SHRINK:
		if (t->cur > t->max)
			return snprintf(buf, len,
					"job %u: shrink %d -> %d GPUs (above its max %d)",
					t->id, t->cur, t->gpus, t->max);
		return snprintf(buf, len,
				"job %u: shrink %d -> %d GPUs (%s share %.2f of %d)",
				t->id, t->cur, t->gpus, mode, t->share, res->capacity);
	case ELASTIC_POLICY_WAIT:
		return snprintf(
			buf, len,
			"job %u: waits: its min of %d GPUs does not fit beside the mins of running and higher-ranked jobs (%d GPUs)",
			t->id, t->min, res->capacity);
	case ELASTIC_POLICY_STOP:
		return snprintf(
			buf, len,
			"job %u: stop: its min of %d GPUs no longer fits beside the mins of higher-ranked running jobs (%d GPUs)",
			t->id, t->min, res->capacity);
	case ELASTIC_POLICY_HOLD_THRESHOLD:
		return snprintf(
			buf, len,
			"job %u: held at %d GPUs (would be %d: change under the threshold)",
			t->id, t->gpus, t->want);
	case ELASTIC_POLICY_HOLD_COOLDOWN:
		return snprintf(
			buf, len,
			"job %u: held at %d GPUs (would be %d: within the %llds cool-down)",
			t->id, t->gpus, t->want, (long long)res->cooldown);
	}
	errno = EINVAL;
	return -1;
}
