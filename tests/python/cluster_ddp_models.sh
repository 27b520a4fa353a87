#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_ddp_models.sh: DDP scripts with the models users train, under Slurm
# and elastic-run (tests/python/ddp_checks.py: mean loss, rank-0 seed only, a DataLoader
# with 2 workers, a tracked counter, clipping, an in-step weight edit).
#  - A transformer (LayerNorm, AdamW, warmup + cosine per step, bf16 autocast, Dropout)
#    at 4 ranks, the job's 2 GPUs on node1 and a grant's 2 on node2: rank 1 SIGKILLs
#    itself in step 8, then in step 20 the grant is cancelled with scancel. The job
#    heals or re-forms each time (as its runtime allows) and ends with every committed
#    step's learning rate of the failure-free run, each sample once per epoch, and an
#    evaluation loss near the failure-free run's.
#  - examples/pytorch's ResNet (BatchNorm2d, Dropout; SGD, a per-step StepLR) under
#    elasticd: alice's sbatch --elastic-gpus=2-4 starts at 2 ranks, grows to 4 when
#    node1's other 2 GPUs are freed, rank 3 SIGKILLs itself at its first step (the
#    others heal around it), and the job shrinks to 2 when bob's elastic job arrives
#    (fair share). Its ranks end with one model, BatchNorm's
#    num_batches_tracked equal to the committed steps, the reference's learning rate at
#    every committed step and each sample once per epoch.
set -u
. "$(dirname "$0")/common.sh"
. "$top_srcdir/tests/controller/ctl-lib.sh"
py_need_torch
ctl_setup
t_need_spank
t_mpi_scratch

# the failure-free references, one rank: the transformer (4 epochs) and the MLP
# whose SGD + StepLR schedule the ResNet shares (6 epochs)
mkdir -p "$T_DIR/lm" "$T_DIR/cnn"
chmod 1777 "$T_DIR/lm" "$T_DIR/cnn"
EPOCHS=4 timeout -s KILL 180 $MPIRUN -x EPOCHS -np 1 python3 "$here/ddp_checks.py" lm1 "$T_DIR/lm" \
	>"$T_DIR/lm/lm1.out" 2>&1 || { cat "$T_DIR/lm/lm1.out"; t_fail "transformer reference run"; }
EPOCHS=6 timeout -s KILL 180 $MPIRUN -x EPOCHS -np 1 python3 "$here/ddp_checks.py" exact1 "$T_DIR/cnn" \
	>"$T_DIR/cnn/exact1.out" 2>&1 || { cat "$T_DIR/cnn/exact1.out"; t_fail "MLP reference run"; }

wait_lr() { # out step [size-regex]
	local end=$((SECONDS + 240))
	until grep -aEq "^LR step $2 .* size ${3:-[0-9]+}\$" "$1" 2>/dev/null; do
		[ $SECONDS -lt $end ] || { grep -av '^USED' "$1" | tail -n 30; t_fail "no committed step $2 at size ${3:-any} in $1"; }
		sleep 0.05
	done
}
verify() { # dir epochs python-lines
	python3 - "$here" "$1" "$2" <<PY || t_fail "the elastic run disagrees with the failure-free one (see above)"
import sys
sys.path.insert(0, sys.argv[1])
from ddp_verify import Runs
r = Runs(sys.argv[2], int(sys.argv[3]))
$3
sys.exit(0 if r.ok else 1)
PY
}
cat >"$T_DIR/ddp.sbatch" <<SBATCH
#!/bin/bash
export OMP_NUM_THREADS=1
exec $top_builddir/launcher/elastic-run -v -- python3 $here/ddp_checks.py \$1 \$2
SBATCH
chmod 755 "$T_DIR/ddp.sbatch"

# 1. the transformer: a rank killed in step 8, the grant cancelled in step 20
out=$T_DIR/lm/lm_ckill.out
lead=$(t_sbatch root -N1 -n1 -w node1 --gres=gpu:2 -H -o "$out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,EPOCHS=4,STEP_SLEEP=0.05,KILL_RANK=1,KILL_STEP=8" \
	"$T_DIR/ddp.sbatch" lm_ckill "$T_DIR/lm")
