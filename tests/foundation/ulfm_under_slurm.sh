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
run_job() {
	id=$(cd "$T_DIR" && t_sbatch root -N2 --ntasks-per-node=2 --gres=gpu:2 -D "$T_DIR" -o "$T_DIR/out" "$T_DIR/job.sh")
	t_log "job $id submitted"
	t_wait_job "$id" 180
	cat "$T_DIR/out"
}
run_job
# Now and then PRRTE's daemon on the second node exits 1 at once, before any
# rank starts (its srun step ends with status 256 within 0.1 s; PRRTE 5 says
# "srun returned non-zero exit status (256) from launching the per-node
# daemon", PRRTE 3 a "minimum Slurm version" message with "Major: 0"). That
# is a launch failure, which elastic-run meets by launching again
# (tests/launcher/daemon_start.sh); what is tested here is what ULFM does
# once a rank is lost. So a run in which no rank started is run once more.
if grep -aq 'mpirun exit [1-9]' "$T_DIR/out" && ! grep -aq '^rank [0-9]* of ' "$T_DIR/out"; then
	t_log "no rank started (mpirun: $(grep -am1 -E 'srun|Slurm' "$T_DIR/out" || echo "no message")): launched once more"
	mv "$T_DIR/out" "$T_DIR/out.no-rank"
	run_job
fi
t_grep '^mpirun exit 0$' "$T_DIR/out" "mpirun did not exit 0"
t_grep 'finished 200 iterations at size 3 after 1 recoveries' "$T_DIR/out" "survivors did not finish at size 3"
[ "$(grep -Eo 'SLURMD_NODENAME=node[0-9]+' "$T_DIR/out" | sort -u | wc -l)" = 2 ] ||
	t_fail "ranks did not run on 2 nodes"
t_log "PASS: $(grep -o 'recovery [0-9.]* ms' "$T_DIR/out")"
