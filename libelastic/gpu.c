/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/gpu.c: the library's only use of CUDA and NCCL, loaded with dlopen on first
 * use (libelastic.so never needs libcudart or libnccl at load: a CPU process such as
 * PyTorch on CPU uses it without them): the GPU of this rank and its PCI address (for
 * binding), and a NCCL communicator over the current world, shrunk or rebuilt after every
 * change. Built only with CUDA; NCCL parts only with NCCL. */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* nccl.h declares a few functions as f() */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cuda_runtime_api.h>
#ifdef HAVE_NCCL
#include <nccl.h>
#endif
#pragma GCC diagnostic pop

#include "internal.h"

#define _STR(x)	 #x
#define _XSTR(x) _STR(x)

/* The entry points used, resolved once from the libraries configure found
 * (their soname first, then configure's directory, then the bare name). */
static struct {
	int tried, ok;
	char why[200];
	cudaError_t (*GetDeviceCount)(int *);
	const char *(*GetErrorString)(cudaError_t);
	cudaError_t (*SetDevice)(int);
	cudaError_t (*DeviceGetPCIBusId)(char *, int, int);
	cudaError_t (*StreamSynchronize)(cudaStream_t);
#ifdef HAVE_NCCL
	int nccl_ok;
	char nccl_why[200];
	ncclResult_t (*GetUniqueId)(ncclUniqueId *);
	ncclResult_t (*CommInitRank)(ncclComm_t *, int, ncclUniqueId, int);
	const char *(*NcclErrorString)(ncclResult_t);
	ncclResult_t (*CommAbort)(ncclComm_t);
	ncclResult_t (*CommDestroy)(ncclComm_t);
	ncclResult_t (*AllReduce)(const void *, void *, size_t, ncclDataType_t,
				  ncclRedOp_t, ncclComm_t, cudaStream_t);
#ifdef HAVE_NCCL_COMM_SHRINK
	ncclResult_t (*CommShrink)(ncclComm_t, int *, int, ncclComm_t *, ncclConfig_t *,
				   int);
#endif
#endif
} _g;
static pthread_once_t _g_once = PTHREAD_ONCE_INIT;

/* dlopen soname, then dir/soname, then dir/plain; NULL with why set. */
static void *_open(const char *soname, const char *dir, const char *plain, char *why,
		   size_t wlen)
{
	char path[600];
	void *h = dlopen(soname, RTLD_NOW | RTLD_GLOBAL);

	if (!h && dir && *dir) {
		snprintf(path, sizeof(path), "%s/%s", dir, soname);
		h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
		if (!h) {
			snprintf(path, sizeof(path), "%s/%s", dir, plain);
			h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
		}
	}
	if (!h)
		snprintf(why, wlen, "cannot load %s (%s)", soname, dlerror());
	return h;
}

#define _SYM(h, field, name, why)                                                        \
	do {                                                                             \
		*(void **)&_g.field = dlsym((h), name);                                  \
		if (!_g.field) {                                                         \
			snprintf((why), sizeof(why), "no %s: %s", name, dlerror());      \
			goto out;                                                        \
		}                                                                        \
	} while (0)

static void _load(void)
{
	void *h = _open("libcudart.so." _XSTR(ELASTIC_CUDART_MAJOR), ELASTIC_CUDA_LIBDIR,
			"libcudart.so", _g.why, sizeof(_g.why));
	if (!h)
		return;
	_SYM(h, GetDeviceCount, "cudaGetDeviceCount", _g.why);
	_SYM(h, GetErrorString, "cudaGetErrorString", _g.why);
	_SYM(h, SetDevice, "cudaSetDevice", _g.why);
	_SYM(h, DeviceGetPCIBusId, "cudaDeviceGetPCIBusId", _g.why);
	_SYM(h, StreamSynchronize, "cudaStreamSynchronize", _g.why);
	_g.ok = 1;
#ifdef HAVE_NCCL
	h = _open("libnccl.so." _XSTR(NCCL_MAJOR), ELASTIC_NCCL_LIBDIR, "libnccl.so",
		  _g.nccl_why, sizeof(_g.nccl_why));
	if (!h)
		return;
	_SYM(h, GetUniqueId, "ncclGetUniqueId", _g.nccl_why);
	_SYM(h, CommInitRank, "ncclCommInitRank", _g.nccl_why);
	_SYM(h, NcclErrorString, "ncclGetErrorString", _g.nccl_why);
	_SYM(h, CommAbort, "ncclCommAbort", _g.nccl_why);
	_SYM(h, CommDestroy, "ncclCommDestroy", _g.nccl_why);
	_SYM(h, AllReduce, "ncclAllReduce", _g.nccl_why);
#ifdef HAVE_NCCL_COMM_SHRINK
	/* optional: without it a change aborts and re-creates the communicator */
	*(void **)&_g.CommShrink = dlsym(h, "ncclCommShrink");
#endif
	_g.nccl_ok = 1;
#endif
out:
	return;
}

