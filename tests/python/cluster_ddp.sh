#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_ddp.sh: a DDP script (tests/python/ddp_checks.py: mean loss, rank-0
# seed only, SGD with momentum and two param groups, a per-step StepLR, clipping, an
# in-step weight edit, a DataLoader with 2 workers, a tracked counter) under elastic-run
# in a Slurm job across two nodes, then a node lost: the job (2 GPUs on node1) and its
# grant (2 GPUs on node2) train at 4 ranks; in step 15 every process of the job on node2
# is SIGKILLed and the grant cancelled. Open MPI 5: elastic-run re-forms on node1 and the
# ranks resume from the node snapshot; Open MPI 6: the ranks on node1 heal in place. Either
# way the job completes with the failure-free 1-rank run's model (float32 summation
# order), its learning rate at every committed step, each sample once per epoch, and the
# model saved after the loop.
set -u
. "$(dirname "$0")/common.sh"
py_cluster_setup
export EPOCHS=4

# the failure-free reference, one rank
timeout -s KILL 180 $MPIRUN -x EPOCHS -np 1 python3 "$here/ddp_checks.py" exact1 "$T_DIR" \
	>"$T_DIR/exact1.out" 2>&1 || { cat "$T_DIR/exact1.out"; t_fail "reference run"; }
t_grep '^OK exact1 rank 0' "$T_DIR/exact1.out" "reference run"

cat >"$T_DIR/ddp.sbatch" <<EOF
#!/bin/bash
export OMP_NUM_THREADS=1 STEP_SLEEP=0.05
exec $top_builddir/launcher/elastic-run -v -- python3 $here/ddp_checks.py exact_cluster $T_DIR
EOF
lead=$(t_sbatch root -N1 -n1 -w node1 --gres=gpu:2 -H -o "$T_DIR/job.out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,EPOCHS=$EPOCHS" "$T_DIR/ddp.sbatch")
t_grant_release "$lead" 2
t_log "job $lead (node1, 2 GPUs) + grant $grant (node2, 2 GPUs)"
end=$((SECONDS + 180))
until grep -aq '^LR step 15 .* size 4' "$T_DIR/job.out" 2>/dev/null; do
	[ $SECONDS -lt $end ] || { cat "$T_DIR/job.out"; t_fail "job $lead did not reach step 15 at 4 ranks"; }
	sleep 0.05
done
py_kill_node "$grant" node2
t_log "node2 lost in step 16: SIGKILLed$victims, grant $grant cancelled"
t_wait_job "$lead" 300
grep -av '^USED\|^LR' "$T_DIR/job.out" | tail -n 20
n=$(grep -ac '^OK exact_cluster rank' "$T_DIR/job.out" || true)
[ "$n" = 2 ] || t_fail "$n of 2 ranks passed their checks at the end"
if t_runtime_in_place; then
	! grep -aq 're-form [0-9]*:' "$T_DIR/job.out" || t_fail "elastic-run relaunched the job: $(grep -am1 're-form [0-9]*:' "$T_DIR/job.out")"
	t_log "healed in place: no relaunch"
else
	t_grep 're-form 1:' "$T_DIR/job.out" "elastic-run re-formed the job"
	t_grep '^RESUMED at step' "$T_DIR/job.out" "the relaunch resumed from the node snapshot"
	t_log "re-formed: $(grep -am1 '^RESUMED at step' "$T_DIR/job.out")"
fi
python3 - "$T_DIR" "$EPOCHS" <<'PY' || t_fail "the elastic run disagrees with the failure-free one (see above)"
import collections, glob, sys
import numpy as np
d, epochs = sys.argv[1], int(sys.argv[2])
ok = True
out = [l.split() for l in open(d + "/job.out", errors="replace")]
# a relaunch redoes the steps after its snapshot: their earlier lines go
resumed = [i for i, w in enumerate(out) if w[:1] == ["RESUMED"]]
def kept(tag, col):
    res, cut = [], None
    for i, w in enumerate(out):
        if w[:1] == ["RESUMED"]:
            at = int(w[3])
            res = [x for x in res if int(x[col]) < at]
        elif w[:1] == [tag]:
            res.append(w)
    return res
ref = np.load(d + "/exact1.0.npy")
states = {p: np.load(p) for p in glob.glob(d + "/exact_cluster.*.npy")}
a = list(states.values())
if not a or any(not np.array_equal(x, a[0]) for x in a):
    print("FAIL: the ranks' final models differ (or none)"); ok = False
else:
    err = float(np.max(np.abs(a[0] - ref)))
    print("final model vs the 1-rank run: max |dw| %.3g" % err)
    ok &= bool(np.allclose(a[0], ref, rtol=1e-4, atol=1e-5))
uses = collections.Counter((int(w[2]), int(i)) for w in kept("USED", 4) for i in w[7:])
bad = [k for k in ((e, i) for e in range(epochs) for i in range(512)) if uses[k] != 1]
print("samples not trained exactly once in their epoch: %d" % len(bad)); ok &= not bad
lr = {int(w[2]): w[3] for w in (l.split() for l in open(d + "/exact1.out")) if w[:1] == ["LR"]}
got = {int(w[2]): w[3] for w in kept("LR", 2)}
diff = sorted(s for s in lr if got.get(s) != lr[s])
print("committed steps %d (reference %d), learning rate differs at %s" % (len(got), len(lr), diff[:5]))
ok &= not diff and len(got) == len(lr)
sys.exit(0 if ok else 1)
PY
[ -s "$T_DIR/exact_cluster.pt" ] || t_fail "no model saved after the loop"
t_log "PASS: node lost at 4 ranks: the model, LR schedule and samples of the failure-free run"
exit 0
