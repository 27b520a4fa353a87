/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/nccl_none.c: the NCCL data plane of a build without NCCL (with or without
 * CUDA): the public calls report ENODEV, the upkeep has nothing to keep. */
#include "config.h"

#include <errno.h>

#include "internal.h"

int elastic_nccl_comm(elastic_ctx_t *ctx, void *out, elastic_error_t *err)
{
	return _fail(err, ENODEV,
		     "elastic_nccl_comm: this libelastic was built without NCCL");
}

int elastic_gpu_allreduce(elastic_ctx_t *ctx, void *buf, size_t count, MPI_Datatype type,
			  void *stream, elastic_error_t *err)
{
	return _fail(err, ENODEV,
		     "elastic_gpu_allreduce: this libelastic was built without NCCL");
}

void elastic__nccl_on_change(elastic_ctx_t *ctx, const int *lost, int nlost)
{
}

void elastic__nccl_free(elastic_ctx_t *ctx)
{
}