/* 1 and *ndev when the CUDA runtime loads and shows a GPU; else 0 and why. */
static int _gpus(int *ndev, char *why, size_t wlen)
{
	cudaError_t ce;

	pthread_once(&_g_once, _load);
	if (!_g.ok) {
		snprintf(why, wlen, "%s", _g.why);
		return 0;
	}
	*ndev = 0;
	ce = _g.GetDeviceCount(ndev);
	if (ce != cudaSuccess || *ndev < 1) {
		snprintf(why, wlen, "no GPU visible (%s)",
			 ce != cudaSuccess ? _g.GetErrorString(ce) : "0 devices");
		return 0;
	}
	return 1;
}

int elastic__gpu_busid(elastic_ctx_t *ctx, int *dev, char *busid, size_t len, char *why,
		       size_t wlen)
{
	int ndev;

	if (!_gpus(&ndev, why, wlen))
		return -1;
	*dev = ctx->node_rank % ndev;
	if (_g.DeviceGetPCIBusId(busid, (int)len, *dev) != cudaSuccess) {
		snprintf(why, wlen, "no PCI address for GPU %d", *dev);
		return -1;
	}
	return 0;
}

#ifdef HAVE_NCCL /* else: nccl_none.c */
struct elastic__nccl {
	ncclComm_t comm;
	int valid;
};

/* A rank's GPU: its host and PCI address. */
struct _gpu_id {
	uint64_t host;
	char bus[24];
};

/* NCCL refuses two ranks on one GPU with a generic "invalid usage": find that
 * first and say which ranks share which GPU. Collective over the world; the
 * answer is the same on every rank. 1 with why when two ranks share a GPU. */
static int _shared_gpu(elastic_ctx_t *ctx, int dev, char *why, size_t wlen)
{
	struct _gpu_id mine = {ctx->host_id, ""}, *all;
	int n = ctx->size, dup = 0;

	if (_g.DeviceGetPCIBusId(mine.bus, (int)sizeof(mine.bus), dev) != cudaSuccess)
		mine.bus[0] = '\0';
	if (!(all = calloc((size_t)n, sizeof(*all))))
		return 0;
	if (MPI_Allgather(&mine, (int)sizeof(mine), MPI_BYTE, all, (int)sizeof(mine),
			  MPI_BYTE, ctx->comm) != MPI_SUCCESS)
		n = 0; /* the world failed: the NCCL set-up below reports it */
	for (int i = 0; i < n; i++)
		all[i].bus[sizeof(all[i].bus) - 1] = '\0';
	for (int i = 0; i < n && !dup; i++)
		for (int j = i + 1; j < n && !dup; j++)
			if (all[i].host == all[j].host && all[i].bus[0] &&
			    !strcmp(all[i].bus, all[j].bus)) {
				snprintf(
					why, wlen,
					"ranks %d and %d are both on GPU %s of one host: NCCL needs one GPU per rank (give each rank its own GPU, e.g. CUDA_VISIBLE_DEVICES per rank, or start fewer ranks)",
					i, j, all[i].bus);
				dup = 1;
			}
	free(all);
	return dup;
}

