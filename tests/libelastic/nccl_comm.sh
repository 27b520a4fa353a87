#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/nccl_comm.sh: the NCCL data plane under mpirun, one rank per visible
# GPU (at most 4); SKIP with the reason when there is no NCCL build or no GPU.
set -u
. "$(dirname "$0")/common.sh"
prog=$top_builddir/tests/libelastic/nccl_comm
[ -x "$prog" ] || t_fail "$prog is not built"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
np=$(( ngpu >= 4 ? 4 : ngpu >= 1 ? ngpu : 1 ))
t_scratch
t_mpi_scratch
timeout -s KILL 120 $MPIRUN -np "$np" "$prog" >"$T_DIR/out" 2>&1
rc=$?
cat "$T_DIR/out"
reason=$(sed -n 's/^SKIP: //p' "$T_DIR/out" | head -1)
[ -n "$reason" ] && t_skip "$reason"
[ $rc = 137 ] && t_fail "nccl_comm hung"
[ $rc = 0 ] || t_fail "nccl_comm failed (exit $rc)"
t_grep '^nccl_comm: NCCL allreduce correct' "$T_DIR/out" "NCCL allreduce"
exit 0
