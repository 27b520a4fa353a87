#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/idle_cpu.sh: libelastic's watchdog thread ("elastic-watch" in
# top -H and /proc/PID/task/TID/comm) sleeps between its checks (a tenth of a
# second, or until a deadline) and so costs a rank nothing. One rank whose steps
# wait (--step-sleep 100 ms): over 1.5 s the thread must use less than 0.1 s of
# CPU. A watchdog whose timed wait took its CLOCK_MONOTONIC deadlines for
# CLOCK_REALTIME times long past spun instead, and on shared cores every rank's
# spinning watchdog slowed every other rank (8 ranks on 2 cores: a planned
# shrink's new world 100-300 ms instead of a few).
set -u
. "$(dirname "$0")/common.sh"
t_scratch
t_mpi_scratch
export ELASTIC_JOB_ID=idle$$ ELASTIC_SHM_DIR=$T_DIR
tck=$(getconf CLK_TCK)

timeout -s KILL 60 $MPIRUN -np 1 "$TRAIN" --epochs 1 --samples 3200 --global-batch 64 \
	--step-sleep 100000 --quiet >"$T_DIR/run.out" 2>&1 &
run=$!
# the rank: the elastic_train with this test's job id
rank="" tid=""
for _ in $(seq 1 200); do
	for p in $(t_pgrep -x elastic_train); do
		tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "ELASTIC_JOB_ID=$ELASTIC_JOB_ID" && rank=$p
	done
	if [ -n "$rank" ]; then
		for t in /proc/"$rank"/task/*; do
			[ "$(cat "$t/comm" 2>/dev/null)" = elastic-watch ] && tid=${t##*/}
		done
	fi
	[ -n "$tid" ] && break
	kill -0 "$run" 2>/dev/null || break
	sleep 0.1
done
[ -n "$rank" ] || { cat "$T_DIR/run.out"; t_fail "no rank of job $ELASTIC_JOB_ID found running"; }
[ -n "$tid" ] || t_fail "rank $rank has no thread named elastic-watch: $(cat /proc/"$rank"/task/*/comm 2>/dev/null | paste -sd' ')"
# CPU ticks (user + system) in a stat file of /proc: a thread's or the rank's
ticks() { awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "$1"; }
sleep 1 # past MPI's start
w0=$(ticks "/proc/$rank/task/$tid/stat") a0=$(ticks "/proc/$rank/stat")
sleep 1.5
w1=$(ticks "/proc/$rank/task/$tid/stat") a1=$(ticks "/proc/$rank/stat")
kill -0 "$rank" 2>/dev/null || t_fail "the rank ended before the measurement did: give it more steps"
wms=$(((w1 - w0) * 1000 / tck)) ams=$(((a1 - a0) * 1000 / tck))
t_log "over 1.5 s of steps that wait: the watchdog thread used $wms ms of CPU, the whole rank $ams ms"
wait "$run" || { cat "$T_DIR/run.out"; t_fail "the run failed"; }
t_grep '^done: 50 steps' "$T_DIR/run.out" "the run"
[ "$wms" -lt 100 ] || t_fail "the watchdog thread used $wms ms of CPU in 1.5 s (it should sleep: under 100 ms)"
t_log "PASS: the watchdog thread sleeps ($wms ms of CPU in 1.5 s)"
exit 0
