/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/snap.c: copies of the committed state: the in-process double buffer (path A)
 * and snapshot files, double buffered, in node-local shared memory or a checkpoint
 * directory (path B). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "internal.h"

#define _fail(err, e, ...) (elastic__errorf((err), __VA_ARGS__), errno = (e), -1)

#define SNAP_MAGIC "ELSNAP01"

/* File layout: header, then state_bytes of data (regions at their offsets).
 * The header is first written with step 0 (invalid), then the data, then the
 * header with the step: a writer that dies midway leaves an invalid slot and
 * the other slot (the previous step) stays whole. */
struct snap_header {
	char magic[8];
	uint64_t step;
	uint64_t state_bytes;
	uint64_t layout; /* hash of the registration (names, sizes) */
	uint64_t nregions;
	double written; /* CLOCK_REALTIME */
};

int elastic__snap_host_alloc(elastic_ctx_t *ctx, elastic_error_t *err)
{
	for (int i = 0; i < 2; i++) {
		if (!(ctx->host.buf[i] = aligned_alloc(64, ctx->state_bytes))) {
			elastic__snap_host_free(ctx);
			return _fail(err, ENOMEM,
				     "no memory for 2 x %zu bytes of state copies",
				     ctx->state_bytes);
		}
		ctx->host.step[i] = UINT64_MAX;
	}
	return 0;
}

void elastic__snap_host_free(elastic_ctx_t *ctx)
{
	for (int i = 0; i < 2; i++) {
		free(ctx->host.buf[i]);
		ctx->host.buf[i] = NULL;
		ctx->host.step[i] = UINT64_MAX;
	}
}

void elastic__snap_host_save(elastic_ctx_t *ctx, uint64_t step)
{
	int slot = (int)(step & 1);
	unsigned char *b = ctx->host.buf[slot];

	for (int i = 0; i < ctx->nregions; i++)
		memcpy(b + ctx->regions[i].offset, ctx->regions[i].ptr,
		       ctx->regions[i].bytes);
	ctx->host.step[slot] = step;
}

int elastic__snap_host_restore(elastic_ctx_t *ctx, uint64_t step)
{
	int slot = (int)(step & 1);
	const unsigned char *b = ctx->host.buf[slot];

	if (!b || ctx->host.step[slot] != step)
		return -1;
	for (int i = 0; i < ctx->nregions; i++)
		memcpy(ctx->regions[i].ptr, b + ctx->regions[i].offset,
		       ctx->regions[i].bytes);
	return 0;
}

static uint64_t _layout(const elastic_ctx_t *ctx)
{
	uint64_t h = 1469598103934665603ull;
	for (int i = 0; i < ctx->nregions; i++) {
		const unsigned char *p = (const unsigned char *)ctx->regions[i].name;
		for (; *p; p++)
			h = (h ^ *p) * 1099511628211ull;
		uint64_t b = ctx->regions[i].bytes;
		for (int k = 0; k < 8; k++, b >>= 8)
			h = (h ^ (b & 0xff)) * 1099511628211ull;
	}
	return h;
}

static int _pwrite_all(int fd, const void *buf, size_t n, off_t off)
{
	const char *p = buf;
	while (n > 0) {
		ssize_t w = pwrite(fd, p, n, off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

static int _pread_all(int fd, void *buf, size_t n, off_t off)
{
	char *p = buf;
	while (n > 0) {
		ssize_t r = pread(fd, p, n, off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		p += r;
		n -= (size_t)r;
		off += r;
	}
	return 0;
}

int elastic__snap_file_write(elastic_ctx_t *ctx, const char *prefix, uint64_t step,
			     elastic_error_t *err)
{
	char path[600];
	struct snap_header h;
	int fd, slot = (int)(step & 1);

	snprintf(path, sizeof(path), "%s%d.snap", prefix, slot);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return _fail(err, errno, "cannot open %s: %s", path, strerror(errno));
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, SNAP_MAGIC, 8);
	h.step = 0;
	h.state_bytes = ctx->state_bytes;
	h.layout = _layout(ctx);
	h.nregions = (uint64_t)ctx->nregions;
	if (_pwrite_all(fd, &h, sizeof(h), 0) < 0 ||
	    ftruncate(fd, (off_t)(sizeof(h) + ctx->state_bytes)) < 0)
		goto ioerr;
	for (int i = 0; i < ctx->nregions; i++)
		if (_pwrite_all(fd, ctx->regions[i].ptr, ctx->regions[i].bytes,
				(off_t)(sizeof(h) + ctx->regions[i].offset)) < 0)
			goto ioerr;
	h.step = step;
	h.written = elastic__now_real();
	if (_pwrite_all(fd, &h, sizeof(h), 0) < 0)
		goto ioerr;
	close(fd);
	return 0;
ioerr: {
	int e = errno ? errno : EIO;
	close(fd);
	return _fail(err, e, "cannot write %s: %s", path, strerror(e));
}
}

int elastic__snap_file_load(elastic_ctx_t *ctx, const char *prefix, unsigned char *buf,
			    uint64_t *step, elastic_error_t *err)
{
	uint64_t best = 0, layout = _layout(ctx);
	int best_slot = -1;
	char path[600];

	for (int slot = 0; slot < 2; slot++) {
		struct snap_header h;
		snprintf(path, sizeof(path), "%s%d.snap", prefix, slot);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (_pread_all(fd, &h, sizeof(h), 0) == 0 &&
		    !memcmp(h.magic, SNAP_MAGIC, 8) && h.step > best) {
			if (h.layout != layout || h.state_bytes != ctx->state_bytes) {
				close(fd);
				return _fail(err, EINVAL,
					     "%s holds a state of another registration "
					     "(%llu bytes; this program registers %zu)",
					     path, (unsigned long long)h.state_bytes,
					     ctx->state_bytes);
			}
			best = h.step;
			best_slot = slot;
		}
		close(fd);
	}
	if (best_slot < 0)
		return 0;
	snprintf(path, sizeof(path), "%s%d.snap", prefix, best_slot);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct snap_header h;
	if (fd < 0 ||
	    _pread_all(fd, buf, ctx->state_bytes, sizeof(struct snap_header)) < 0 ||
	    _pread_all(fd, &h, sizeof(h), 0) < 0 || h.step != best) {
		if (fd >= 0)
			close(fd);
		return _fail(err, EIO, "%s changed or could not be read while loading it",
			     path);
	}
	close(fd);
	*step = best;
	return 1;
}

void elastic__snap_file_remove(const char *prefix)
{
	char path[600];
	for (int slot = 0; slot < 2; slot++) {
		snprintf(path, sizeof(path), "%s%d.snap", prefix, slot);
		unlink(path);
	}
}
