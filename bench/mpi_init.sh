#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/mpi_init.sh: what MPI_Init costs each rank of every launch and re-form,
# with this machine's Open MPI settings as they are against btl/ofi left out
# (OMPI_MCA_btl=^ofi), side by side in one run: BENCH_INIT_ROUNDS rounds a
# mode (default 5), modes alternating, `mpirun -np 2` of a program that
# times its own MPI_Init; prints each mode's median and the ratio. Open MPI 6
# on a node without an OFI fabric sleeps 1 s closing btl/ofi
# (doc/admin-guide.md, "Open MPI 6"). Needs mpicc; says "skipped" otherwise.
set -u
rounds=${BENCH_INIT_ROUNDS:-5}
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "mpi_init: BENCH_INIT_ROUNDS must be a positive integer, not '$rounds'" >&2; exit 2; }
skip() { echo "mpi_init: $*; skipped"; exit 0; }
command -v mpicc >/dev/null && command -v mpirun >/dev/null || skip "no mpicc/mpirun"
D=$(mktemp -d /tmp/mpi_init.XXXXXX)
trap 'rm -rf "$D"' EXIT
cat >"$D/init.c" <<'EOC'
#include <mpi.h>
#include <stdio.h>
#include <time.h>
static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}
int main(int argc, char **argv)
{
	double t0 = now(), t, most;
	MPI_Init(&argc, &argv);
	t = now() - t0;
	MPI_Reduce(&t, &most, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
	int rank;
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (rank == 0)
		printf("%.3f\n", most);
	MPI_Finalize();
	return 0;
}
EOC
mpicc -O2 -o "$D/init" "$D/init.c" || skip "mpicc failed"
base_btl=${OMPI_MCA_btl-}
one() { # mode: the slowest rank's MPI_Init in s
	if [ "$1" = as-is ]; then
		if [ -n "$base_btl" ]; then export OMPI_MCA_btl=$base_btl; else unset OMPI_MCA_btl; fi
	else
		export OMPI_MCA_btl=^ofi
	fi
	mpirun --bind-to none -np 2 "$D/init" </dev/null 2>/dev/null | tail -n 1
}
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
: >"$D/as-is"
: >"$D/no-ofi"
for ((i = 0; i < rounds; i++)); do
	one as-is >>"$D/as-is"
	one no-ofi >>"$D/no-ofi"
done
a=$(median <"$D/as-is")
b=$(median <"$D/no-ofi")
[ -n "$a" ] && [ -n "$b" ] || skip "mpirun gave no time"
echo "mpi_init: $(mpirun --version 2>/dev/null | head -n 1); slowest rank's MPI_Init, median of $rounds (-np 2):"
echo "  settings as they are${base_btl:+ (OMPI_MCA_btl=$base_btl)}: $a s; btl/ofi left out (OMPI_MCA_btl=^ofi): $b s ($(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1fx", (b > 0) ? a / b : 0 }'))"