echo "$lead" >>"$T_DIR/jobs"
t_grant_release "$lead" 2
t_log "job $lead (node1, 2 GPUs) + grant $grant (node2, 2 GPUs): the transformer at 4 ranks"
wait_lr "$out" 20
scancel "$grant"
t_log "grant $grant cancelled after committed step 20"
t_wait_job "$lead" 300
grep -av '^USED\|^LR' "$out" | tail -n 15
t_grep '^KILL rank 1 at step 8' "$out" "rank 1 was killed in step 8"
n=$(grep -ac '^OK lm_ckill rank' "$out" || true)
m=$(ls "$T_DIR"/lm/lm_ckill.*.npy 2>/dev/null | wc -l)
[ "$n" -ge 1 ] && [ "$n" = "$m" ] || t_fail "lm_ckill: $n ranks passed their checks, $m ended"
verify "$T_DIR/lm" 4 'r.check("lm_ckill", ranks=1, lr_ref="lm1", eval_ref="lm1")'
t_log "transformer: a rank killed, then its grant cancelled: $n ranks at the end; $(grep -a 're-form [0-9]*:\|healed' "$out" | sed 's/.*\(re-form [0-9]*: [0-9]* ranks\|healed[^,;]*\).*/\1/' | paste -sd';' -)"

# 2. the ResNet under elasticd: 2 -> 4 -> 2
ctl_block_nodes node2 node3 node4
half=$(sbatch --parsable -J blocker -w node1 --gres=gpu:2 -N1 -n1 -o /dev/null --wrap 'sleep 3000') ||
	t_fail "blocker on node1"
CTL_BLOCKERS="$CTL_BLOCKERS $half"
ctl_start
out=$T_DIR/cnn/cnn_resize.out
id=$(t_sbatch alice -A acct_a --elastic-gpus=2-4 -N1 -n1 -w node1 -o "$out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,EPOCHS=6,STEP_SLEEP=0.1,KILL_RANK=3,KILL_STEP=0,KILL_FROM=1" \
	"$T_DIR/ddp.sbatch" cnn_resize "$T_DIR/cnn")
echo "$id" >>"$T_DIR/jobs"
t_log "job $id submitted (sbatch --elastic-gpus=2-4, the ResNet)"
wait_lr "$out" 5 2
scancel "$half"
t_log "node1's other 2 GPUs freed after step 5"
# rank 3 dies at its first step; the others heal around it (or, in an epoch's tail,
# re-form): training goes on for two committed steps before bob's job arrives
end=$((SECONDS + 240))
until grep -aq '^KILL rank 3 at step' "$out"; do
	[ $SECONDS -lt $end ] || t_fail "rank 3 did not kill itself"
	sleep 0.05
done
n=$(grep -ac '^LR step' "$out")
until [ "$(grep -ac '^LR step' "$out")" -ge $((n + 2)) ]; do
	[ $SECONDS -lt $end ] || t_fail "no training after rank 3's death"
	sleep 0.05
done
bob=$(ctl_job bob acct_b 2 2 30)
t_log "$(grep -am1 '^KILL rank 3' "$out"), training went on ($(grep -a '^LR step' "$out" | tail -n1)); bob's elastic job $bob (2 GPUs) submitted"
t_wait_job "$id" 300
grep -av '^USED\|^LR' "$out" | tail -n 15
n=$(grep -ac '^OK cnn_resize rank' "$out" || true)
[ "$n" = 2 ] || t_fail "cnn_resize: $n of 2 ranks passed their checks at the end"
grep -aq ' size 2$' <(grep -a '^LR step' "$out" | tail -n 1) || t_fail "the ResNet did not end at 2 ranks"
verify "$T_DIR/cnn" 6 'r.check("cnn_resize", ranks=2, lr_ref="exact1")'
t_log "ResNet: sizes $(grep -a '^LR step' "$out" | awk '{print $NF}' | uniq | paste -sd' ' -) over $(grep -ac '^LR step' "$out") committed steps"
t_log "PASS: a transformer through a rank's death and a cancelled grant, a ResNet grown, a rank killed, shrunk by elasticd: the reference's LR and samples, one model"
exit 0
