#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/exit_sigpipe.sh: a rank's stderr is a pipe nobody reads any
# more (mpirun's forwarding of a launch whose other ranks ended first, an srun
# gone) when libelastic ends the process with a status of its own: its last
# words must not kill it with SIGPIPE. The rank hangs inside step 3 with
# ELASTIC_STEP_TIMEOUT=2: it must end with 75, not 141, after writing its
# node snapshot, and the relaunch resumes at step 3.
set -u
. "$(dirname "$0")/common.sh"
t_scratch
t_mpi_scratch
unset ELASTIC_WATCHDOG
export ELASTIC_JOB_ID="pipe$$" RC_FILE=$T_DIR/rc
args="--quiet --epochs 1 --samples 640 --global-batch 64"
# the rank's stderr: a pipe whose reader has exited
ELASTIC_STEP_TIMEOUT=2 timeout -s KILL 60 $MPIRUN -x RC_FILE -np 1 \
	bash -c 'exec 2> >(exit 0); sleep 0.3; "$@"; echo $? >"$RC_FILE"' bash \
	"$TRAIN" $args --hang 0:3 >"$T_DIR/first.out" 2>&1 ||
	{ tail "$T_DIR/first.out"; t_fail "mpirun failed or hung"; }
rc=$(cat "$T_DIR/rc" 2>/dev/null)
[ "$rc" = 75 ] || t_fail "the rank ended with status '$rc' (141: SIGPIPE), expected 75"
timeout -s KILL 60 $MPIRUN -np 1 "$TRAIN" $args >"$T_DIR/second.out" 2>&1 ||
	{ tail "$T_DIR/second.out"; t_fail "the relaunch failed"; }
first=$(sed -n 's/^step \([0-9]*\) .*(first commit after a change).*/\1/p' "$T_DIR/second.out" | head -n1)
[ "$first" = 3 ] || { tail "$T_DIR/second.out"; t_fail "the relaunch resumed at step '${first:-none}', expected 3 (the snapshot of step 2)"; }
rm -f /dev/shm/elastic-"$ELASTIC_JOB_ID"-*
t_log "PASS: with its stderr a broken pipe, the rank ended with 75 and its snapshot; the relaunch resumed at step $first"
exit 0
