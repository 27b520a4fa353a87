/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tests/libelastic/nccl_comm.c: the GPU data plane: a NCCL communicator from libelastic,
 * an allreduce on device buffers, and its rebuild after a rank is lost (one rank per
 * GPU). With --change-at N the world changes once at step N without losing a rank
 * (elastic_check of an MPI error: revoke, recovery at the same size), so that the
 * rebuild runs at world size 1 too; without a GPU those steps still run on the CPU.
 * Exits 77 with the reason where there is no NCCL build or no GPU. */
#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <mpi.h>
#include <elastic/elastic.h>
#ifdef HAVE_NCCL
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <cuda_runtime_api.h>
#include <nccl.h>
#pragma GCC diagnostic pop
#endif

#ifdef HAVE_NCCL
/* At step change_at, once: a simulated world change just before the commit.
 * Nobody is lost; the commit fails, the world is rebuilt at its size and the
 * step redone, and the NCCL communicator is rebuilt on its next use. */
static void _change(elastic_ctx_t *ctx, int step, int change_at, int *changed)
{
	if (step == change_at && !*changed) {
		*changed = 1;
		elastic_check(ctx, MPI_ERR_OTHER);
	}
}
#endif

int main(int argc, char **argv)
{
	elastic_ctx_t *ctx;
	elastic_error_t err;
	int rank, rc = 0, change_at = -1;
	double state = 0;

	for (int i = 1; i + 1 < argc; i++)
		if (!strcmp(argv[i], "--change-at"))
			change_at = atoi(argv[i + 1]);
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (elastic_init(MPI_COMM_WORLD, &ctx, &err) < 0 ||
	    elastic_register(ctx, "state", &state, sizeof(state), &err) < 0) {
		fprintf(stderr, "nccl_comm: %s\n", err.text);
		MPI_Abort(MPI_COMM_WORLD, 1);
	}
#ifdef HAVE_NCCL
	ncclComm_t nc;
	float *d = NULL, h[4];
	int lost = 0, changed = 0, gpu = 1;
	char nogpu[sizeof(err.text)] = "";
	for (int step = 0; step < 4; step++) {
		elastic_step_begin(ctx, &err);
		if (gpu && elastic_nccl_comm(ctx, &nc, &err) < 0) {
			if (errno == ENODEV && change_at >= 0) {
				/* the world change still runs, on the CPU */
				snprintf(nogpu, sizeof(nogpu), "%s", err.text);
				gpu = 0;
			} else if (errno == ENODEV) {
				if (rank == 0)
					printf("SKIP: %s\n", err.text);
				elastic_step_commit(ctx, &err);
				rc = 77;
				break;
			} else {
				fprintf(stderr, "nccl_comm: %s\n", err.text);
				rc = 1;
				break;
			}
		}
		if (!gpu) {
			_change(ctx, step, change_at, &changed);
			int r = elastic_step_commit(ctx, &err);
			if (r == ELASTIC_REDO) {
				changed = 2;
				step--;
				continue;
			}
			if (r < 0) {
				fprintf(stderr, "nccl_comm: step %d: %s\n", step,
					err.text);
				rc = 1;
				break;
			}
			continue;
		}
		if (step == 2 && elastic_size(ctx) > 1 && elastic_rank(ctx) == 1 && !lost)
			kill(getpid(), SIGKILL); /* a rank is lost mid-training */
		if (!d && cudaMalloc((void **)&d, sizeof(h)) != cudaSuccess) {
			fprintf(stderr, "nccl_comm: cudaMalloc failed\n");
			rc = 1;
			break;
		}
		for (int i = 0; i < 4; i++)
			h[i] = 1.0f;
		cudaMemcpy(d, h, sizeof(h), cudaMemcpyHostToDevice);
		if (ncclAllReduce(d, d, 4, ncclFloat, ncclSum, nc, 0) != ncclSuccess)
			elastic_step_fail(ctx);
		cudaStreamSynchronize(0);
		/* and again through the library's own call: size * size */
		if (elastic_gpu_allreduce(ctx, d, 4, MPI_FLOAT, NULL, &err) < 0 &&
		    errno != EIO) {
			fprintf(stderr, "nccl_comm: %s\n", err.text);
			rc = 1;
			break;
		}
		cudaMemcpy(h, d, sizeof(h), cudaMemcpyDeviceToHost);
		if (h[0] != (float)(elastic_size(ctx) * elastic_size(ctx)))
			elastic_step_fail(ctx);
		_change(ctx, step, change_at, &changed);
		int r = elastic_step_commit(ctx, &err);
		if (r == ELASTIC_REDO) {
			if (changed == 1)
				changed = 2; /* the simulated change's redo */
			else
				lost = 1;
			step--;
			continue;
		}
		if (r < 0 || h[0] != (float)(elastic_size(ctx) * elastic_size(ctx))) {
			fprintf(stderr, "nccl_comm: step %d: sum %g on %d ranks\n", step,
				h[0], elastic_size(ctx));
			rc = 1;
			break;
		}
	}
	if (rc == 0 && !gpu) {
		if (rank == 0) {
			printf("nccl_comm: world change at step %d: %s at size %d (no GPU: NCCL not used)\n",
			       change_at, changed == 2 ? "redone" : "NOT redone",
			       elastic_size(ctx));
			printf("SKIP: %s\n", nogpu);
		}
		rc = changed == 2 ? 77 : 1;
	} else if (rc == 0 && rank == 0)
		printf("nccl_comm: NCCL allreduce correct on %d ranks (ncclAllReduce and elastic_gpu_allreduce)%s%s\n",
		       elastic_size(ctx), lost ? " after losing a rank" : "",
		       changed == 2 ? " after a world change (communicator rebuilt)"
				    : "");
	if (rc == 0 && changed == 1) {
		fprintf(stderr,
			"nccl_comm: the simulated world change at step %d was not redone\n",
			change_at);
		rc = 1;
	}
	if (d)
		cudaFree(d);
#else
	(void)change_at; /* no NCCL: nothing to rebuild */
	if (elastic_nccl_comm(ctx, &state, &err) < 0 && errno == ENODEV) {
		if (rank == 0)
			printf("SKIP: %s\n", err.text);
		rc = 77;
		/* the same answer from the allreduce, inside a step */
		elastic_step_begin(ctx, &err);
		if (elastic_gpu_allreduce(ctx, &state, 1, MPI_DOUBLE, NULL, &err) == 0 ||
		    errno != ENODEV)
			rc = 1;
		elastic_step_commit(ctx, &err);
	} else {
		rc = 1;
	}
#endif
	fflush(stdout);
	if (rc != 1)
		elastic_complete(ctx, NULL);
	elastic_finalize(ctx, rc);
	return rc;
}
