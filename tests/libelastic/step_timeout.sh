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
t_reference 60 4 $args

export ELASTIC_JOB_ID="hang$$"
RANDOM=${ELASTIC_HANG_SEED:-$$}
rank=$((RANDOM % 4)) step=$((1 + RANDOM % 90))
# Each rank writes its exit status to a file: prterun can run on after every
# process of its job ended (openpmix/prrte#1839, about 1 launch in 25 under
# load here), and then its own status says nothing. 10 s after the last rank
# ended, it is ended, as elastic-run ends such a launch.
export RC_DIR=$T_DIR
start=$(date +%s.%N)
ELASTIC_STEP_TIMEOUT=2 timeout -s KILL 60 $MPIRUN -x RC_DIR -np 4 \
	sh -c '"$@"; rc=$?; echo $rc >"$RC_DIR/rc.$OMPI_COMM_WORLD_RANK"; exit $rc' sh \
	"$TRAIN" $args --hang "$rank:$step" >"$T_DIR/first.out" 2>&1 &
launch=$! ended="" lingered=""
all_ended() {
	[ -n "$ended" ] || [ "$(cat "$T_DIR"/rc.* 2>/dev/null | wc -l)" != 4 ] || {
		ended=$(date +%s.%N)
		took=$(awk -v a="$start" -v b="$ended" 'BEGIN { printf "%.1f", b - a }')
	}
}
while kill -0 $launch 2>/dev/null; do
	all_ended
	if [ -n "$ended" ] && awk -v a="$ended" -v b="$(date +%s.%N)" 'BEGIN { exit !(b - a > 10) }'; then
		lingered=1
		pkill -KILL -P $launch
	fi
	sleep 0.2
done
wait $launch
rc=$?
all_ended
[ -n "$ended" ] || { tail "$T_DIR/first.out"; t_fail "the job hung (60 s) despite ELASTIC_STEP_TIMEOUT=2: $(cat "$T_DIR"/rc.* 2>/dev/null | wc -l) of 4 ranks ended"; }
rcs=$(cat "$T_DIR"/rc.* | sort -u | tr '\n' ' ')
[ "$rcs" = "75 " ] || { tail "$T_DIR/first.out"; t_fail "the ranks of the first launch ended with $rcs, expected 75 each"; }
if [ -n "$lingered" ]; then
	t_log "mpirun ran on 10 s after its ranks ended (openpmix/prrte#1839): ended"
else
	[ $rc = 75 ] || { tail "$T_DIR/first.out"; t_fail "the first launch ended with $rc, expected 75"; }
fi
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
