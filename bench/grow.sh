#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/grow.sh: what a grow onto a new node costs a running job, in place (the ranks
# that run start the new ones and go on: ELASTIC_RUN_GROW_IN_PLACE=1, Open MPI 5.0.x)
# against a re-form (every rank stops and restarts: ELASTIC_RUN_GROW_IN_PLACE=0), side by
# side in one run. Each round: a job on node1's 2 GPUs (no elasticd) trains; after a
# few steps a grant of 2 GPUs on node2 starts (named as elasticd names its grants) and
# elastic-run gets SIGUSR1, as on the controller's word; the job goes on at 4 ranks.
# Prints SIGUSR1 -> first step committed at 4 ranks, median and max of
# BENCH_GROW_ROUNDS rounds a mode (default 5; the PyTorch example's: BENCH_GROW_PY_ROUNDS,
# default 3), modes alternating, for the C trainer (examples/elastic_train) and the
# PyTorch example (examples/pytorch/train_digits.py; skipped without torch). Needs the
# testbed cluster (run it inside `testbed/cluster exec`); says "skipped" otherwise. On
# a runtime that cannot grow in place both modes re-form (elastic-run --runtime).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)
top_builddir=${top_builddir:-$(cd "${PWD}/.." && pwd)}
rounds=${BENCH_GROW_ROUNDS:-5} pyrounds=${BENCH_GROW_PY_ROUNDS:-3}
skip() { echo "grow: $*; skipped"; exit 0; }
[ -n "${SLURM_CONF:-}" ] && scontrol ping >/dev/null 2>&1 || skip "no testbed cluster (run inside testbed/cluster exec)"
train=$top_builddir/examples/elastic_train
[ -x "$train" ] || skip "examples/elastic_train is not built"
eval "$(bash "$top_srcdir/testbed/cluster-inner.sh" env --ompi)"

. "$here/cluster_jobs.sh"
bench_jobs_setup bench_grow

# One round: prints "MODE MS" (SIGUSR1 -> first commit at 4) or "MODE fail WHY".
round() { # c|py mode(1|0)
	local kind=$1 mode=$2 out=$D/job.$1.$2.$RANDOM lead grant er t_order first
	if [ "$kind" = c ]; then
		lead=$(submit -N1 -n2 -w node1 --gres=gpu:2 -o "$out" \
			--export="ALL,ELASTIC_RUN_GROW_IN_PLACE=$mode" --wrap \
			"exec $top_builddir/launcher/elastic-run -v -- $train --epochs 40 --samples 4096 --global-batch 128 --step-sleep 20000") || return 1
	else
		lead=$(submit -N1 -n1 -w node1 --gres=gpu:2 -o "$out" \
			--export="ALL,ELASTIC_RUN_GROW_IN_PLACE=$mode,ELASTIC_BIN=$top_builddir/launcher,TRAIN=$top_srcdir/examples/pytorch/train_digits.py,EPOCHS=1000,STEP_SLEEP=0.05" \
			"$D/train.sbatch") || return 1
	fi
	wait_for "$out" '^step 12 ' 120 || { echo "$mode fail: no step 12"; scancel "$lead"; return 0; }
	grant=$(submit -N1 -w node2 --gres=gpu:2 -J "elastic:$lead" -o /dev/null --wrap "sleep 600") || return 1
	until [ "$(state "$grant")" = RUNNING ]; do sleep 0.1; done
	er=$(pgrep -f "elastic-run -v -- .*(elastic_train|train_digits.py)" | while read -r p; do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_JOB_ID=$lead" && echo "$p"
	done | head -n1)
	t_order=$(date +%s.%N)
	kill -USR1 "$er"
	if wait_for "$out" '^step [0-9]+ .* size 4 ' 120; then
		first=$(awk '/^step [0-9]+ .* size 4 / { for (i = 1; i <= NF; i++) if ($i ~ /^t=/) print substr($i, 3); exit }' "$out")
		# (a relaunch says so before its first step; elastic-run's line
		# on a growth in place may come after the step)
		how=in-place
		grep -aq 're-form [0-9]*:' "$out" && how=relaunch
		awk -v a="$t_order" -v b="$first" -v m="$mode" -v h="$how" 'BEGIN { printf "%s %.0f %s\n", m, (b - a) * 1000, h }'
	else
		echo "$mode fail: no step at 4 ranks"
	fi
	scancel "$lead" "$grant" 2>/dev/null
	while [ -n "$(state "$lead" | grep -v -e COMPLETED -e CANCELLED -e FAILED)" ]; do sleep 0.2; done
}

# median and max of the numbers on stdin
stats() { sort -n | awk '{ v[NR] = $1 } END { if (!NR) { print "none"; exit } m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "median %.0f ms, max %.0f ms (%d rounds)", m, v[NR], NR }'; }

report() { # kind rounds label
	local kind=$1 n=$2 res=$D/res.$1
	: >"$res"
	for i in $(seq 1 "$n"); do
		for mode in 1 0; do round "$kind" "$mode" >>"$res"; done
	done
	grep -a fail "$res" | sed "s/^/grow: $3: /"
	echo "grow: $3: in place: SIGUSR1 -> first commit at 4 ranks: $(awk '$1 == 1 && $3 == "in-place" { print $2 }' "$res" | stats)$(awk '$1 == 1 && $3 != "in-place" { n++ } END { if (n) printf " (%d rounds re-formed instead)", n }' "$res")"
	echo "grow: $3: re-form:  SIGUSR1 -> first commit at 4 ranks: $(awk '$1 == 0 && $3 == "relaunch" { print $2 }' "$res" | stats)"
}

echo "grow: $("$top_builddir/launcher/elastic-run" --runtime | tail -1)"
report c "$rounds" "C trainer (elastic_train)"
if python3 -c 'import torch, sklearn' 2>/dev/null && [ -e "$top_builddir/python/slurm_elastic/_core.so" ]; then
	report py "$pyrounds" "PyTorch (train_digits.py)"
else
	echo "grow: PyTorch: no torch/sklearn or no Python binding; skipped"
fi
