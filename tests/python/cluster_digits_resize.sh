#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_digits_resize.sh: the PyTorch example grows, then shrinks, under
# elasticd: alice's
# sbatch --elastic-gpus=2-4 train.sbatch starts at 2 ranks on node1 (the other nodes and
# node1's other 2 GPUs held by blockers); after step 5 the node1 blocker ends, elasticd
# grants the 2 GPUs; elastic-run asks the ranks to stop
# at a step boundary (SIGUSR1: the Python ranks agree, commit, exit 75) and re-forms at 4;
# the relaunch resumes at the next step. After the first step at 4 ranks, bob's elastic job (2 GPUs) arrives:
# fair share gives 2 / 2, alice's job shrinks back to 2 ranks at a step boundary (in
# place on Open MPI 6; a
# second planned re-form) and its grant is released. No committed step is lost or
# redone, every
# sample is used once per epoch, the loss falls, and the final model equals a static
# run's within float32 summation-order noise.
set -u
. "$(dirname "$0")/common.sh"
. "$top_srcdir/tests/controller/ctl-lib.sh"
py_need_torch
ctl_setup
t_need_spank
t_mpi_scratch
ex=$top_srcdir/examples/pytorch
# 16 epochs of 0.1 s steps: the growth waits for the grants' warm
# interpreters (16-18 s with every lane of testbed/check running on a slow
# host, where 8 epochs ended before it) and the shrink follows it.
epochs=16 steps=192

py_digits_reference $epochs $steps

ctl_block_nodes node2 node3 node4
half=$(sbatch --parsable -J blocker -w node1 --gres=gpu:2 -N1 -n1 -o /dev/null --wrap 'sleep 3000') ||
	t_fail "blocker on node1"
CTL_BLOCKERS="$CTL_BLOCKERS $half"
ctl_start
id=$(t_sbatch alice -A acct_a --elastic-gpus=2-4 -N1 -w node1 -o "$T_DIR/job.out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,ELASTIC_BIN=$top_builddir/launcher,TRAIN=$ex/train_digits.py,EPOCHS=$epochs,STEP_SLEEP=0.1,MODEL_OUT=$T_DIR/elastic.npy" \
	"$ex/train.sbatch")
echo "$id" >>"$T_DIR/jobs"
t_log "job $id submitted (sbatch --elastic-gpus=2-4 examples/pytorch/train.sbatch)"
py_wait_step "$id" 5
scancel "$half"
t_log "node1's other 2 GPUs freed after step 5"
# (the re-form waits for the grants' warm interpreters: the ranks train on)
py_wait_line "$T_DIR/job.out" '^step [0-9]+ epoch [0-9]+ size 4 ' 120 "no step at 4 ranks"
bob=$(ctl_job bob acct_b 2 2 30)
t_log "bob's elastic job $bob (2 GPUs) submitted at 4 ranks"
t_wait_job "$id" 300
grep -av '^step ' "$T_DIR/job.out" | tail -20
t_grep "^done: $steps steps, $epochs epochs, size 2, each committed step applied once: yes, samples once per epoch: yes" \
	"$T_DIR/job.out" "completed at 2 ranks, each step once, each sample once an epoch"
t_grep '^step [0-9]+ epoch [0-9]+ size 2 ' "$T_DIR/job.out" "trained at 2 ranks first"
t_grep 're-form 1: 4 ranks' "$T_DIR/job.out" "re-formed at 4 ranks"
if t_runtime_in_place; then
	# Open MPI 6: the shrink is done in place, the 2 surviving Python
	# processes go on (no relaunch)
	# (one shrink, or one per grant when elasticd's releases come apart)
	t_grep 'planned shrink in place: [0-9]+ ranks? left after step [0-9]+, 2 go on' "$T_DIR/job.out" "shrank in place to 2 ranks"
	! grep -aq 're-form 2:' "$T_DIR/job.out" || t_fail "the shrink relaunched the job: $(grep -a 're-form 2:' "$T_DIR/job.out")"
	t_log "shrink in place: $(grep -a 'planned shrink in place: [0-9]* ranks\{0,1\} left' "$T_DIR/job.out" | sed 's/.*: //' | paste -sd';' -)"
else
	t_grep 're-form 2: 2 ranks' "$T_DIR/job.out" "re-formed at 2 ranks (shrink)"
fi
t_grep '^step [0-9]+ epoch [0-9]+ size 4 ' "$T_DIR/job.out" "trained at 4 ranks"
[ "$(t_job_state "$bob")" = RUNNING ] || t_fail "bob's job is not running ($(t_job_state "$bob"))"
# the steps rank 0 committed, in order, across both launches: 0..steps-1 once each
grep -a '^step [0-9]* ' "$T_DIR/job.out" | awk '{print $2}' >"$T_DIR/steps"
seq 0 $((steps - 1)) | cmp -s - "$T_DIR/steps" || {
	diff <(seq 0 $((steps - 1))) "$T_DIR/steps" | head
	t_fail "committed steps are not 0..$((steps - 1)) once each"
}
last2=$(grep -a '^step [0-9]* ' "$T_DIR/job.out" | awk '$6 == 4 { print prev; exit } $6 == 2 { prev = $2 }')
last4=$(grep -a '^step [0-9]* .* size 4 ' "$T_DIR/job.out" | tail -1 | awk '{print $2}')
t_log "grew 2 -> 4 after step $last2, shrank 4 -> 2 after step $last4 (bob: 2 GPUs); steps 0..$((steps - 1)) committed once each"
py_check_loss_and_model $epochs
exit 0
