#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/step_timeout.sh: a rank stops making progress without failing (it sleeps
# inside a step), so no rank ever sees an MPI error: with ELASTIC_STEP_TIMEOUT every rank
# leaves with ELASTIC_EXIT_REFORM (75) instead of hanging, and the relaunch (as elastic-run
# does it) resumes from the node snapshot and ends with the model of a run without trouble.
set -u
. "$(dirname "$0")/common.sh"
t_scratch
t_mpi_scratch
unset ELASTIC_WATCHDOG ELASTIC_JOB_ID
args="--quiet --step-sleep 2000 --epochs 3 --samples 4096 --global-batch 128"
timeout -s KILL 60 $MPIRUN -np 4 "$TRAIN" $args --out "$T_DIR/ref.model" >"$T_DIR/ref.out" 2>&1 ||
	{ cat "$T_DIR/ref.out"; t_fail "the reference run failed"; }

export ELASTIC_JOB_ID="hang$$"
RANDOM=${ELASTIC_HANG_SEED:-$$}
rank=$((RANDOM % 4)) step=$((1 + RANDOM % 90))
start=$(date +%s.%N)
ELASTIC_STEP_TIMEOUT=2 timeout -s KILL 60 $MPIRUN -np 4 "$TRAIN" $args --hang "$rank:$step" \
	>"$T_DIR/first.out" 2>&1
rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[ $rc = 137 ] && { tail "$T_DIR/first.out"; t_fail "the job hung (60 s) despite ELASTIC_STEP_TIMEOUT=2"; }
[ $rc = 75 ] || { tail "$T_DIR/first.out"; t_fail "the first launch ended with $rc, expected 75"; }
t_grep 'a step did not finish in 2 s: exiting 75' "$T_DIR/first.out" "step watchdog message"
timeout -s KILL 60 $MPIRUN -np 4 "$TRAIN" $args --compare "$T_DIR/ref.model" >"$T_DIR/second.out" 2>&1 ||
	{ tail "$T_DIR/second.out"; t_fail "the relaunch failed"; }
t_grep '^done: 96 steps, 3 epochs, .* 0 bad, 0 violations' "$T_DIR/second.out" "finished"
t_grep '^model matches reference' "$T_DIR/second.out" "same model"
# It resumed from the node snapshot: its first commit is the step that hung
# (the last committed one is in the snapshot), not step 0 of a restart.
first=$(sed -n 's/^step \([0-9]*\) .*(first commit after a change).*/\1/p' "$T_DIR/second.out" | head -n1)
[ -n "$first" ] || { tail "$T_DIR/second.out"; t_fail "the relaunch did not resume from the node snapshot (no first commit after a resume)"; }
[ "$first" = "$step" ] ||
	t_fail "the relaunch resumed at step $first; the hang was in step $step, so the snapshot held step $((step - 1))"
rm -f /dev/shm/elastic-"$ELASTIC_JOB_ID"-*
t_log "rank $rank hung at step $step: every rank left with 75 after ${took} s; the relaunch resumed at step $first from the node snapshot and finished with the same model"
exit 0
