#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_ddp.sh: a DDP script (tests/python/ddp_checks.py: mean loss, rank-0
# seed only, SGD with momentum and two param groups, a per-step StepLR, clipping, an
# in-step weight edit, a DataLoader with 2 workers, a tracked counter) under elastic-run
# in Slurm jobs across two nodes.
#  - A node lost: the job (2 GPUs on node1) and its grant (2 GPUs on node2) train at 4
#    ranks; in step 16 every process of the job on node2 is SIGKILLed and the grant
#    cancelled. Open MPI 5: elastic-run re-forms on node1 and the ranks resume from the
#    node snapshot; Open MPI 6: the ranks on node1 heal in place.
#  - A growth: 2 ranks on node1; after step 10 a grant of 2 GPUs starts on node2 and
#    elastic-run is told (SIGUSR1, as on the controller's word): the job re-forms at 4
#    and resumes (on Open MPI 5, where elastic-run starts joiners in place, the joiners
#    leave at once and the running ranks re-form: the DDP layer does not take joiners).
# Each job completes with the failure-free 1-rank run's model (float32 summation order),
# its learning rate at every committed step, each sample once per epoch, and the model
# saved after the loop.
set -u
. "$(dirname "$0")/common.sh"
py_cluster_setup
export EPOCHS=4

# the failure-free reference, one rank
timeout -s KILL 180 $MPIRUN -x EPOCHS -np 1 python3 "$here/ddp_checks.py" exact1 "$T_DIR" \
	>"$T_DIR/exact1.out" 2>&1 || { cat "$T_DIR/exact1.out"; t_fail "reference run"; }
t_grep '^OK exact1 rank 0' "$T_DIR/exact1.out" "reference run"

# The job's ranks agree with the failure-free run: one model, its learning rate at
# each committed step, each sample once per epoch (a relaunch redoes the steps after
# its snapshot: their earlier lines go), the model saved.
check_run() { # scenario ranks
	python3 - "$here" "$T_DIR" "$EPOCHS" "$1" "$2" <<'PY' || t_fail "$1: the elastic run disagrees with the failure-free one (see above)"
import sys
sys.path.insert(0, sys.argv[1])
from ddp_verify import Runs
r = Runs(sys.argv[2], int(sys.argv[3]))
r.check(sys.argv[4], ranks=int(sys.argv[5]), model_ref="exact1", lr_ref="exact1")
sys.exit(0 if r.ok else 1)
PY
}

# wait until the scenario's output shows committed step $2 at size $3
wait_lr() { # scenario step size
	local end=$((SECONDS + 180))
	until grep -aq "^LR step $2 .* size $3" "$T_DIR/$1.out" 2>/dev/null; do
		[ $SECONDS -lt $end ] || { cat "$T_DIR/$1.out"; t_fail "$1 did not reach step $2 at $3 ranks"; }
		sleep 0.05
	done
}

cat >"$T_DIR/ddp.sbatch" <<SBATCH
#!/bin/bash
export OMP_NUM_THREADS=1 STEP_SLEEP=0.05
exec $top_builddir/launcher/elastic-run -v -- python3 $here/ddp_checks.py \$1 $T_DIR
SBATCH

# a node lost at 4 ranks
out=$T_DIR/exact_cluster.out
lead=$(t_sbatch root -N1 -n1 -w node1 --gres=gpu:2 -H -o "$out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,EPOCHS=$EPOCHS" "$T_DIR/ddp.sbatch" exact_cluster)
t_grant_release "$lead" 2
t_log "job $lead (node1, 2 GPUs) + grant $grant (node2, 2 GPUs)"
wait_lr exact_cluster 15 4
py_kill_node "$grant" node2
t_log "node2 lost in step 16: SIGKILLed$victims, grant $grant cancelled"
t_wait_job "$lead" 300
grep -av '^USED\|^LR' "$out" | tail -n 12
n=$(grep -ac '^OK exact_cluster rank' "$out" || true)
[ "$n" = 2 ] || t_fail "exact_cluster: $n of 2 ranks passed their checks at the end"
if t_runtime_in_place; then
	! grep -aq 're-form [0-9]*:' "$out" || t_fail "elastic-run relaunched the job: $(grep -am1 're-form [0-9]*:' "$out")"
	t_log "node lost: healed in place, no relaunch"
else
	t_grep 're-form 1:' "$out" "elastic-run re-formed the job"
	t_grep '^RESUMED at step' "$out" "the relaunch resumed from the node snapshot"
	t_log "node lost: re-formed, $(grep -am1 '^RESUMED at step' "$out")"
fi
check_run exact_cluster 2

# a growth from 2 to 4 ranks after step 10 (slow steps until the re-form: it
# waits for the grant's warm interpreter while the ranks train on)
out=$T_DIR/exact_grow.out
echo 0.3 >"$T_DIR/grow.sleep"
lead=$(t_sbatch root -N1 -n1 -w node1 --gres=gpu:2 -o "$out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,EPOCHS=$EPOCHS,SLEEP_FILE=$T_DIR/grow.sleep" "$T_DIR/ddp.sbatch" exact_grow)
wait_lr exact_grow 10 2
t_grant_start "$lead" 2
er=$(t_pgrep -f "elastic-run -v -- python3 $here/ddp_checks.py exact_grow" | head -n1)
[ -n "$er" ] || t_fail "no elastic-run process found"
kill -USR1 "$er"
t_log "grant $grant running on node2; SIGUSR1 to elastic-run (pid $er)"
py_wait_line "$out" 're-form 1:' 60 "no re-form after SIGUSR1"
echo 0.05 >"$T_DIR/grow.sleep"
t_wait_job "$lead" 300
scancel "$grant" 2>/dev/null || true
grep -av '^USED\|^LR' "$out" | tail -n 12
n=$(grep -ac '^OK exact_grow rank' "$out" || true)
[ "$n" = 4 ] || t_fail "exact_grow: $n of 4 ranks passed their checks at the end"
# the DDP layer re-forms rather than taking joiners in place (on every runtime)
t_grep 're-form 1: 4 ranks' "$out" "elastic-run re-formed the job at 4"
t_grep '^RESUMED at step' "$out" "the relaunch resumed from the node snapshot"
t_log "grew by a re-form at 4 ranks: $(grep -am1 '^RESUMED at step' "$out")"
check_run exact_grow 4
t_log "PASS: a node lost at 4 ranks, a growth from 2 to 4: the model, LR schedule and samples of the failure-free run"
exit 0
