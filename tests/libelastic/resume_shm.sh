#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/resume_shm.sh: path B: SIGKILL a whole mpirun of elastic_train (mpirun
# and every rank, as when a node is lost) at a random time, relaunch it at another size
# with the same ELASTIC_JOB_ID: it must resume from the node-local snapshot of the last
# committed step (/dev/shm/elastic-<job>-*), finish with the model of a run without
# failure, every sample once per epoch, and remove its snapshots at the end.
#   ELASTIC_RESUME_RUNS (default 3), ELASTIC_RESUME_TIMEOUT (60 s a launch)
set -u
. "$(dirname "$0")/common.sh"
command -v setsid >/dev/null || t_skip "no setsid"

runs=${ELASTIC_RESUME_RUNS:-3}
limit=${ELASTIC_RESUME_TIMEOUT:-60}
RANDOM=${ELASTIC_RESUME_SEED:-$$}
args="--step-sleep 8000 --epochs 3 --samples 4096 --global-batch 128"
t_scratch
t_mpi_scratch
unset ELASTIC_JOB_ID

t_log "reference run without failure (4 ranks)"
t_reference "$limit" 4 $args --quiet

sizes=(2 3 4)
pass=0
counted=0
: >"$T_DIR/resume.ms"
for i in $(seq 1 "$runs"); do
	job="t$$-$i"
	export ELASTIC_JOB_ID=$job
	np2=${sizes[$((RANDOM % 3))]}
	delay_ms=$((300 + RANDOM % 800))
	mode=""
	[ $((RANDOM % 2)) = 1 ] && mode=--update-after-commit
	# (with it, half the time the node snapshot is written by a thread)
	unset ELASTIC_SNAPSHOT_THREAD
	[ -n "$mode" ] && [ $((RANDOM % 2)) = 1 ] && export ELASTIC_SNAPSHOT_THREAD=yes
	out1=$T_DIR/run$i.first
	out2=$T_DIR/run$i.second
	why=""
	# first launch, in its own session so that all of it can be killed
	rm -f "$T_DIR/progress"
	setsid $MPIRUN -np 4 "$TRAIN" $args $mode --progress "$T_DIR/progress" >"$out1" 2>&1 &
	sid=$!
	sleep "$(awk -v m="$delay_ms" 'BEGIN { printf "%.3f", m / 1000 }')"
	t_kill=$(date +%s.%N)
	pkill -KILL -s "$sid" 2>/dev/null
	wait "$sid" 2>/dev/null
	# (killed processes may stay zombies a while: only live ones count)
	alive() { ps -s "$sid" -o stat= 2>/dev/null | grep -vq '^Z'; }
	for _ in 1 2 3 4 5 6 7 8 9 10; do
		alive || break
		sleep 0.1
	done
	alive && why="processes of the killed job survive"
	# the last step committed before the kill, as rank 0 wrote it to a file
	# (printed lines still on their way through mpirun die with it)
	last=-1
	[ -s "$T_DIR/progress" ] && last=$((10#$(tr -d '\n' <"$T_DIR/progress")))
	if grep -q '^done:' "$out1"; then
		t_log "run $i: the first launch finished before the kill (${delay_ms} ms): not counted"
		rm -f /dev/shm/elastic-"$job"-*
		continue
	fi
	counted=$((counted + 1))
	ls /dev/shm/elastic-"$job"-*.snap >/dev/null 2>&1 || [ "$last" = -1 ] ||
		why="no node snapshot after step $last"
	# Copy at commit: the snapshot is written in the commit, so the relaunch
	# starts after the last recorded step (or one later: committed, not yet
	# recorded). Update after commit: the snapshot of a step is written at the
	# next begin, so that step may be redone (at most one).
	lo=1
	[ -n "$mode" ] && lo=0
	# relaunch at another size
	if [ -z "$why" ]; then
		timeout -s KILL "$limit" $MPIRUN -np "$np2" "$TRAIN" $args $mode --compare "$T_DIR/ref.model" \
			>"$out2" 2>&1
		rc=$?
		resumed=$(sed -n 's/.*resumed at committed step \([0-9]*\).*/\1/p' "$out2" | head -1)
		first=$(awk '/^step [0-9]+ /{ print $2; exit }' "$out2")
		if [ $rc = 137 ]; then
			why="relaunch timed out after ${limit}s"
		elif [ "$last" != -1 ] && [ -z "$resumed" ]; then
			why="the relaunch did not resume (last step printed: $last)"
		elif [ -n "$resumed" ] && [ "$resumed" -lt $((last + lo)) ]; then
			why="resumed at $resumed, but step $last had been committed (more than $((1 - lo)) step(s) redone)"
		elif [ -n "$resumed" ] && [ "$resumed" -gt $((last + 2)) ]; then
			why="resumed at $resumed, past the last step recorded ($last) + 1"
		elif [ -n "$resumed" ] && [ "$first" != "$resumed" ]; then
			why="resumed at $resumed but ran step $first first"
		elif ! grep -Eq '^done: 96 steps, 3 epochs, .* 0 bad, 0 violations' "$out2"; then
			why="did not finish with every sample once per epoch (exit $rc)"
		elif ! grep -q '^model matches reference' "$out2"; then
			why="final model differs from the reference"
		elif ls /dev/shm/elastic-"$job"-* >/dev/null 2>&1; then
			why="snapshots left in /dev/shm after completion"
		fi
	fi
	if [ -z "$why" ]; then
		pass=$((pass + 1))
		ms=$(awk -v k="$t_kill" '/^step [0-9]+ /{ for (i = 1; i <= NF; i++) if ($i ~ /^t=/) { printf "%.1f\n", (substr($i, 3) - k) * 1000; exit } }' "$out2")
		[ -n "$ms" ] && echo "$ms" >>"$T_DIR/resume.ms"
		t_log "run $i: killed mpirun after ${delay_ms} ms (last step recorded $last), relaunched on $np2 ranks${mode:+ ($mode)}: resumed at ${resumed:-0}, ok; kill to first commit ${ms:-?} ms"
	else
		t_log "run $i: killed after ${delay_ms} ms, relaunch on $np2: FAILED: $why"
		tail -5 "$out1" | sed 's/^/    first | /'
		tail -15 "$out2" 2>/dev/null | sed 's/^/    second| /'
	fi
	rm -f /dev/shm/elastic-"$job"-*
done
read -r med max n < <(t_stats <"$T_DIR/resume.ms")
t_log "path B (shm resume): $pass/$counted runs passed ($runs launched); kill to first commit of the relaunch: median $med ms, max $max ms over $n runs"
[ "$counted" -gt 0 ] || t_fail "no run was killed before it finished"
[ "$pass" = "$counted" ] || t_fail "$((counted - pass)) of $counted runs failed"
exit 0
