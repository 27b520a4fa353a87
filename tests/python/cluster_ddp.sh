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
check_run() { # scenario (its output: $T_DIR/SCENARIO.out)
	python3 - "$T_DIR" "$EPOCHS" "$1" <<'PY' || t_fail "$1: the elastic run disagrees with the failure-free one (see above)"
import collections, glob, sys
import numpy as np
d, epochs, sc = sys.argv[1], int(sys.argv[2]), sys.argv[3]
ok = True
out = [l.split() for l in open("%s/%s.out" % (d, sc), errors="replace")]
def kept(tag, col):
    res = []
    for w in out:
        if w[:1] == ["RESUMED"]:
            at = int(w[3])
            res = [x for x in res if int(x[col]) < at]
        elif w[:1] == [tag]:
            res.append(w)
    return res
ref = np.load(d + "/exact1.0.npy")
a = [np.load(p) for p in glob.glob("%s/%s.*.npy" % (d, sc))]
if not a or any(not np.array_equal(x, a[0]) for x in a):
    print("FAIL: the ranks' final models differ (or none)"); ok = False
else:
    err = float(np.max(np.abs(a[0] - ref)))
    print("%s: final model of %d ranks vs the 1-rank run: max |dw| %.3g" % (sc, len(a), err))
    ok &= bool(np.allclose(a[0], ref, rtol=1e-4, atol=1e-5))
uses = collections.Counter((int(w[2]), int(i)) for w in kept("USED", 4) for i in w[7:])
bad = [k for k in ((e, i) for e in range(epochs) for i in range(512)) if uses[k] != 1]
print("%s: samples not trained exactly once in their epoch: %d" % (sc, len(bad))); ok &= not bad
lr = {int(w[2]): w[3] for w in (l.split() for l in open(d + "/exact1.out")) if w[:1] == ["LR"]}
got = {int(w[2]): w[3] for w in kept("LR", 2)}
diff = sorted(s for s in lr if got.get(s) != lr[s])
print("%s: committed steps %d (reference %d), learning rate differs at %s" % (sc, len(got), len(lr), diff[:5]))
ok &= not diff and len(got) == len(lr)
sys.exit(0 if ok else 1)
PY
	[ -s "$T_DIR/$1.pt" ] || t_fail "$1: no model saved after the loop"
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
check_run exact_cluster

# a growth from 2 to 4 ranks after step 10
out=$T_DIR/exact_grow.out
lead=$(t_sbatch root -N1 -n1 -w node1 --gres=gpu:2 -o "$out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,EPOCHS=$EPOCHS" "$T_DIR/ddp.sbatch" exact_grow)
wait_lr exact_grow 10 2
t_grant_start "$lead" 2
er=$(pgrep -f "elastic-run -v -- python3 $here/ddp_checks.py exact_grow" | head -n1)
[ -n "$er" ] || t_fail "no elastic-run process found"
kill -USR1 "$er"
t_log "grant $grant running on node2; SIGUSR1 to elastic-run (pid $er)"
t_wait_job "$lead" 300
scancel "$grant" 2>/dev/null || true
grep -av '^USED\|^LR' "$out" | tail -n 12
n=$(grep -ac '^OK exact_grow rank' "$out" || true)
[ "$n" = 4 ] || t_fail "exact_grow: $n of 4 ranks passed their checks at the end"
# the DDP layer re-forms rather than taking joiners in place (on every runtime)
t_grep 're-form 1: 4 ranks' "$out" "elastic-run re-formed the job at 4"
t_grep '^RESUMED at step' "$out" "the relaunch resumed from the node snapshot"
t_log "grew by a re-form at 4 ranks: $(grep -am1 '^RESUMED at step' "$out")"
check_run exact_grow
t_log "PASS: a node lost at 4 ranks, a growth from 2 to 4: the model, LR schedule and samples of the failure-free run"
exit 0
