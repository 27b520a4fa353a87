#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/watchdog_reform.sh: escalation from path A to path B. With a recovery
# watchdog too short for any recovery (ELASTIC_WATCHDOG=1e-6), killing a rank makes every
# survivor exit with ELASTIC_EXIT_REFORM (75) instead of healing in place, as it would
# when ULFM recovery hangs; the launcher (here a loop, as elastic-run does) relaunches
# on the remaining size with the same ELASTIC_JOB_ID and the job resumes from the node
# snapshot: same model as a run without failure, every sample once per epoch.
# Where the runtime heals in place (Open MPI 6), a peer's exit 75 must end the others the
# same way, not abort them: rank 0 alone gets a step timeout it cannot meet, the others
# must exit 75 too ("exiting 75 too"), mpirun with 75, and the relaunch resume.
#   ELASTIC_REFORM_RUNS (default 3)
set -u
. "$(dirname "$0")/common.sh"

runs=${ELASTIC_REFORM_RUNS:-3}
RANDOM=${ELASTIC_REFORM_SEED:-$$}
args="--quiet --step-sleep 3000 --epochs 3 --samples 4096 --global-batch 128"
t_scratch
t_mpi_scratch
unset ELASTIC_JOB_ID ELASTIC_WATCHDOG

t_reference 60 4 $args

pass=0
: >"$T_DIR/reform.ms"
for i in $(seq 1 "$runs"); do
	export ELASTIC_JOB_ID="wd$$-$i"
	rank=$((RANDOM % 4))
	step=$((1 + RANDOM % 94))
	out=$T_DIR/run$i
	why=""
	ELASTIC_WATCHDOG=0.000001 timeout -s KILL 60 $MPIRUN -np 4 "$TRAIN" $args \
		--kill "$rank:$step:reduce" >"$out.1" 2>&1
	rc=$?
	if [ $rc != 75 ]; then
		why="the first launch ended with $rc, not 75 (ELASTIC_EXIT_REFORM)"
	elif ! grep -q 'exiting 75 so that the job is re-formed' "$out.1"; then
		why="no watchdog message"
	else
		ELASTIC_DEBUG=2 timeout -s KILL 60 $MPIRUN -np 3 "$TRAIN" $args --compare "$T_DIR/ref.model" \
			>"$out.2" 2>&1
		rc=$?
		resumed=$(sed -n 's/.*resumed at committed step \([0-9]*\).*/\1/p' "$out.2" | head -1)
		if [ $rc != 0 ]; then
			why="the relaunch ended with $rc"
		elif [ "$resumed" != "$step" ]; then
			why="resumed at '${resumed}', expected $step (the step being done at the kill)"
		elif ! grep -Eq '^done: 96 steps, 3 epochs, size 3 .* 0 bad, 0 violations' "$out.2"; then
			why="did not finish with every sample once per epoch"
		elif ! grep -q '^model matches reference' "$out.2"; then
			why="final model differs from the reference"
		fi
	fi
	if [ -z "$why" ]; then
		pass=$((pass + 1))
		t_log "run $i: kill rank $rank at step $step: survivors exited 75, relaunch on 3 resumed at $resumed: ok"
	else
		t_log "run $i: kill rank $rank at step $step: FAILED: $why"
		tail -8 "$out.1" | sed 's/^/    first | /'
		tail -8 "$out.2" 2>/dev/null | sed 's/^/    second| /'
	fi
	rm -f /dev/shm/elastic-"$ELASTIC_JOB_ID"-*
done
t_log "watchdog escalation: $pass/$runs runs passed"

# A peer's re-form exit (Open MPI 6: PRRTE 5 tells the others with
# PMIX_ERR_EXIT_NONZERO_TERM, fatal to them unless libelastic takes it).
if t_runtime_in_place; then
	export ELASTIC_JOB_ID="wd$$-peer"
	out=$T_DIR/peer
	timeout -s KILL 60 $MPIRUN -np 1 env ELASTIC_STEP_TIMEOUT=0.000001 "$TRAIN" $args : \
		-np 3 "$TRAIN" $args >"$out.1" 2>&1
	rc=$?
	too=$(grep -c 'rank [0-9] ended asking for a re-form: exiting 75 too' "$out.1")
	why=""
	if [ $rc != 75 ]; then
		why="the launch ended with $rc, not 75"
	elif [ "$too" != 3 ]; then
		why="$too of 3 peers said they exit 75 too"
	else
		timeout -s KILL 60 $MPIRUN -np 4 "$TRAIN" $args --compare "$T_DIR/ref.model" >"$out.2" 2>&1 ||
			why="the relaunch ended with $?"
		[ -n "$why" ] || grep -q '^model matches reference' "$out.2" ||
			why="final model differs from the reference"
	fi
	rm -f /dev/shm/elastic-"$ELASTIC_JOB_ID"-*
	if [ -n "$why" ]; then
		tail -12 "$out.1" | sed 's/^/    first | /'
		tail -4 "$out.2" 2>/dev/null | sed 's/^/    second| /'
		t_fail "a peer's step timeout: $why"
	fi
	t_log "a peer's step timeout: rank 0 exited 75, the 3 others (told of a peer's exit) exited 75 too, the relaunch matched"
fi
[ "$pass" = "$runs" ] || t_fail "$((runs - pass)) of $runs runs failed"
exit 0
