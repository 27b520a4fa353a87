/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/register.c: the program's state, registered region by region before the
 * first step (elastic_register); the snapshots and the step protocol copy, compare and
 * send these regions. Apart from the context so that the sampler, which registers its
 * position, depends on the regions and not on the context's life cycle. */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int elastic_register(elastic_ctx_t *ctx, const char *name, void *ptr, size_t bytes,
		     elastic_error_t *err)
{
	struct elastic__region *r;
	size_t nl;

	if (!ctx)
		return _fail(err, EINVAL, "elastic_register: ctx is NULL");
	if (!name || !(nl = strlen(name)) || nl >= ELASTIC__NAME_MAX)
		return _fail(err, EINVAL,
			     "elastic_register: name must be 1..%d characters",
			     ELASTIC__NAME_MAX - 1);
	if (!ptr)
		return _fail(err, EINVAL, "elastic_register('%s'): buffer is NULL", name);
	if (bytes == 0)
		return _fail(err, EINVAL, "elastic_register('%s'): size is 0", name);
	if (ctx->started)
		return _fail(
			err, EBUSY,
			"elastic_register('%s'): the first step has begun; register all state before elastic_step_begin",
			name);
	for (int i = 0; i < ctx->nregions; i++)
		if (!strcmp(ctx->regions[i].name, name))
			return _fail(err, EEXIST,
				     "elastic_register('%s'): name already registered",
				     name);
	if (bytes > SIZE_MAX / 4 - ctx->state_bytes)
		return _fail(err, EOVERFLOW,
			     "elastic_register('%s'): %zu bytes is too large", name,
			     bytes);
	if (!(r = realloc(ctx->regions, (ctx->nregions + 1) * sizeof(*r))))
		return _fail(err, ENOMEM, "elastic_register('%s'): out of memory", name);
	ctx->regions = r;
	r = &ctx->regions[ctx->nregions++];
	memset(r, 0, sizeof(*r));
	memcpy(r->name, name, nl + 1);
	r->ptr = ptr;
	r->bytes = bytes;
	r->offset = ctx->state_bytes;
	ctx->state_bytes += (bytes + 63) & ~(size_t)63;
	return 0;
}
