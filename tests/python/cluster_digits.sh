#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_digits.sh: the PyTorch example (examples/pytorch) as a user runs
# it: sbatch --elastic-gpus=3 train.sbatch (SPANK + job_submit, elastic-run, 3 ranks of
# train_digits.py). One rank is SIGKILLed after step 8: the others heal in place (ULFM,
# no re-form), the job completes at 2 ranks, the loss falls, each committed step was
# applied once and each sample used once per epoch, and the final model equals a static
# run's within float32 summation-order noise (rtol 1e-3, atol 1e-4).
set -u
. "$(dirname "$0")/common.sh"
t_need_cluster
sbatch --help 2>&1 | grep -q -- --elastic-gpus ||
	t_skip "the SPANK plugin is not loaded (cluster started without this build's plugins)"
python3 -c 'import torch, sklearn' 2>/dev/null || t_skip "no torch/sklearn (python3-torch, python3-sklearn)"
t_scratch
t_mpi_scratch
ex=$top_srcdir/examples/pytorch
epochs=6

# the reference: the same training, no failure, a static 2-rank run
timeout -s KILL 300 $MPIRUN -np 2 python3 "$ex/train_digits.py" --epochs $epochs --quiet \
	--out "$T_DIR/ref.npy" >"$T_DIR/ref.out" 2>&1 || { cat "$T_DIR/ref.out"; t_fail "reference run"; }
t_grep '^done: 72 steps' "$T_DIR/ref.out" "reference run"

id=$(t_sbatch alice -A acct_a --elastic-gpus=3 -N1 -w node1 -o "$T_DIR/job.out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,ELASTIC_BIN=$top_builddir/launcher,TRAIN=$ex/train_digits.py,EPOCHS=$epochs,STEP_SLEEP=0.1,MODEL_OUT=$T_DIR/elastic.npy" \
	"$ex/train.sbatch")
t_log "job $id submitted (sbatch --elastic-gpus=3 examples/pytorch/train.sbatch)"
end=$((SECONDS + 180))
until grep -aq '^step 8 ' "$T_DIR/job.out" 2>/dev/null; do
	[ $SECONDS -lt $end ] || { cat "$T_DIR/job.out"; t_fail "job $id did not reach step 8"; }
	case "$(t_job_state "$id")" in PENDING | RUNNING | CONFIGURING | "") ;; *)
		cat "$T_DIR/job.out"; t_fail "job $id ended early" ;; esac
	sleep 0.1
done
t_grep '^step 8 epoch 0 size 3 ' "$T_DIR/job.out" "training at 3 ranks"
# the victim: rank 2's python, found by its environment
victim=""
for p in /proc/[0-9]*; do
	read -r comm 2>/dev/null <"$p/comm" || continue
	case "$comm" in python3*) ;; *) continue ;; esac
	env=$'\n'$({ tr '\0' '\n' <"$p/environ"; } 2>/dev/null)$'\n' || continue
	[[ $env == *$'\n'"SLURM_JOB_ID=$id"$'\n'* && $env == *$'\n'"OMPI_COMM_WORLD_RANK=2"$'\n'* ]] &&
		victim=${p#/proc/}
done
[ -n "$victim" ] || t_fail "no rank 2 of job $id found"
t_kill=$(date +%s.%N)
kill -KILL "$victim"
t_log "rank 2 (pid $victim) SIGKILLed"
t_wait_job "$id" 300
grep -av "^step " "$T_DIR/job.out" | tail -20
t_grep "^done: 72 steps, $epochs epochs, size 2, each committed step applied once: yes, samples once per epoch: yes" \
	"$T_DIR/job.out" "completed at 2 ranks, each step once, each sample once an epoch"
grep -aq 're-form [0-9]*:' "$T_DIR/job.out" && t_fail "the job re-formed: expected in-place healing"
c=$(sed -n 's/^step \([0-9]*\) .*size 2 .*t=\([0-9.]*\) (first commit after a change)/\1 \2/p' "$T_DIR/job.out" | head -1)
[ -n "$c" ] || t_fail "no first commit after the kill"
t_log "kill -> next commit (step ${c% *}, 3 -> 2 ranks): $(awk -v k="$t_kill" -v c="${c#* }" 'BEGIN { printf "%.0f ms", (c - k) * 1000 }')"
first=$(sed -n 's/^step 0 .* loss \([0-9.]*\) .*/\1/p' "$T_DIR/job.out")
last=$(sed -n "s/^epoch $((epochs - 1)) done .* loss \([0-9.]*\), test accuracy \([0-9.]*\).*/\1 \2/p" "$T_DIR/job.out")
[ -n "$first" ] && [ -n "$last" ] || t_fail "no loss lines"
awk -v a="$first" -v b="${last% *}" 'BEGIN { exit !(b < a / 3) }' || t_fail "loss did not fall: $first -> ${last% *}"
t_log "loss $first -> ${last% *}, test accuracy ${last#* }"
python3 - "$T_DIR" <<'PY' || t_fail "the final model differs from the static run's"
import sys, numpy as np
d = sys.argv[1]
a, b = np.load(d + "/elastic.npy"), np.load(d + "/ref.npy")
print("final model vs static 2-rank run: max abs difference %.3g" % float(np.max(np.abs(a - b))))
sys.exit(0 if np.allclose(a, b, rtol=1e-3, atol=1e-4) else 1)
PY
exit 0
