/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/nccl.c: the library's only use of NCCL: a NCCL communicator over the current
 * world, shrunk or rebuilt after every change. Built only with NCCL. */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* nccl.h declares a few functions as f() */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cuda_runtime_api.h>
#include <nccl.h>
#pragma GCC diagnostic pop

#include "internal.h"

struct elastic__nccl {
	ncclComm_t comm;
	int valid;
};

int elastic_nccl_comm(elastic_ctx_t *ctx, void *out, elastic_error_t *err)
{
	int ndev = 0, rc;
	cudaError_t ce;
	ncclUniqueId id;
	ncclResult_t nr;

	if (!ctx || !out)
		return _fail(err, EINVAL, "elastic_nccl_comm: NULL argument");
	if (ctx->nccl && ctx->nccl->valid) {
		*(ncclComm_t *)out = ctx->nccl->comm;
		return 0;
	}
	ce = cudaGetDeviceCount(&ndev);
	if (ce != cudaSuccess || ndev < 1)
		return _fail(err, ENODEV, "elastic_nccl_comm: no GPU visible (%s)",
			     ce != cudaSuccess ? cudaGetErrorString(ce) : "0 devices");
	if (!ctx->nccl && !(ctx->nccl = calloc(1, sizeof(*ctx->nccl))))
		return _fail(err, ENOMEM, "elastic_nccl_comm: out of memory");
	/* One GPU per rank: the launcher sets CUDA_VISIBLE_DEVICES per rank;
	 * where a rank sees several, take the one of its place on the node. */
	cudaSetDevice(ctx->node_rank % ndev);
	if (ctx->rank == 0 && (nr = ncclGetUniqueId(&id)) != ncclSuccess)
		memset(&id, 0, sizeof(id));
	rc = MPI_Bcast(&id, (int)sizeof(id), MPI_BYTE, 0, ctx->comm);
	if (rc != MPI_SUCCESS)
		return _fail(err, EPIPE,
			     "elastic_nccl_comm: MPI_Bcast of the NCCL id failed (%d)",
			     rc);
	nr = ncclCommInitRank(&ctx->nccl->comm, ctx->size, id, ctx->rank);
	if (nr != ncclSuccess)
		return _fail(err, EIO, "elastic_nccl_comm: ncclCommInitRank: %s",
			     ncclGetErrorString(nr));
	ctx->nccl->valid = 1;
	*(ncclComm_t *)out = ctx->nccl->comm;
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
	if (nlost > 0 && ncclCommShrink(n->comm, (int *)lost, nlost, &nc, NULL,
					NCCL_SHRINK_ABORT) == ncclSuccess) {
		ncclCommAbort(n->comm);
		n->comm = nc;
		elastic__log(ctx, ELASTIC_LOG_DEBUG, "NCCL communicator shrunk by %d",
			     nlost);
		return;
	}
#endif
	ncclCommAbort(n->comm);
	n->valid = 0; /* rebuilt from the new MPI communicator on next use */
	elastic__log(ctx, ELASTIC_LOG_DEBUG,
		     "NCCL communicator aborted; rebuilt on next use");
}

void elastic__nccl_free(elastic_ctx_t *ctx)
{
	if (!ctx->nccl)
		return;
	if (ctx->nccl->valid)
		ncclCommDestroy(ctx->nccl->comm);
	free(ctx->nccl);
	ctx->nccl = NULL;
}