int elastic_nccl_comm(elastic_ctx_t *ctx, void *out, elastic_error_t *err)
{
	int ndev = 0, rc, dev;
	char why[256];
	ncclUniqueId id;
	ncclResult_t nr;

	if (!ctx || !out)
		return _fail(err, EINVAL, "elastic_nccl_comm: NULL argument");
	if (ctx->nccl && ctx->nccl->valid) {
		*(ncclComm_t *)out = ctx->nccl->comm;
		return 0;
	}
	if (!_gpus(&ndev, why, sizeof(why)))
		return _fail(err, ENODEV, "elastic_nccl_comm: %s", why);
	if (!_g.nccl_ok)
		return _fail(err, ENODEV, "elastic_nccl_comm: %s", _g.nccl_why);
	if (!ctx->nccl && !(ctx->nccl = calloc(1, sizeof(*ctx->nccl))))
		return _fail(err, ENOMEM, "elastic_nccl_comm: out of memory");
	/* One GPU per rank: the launcher sets CUDA_VISIBLE_DEVICES per rank;
	 * where a rank sees several, take the one of its place on the node. */
	dev = ctx->node_rank % ndev;
	_g.SetDevice(dev);
	if (_shared_gpu(ctx, dev, why, sizeof(why)))
		return _fail(err, EBUSY, "elastic_nccl_comm: %s", why);
	if (ctx->rank == 0 && (nr = _g.GetUniqueId(&id)) != ncclSuccess)
		memset(&id, 0, sizeof(id));
	rc = MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, ctx->comm);
	if (rc != MPI_SUCCESS)
		return _fail(err, EPIPE,
			     "elastic_nccl_comm: MPI_Bcast of the NCCL id failed (%d)",
			     rc);
	nr = _g.CommInitRank(&ctx->nccl->comm, ctx->size, id, ctx->rank);
	if (nr != ncclSuccess)
		return _fail(err, EIO, "elastic_nccl_comm: ncclCommInitRank: %s",
			     _g.NcclErrorString(nr));
	ctx->nccl->valid = 1;
	*(ncclComm_t *)out = ctx->nccl->comm;
	return 0;
}

int elastic_gpu_allreduce(elastic_ctx_t *ctx, void *buf, size_t count, MPI_Datatype type,
			  void *stream, elastic_error_t *err)
{
	ncclComm_t comm;
	ncclDataType_t nt;
	ncclResult_t nr;
	cudaError_t ce;

	if (!ctx || (!buf && count))
		return _fail(err, EINVAL, "elastic_gpu_allreduce: NULL argument");
	if (type == MPI_FLOAT)
		nt = ncclFloat32;
	else if (type == MPI_DOUBLE)
		nt = ncclFloat64;
	else
		return _fail(
			err, EINVAL,
			"elastic_gpu_allreduce: type is not MPI_FLOAT or MPI_DOUBLE");
	if (!ctx->in_step)
		return _fail(
			err, EPROTO,
			"elastic_gpu_allreduce: outside a step (call elastic_step_begin first)");
	if (!ctx->comm_ok)
		return _fail(err, ECANCELED,
			     "elastic_gpu_allreduce: the world failed in this step");
	if (elastic_nccl_comm(ctx, &comm, err) < 0)
		return -1;
	nr = _g.AllReduce(buf, buf, count, nt, ncclSum, comm, (cudaStream_t)stream);
	if (nr == ncclSuccess &&
	    (ce = _g.StreamSynchronize((cudaStream_t)stream)) != cudaSuccess) {
		ctx->step_ok = 0; /* inside the step (checked above): redone */
		return _fail(err, EIO, "elastic_gpu_allreduce: %s",
			     _g.GetErrorString(ce));
	}
	if (nr != ncclSuccess) {
		/* a peer lost: the step is redone after the recovery at commit */
		ctx->step_ok = 0;
		return _fail(err, EIO, "elastic_gpu_allreduce: ncclAllReduce: %s",
			     _g.NcclErrorString(nr));
	}
	return 0;
}

void elastic__nccl_on_change(elastic_ctx_t *ctx, const int *lost, int nlost)
{
	struct elastic__nccl *n = ctx->nccl;

	if (!n || !n->valid)
		return;
#ifdef HAVE_NCCL_COMM_SHRINK
	ncclComm_t nc;
	/* lost[] is the same on every survivor (the group difference of the
	 * old and new MPI communicators), as ncclCommShrink requires. */
	if (nlost > 0 && _g.CommShrink &&
	    _g.CommShrink(n->comm, (int *)lost, nlost, &nc, NULL, NCCL_SHRINK_ABORT) ==
		    ncclSuccess) {
		_g.CommAbort(n->comm);
		n->comm = nc;
		elastic__log(ctx, ELASTIC_LOG_DEBUG, "NCCL communicator shrunk by %d",
			     nlost);
		return;
	}
#endif
	_g.CommAbort(n->comm);
	n->valid = 0; /* rebuilt from the new MPI communicator on next use */
	elastic__log(ctx, ELASTIC_LOG_DEBUG,
		     "NCCL communicator aborted; rebuilt on next use");
}

void elastic__nccl_free(elastic_ctx_t *ctx)
{
	if (!ctx->nccl)
		return;
	if (ctx->nccl->valid)
		_g.CommDestroy(ctx->nccl->comm);
	free(ctx->nccl);
	ctx->nccl = NULL;
}
#endif
