#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/term_snapshot.sh: SIGTERM keeps the last committed step. With node
# snapshots only every 50 steps (ELASTIC_SNAPSHOT_EVERY=50, the default where a lost node
# heals in place), SIGTERM to every rank (what mpirun sends before SIGKILL when it ends a
# job, and Slurm when it ends a step) must still leave the last committed step in the
# node snapshot, even when the ranks that do not write it get the signal first (on Open
# MPI 5 their death makes the runtime kill the writer): each rank dies of SIGTERM, and a
# relaunch on 3 ranks with the same ELASTIC_JOB_ID resumes right after the last step
# rank 0 printed, not at the last periodic snapshot, and ends with the model of a run
# without the stop. Twice: once with the ranks stepping (the main thread takes it at a
# step begin), once with the ranks held inside a step (a 4 s step: the watchdog thread
# takes it).
set -u
. "$(dirname "$0")/common.sh"

args="--epochs 3 --samples 4096 --global-batch 128"
t_scratch
t_mpi_scratch
unset ELASTIC_JOB_ID ELASTIC_WATCHDOG ELASTIC_RUN_IN_PLACE
export ELASTIC_SNAPSHOT_EVERY=50

t_reference 60 4 --quiet $args

# Ranks of the launch whose output goes to $1.1 (not mpirun: pid $2).
ranks_of() { t_pgrep -f -- "--out $1.model" | grep -vx "$2" | xargs; }
local_rank() { tr '\0' '\n' <"/proc/$1/environ" | sed -n 's/^OMPI_COMM_WORLD_LOCAL_RANK=//p'; }
last_step() { sed -n 's/^step \([0-9]*\) .*/\1/p' "$1" | tail -1; }

# case NAME: start 4 ranks, SIGTERM them, relaunch on 3. stepping: all ranks get it
# while stepping; held: the rank of local rank 3 is stopped first, so that the others
# are held inside a step (in the gradient allreduce) when SIGTERM comes.
run_case() {
	local name=$1 out=$T_DIR/$1 pids stopped="" p
	export ELASTIC_JOB_ID="term$$-$name"
	$MPIRUN -np 4 "$TRAIN" $args --step-sleep 20000 --out "$out.model" >"$out.1" 2>&1 &
	local mpid=$!
	# some steps in (not a time: a loaded machine starts 4 ranks slowly)
	local end=$((SECONDS + 90))
	until [ "$(last_step "$out.1")" -ge 10 ] 2>/dev/null; do
		[ $SECONDS -lt $end ] || t_fail "$name: no step 10 in 90 s ($(tail -3 "$out.1"))"
		kill -0 "$mpid" 2>/dev/null || t_fail "$name: mpirun ended early ($(tail -3 "$out.1"))"
		sleep 0.05
	done
	pids=$(ranks_of "$out" "$mpid")
	[ "$(echo $pids | wc -w)" = 4 ] || t_fail "$name: 4 ranks expected, found '$pids' ($(tail -3 "$out.1"))"
	if [ "$name" = held ]; then
		for p in $pids; do [ "$(local_rank "$p")" = 3 ] && stopped=$p; done
		[ -n "$stopped" ] || t_fail "$name: no rank of local rank 3 in $pids"
		kill -STOP "$stopped"
		sleep 0.5
		pids=$(echo $pids | tr ' ' '\n' | grep -vx "$stopped" | xargs)
	fi
	# The worst order: the ranks that do not write the node snapshot first, its
	# writer (local rank 0) 0.5 s later (mpirun and Slurm signal all at once).
	# Open MPI 5.0.7 kills a launch's other ranks as soon as one dies of the
	# signal: the others must wait for the writer's snapshot before they die.
	local writer="" rest group
	for p in $pids; do [ "$(local_rank "$p")" = 0 ] && writer=$p; done
	[ -n "$writer" ] || t_fail "$name: no rank of local rank 0 in $pids"
	rest=$(echo $pids | tr ' ' '\n' | grep -vx "$writer" | xargs)
	kill -TERM $rest 2>/dev/null
	sleep 0.5
	kill -TERM "$writer" 2>/dev/null
	for p in $pids; do
		timeout 10 tail --pid="$p" -f /dev/null || t_fail "$name: rank $p still running 10 s after SIGTERM"
	done
	[ -n "$stopped" ] && kill -KILL "$stopped" 2>/dev/null
	# prterun can run on after every process of its job ended
	# (openpmix/prrte#1839): 10 s after the ranks, it is ended, as elastic-run does
	t_wait_gone "$mpid" 10 || {
		kill -KILL "$mpid"
		t_log "$name: mpirun ran on 10 s after its ranks ended (openpmix/prrte#1839): ended"
	}
	wait "$mpid"
	local said last resumed
	# (the writer's death may make mpirun kill the others before they print:
	# the node snapshot is the writer's, the resume below tells)
	said=$(grep -c 'SIGTERM: committed step .* kept in the node snapshot' "$out.1")
	[ "$said" -ge 1 ] && ! grep -q 'SIGTERM: committed step .* could not' "$out.1" ||
		{ tail -5 "$out.1"; t_fail "$name: no rank kept its last commit on SIGTERM"; }
	last=$(last_step "$out.1")
	[ -n "$last" ] && [ "$last" -ge 10 ] || t_fail "$name: too few steps before SIGTERM ($last)"
	[ $(((last + 1) % 50)) != 0 ] ||
		t_log "$name: the stop came right after a periodic snapshot (step $last): this run cannot tell"
	ELASTIC_DEBUG=2 timeout -s KILL 60 $MPIRUN -np 3 "$TRAIN" $args --compare "$T_DIR/ref.model" >"$out.2" 2>&1 ||
		{ tail -5 "$out.2"; t_fail "$name: the relaunch failed"; }
	resumed=$(sed -n 's/.*resumed at committed step \([0-9]*\).*/\1/p' "$out.2" | head -1)
	# the last printed step was committed; one more may have been before the signal
	# (held: none, the step in flight lacked the stopped rank)
	local most=$((last + 2))
	[ "$name" = held ] && most=$((last + 1))
	[ -n "$resumed" ] && [ "$resumed" -ge $((last + 1)) ] && [ "$resumed" -le $most ] ||
		t_fail "$name: resumed at '$resumed' after SIGTERM at step $last (periodic snapshots every 50)"
	grep -q '^model matches reference' "$out.2" || t_fail "$name: the final model differs from the reference"
	t_log "$name: SIGTERM after step $last, relaunch on 3 resumed at $resumed, model matches"
	rm -f /dev/shm/elastic-"$ELASTIC_JOB_ID"-*
}

run_case stepping
run_case held
exit 0
