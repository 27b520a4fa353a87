#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_digits_grow.sh: the PyTorch example grows onto a new node. The
# job (train.sbatch without its --elastic-gpus line: no elasticd here) trains at 2
# ranks on node1; at step 10 a grant of 2 GPUs on node2 starts (named as elasticd
# names its grants) and elastic-run is told (SIGUSR1, what it does on the
# controller's word). On a runtime that starts ranks inside a running mpirun
# (Open MPI 5.0.x: `elastic-run --runtime` says "joins in place"), the two Python
# ranks on node1 keep running: they start two more on node2 at a step boundary,
# which take the model, the optimizer state and the sampler from rank 0, and the
# four go on from the next step. Elsewhere the job re-forms at 4 (every process
# restarts). Either way: each committed step applied once, each sample once per
# epoch, the loss fallen, the final model within float32 summation-order noise
# of a static run's. Each step sleeps 0.45 s: the 58 steps after the order
# outlast the 20 s elastic-run may wait for node2's warm interpreter before a
# re-form (11.7 s under a loaded check), so the job always grows.
set -u
. "$(dirname "$0")/common.sh"
py_cluster_setup
epochs=6 target=10

py_digits_reference $epochs 72

py_plain_sbatch
lead=$(t_sbatch root -N1 -n1 -w node1 --gres=gpu:2 -o "$T_DIR/job.out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,ELASTIC_BIN=$top_builddir/launcher,TRAIN=$ex/train_digits.py,EPOCHS=$epochs,STEP_SLEEP=0.45,MODEL_OUT=$T_DIR/elastic.npy" \
	"$T_DIR/train.sbatch")
py_wait_step "$lead" "$target" 0.05
t_grep "^step $target epoch [0-9]+ size 2 " "$T_DIR/job.out" "training at 2 ranks on node1"
t_grant_start "$lead" 2
er=$(t_pgrep -f "elastic-run -v -- python3 $ex/train_digits.py" | head -n1)
[ -n "$er" ] || t_fail "no elastic-run process found"
last=$(grep -a '^step [0-9]* ' "$T_DIR/job.out" | tail -1 | awk '{print $2}')
t_order=$(date +%s.%N)
kill -USR1 "$er"
t_log "grant $grant running on node2; SIGUSR1 to elastic-run (pid $er) after step $last"
t_wait_job "$lead" 300
scancel "$grant" 2>/dev/null || true
grep -av '^step ' "$T_DIR/job.out" | tail -20
t_grep "^done: 72 steps, $epochs epochs, size 4, each committed step applied once: yes, samples once per epoch: yes" \
	"$T_DIR/job.out" "completed at 4 ranks, each step once, each sample once an epoch"
# the first step at 4 ranks, and when it was committed
read -r first c < <(awk '/^step [0-9]+ .* size 4 / { for (i = 1; i <= NF; i++) if ($i ~ /^t=/) c = substr($i, 3); print $2, c; exit }' "$T_DIR/job.out")
[ -n "${first:-}" ] || t_fail "no step at 4 ranks"
spawn_failed=$(t_runtime_failed_spawn "$T_DIR/job.out") &&
	t_log "the runtime failed the growth in place ($spawn_failed): the re-form that elastic-run fell back to is checked instead"
if t_runtime_grows && [ -z "$spawn_failed" ]; then
	! grep -aq 're-form [0-9]*:' "$T_DIR/job.out" || t_fail "elastic-run relaunched the job: $(grep -am1 're-form [0-9]*:' "$T_DIR/job.out")"
	t_grep "grew in place: 2 ranks joined, 4 at step [0-9]+, no relaunch" "$T_DIR/job.out" "the job did not grow in place"
	t_grep "job $lead: finished \(1 launch," "$T_DIR/job.out" "the job did not finish in its first launch"
	! grep -aq 'resumed at committed step' "$T_DIR/job.out" || t_fail "rank 0 resumed (it should have run on)"
	# rank 0 prints every step: the one before the first at 4 ran at 2, none
	# was redone (each committed step applied once, above)
	grep -aq "^step $((first - 1)) .* size 2 " "$T_DIR/job.out" || t_fail "step $((first - 1)) was not committed at 2 ranks"
	t_log "grew in place: steps to $((first - 1)) at 2 ranks, from $first at 4; order -> first commit at 4: $(awk -v k="$t_order" -v c="$c" 'BEGIN { printf "%.0f ms", (c - k) * 1000 }'); $(grep -ao 'grew in place: .* ms after the order' "$T_DIR/job.out"); no Python process of node1 restarted"
else
	t_grep 're-form 1: 4 ranks' "$T_DIR/job.out" "elastic-run re-formed the job at 4"
	[ "$first" -gt "$last" ] || t_fail "the relaunch's first step $first is not after step $last"
	t_log "re-formed at 4 from step $first; order -> first commit at 4: $(awk -v k="$t_order" -v c="$c" 'BEGIN { printf "%.0f ms", (c - k) * 1000 }')"
fi
py_check_loss_and_model $epochs
exit 0
