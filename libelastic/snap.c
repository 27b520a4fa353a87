/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/snap.c: copies of the committed state: the in-process double buffer (recovery in place)
 * and snapshot files, double buffered, in node-local shared memory or a checkpoint
 * directory (resume after a relaunch). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <sys/mman.h>
#include <time.h>
#include <pthread.h>

#include "internal.h"
#include "io.h"

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

static struct snap_header *_shm_map(elastic_ctx_t *ctx, int slot, elastic_error_t *err);

int elastic__snap_host_alloc(elastic_ctx_t *ctx, elastic_error_t *err)
{
	/* The lowest rank of a host writes the node snapshot at every commit:
	 * its copies are the mapped snapshot slots themselves, so that a commit
	 * costs it one copy of the state, like every other rank. */
	if (ctx->shm_prefix[0] && ctx->node_rank == 0 && ctx->env.snapshot_every == 1) {
		elastic_error_t e;
		struct snap_header *h0 = _shm_map(ctx, 0, &e),
				   *h1 = h0 ? _shm_map(ctx, 1, &e) : NULL;
		if (h1) {
			ctx->host.buf[0] = (unsigned char *)(h0 + 1);
			ctx->host.buf[1] = (unsigned char *)(h1 + 1);
			ctx->host.step[0] = ctx->host.step[1] = UINT64_MAX;
			ctx->host.fused = 1;
			return 0;
		}
		elastic__snap_shm_lost(ctx, &e);
	}
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
		if (!ctx->host.fused)
			free(ctx->host.buf[i]);
		ctx->host.buf[i] = NULL;
		ctx->host.step[i] = UINT64_MAX;
	}
	ctx->host.fused = 0;
}

