/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/nccl_none.c: the GPU data plane of a build without NCCL: reports ENODEV. */
#include "config.h"

#include <errno.h>

#include "internal.h"

int elastic_nccl_comm(elastic_ctx_t *ctx, void *out, elastic_error_t *err)
{
	elastic__errorf(err, "elastic_nccl_comm: this libelastic was built without NCCL");
	errno = ENODEV;
	return -1;
}

void elastic__nccl_on_change(elastic_ctx_t *ctx, const int *lost, int nlost)
{
}

void elastic__nccl_free(elastic_ctx_t *ctx)
{
}
