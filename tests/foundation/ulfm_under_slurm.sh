#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/foundation/ulfm_under_slurm.sh: a ULFM program under mpirun inside a
# 2-node allocation survives a SIGKILLed rank and finishes at the smaller size.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_need_cluster
t_ompi_env
t_scratch
prog=${top_builddir:-..}/tests/foundation/ulfm_smoke
[ -x "$prog" ] || prog=$(dirname "$0")/ulfm_smoke
[ -x "$prog" ] || t_fail "ulfm_smoke not built"
cp "$prog" "$T_DIR/ulfm_smoke"
cat >"$T_DIR/job.sh" <<'JOB'
#!/bin/bash
# (the testbed's Open MPI settings come from the test's environment: t_ompi_env)
timeout 120 mpirun --with-ft ulfm --bind-to none -np 4 ./ulfm_smoke 200 2 50
echo "mpirun exit $?"
JOB
id=$(cd "$T_DIR" && t_sbatch root -N2 --ntasks-per-node=2 --gres=gpu:2 -D "$T_DIR" -o "$T_DIR/out" "$T_DIR/job.sh")
t_log "job $id submitted"
t_wait_job "$id" 180
cat "$T_DIR/out"
t_grep '^mpirun exit 0$' "$T_DIR/out" "mpirun did not exit 0"
t_grep 'finished 200 iterations at size 3 after 1 recoveries' "$T_DIR/out" "survivors did not finish at size 3"
[ "$(grep -Eo 'SLURMD_NODENAME=node[0-9]+' "$T_DIR/out" | sort -u | wc -l)" = 2 ] ||
	t_fail "ranks did not run on 2 nodes"
t_log "PASS: $(grep -o 'recovery [0-9.]* ms' "$T_DIR/out")"
