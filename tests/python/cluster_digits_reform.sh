#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_digits_reform.sh: the PyTorch example across two nodes under
# elastic-run, then a node lost: the job (train.sbatch without its --elastic-gpus line:
# no elasticd here, 2 GPUs on node1) and its grant (2 GPUs on node2, named as elasticd
# names them) train at 4 ranks; at step 20 every
# process of the job on node2 (PRRTE daemon, rank wrappers, ranks) is SIGKILLed and the
# grant cancelled. elastic-run re-forms on node1's 2 GPUs, the ranks resume from the
# node snapshot of the last committed step (path B), the job completes with each
# committed step applied once, each sample used once per epoch, the loss fallen, and
# a final model within float32 summation-order noise of a static run's.
# With a runtime that survives a lost daemon (Open MPI 6, `elastic-run
# --runtime`), mpirun goes on instead: the two Python ranks on node1 heal in
# place and keep running (same processes, no relaunch, no snapshot read).
set -u
. "$(dirname "$0")/common.sh"
py_cluster_setup
epochs=6 target=20

py_digits_reference $epochs 72

py_plain_sbatch
lead=$(t_sbatch root -N1 -n1 -w node1 --gres=gpu:2 -H -o "$T_DIR/job.out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,ELASTIC_BIN=$top_builddir/launcher,TRAIN=$ex/train_digits.py,EPOCHS=$epochs,STEP_SLEEP=0.1,MODEL_OUT=$T_DIR/elastic.npy,TRAIN_ARGS=--timings" \
	"$T_DIR/train.sbatch")
t_grant_release "$lead" 2
t_log "job $lead (node1, 2 GPUs) + grant $grant (node2, 2 GPUs)"
py_wait_step "$lead" "$target" 0.05
t_grep "^step $target epoch [0-9]+ size 4 " "$T_DIR/job.out" "training at 4 ranks over 2 nodes"
last=$(grep -a '^step [0-9]* ' "$T_DIR/job.out" | tail -1 | awk '{print $2}')
py_kill_node "$grant" node2
t_log "node2 lost after committed step $last: SIGKILLed$victims, grant $grant cancelled"
t_wait_job "$lead" 300
grep -av '^step ' "$T_DIR/job.out" | tail -20
t_grep "^done: 72 steps, $epochs epochs, size 2, each committed step applied once: yes, samples once per epoch: yes" \
	"$T_DIR/job.out" "completed at 2 ranks, each step once, each sample once an epoch"
if t_runtime_in_place; then
	t_grep "2 ranks lost; the survivors healed in place at 2 ranks" "$T_DIR/job.out" "the Python ranks on node1 did not heal in place"
	! grep -aq 're-form [0-9]*:' "$T_DIR/job.out" || t_fail "elastic-run relaunched the job: $(grep -am1 're-form [0-9]*:' "$T_DIR/job.out")"
	t_grep "job $lead: finished \(1 launch," "$T_DIR/job.out" "the job did not finish in its first launch"
	read -r first c < <(awk -v k="$t_kill" '/^step [0-9]+ .*first commit after a change/ {
		for (i = 1; i <= NF; i++) if ($i ~ /^t=/) c = substr($i, 3); if (c >= k) { print $2, c; exit } }' "$T_DIR/job.out")
	[ -n "${first:-}" ] || t_fail "no step committed after the node loss"
	[ "$first" -gt "$last" ] || t_fail "the first step after the loss, $first, is not after step $last"
	t_log "healed in place at step $first (last committed before the loss: $last); kill -> next commit: $(awk -v k="$t_kill" -v c="$c" 'BEGIN { printf "%.0f ms", (c - k) * 1000 }'), no Python process restarted"
else
	t_grep 're-form 1:' "$T_DIR/job.out" "elastic-run re-formed the job"
	read -r first c < <(awk '/re-form 1:/ { f = 1 } f && /^step [0-9]+ .*first commit after a change/ {
		for (i = 1; i <= NF; i++) if ($i ~ /^t=/) c = substr($i, 3); print $2, c; exit }' "$T_DIR/job.out")
	[ -n "${first:-}" ] || t_fail "no step committed by the relaunch"
	[ "$first" -gt "$last" ] || t_fail "the relaunch's first step $first is not after step $last"
	t_log "resumed at step $first (last committed before the loss: $last, a step in flight is redone); kill -> next commit: $(awk -v k="$t_kill" -v c="$c" 'BEGIN { printf "%.0f ms", (c - k) * 1000 }')"
	t_log "relaunch breakdown: $(grep -a '^timings (resumed' "$T_DIR/job.out" | head -1)"
fi
py_check_loss_and_model $epochs
exit 0
