#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_digits.sh: the PyTorch example (examples/pytorch) as a user runs
# it: sbatch --elastic-gpus=3 train.sbatch (SPANK + job_submit, elastic-run, 3 ranks of
# train_digits.py). One rank is SIGKILLed after step 8: the others heal in place (ULFM,
# no re-form for the failure); 2 s later elastic-run re-forms onto the 3 GPUs (a rank on
# the killed one's GPU again: cause replace), the job completes at 3 ranks, the loss
# falls, each committed step was applied once and each sample used once per epoch, and
# the final model equals a static run's within float32 summation-order noise (rtol 1e-3,
# atol 1e-4).
set -u
. "$(dirname "$0")/common.sh"
py_cluster_setup
epochs=6

# the reference: the same training, no failure, a static 2-rank run
py_digits_reference $epochs 72

id=$(t_sbatch alice -A acct_a --elastic-gpus=3 -N1 -w node1 -o "$T_DIR/job.out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,ELASTIC_BIN=$top_builddir/launcher,TRAIN=$ex/train_digits.py,EPOCHS=$epochs,STEP_SLEEP=0.1,MODEL_OUT=$T_DIR/elastic.npy" \
	"$ex/train.sbatch")
t_log "job $id submitted (sbatch --elastic-gpus=3 examples/pytorch/train.sbatch)"
py_wait_step "$id" 8
t_grep '^step 8 epoch 0 size 3 ' "$T_DIR/job.out" "training at 3 ranks"
# the victim: rank 2's python (forked by the node's zygote, or started cold)
victim=$(py_rank_pid "$id" 2 "$T_DIR/job.out")
[ -n "$victim" ] || t_fail "no rank 2 of job $id found"
t_kill=$(date +%s.%N)
kill -KILL "$victim"
t_log "rank 2 (pid $victim) SIGKILLed"
t_wait_job "$id" 300
grep -av "^step " "$T_DIR/job.out" | tail -20
t_grep "^done: 72 steps, $epochs epochs, size 3, each committed step applied once: yes, samples once per epoch: yes" \
	"$T_DIR/job.out" "completed at 3 ranks (a rank again on the killed one's GPU), each step once, each sample once an epoch"
t_grep "^redo step [0-9]+: size now 2" "$T_DIR/job.out" "the killed rank was not healed in place"
awk '/held with no rank for/ { r = 1 } /re-form [0-9]+:/ { if (!r) bad = 1; r = 0 } END { exit bad }' "$T_DIR/job.out" ||
	t_fail "the job re-formed for the failure: expected in-place healing"
t_grep "re-form 1: 3 ranks" "$T_DIR/job.out" "no re-form onto the killed rank's GPU"
c=$(sed -n 's/^step \([0-9]*\) .*size 2 .*t=\([0-9.]*\) (first commit after a change)/\1 \2/p' "$T_DIR/job.out" | head -1)
[ -n "$c" ] || t_fail "no first commit after the kill"
t_log "kill -> next commit (step ${c% *}, 3 -> 2 ranks): $(awk -v k="$t_kill" -v c="${c#* }" 'BEGIN { printf "%.0f ms", (c - k) * 1000 }')"
py_check_loss_and_model $epochs
exit 0
