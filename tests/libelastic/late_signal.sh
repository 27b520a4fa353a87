#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/late_signal.sh: a request's signal that reaches a rank late is
# taken once. elastic-run numbers each request (ELASTIC_RUN_ASK) and sends SIGUSR1
# through mpirun, whose daemons pass it on one rank after another: a rank that gets
# it after the commit whose agreement took the request raised its flag again, and
# the next commit stopped every rank for a re-form nobody asked for (seen after a
# planned shrink in place, under load). Here elastic-run's part is played by hand,
# under mpirun --with-ft ulfm with the rank wrapper: request 1 names rank 3's GPU
# as leaving; ranks 0, 2 and 3 get SIGUSR1, the world shrinks in place to 3; then
# rank 1 gets its copy late. The 3 ranks must go on and finish (libelastic says
# the request was taken), with every sample used once per epoch.
set -u
. "$(dirname "$0")/common.sh"
t_runtime_in_place || t_skip "needs an MPI runtime that shrinks in place (testbed runtime ompi6)"
ER=${top_builddir:?}/launcher/elastic-run
[ -x "$ER" ] || t_fail "elastic-run not built"
t_scratch
t_mpi_scratch
args="--step-sleep 20000 --epochs 6 --samples 4096 --global-batch 128"
# (names this run's ranks: the same test may run beside it, in another
# build tree)
export ELASTIC_JOB_ID=late$$
echo "$(hostname) 3" >"$T_DIR/leave"
cat >"$T_DIR/rank.sh" <<SH
#!/bin/sh
# the GPU the leave list names: the rank's number here (no Slurm step, no
# device files to check)
export ELASTIC_GPU=\$OMPI_COMM_WORLD_RANK
unset ELASTIC_RUN_GPU_DEVICES
exec "$ER" --rank "\$@"
SH
chmod +x "$T_DIR/rank.sh"
ELASTIC_RUN_IN_PLACE=1 ELASTIC_RUN_LEAVE=$T_DIR/leave ELASTIC_RUN_ASK=$T_DIR/ask \
	timeout -s KILL 120 $MPIRUN -np 4 "$T_DIR/rank.sh" "$TRAIN" $args >"$T_DIR/out" 2>&1 &
mp=$!
trap 'rc=$?; kill -KILL $mp 2>/dev/null; t_cleanup $rc' EXIT

# The trainer process of rank $1 (not its wrapper), by its environment.
trainer() {
	local p
	for p in $(t_pgrep -f -- "$args"); do
		case "$(cat "/proc/$p/comm" 2>/dev/null)" in elastic_train | lt-elastic_tra*) ;; *) continue ;; esac
		t_env_has "$p" "OMPI_COMM_WORLD_RANK=$1" "ELASTIC_JOB_ID=$ELASTIC_JOB_ID" && echo "$p"
	done | tail -n1
}
wait_line() { # regex seconds what
	local end=$((SECONDS + $2))
	until grep -aEq -- "$1" "$T_DIR/out"; do
		[ $SECONDS -lt $end ] && kill -0 $mp 2>/dev/null || { cat "$T_DIR/out"; t_fail "$3"; }
		sleep 0.05
	done
}
wait_line '^step 20 ' 60 "no step 20 at 4 ranks"
pids=()
for r in 0 1 2 3; do
	pids[r]=$(trainer $r)
	[ -n "${pids[r]}" ] || t_fail "rank $r's process not found"
done
# elastic-run writes the request's number before it sends the signal
echo 1 >"$T_DIR/ask"
kill -USR1 "${pids[0]}" "${pids[2]}" "${pids[3]}"
r1=${pids[1]}
t_log "request 1: SIGUSR1 to ranks 0, 2 and 3 (rank 3's GPU leaves)"
wait_line 'planned shrink in place: size 4 -> 3' 30 "no planned shrink in place to 3 ranks"
s=$(grep -a '^step [0-9]* ' "$T_DIR/out" | tail -n1 | awk '{ print $2 }')
wait_line "^step $((s + 5)) " 30 "no step at 3 ranks after the shrink"
kill -USR1 "$r1"
t_log "rank 1 (pid $r1) gets request 1's signal after the shrink (step $((s + 5)))"
wait $mp
rc=$?
grep -a -e '^libelastic' -e '^done:' "$T_DIR/out" | grep -v 'btl' | tail -n 12
[ $rc = 0 ] || t_fail "mpirun ended with status $rc (75: the late signal stopped the ranks for a re-form)"
t_grep "request 1 was taken at an earlier commit" "$T_DIR/out" "libelastic dropped the late copy"
! grep -aq 'planned re-form: stopping' "$T_DIR/out" || t_fail "a rank stopped for a re-form: $(grep -a -m1 'planned re-form' "$T_DIR/out")"
t_grep '^done: 192 steps, 6 epochs, size 3 .* 0 bad, 0 violations' "$T_DIR/out" "the 3 ranks finished, each sample once per epoch"
t_log "PASS: request 1 taken once: shrunk in place to 3, rank 1's late copy dropped, finished at 3 ranks"
exit 0
