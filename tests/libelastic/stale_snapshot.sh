#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/stale_snapshot.sh: a job id handed out again must not resume an
# older job's node snapshot. A run with ELASTIC_JOB_STAMP=old stops after 10 committed
# steps (planned exit, its snapshot kept); a run with the same job id and another
# stamp must start at step 0 and end with the model of a run without any stop; a
# run with the old stamp again resumes where the first one stopped.
set -u
. "$(dirname "$0")/common.sh"
t_scratch
t_mpi_scratch
args="--epochs 2 --samples 1024 --global-batch 64"
export ELASTIC_JOB_ID=stale$$ ELASTIC_SHM_DIR=$T_DIR
unset ELASTIC_JOB_STAMP

t_reference 60 2 $args --quiet
# (the reference run completed: it removed its own snapshots)

ELASTIC_JOB_STAMP=old timeout -s KILL 60 $MPIRUN -np 2 "$TRAIN" $args --stop-after 10 >"$T_DIR/old.out" 2>&1
ls "$T_DIR"/elastic-"$ELASTIC_JOB_ID"-old-*.snap >/dev/null 2>&1 ||
	{ cat "$T_DIR/old.out"; t_fail "the stopped run left no snapshot named elastic-$ELASTIC_JOB_ID-old-*"; }

ELASTIC_JOB_STAMP=new timeout -s KILL 60 $MPIRUN -np 2 "$TRAIN" $args --compare "$T_DIR/ref.model" \
	>"$T_DIR/new.out" 2>&1 || { cat "$T_DIR/new.out"; t_fail "the run with a new stamp failed"; }
first=$(awk '/^step [0-9]+ /{ print $2; exit }' "$T_DIR/new.out")
grep -q "resumed at committed step" "$T_DIR/new.out" && t_fail "a run with another stamp resumed the old snapshot"
[ "$first" = 0 ] || t_fail "the run with a new stamp started at step '${first:-none}', not 0"
t_grep '^model matches reference' "$T_DIR/new.out" "the run with a new stamp"
ls "$T_DIR"/elastic-"$ELASTIC_JOB_ID"-old-*.snap >/dev/null 2>&1 ||
	t_fail "the run with a new stamp removed the old job's snapshot"
t_log "another stamp: started at step 0, model exact, old snapshot left alone"

ELASTIC_JOB_STAMP=old timeout -s KILL 60 $MPIRUN -np 2 "$TRAIN" $args --compare "$T_DIR/ref.model" \
	>"$T_DIR/again.out" 2>&1 || { cat "$T_DIR/again.out"; t_fail "the run with the old stamp failed"; }
t_grep "resumed at committed step 10 " "$T_DIR/again.out" "the run with the old stamp"
t_grep '^model matches reference' "$T_DIR/again.out" "the run with the old stamp"
t_log "PASS: the same stamp resumed at step 10 with the exact model"
exit 0
