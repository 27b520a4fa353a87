/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/gpu_none.c: the GPU of a build without CUDA: none to bind near (the NCCL
 * data plane of such a build is nccl_none.c's). */
#include "config.h"

#include <stdio.h>

#include "internal.h"

int elastic__gpu_busid(elastic_ctx_t *ctx, int *dev, char *busid, size_t len, char *why,
		       size_t wlen)
{
	snprintf(why, wlen, "this libelastic was built without CUDA");
	return -1;
}
