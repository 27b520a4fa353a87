#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/foundation/gpu_two_nodes.sh: a 2-node `sbatch --gres=gpu:2` job sees
# two GPUs on each of its nodes (fake char devices, CUDA_VISIBLE_DEVICES).
# Which two depends on what other tests hold at the time.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_need_cluster
t_scratch
cat >"$T_DIR/job.sh" <<'JOB'
#!/bin/bash
srun -l bash -c 'echo "node=$SLURMD_NODENAME gpus=$CUDA_VISIBLE_DEVICES gres=$SLURM_STEP_GPUS"'
JOB
id=$(t_sbatch root -N2 --ntasks-per-node=1 --gres=gpu:2 -o "$T_DIR/out" "$T_DIR/job.sh")
t_log "job $id submitted"
t_wait_job "$id" 60
cat "$T_DIR/out"
nodes=$(grep -Eo 'node=node[0-9]+ gpus=[0-3],[0-3] ' "$T_DIR/out" | cut -d' ' -f1 | sort -u | wc -l)
[ "$nodes" = 2 ] || t_fail "expected 2 nodes each with 2 GPUs, got $nodes"
# The allocation in slurmctld: gres/gpu=4 in total over 2 nodes.
tres=$(sacct -n -X -j "$id" -o AllocTRES%80 | tr -d ' ')
case "$tres" in *gres/gpu=4*) ;; *) t_fail "sacct AllocTRES '$tres' lacks gres/gpu=4" ;; esac
t_log "PASS: 2 nodes x 2 GPUs, accounting says $tres"
