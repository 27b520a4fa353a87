/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/sampler.c: the batch plan (constant global batch over any world size) and
 * the elastic sampler (each sample exactly once per epoch across resizes). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int elastic_batch_plan(int global, int max_micro, int size, int rank, const int *sizes,
		       int nsizes, struct elastic_batch_plan *plan, elastic_error_t *err)
{
	struct elastic_batch_plan p;
	int active = size, base, extra, maxshare;

	if (!plan)
		return _fail(err, EINVAL, "elastic_batch_plan: plan is NULL");
	if (global < 1)
		return _fail(err, EINVAL, "elastic_batch_plan: global batch %d < 1",
			     global);
	if (max_micro < 1)
		return _fail(err, EINVAL, "elastic_batch_plan: micro-batch limit %d < 1",
			     max_micro);
	if (size < 1 || rank < 0 || rank >= size)
		return _fail(err, EINVAL,
			     "elastic_batch_plan: rank %d is not in a world of %d", rank,
			     size);
	if (nsizes < 0 || (nsizes > 0 && !sizes))
		return _fail(err, EINVAL,
			     "elastic_batch_plan: bad list of allowed sizes");
	if (nsizes > 0) {
		active = 0;
		for (int i = 0; i < nsizes; i++)
			if (sizes[i] <= size && sizes[i] > active)
				active = sizes[i];
		if (active < 1)
			return _fail(
				err, EINVAL,
				"elastic_batch_plan: no allowed size is <= the world size %d",
				size);
	}
	base = global / active;
	extra = global % active;
	maxshare = base + (extra > 0);
	memset(&p, 0, sizeof(p));
	p.active = active;
	if (rank < active) {
		p.share = base + (rank < extra);
		p.offset = rank * base + (rank < extra ? rank : extra);
	} else {
		p.offset = global;
	}
	p.accum = maxshare > 0 ? (maxshare + max_micro - 1) / max_micro : 1;
	p.micro = maxshare > 0 ? (maxshare + p.accum - 1) / p.accum : 0;
	*plan = p;
	return 0;
}

struct elastic_sampler_pos {
	uint64_t epoch;
	uint64_t consumed; /* samples of the epoch already taken */
};

struct elastic_sampler {
	struct elastic_sampler_pos pos; /* the state (registered) */
	uint64_t n, seed;
	int shuffle;
	uint64_t *perm; /* order of the epoch perm_epoch */
	uint64_t perm_epoch;
	int perm_valid;
};

static uint64_t _splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Order of the current epoch: the identity, or a Fisher-Yates shuffle drawn
 * from (seed, epoch) alone, so any process computes the same one. */
static void _order(elastic_sampler_t *s)
{
	if (s->perm_valid && s->perm_epoch == s->pos.epoch)
		return;
	for (uint64_t i = 0; i < s->n; i++)
		s->perm[i] = i;
	if (s->shuffle) {
		uint64_t x = s->seed ^ (s->pos.epoch * 0xd1b54a32d192ed03ull);
		for (uint64_t i = s->n - 1; i > 0; i--) {
			/* unbiased draw in [0, i] */
			uint64_t bound = i + 1, r, lim = UINT64_MAX - UINT64_MAX % bound;
			do
				r = _splitmix(&x);
			while (r >= lim);
			r %= bound;
			uint64_t t = s->perm[i];
			s->perm[i] = s->perm[r];
			s->perm[r] = t;
		}
	}
	s->perm_epoch = s->pos.epoch;
	s->perm_valid = 1;
}

