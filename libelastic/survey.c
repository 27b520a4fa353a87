/* SPDX-License-Identifier: GPL-2.0-or-later */
/* libelastic/survey.c: where the ranks are: a host id per node, each rank's index on its
 * node and the range of committed steps over the world (at init and after a
 * shrink). */
#include "config.h"

#include <stdlib.h>
#include <unistd.h>

#include "internal.h"

/* FNV-1a of the host name: ranks with the same value share a node (and its
 * /dev/shm). */
uint64_t elastic__host_id(void)
{
	char name[256] = "";
	uint64_t h = 1469598103934665603ull;

	gethostname(name, sizeof(name) - 1);
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ull;
	return h;
}

int elastic__survey(elastic_ctx_t *ctx, MPI_Comm comm, uint64_t *lo, uint64_t *hi,
		    int *node_rank)
{
	int size, rank, rc, nr = 0;
	uint64_t mine[2] = {ctx->host_id, ctx->committed}, *all, l = UINT64_MAX, u = 0;

	MPI_Comm_size(comm, &size);
	MPI_Comm_rank(comm, &rank);
	if (!(all = malloc(2 * sizeof(uint64_t) * (size_t)size)))
		return MPI_ERR_NO_MEM;
	rc = MPI_Allgather(mine, 2, MPI_UINT64_T, all, 2, MPI_UINT64_T, comm);
	if (rc == MPI_SUCCESS) {
		for (int i = 0; i < size; i++) {
			if (i < rank && all[2 * i] == mine[0])
				nr++;
			l = all[2 * i + 1] < l ? all[2 * i + 1] : l;
			u = all[2 * i + 1] > u ? all[2 * i + 1] : u;
		}
		*lo = l;
		*hi = u;
		*node_rank = nr;
	}
	free(all);
	return rc;
}
