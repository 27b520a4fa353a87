#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/device_check.sh: with cgroup device confinement on (the
# testbed's default), a rank elastic-run starts opens its own GPU's device
# file and no other. The rank wrapper refuses to start a rank outside any
# job step (it reaches every GPU) or in a step that does not hold its GPU,
# and starts it in the step that does. The map names GPUs by the index of
# Slurm's allocation, which here is the fake device's minor number.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
t_need_cluster
[ -n "${ELASTIC_RUN_GPU_DEVICES:-}" ] ||
	t_skip "no device confinement on this cluster (ELASTIC_RUN_GPU_DEVICES unset: ELASTIC_TESTBED_CGROUP=off?)"
t_scratch
run=${top_builddir:?}/launcher/elastic-run
# the wrapper as mpirun would start it: rank 0 on node1, GPU $1 of the
# job it runs in (job 1 outside any job) in the map
rank() { env ELASTIC_RUN_MAP="node1=${SLURM_JOB_ID:-1}:$1" OMPI_COMM_WORLD_LOCAL_RANK=0 SLURMD_NODENAME=node1 "$run" --rank echo rank-ran; }

t_log "outside any job step: refused (it could open every GPU of node1)"
if rank 1 >"$T_DIR/out" 2>&1; then cat "$T_DIR/out"; t_fail "a rank outside any step started"; fi
t_grep "device check failed: GPU 1: this rank can also open .*/node1/nvidia0 \(GPU 0\), which its job step does not hold" "$T_DIR/out" "the refusal does not name another GPU's file"
! grep -q rank-ran "$T_DIR/out" || t_fail "the program ran although the check failed"
t_log "$(cat "$T_DIR/out")"

t_log "in a step holding one GPU of node1, mapped to the next one: refused (its own file is denied)"
if srun -w node1 --gres=gpu:1 -t 1 bash -c "$(declare -f rank); run=$run; rank \$(((CUDA_VISIBLE_DEVICES + 1) % 4))" >"$T_DIR/out" 2>&1; then
	cat "$T_DIR/out"
	t_fail "a rank outside the step that holds its GPU started"
fi
t_grep "device check failed: GPU [0-3]: its device file .*/node1/nvidia[0-3] is refused to this rank" "$T_DIR/out" "the refusal does not name the rank's own file"
t_log "$(grep 'device check failed' "$T_DIR/out")"

t_log "in the step holding its GPU: starts"
srun -w node1 --gres=gpu:1 -t 1 bash -c "$(declare -f rank); run=$run; rank \$CUDA_VISIBLE_DEVICES" >"$T_DIR/out" 2>&1 ||
	{ cat "$T_DIR/out"; t_fail "a rank in its own step was refused"; }
t_grep "^rank-ran$" "$T_DIR/out" "the program did not run"
t_log "PASS"
