#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/kill_one_rank.sh: path A failure injection: under mpirun --with-ft ulfm,
# SIGKILL one rank of elastic_train at a random step and place; the job must finish at
# the smaller size with the model of a run without failure (exact fixed-point reduction:
# tolerance 1e-12), every sample used once per epoch, within the time limit.
#   ELASTIC_KILL_RUNS (default 5; the issue's figure is 50: kill_one_rank_50.sh)
#   ELASTIC_KILL_NP (4), ELASTIC_KILL_TIMEOUT (60 s a run), ELASTIC_KILL_SEED (random)
set -u
. "$(dirname "$0")/common.sh"

runs=${ELASTIC_KILL_RUNS:-5}
np=${ELASTIC_KILL_NP:-4}
limit=${ELASTIC_KILL_TIMEOUT:-60}
RANDOM=${ELASTIC_KILL_SEED:-$$}
args="--quiet --step-sleep 3000 --epochs 3 --samples 4096 --global-batch 128"
t_scratch
t_mpi_scratch

t_log "reference run without failure ($np ranks)"
t_reference "$limit" "$np" $args
t_grep '^done: 96 steps, 3 epochs, .* 0 bad, 0 violations' "$T_DIR/ref.out" "reference run"

wheres=(begin reduce commit timer)
pass=0
guard=0
: >"$T_DIR/recovery.ms"
for i in $(seq 1 "$runs"); do
	rank=$((RANDOM % np))
	step=$((RANDOM % 96))
	where=${wheres[$((RANDOM % 4))]}
	delay=$((RANDOM % 4000))
	# both state modes: copy at commit, or update after commit
	mode=""
	[ $((RANDOM % 2)) = 1 ] && mode=--update-after-commit
	out=$T_DIR/run$i.out
	start=$SECONDS
	timeout -s KILL "$limit" $MPIRUN -np "$np" "$TRAIN" $args --compare "$T_DIR/ref.model" \
		--kill "$rank:$step:$where" --kill-delay "$delay" $mode >"$out" 2>&1
	rc=$?
	why=""
	if [ $rc = 137 ]; then
		why="timed out after ${limit}s (hang)"
	elif ! grep -q '^KILL rank' "$out"; then
		why="the rank was not killed"
	elif ! grep -Eq '^done: 96 steps, 3 epochs, size [0-9]+ .* 0 bad, 0 violations' "$out"; then
		why="did not finish with every sample once per epoch (exit $rc)"
	elif ! grep -q '^model matches reference' "$out"; then
		why="final model differs from the reference"
	fi
	ms=$(t_recovery_ms "$out")
	grep -q 'MPI_Finalize did not return' "$out" && guard=$((guard + 1))
	if [ -z "$why" ]; then
		pass=$((pass + 1))
		[ -n "$ms" ] && echo "$ms" >>"$T_DIR/recovery.ms"
		t_log "run $i/$runs: kill rank $rank at step $step ($where$([ "$where" = timer ] && echo " +${delay}us")${mode:+, $mode}): ok, $(grep -o 'size [0-9]* (started [0-9]*)' "$out"), kill to next commit ${ms:-?} ms, $((SECONDS - start)) s"
	else
		t_log "run $i/$runs: kill rank $rank at step $step ($where$([ "$where" = timer ] && echo " +${delay}us")${mode:+, $mode}): FAILED: $why"
		sed 's/^/    | /' "$out" | tail -25
		cp "$out" "/tmp/elastic-kill-failed-$i.out" 2>/dev/null || true
	fi
done
read -r med max n < <(t_stats <"$T_DIR/recovery.ms")
t_log "path A: $pass/$runs runs passed; recovery (kill to first commit after) median $med ms, max $max ms over $n runs; MPI_Finalize guard fired in $guard"
[ "$pass" = "$runs" ] || t_fail "$((runs - pass)) of $runs runs failed"
exit 0
