#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/gpu.sh: the CUDA path of slurm_elastic.torch. Everywhere: without a GPU
# (or NCCL), Context.gpu_allreduce raises slurm_elastic.Error with ENODEV and the reason,
# and a CUDA-less model is unchanged. With GPUs: the PyTorch example trains on CUDA (one
# GPU per rank, gradients summed with NCCL, pinned host shadows registered) on 2 ranks,
# its loss falls and its final model equals the CPU static run's within float32 noise;
# on 3+ GPUs a rank is SIGKILLed and healed in place. SKIP with the reason when
# torch sees no GPU.
set -u
. "$(dirname "$0")/common.sh"
py_need_torch
t_scratch
t_mpi_scratch
cat >"$T_DIR/nodev.py" <<'PY'
import errno, numpy as np, slurm_elastic as se
with se.Context() as ctx:
    w = np.zeros(4)
    ctx.register("w", w)
    for step in ctx.steps(1):
        try:
            ctx.gpu_allreduce(0, 0)
        except se.Error as e:
            assert e.errno == errno.ENODEV, e
            print("OK ENODEV:", e)
        else:
            print("gpu_allreduce did not fail")
PY
timeout -s KILL 120 $MPIRUN -np 1 python3 "$T_DIR/nodev.py" >"$T_DIR/nodev.out" 2>&1
gpus=$(python3 -c 'import torch; print(torch.cuda.device_count() if torch.cuda.is_available() else 0)' 2>/dev/null || echo 0)
if [ "$gpus" = 0 ]; then
	grep -q "^OK ENODEV: .*elastic_nccl_comm: \|^OK ENODEV: .*without" "$T_DIR/nodev.out" ||
		{ cat "$T_DIR/nodev.out"; t_fail "gpu_allreduce without a GPU: no ENODEV with its reason"; }
	t_log "no GPU: $(sed -n 's/^OK //p' "$T_DIR/nodev.out")"
	t_skip "torch sees no GPU (torch.cuda.is_available() is False): the CUDA training is not run"
fi
np=$((gpus >= 3 ? 3 : 2))
[ "$gpus" -ge 2 ] || t_skip "one GPU only: the CUDA path needs 2 ranks on 2 GPUs"
ex=$top_srcdir/examples/pytorch
py_digits_reference 4 48
# One GPU per rank: the rank's local index picks it.
cat >"$T_DIR/rank-gpu" <<'SH'
#!/bin/sh
export CUDA_VISIBLE_DEVICES=${OMPI_COMM_WORLD_LOCAL_RANK:-0}
exec "$@"
SH
chmod +x "$T_DIR/rank-gpu"
timeout -s KILL 300 $MPIRUN -np "$np" "$T_DIR/rank-gpu" python3 "$ex/train_digits.py" --epochs 4 \
	--device cuda --out "$T_DIR/elastic.npy" --step-sleep 0.05 >"$T_DIR/job.out" 2>&1 &
pid=$!
if [ "$np" -ge 3 ]; then
	until grep -aq "^step 20 " "$T_DIR/job.out" 2>/dev/null; do
		kill -0 $pid 2>/dev/null || break
		sleep 0.2
	done
	victim=$(t_pgrep -f "train_digits.py --epochs 4 --device cuda" | tail -1)
	[ -n "$victim" ] && kill -9 "$victim"
fi
wait $pid
grep -q "^done: 48 steps.*applied once: yes" "$T_DIR/job.out" || { cat "$T_DIR/job.out"; t_fail "CUDA training did not finish every step once"; }
py_check_loss_and_model 4
t_log "CUDA path on $np GPUs: $(grep '^done:' "$T_DIR/job.out")"
