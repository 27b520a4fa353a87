/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/gpu_none.c: the GPU parts of a build without CUDA: no GPU to bind near, and
 * a NCCL data plane that reports ENODEV. */
#include "config.h"

#include <errno.h>
#include <stdio.h>

#include "internal.h"

int elastic__gpu_busid(elastic_ctx_t *ctx, int *dev, char *busid, size_t len, char *why,
		       size_t wlen)
{
	snprintf(why, wlen, "this libelastic was built without CUDA");
	return -1;
}

int elastic_nccl_comm(elastic_ctx_t *ctx, void *out, elastic_error_t *err)
{
	return _fail(err, ENODEV,
		     "elastic_nccl_comm: this libelastic was built without NCCL");
}

int elastic_gpu_allreduce(elastic_ctx_t *ctx, void *buf, size_t count, MPI_Datatype type,
			  void *stream, elastic_error_t *err)
{
	return _fail(err, ENODEV,
		     "elastic_gpu_allreduce: this libelastic was built without CUDA");
}

void elastic__nccl_on_change(elastic_ctx_t *ctx, const int *lost, int nlost)
{
}

void elastic__nccl_free(elastic_ctx_t *ctx)
{
}