int elastic_sampler_create(uint64_t nsamples, uint64_t seed, int shuffle,
			   elastic_sampler_t **out, elastic_error_t *err)
{
	elastic_sampler_t *s;

	if (!out)
		return _fail(err, EINVAL,
			     "elastic_sampler_create: sampler pointer is NULL");
	if (nsamples == 0)
		return _fail(err, EINVAL, "elastic_sampler_create: no samples");
	if (nsamples > SIZE_MAX / sizeof(uint64_t))
		return _fail(err, EOVERFLOW,
			     "elastic_sampler_create: %llu samples is too many",
			     (unsigned long long)nsamples);
	if (!(s = calloc(1, sizeof(*s))) ||
	    !(s->perm = malloc(nsamples * sizeof(uint64_t)))) {
		free(s);
		return _fail(err, ENOMEM, "elastic_sampler_create: out of memory");
	}
	s->n = nsamples;
	s->seed = seed;
	s->shuffle = shuffle != 0;
	*out = s;
	return 0;
}

void elastic_sampler_destroy(elastic_sampler_t *s)
{
	if (!s)
		return;
	free(s->perm);
	free(s);
}

int elastic_sampler_register(elastic_ctx_t *ctx, elastic_sampler_t *s,
			     elastic_error_t *err)
{
	if (!s)
		return _fail(err, EINVAL, "elastic_sampler_register: sampler is NULL");
	if (elastic_register(ctx, "elastic.sampler", &s->pos, sizeof(s->pos), err) < 0)
		return -1;
	ctx->sampler = s; /* its position is the job's progress in samples */
	return 0;
}

uint64_t elastic__sampler_seen(const elastic_sampler_t *s)
{
	return s->pos.epoch * s->n + s->pos.consumed;
}

uint64_t elastic_sampler_step_samples(const elastic_sampler_t *s, int global)
{
	if (!s || global < 1)
		return 0;
	uint64_t left = s->n - s->pos.consumed;
	return left < (uint64_t)global ? left : (uint64_t)global;
}

int elastic_sampler_indices(elastic_sampler_t *s, const struct elastic_batch_plan *plan,
			    uint64_t *idx, size_t cap, size_t *n, elastic_error_t *err)
{
	if (!s || !plan || !n || (!idx && cap))
		return _fail(err, EINVAL, "elastic_sampler_indices: NULL argument");
	if (plan->share < 0 || plan->offset < 0 ||
	    s->pos.consumed + (uint64_t)plan->offset + (uint64_t)plan->share > s->n)
		return _fail(
			err, EINVAL,
			"elastic_sampler_indices: the plan (%d samples at %d) goes past the epoch (%llu of %llu samples left)",
			plan->share, plan->offset,
			(unsigned long long)(s->n - s->pos.consumed),
			(unsigned long long)s->n);
	if ((size_t)plan->share > cap)
		return _fail(err, ERANGE,
			     "elastic_sampler_indices: %d indices do not fit in %zu",
			     plan->share, cap);
	_order(s);
	for (int i = 0; i < plan->share; i++)
		idx[i] = s->perm[s->pos.consumed + (uint64_t)plan->offset + (uint64_t)i];
	*n = (size_t)plan->share;
	return 0;
}

int elastic_sampler_advance(elastic_sampler_t *s, int global)
{
	if (!s || global < 1)
		return 0;
	s->pos.consumed += elastic_sampler_step_samples(s, global);
	if (s->pos.consumed >= s->n) {
		s->pos.epoch++;
		s->pos.consumed = 0;
		return 1;
	}
	return 0;
}

uint64_t elastic_sampler_epoch(const elastic_sampler_t *s)
{
	return s ? s->pos.epoch : 0;
}

uint64_t elastic_sampler_consumed(const elastic_sampler_t *s)
{
	return s ? s->pos.consumed : 0;
}

int elastic_sampler_seek(elastic_sampler_t *s, uint64_t epoch, uint64_t consumed,
			 elastic_error_t *err)
{
	if (!s)
		return _fail(err, EINVAL, "elastic_sampler_seek: sampler is NULL");
	if (consumed >= s->n)
		return _fail(
			err, EINVAL,
			"elastic_sampler_seek: position %llu is past the %llu samples",
			(unsigned long long)consumed, (unsigned long long)s->n);
	s->pos.epoch = epoch;
	s->pos.consumed = consumed;
	return 0;
}
