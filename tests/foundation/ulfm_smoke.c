/* SPDX-License-Identifier: GPL-2.0-or-later */
/* tests/foundation/ulfm_smoke.c: the testbed's ULFM check: an allreduce loop
 * in which one rank SIGKILLs itself; the survivors revoke, shrink, agree and
 * finish at the smaller size. Independent of libelastic on purpose: it tests
 * the environment the product stands on. */
#include <mpi.h>
#include <mpi-ext.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 100;
	int kill_rank = argc > 2 ? atoi(argv[2]) : 2;
	int kill_at = argc > 3 ? atoi(argv[3]) : 50;
	MPI_Comm comm;
	int rank, size, wrank, i = 0, recoveries = 0;
	double t_fail = 0, t_rec = 0;
	char host[64];

	MPI_Init(&argc, &argv);
	MPI_Comm_dup(MPI_COMM_WORLD, &comm);
	MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
	MPI_Comm_rank(comm, &wrank);
	MPI_Comm_size(comm, &size);
	gethostname(host, sizeof(host));
	printf("rank %d of %d on %s (SLURMD_NODENAME=%s) CUDA_VISIBLE_DEVICES=%s\n",
	       wrank, size, host,
	       getenv("SLURMD_NODENAME") ? getenv("SLURMD_NODENAME") : "-",
	       getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "-");
	fflush(stdout);
	rank = wrank;
	while (i < iters) {
		int one = 1, sum = 0, ok, rc;
		if (wrank == kill_rank && i == kill_at)
			raise(SIGKILL);
		rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, comm);
		/* A success with a partial sum is possible (TESTBED-NOTES): the
		 * step counts only when every survivor agrees it was whole. */
		ok = (rc == MPI_SUCCESS && sum == size);
		if (!ok && t_fail == 0)
			t_fail = now_ms();
		rc = MPIX_Comm_agree(comm, &ok);
		if (rc == MPI_SUCCESS && ok) {
			i++;
			continue;
		}
		if (t_fail == 0)
			t_fail = now_ms();
		MPI_Comm nc;
		MPIX_Comm_revoke(comm);
		if (MPIX_Comm_shrink(comm, &nc) != MPI_SUCCESS) {
			fprintf(stderr, "rank %d: MPIX_Comm_shrink failed\n", wrank);
			MPI_Abort(MPI_COMM_WORLD, 3);
		}
		MPI_Comm_free(&comm);
		comm = nc;
		MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
		MPI_Comm_rank(comm, &rank);
		MPI_Comm_size(comm, &size);
		recoveries++;
		t_rec += now_ms() - t_fail;
		t_fail = 0;
	}
	if (rank == 0)
		printf("ulfm_smoke: finished %d iterations at size %d after %d recoveries (recovery %.2f ms)\n",
		       iters, size, recoveries, t_rec);
	fflush(stdout);
	MPI_Comm_free(&comm);
	MPI_Finalize();
	return 0;
}
