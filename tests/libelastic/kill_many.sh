#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/kill_many.sh: several failures in one job: SIGKILL 2 or 3 distinct ranks
# of 4 at random steps (often the same step, so that one failure lands inside the
# recovery of another); the job must finish on the survivors with the model of a run
# without failure and every sample once per epoch.   ELASTIC_MANY_RUNS (default 3)
set -u
. "$(dirname "$0")/common.sh"

runs=${ELASTIC_MANY_RUNS:-3}
RANDOM=${ELASTIC_MANY_SEED:-$$}
args="--quiet --step-sleep 3000 --epochs 3 --samples 4096 --global-batch 128"
wheres=(begin reduce commit timer)
t_scratch
t_mpi_scratch

t_reference 60 4 $args
pass=0
for i in $(seq 1 "$runs"); do
	nk=$((2 + RANDOM % 2))
	ranks=$(shuf -i 0-3 -n "$nk" --random-source=<(yes "$RANDOM"))
	base=$((RANDOM % 90))
	kills=()
	desc=""
	for r in $ranks; do
		step=$((base + RANDOM % 3))
		where=${wheres[$((RANDOM % 4))]}
		kills+=(--kill "$r:$step:$where")
		desc="$desc $r@$step/$where"
	done
	out=$T_DIR/run$i.out
	timeout -s KILL 60 $MPIRUN -np 4 "$TRAIN" $args --compare "$T_DIR/ref.model" \
		--kill-delay $((RANDOM % 3000)) "${kills[@]}" >"$out" 2>&1
	rc=$?
	why=""
	survivors=$((4 - nk))
	if [ $rc = 137 ]; then
		why="timed out (hang)"
	elif ! grep -Eq "^done: 96 steps, 3 epochs, size $survivors .* 0 bad, 0 violations" "$out"; then
		why="did not finish on $survivors ranks with every sample once per epoch (exit $rc)"
	elif ! grep -q '^model matches reference' "$out"; then
		why="final model differs from the reference"
	fi
	if [ -z "$why" ]; then
		pass=$((pass + 1))
		t_log "run $i: killed$desc: ok, $(grep -o '[0-9]* recoveries' "$out")"
	else
		t_log "run $i: killed$desc: FAILED: $why"
		tail -15 "$out" | sed 's/^/    | /'
	fi
done
t_log "several failures: $pass/$runs runs passed"
[ "$pass" = "$runs" ] || t_fail "$((runs - pass)) of $runs runs failed"
exit 0
