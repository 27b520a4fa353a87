#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/torn_update.sh: the watchdog's last node snapshot never mixes two
# steps. With update after commit the program applies a step's update after
# elastic_step_commit returned; when the watchdog thread ends the process in that
# window (here: a peer exits 75 asking for a re-form right after step 12 is committed,
# while the writer, local rank 0, is halfway through applying step 12's update,
# paused 0.5 s), it must not copy the half-applied state as step 12's: it waits for
# the update, then writes the snapshot. A relaunch on 3 ranks with the same
# ELASTIC_JOB_ID resumes from it and ends with the model of a run without the stop,
# bit for bit. Node snapshots every 5 steps: where the runtime ends the writer before
# its watchdog writes (Open MPI 5 ends a launch at a non-zero exit, on a loaded host
# within the half second), the relaunch resumes from step 10's; where the watchdog
# writes (Open MPI 6), step 12's is the newest, and the relaunch must resume from it.
set -u
. "$(dirname "$0")/common.sh"

args="--quiet --update-after-commit --epochs 3 --samples 4096 --global-batch 128"
t_scratch
t_mpi_scratch
unset ELASTIC_WATCHDOG ELASTIC_RUN_IN_PLACE
export ELASTIC_SNAPSHOT_EVERY=5

# the test options refuse bad values, naming them (exit 2)
for bad in "--exit-at 3" "--exit-at x:1" "--exit-at 1:5:x" "--hang 0:3x" "--slow-update 12" \
	"--slow-update 1:-5" "--slow-update 1:5s"; do
	msg=$(timeout -s KILL 30 $MPIRUN -np 1 "$TRAIN" $bad 2>&1)
	rc=$?
	[ "$rc" = 2 ] || t_fail "elastic_train $bad: exit $rc, not 2 (refused)"
	echo "$msg" | grep -q "elastic_train: ${bad%% *} '${bad#* }': expected" ||
		t_fail "elastic_train $bad: no error naming the option: $(echo "$msg" | tail -2)"
done

t_reference 60 4 $args

export ELASTIC_JOB_ID="torn$$"
out=$T_DIR/run
timeout -s KILL 60 $MPIRUN -np 4 "$TRAIN" $args --step-sleep 2000 --exit-at 1:12 --slow-update 12:500000 \
	>"$out.1" 2>&1
rc=$?
grep -q '^EXIT rank 1 after step 12' "$out.1" || { tail -5 "$out.1"; t_fail "rank 1 did not exit after step 12 (mpirun $rc)"; }
[ "$rc" != 0 ] || { tail -5 "$out.1"; t_fail "the first launch ended with 0 although a rank asked for a re-form"; }
ELASTIC_DEBUG=2 timeout -s KILL 60 $MPIRUN -np 3 "$TRAIN" $args --compare "$T_DIR/ref.model" >"$out.2" 2>&1
rc2=$?
resumed=$(sed -n 's/.*resumed at committed step \([0-9]*\).*/\1/p' "$out.2" | head -1)
grep -q '^model DIFFERS' "$out.2" &&
	t_fail "the final model differs from the reference after resuming at step $resumed: $(grep -m1 '^model' "$out.2")"
[ "$rc2" = 0 ] || { tail -5 "$out.2"; t_fail "the relaunch ended with $rc2"; }
# step 12 whole on the node (the first launch's last commit), or, where the
# runtime ended the writer first, step 10's: never a mix
[ -n "$resumed" ] || { tail -5 "$out.2"; t_fail "the relaunch did not resume from a node snapshot"; }
grep -Eq '^done: 96 steps, 3 epochs, size 3 .* 0 bad, 0 violations' "$out.2" ||
	{ tail -5 "$out.2"; t_fail "the relaunch did not finish with every sample once per epoch"; }
grep -q '^model matches reference' "$out.2" ||
	t_fail "the final model differs from the reference after resuming at step $resumed: $(grep -m1 'model' "$out.2")"
t_log "a peer's re-form while the writer applied step 12's update (mpirun $rc): relaunch on 3 resumed at $resumed, model matches"
if t_runtime_in_place; then
	# Open MPI 6: the others hear the peer's exit and end by their watchdog,
	# which must have waited for the update and written step 12
	[ "$resumed" = 13 ] || t_fail "resumed at $resumed: step 12's snapshot (resume at 13) expected"
fi
rm -f /dev/shm/elastic-"$ELASTIC_JOB_ID"-*
exit 0
