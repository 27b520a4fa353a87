#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/ddp_step.sh: a PyTorch training step through slurm_elastic.torch against torch's
# own DDP (gloo backend, CPU), same model (examples/pytorch/resnet_ddp.py's ResNet), global
# batch and world size, side by side in one run: BENCH_DDP_ROUNDS rounds (default 3) of
# each mode, alternating, BENCH_DDP_STEPS timed steps a round (default 100), on
# BENCH_DDP_NP ranks (default 2: one per core here), for each width in BENCH_DDP_WIDTHS
# (default "16 64"). Modes (BENCH_DDP_MODES): gloo, elastic, and elastic-sync (the
# elastic step with each bucket reduced on the thread of backward: no overlap; DDP's first
# bucket holds 1 MB of gradients, so only models above it have a reduction to overlap).
# Prints each mode's median step time, the ratio, and the time the elastic step spends
# serializing the training state it keeps and the dtype/device check of its parameters.
# Needs the binding and torch.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_builddir=${top_builddir:-$(cd "${PWD}/.." && pwd)}
[ -e "$top_builddir/python/slurm_elastic/_core.so" ] || { echo "ddp_step: the Python binding is not built; skipped"; exit 0; }
python3 -c 'import torch' 2>/dev/null || { echo "ddp_step: no torch; skipped"; exit 0; }
export PYTHONPATH=$top_builddir/python${PYTHONPATH:+:$PYTHONPATH} OMP_NUM_THREADS=1
eval "$(bash "$here/../testbed/cluster-inner.sh" env --ompi)"
np=${BENCH_DDP_NP:-2} steps=${BENCH_DDP_STEPS:-100} rounds=${BENCH_DDP_ROUNDS:-3}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for w in ${BENCH_DDP_WIDTHS:-16 64}; do
	for r in $(seq "$rounds"); do
		for mode in ${BENCH_DDP_MODES:-gloo elastic elastic-sync}; do
			# torch's env:// rendezvous for gloo (Debian's torch has no libuv store)
			MASTER_PORT=$((29400 + RANDOM % 500)) mpirun --with-ft ulfm --oversubscribe \
				--bind-to none -x PYTHONPATH -x OMP_NUM_THREADS -x MASTER_PORT -np "$np" \
				bash -c 'RANK=$OMPI_COMM_WORLD_RANK WORLD_SIZE=$OMPI_COMM_WORLD_SIZE \
				MASTER_ADDR=127.0.0.1 USE_LIBUV=0 \
				exec timeout 300 python3 '"$here"'/ddp_step.py '"$mode $steps $w"' 64' 2>/dev/null |
				sed "s/^/width $w round $r /" | tee -a "$out"
		done
	done
done
python3 - "$out" <<'PY'
import collections, statistics, sys
v = collections.defaultdict(list)
for l in open(sys.argv[1]):
    w = l.split()
    v[(w[1], w[4], w[5])].append(float(w[6]))
for width in sorted({k[0] for k in v}, key=int):
    g, e = statistics.median(v[(width, "gloo", "step_ms")]), statistics.median(v[(width, "elastic", "step_ms")])
    k = statistics.median(v[(width, "elastic", "keep_ms")])
    c = statistics.median(v[(width, "elastic", "layout_ms")])
    print("width %s: torch DDP (gloo) %.3f ms a step, slurm_elastic %.3f ms (%.2fx), of which keeping the state %.3f ms, the dtype/device check %.1f us"
          % (width, g, e, e / g, k, 1e3 * c))
    if v[(width, "elastic-sync", "step_ms")]:
        s = statistics.median(v[(width, "elastic-sync", "step_ms")])
        print("width %s: slurm_elastic without the overlap of reduction and backward %.3f ms (%.2fx)"
              % (width, s, s / g))
PY