void elastic__snap_host_save(elastic_ctx_t *ctx, uint64_t step)
{
	int slot = (int)(step & 1);
	unsigned char *b = ctx->host.buf[slot];

	if (ctx->host.fused) {
		/* invalid on the node until published (elastic__snap_shm_publish) */
		((struct snap_header *)b - 1)->step = 0;
		atomic_thread_fence(memory_order_release);
	}
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

uint64_t elastic__snap_layout(const elastic_ctx_t *ctx)
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

/* The whole buffer, at off, or -1. */
static int _pwrite_all(int fd, const void *buf, size_t n, off_t off)
{
	return elastic__io_all(elastic__io_pwrite, fd, (void *)buf, n, off);
}

static int _pread_all(int fd, void *buf, size_t n, off_t off)
{
	return elastic__io_all(pread, fd, buf, n, off);
}

/* launch and host in the name: two writers never share a file, even where
 * several (test) nodes share one /dev/shm */
static void _slot_path(const elastic_ctx_t *ctx, const char *prefix, int slot, char *path,
		       size_t n)
{
	elastic_snap_file(path, n, prefix, ctx->launch_id,
			  (uint32_t)(ctx->host_id & 0xffffffffu), slot);
}

/* Give the file fd (at path) len bytes of real space: 0, or -1 with err
 * naming path. Space is reserved before any store: a sparse file on a full
 * file system would fail at the first store through its mapping (SIGBUS),
 * not at a call that can return ENOSPC. A file that cannot be reserved is
 * removed (it is this launch's own), so that it holds no partial space. */
static int _reserve(int fd, const char *path, size_t len, elastic_error_t *err)
{
	int e = posix_fallocate(fd, 0, (off_t)len);

	if (e == 0 && ftruncate(fd, (off_t)len) < 0)
		e = errno;
	if (e == 0)
		return 0;
	unlink(path);
	return _fail(err, e, "cannot reserve %zu bytes for %s: %s", len, path,
		     strerror(e));
}

static void _fill_header(const elastic_ctx_t *ctx, struct snap_header *h)
{
	memcpy(h->magic, SNAP_MAGIC, 8);
	h->state_bytes = ctx->state_bytes;
	h->layout = elastic__snap_layout(ctx);
	h->nregions = (uint64_t)ctx->nregions;
}

int elastic__snap_file_write(elastic_ctx_t *ctx, const char *prefix, uint64_t step,
			     elastic_error_t *err)
{
	char path[600];
	struct snap_header h;
	int fd;

	_slot_path(ctx, prefix, (int)(step & 1), path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return _fail(err, errno, "cannot open %s: %s", path, strerror(errno));
	memset(&h, 0, sizeof(h));
	_fill_header(ctx, &h);
	h.step = 0;
	if (_reserve(fd, path, sizeof(h) + ctx->state_bytes, err) < 0) {
		close(fd);
		return -1;
	}
	if (_pwrite_all(fd, &h, sizeof(h), 0) < 0)
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

/* Map this launch's node snapshot file of slot on this host (once). */
static struct snap_header *_shm_map(elastic_ctx_t *ctx, int slot, elastic_error_t *err)
{
	struct elastic__shmslot *m = &ctx->shm[slot];
	size_t len = sizeof(struct snap_header) + ctx->state_bytes;
	char path[600];
	void *b;
	int fd;

	if (m->base)
		return (struct snap_header *)m->base;
	_slot_path(ctx, ctx->shm_prefix, slot, path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0) {
		int e = errno;
		(void)_fail(err, e, "cannot open %s: %s", path, strerror(e));
		return NULL;
	}
	if (_reserve(fd, path, len, err) < 0) {
		close(fd);
		return NULL;
	}
	b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (b == MAP_FAILED) {
		int e = errno;
		(void)_fail(err, e, "cannot map %s: %s", path, strerror(e));
		return NULL;
	}
	m->base = b;
	m->len = len;
	return (struct snap_header *)b;
}

void elastic__snap_shm_lost(elastic_ctx_t *ctx, const elastic_error_t *why)
{
	if (ctx->shm_off)
		return;
	ctx->shm_off = 1;
	if (!ctx->host.fused)
		for (int i = 0; i < 2; i++) {
			char path[600];
			if (ctx->shm[i].base)
				munmap(ctx->shm[i].base, ctx->shm[i].len);
			ctx->shm[i].base = NULL;
			_slot_path(ctx, ctx->shm_prefix, i, path, sizeof(path));
			unlink(path);
		}
	elastic__log(
		ctx, ELASTIC_LOG_ERROR,
		"node snapshot: %s: training goes on without this node's snapshot: a re-form (lost node, resize) resumes from another node's snapshot or a checkpoint, else from step 0",
		why->text);
}

int elastic__snap_shm_publish(elastic_ctx_t *ctx, uint64_t step, const unsigned char *src,
			      elastic_error_t *err)
{
	struct snap_header *h = _shm_map(ctx, (int)(step & 1), err);
	unsigned char *data;

	if (!h)
		return -1;
	data = (unsigned char *)(h + 1);
	if (src != data) {
		h->step = 0;
		atomic_thread_fence(memory_order_release);
		if (src)
			memcpy(data, src, ctx->state_bytes);
		else
			for (int i = 0; i < ctx->nregions; i++)
				memcpy(data + ctx->regions[i].offset, ctx->regions[i].ptr,
				       ctx->regions[i].bytes);
	}
	_fill_header(ctx, h);
	h->written = elastic__now_real();
	atomic_thread_fence(memory_order_release);
	h->step = step;
	return 0;
}

/* The header of the snapshot file at path into *h: 0 when the file has one
 * (its magic), else -1. */
static int _header(const char *path, struct snap_header *h)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = -1;

	if (fd < 0)
		return -1;
	if (_pread_all(fd, h, sizeof(*h), 0) == 0 && !memcmp(h->magic, SNAP_MAGIC, 8))
		rc = 0;
	close(fd);
	return rc;
}

/* The newest committed step in this launch's node snapshot on this host
 * (either slot, valid and of this registration), read from the files as a
 * rank that does not write them sees them; 0 if none. */
static uint64_t _shm_newest(const elastic_ctx_t *ctx)
{
	uint64_t newest = 0, layout = elastic__snap_layout(ctx);

	for (int slot = 0; slot < 2; slot++) {
		char path[600];
		struct snap_header h;

		_slot_path(ctx, ctx->shm_prefix, slot, path, sizeof(path));
		if (_header(path, &h) == 0 && h.state_bytes == ctx->state_bytes &&
		    h.layout == layout && h.step > newest)
			newest = h.step;
	}
	return newest;
}

int elastic__snap_shm_wait_step(const elastic_ctx_t *ctx, uint64_t step, double timeout_s)
{
	double end = elastic__now_mono() + timeout_s;

	if (!ctx->shm_prefix[0])
		return 0;
	for (;;) {
		if (_shm_newest(ctx) >= step)
			return 1;
		if (elastic__now_mono() >= end)
			return 0;
		nanosleep(&(struct timespec){.tv_nsec = 2000000}, NULL);
	}
}

void elastic__snap_shm_unmap(elastic_ctx_t *ctx)
{
	if (ctx->host.fused)
		elastic__snap_host_free(ctx);
	for (int i = 0; i < 2; i++) {
		if (ctx->shm[i].base)
			munmap(ctx->shm[i].base, ctx->shm[i].len);
		ctx->shm[i].base = NULL;
	}
}

/* Calls fn(path, arg) for each snapshot file of prefix (any launch); stops
 * at a non-zero result and returns it. */
static int _each_file(const char *prefix,
		      int (*fn)(const char *path, const char *name, void *arg), void *arg)
{
	char dir[600], path[900];
	const char *base = strrchr(prefix, '/');
	size_t bl;
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (!base)
		return 0;
	snprintf(dir, sizeof(dir), "%.*s", (int)(base - prefix), prefix);
	base++;
	bl = strlen(base);
	if (!(d = opendir(dir[0] ? dir : "/")))
		return 0;
	while (!r && (e = readdir(d))) {
		size_t nl = strlen(e->d_name);
		size_t sl = strlen(ELASTIC_SNAP_SUFFIX);
		if (nl <= bl + sl || strncmp(e->d_name, base, bl) ||
		    strcmp(e->d_name + nl - sl, ELASTIC_SNAP_SUFFIX))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		r = fn(path, e->d_name + bl, arg);
	}
	closedir(d);
	return r;
}

struct _best {
	elastic_ctx_t *ctx;
	uint64_t layout, step;
	char path[900];
	elastic_error_t *err;
};

static int _consider(const char *path, const char *name, void *arg)
{
	struct _best *b = arg;
	struct snap_header h;

	if (_header(path, &h) == 0 && h.step > b->step) {
		if (h.layout != b->layout || h.state_bytes != b->ctx->state_bytes) {
			return _fail(
				b->err, EINVAL,
				"%s holds a state of another registration (%llu bytes; this program registers %zu)",
				path, (unsigned long long)h.state_bytes,
				b->ctx->state_bytes);
		}
		b->step = h.step;
		snprintf(b->path, sizeof(b->path), "%s", path);
	}
	return 0;
}

int elastic__snap_file_load(elastic_ctx_t *ctx, const char *prefix, unsigned char *buf,
			    uint64_t *step, elastic_error_t *err)
{
	struct _best b = {ctx, elastic__snap_layout(ctx), 0, "", err};
	struct snap_header h;
	int fd;

	/* every launch's files: a relaunch takes the highest committed step */
	if (_each_file(prefix, _consider, &b) < 0)
		return -1;
	if (b.step == 0)
		return 0;
	fd = open(b.path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 ||
	    _pread_all(fd, buf, ctx->state_bytes, sizeof(struct snap_header)) < 0 ||
	    _pread_all(fd, &h, sizeof(h), 0) < 0 || h.step != b.step) {
		if (fd >= 0)
			close(fd);
		return _fail(err, EIO, "%s changed or could not be read while loading it",
			     b.path);
	}
	close(fd);
	*step = b.step;
	return 1;
}

static int _remove(const char *path, const char *name, void *arg)
{
	const char *keep = arg;
	if (!keep || strncmp(name, keep, 16))
		unlink(path);
	return 0;
}

void elastic__snap_file_remove(const char *prefix, uint64_t keep_launch)
{
	char keep[17], path[600];

	snprintf(keep, sizeof(keep), "%016llx", (unsigned long long)keep_launch);
	_each_file(prefix, _remove, keep_launch ? keep : NULL);
	if (!keep_launch) {
		snprintf(path, sizeof(path), "%sowner", prefix);
		unlink(path);
	}
}

int elastic__snap_owner_claim(const char *prefix, uint64_t launch)
{
	char path[600], tmp[620], line[32];
	int fd, n;

	snprintf(path, sizeof(path), "%sowner", prefix);
	snprintf(tmp, sizeof(tmp), "%s.%016llx", path, (unsigned long long)launch);
	n = snprintf(line, sizeof(line), "%016llx\n", (unsigned long long)launch);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0 && _pwrite_all(fd, line, (size_t)n, 0) == 0) {
		close(fd);
		return rename(tmp,
			      path); /* atomic: readers see the old or the new owner */
	}
	if (fd >= 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		errno = e;
	}
	if (errno != ENOSPC && errno != EDQUOT)
		return -1;
	/* A full directory: the owner file's own space takes the new name (one
	 * short write over the old one; no file: nobody else claimed it). An
	 * older launch must still see that it lost the node. */
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : -1;
	if (_pwrite_all(fd, line, (size_t)n, 0) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return close(fd);
}

int elastic__snap_owner_is(const char *prefix, uint64_t launch)
{
	char path[600], line[32] = "";
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "%sowner", prefix);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 1; /* nobody claimed this node's snapshots */
	n = pread(fd, line, sizeof(line) - 1, 0);
	close(fd);
	if (n < 16)
		return 1;
	line[16] = '\0';
	return strtoull(line, NULL, 16) == launch;
}

/* ---- background node snapshot ---- */

static void *_writer(void *arg)
{
	elastic_ctx_t *ctx = arg;

	pthread_mutex_lock(&ctx->sw.lock);
	for (;;) {
		while (!ctx->sw.pending && !ctx->sw.stop)
			pthread_cond_wait(&ctx->sw.cond, &ctx->sw.lock);
		if (!ctx->sw.pending)
			break;
		uint64_t step = ctx->sw.step;
		elastic_error_t e = {""};
		pthread_mutex_unlock(&ctx->sw.lock);
		int rc = elastic__snap_shm_publish(ctx, step, NULL, &e);
		pthread_mutex_lock(&ctx->sw.lock);
		ctx->sw.rc = rc;
		ctx->sw.err = e;
		ctx->sw.pending = 0;
		pthread_cond_broadcast(&ctx->sw.cond);
	}
	pthread_mutex_unlock(&ctx->sw.lock);
	return NULL;
}

int elastic__snap_async_start(elastic_ctx_t *ctx, uint64_t step)
{
	if (!ctx->sw.running) {
		if (pthread_mutex_init(&ctx->sw.lock, NULL) != 0)
			return -1;
		if (pthread_cond_init(&ctx->sw.cond, NULL) != 0) {
			pthread_mutex_destroy(&ctx->sw.lock);
			return -1;
		}
		ctx->sw.pending = ctx->sw.stop = 0;
		if (pthread_create(&ctx->sw.thread, NULL, _writer, ctx) != 0) {
			pthread_cond_destroy(&ctx->sw.cond);
			pthread_mutex_destroy(&ctx->sw.lock);
			return -1;
		}
		ctx->sw.running = 1;
		(void)pthread_setname_np(ctx->sw.thread, "elastic-snap");
	}
	pthread_mutex_lock(&ctx->sw.lock);
	while (ctx->sw.pending) /* one at a time (callers wait first) */
		pthread_cond_wait(&ctx->sw.cond, &ctx->sw.lock);
	ctx->sw.step = step;
	ctx->sw.rc = 0;
	ctx->sw.pending = 1;
	pthread_cond_broadcast(&ctx->sw.cond);
	pthread_mutex_unlock(&ctx->sw.lock);
	return 0;
}

int elastic__snap_async_wait(elastic_ctx_t *ctx, elastic_error_t *err)
{
	int rc;

	if (!ctx->sw.running)
		return 0;
	pthread_mutex_lock(&ctx->sw.lock);
	while (ctx->sw.pending)
		pthread_cond_wait(&ctx->sw.cond, &ctx->sw.lock);
	rc = ctx->sw.rc;
	if (rc < 0 && err)
		*err = ctx->sw.err;
	ctx->sw.rc = 0;
	pthread_mutex_unlock(&ctx->sw.lock);
	return rc;
}

void elastic__snap_async_stop(elastic_ctx_t *ctx)
{
	if (!ctx->sw.running)
		return;
	pthread_mutex_lock(&ctx->sw.lock);
	ctx->sw.stop = 1;
	pthread_cond_broadcast(&ctx->sw.cond);
	pthread_mutex_unlock(&ctx->sw.lock);
	pthread_join(ctx->sw.thread, NULL);
	pthread_cond_destroy(&ctx->sw.cond);
	pthread_mutex_destroy(&ctx->sw.lock);
	ctx->sw.running = 0;
}
