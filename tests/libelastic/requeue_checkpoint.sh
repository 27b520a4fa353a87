#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/requeue_checkpoint.sh: restart from the checkpoint directory when no node
# snapshot survives (a requeued job on other nodes): a launch with ELASTIC_CHECKPOINT_EVERY=10
# leaves after step 37; its node snapshot is deleted; the relaunch on 3 ranks must resume at
# step 30 from the checkpoint and end with the model of a run without interruption.
set -u
. "$(dirname "$0")/common.sh"

args="--step-sleep 1000 --epochs 3 --samples 4096 --global-batch 128"
t_scratch
t_mpi_scratch
unset ELASTIC_WATCHDOG ELASTIC_SHM_DIR
t_reference 60 4 $args --quiet

export ELASTIC_JOB_ID="ckpt$$" ELASTIC_CHECKPOINT_DIR=$T_DIR/ckpt ELASTIC_CHECKPOINT_EVERY=10
timeout -s KILL 60 $MPIRUN -np 4 "$TRAIN" $args --stop-after 38 >"$T_DIR/first.out" 2>&1 ||
	{ tail "$T_DIR/first.out"; t_fail "the first launch failed"; }
t_grep '^stopping after step 37' "$T_DIR/first.out" "planned stop after step 37"
ls "$ELASTIC_CHECKPOINT_DIR"/elastic-"$ELASTIC_JOB_ID"-*.snap >/dev/null 2>&1 ||
	t_fail "no checkpoint in $ELASTIC_CHECKPOINT_DIR"
ls /dev/shm/elastic-"$ELASTIC_JOB_ID"-*.snap >/dev/null 2>&1 || t_fail "no node snapshot"
rm -f /dev/shm/elastic-"$ELASTIC_JOB_ID"-* # the job is requeued elsewhere

timeout -s KILL 60 $MPIRUN -np 3 "$TRAIN" $args --compare "$T_DIR/ref.model" \
	>"$T_DIR/second.out" 2>&1 || { tail "$T_DIR/second.out"; t_fail "the relaunch failed"; }
t_grep 'resumed at committed step 30 ' "$T_DIR/second.out" "resumed from the checkpoint of step 30"
t_grep '^step 30 ' "$T_DIR/second.out" "the relaunch redid step 30"
t_grep '^done: 96 steps, 3 epochs, size 3 .* 0 bad, 0 violations' "$T_DIR/second.out" "finished"
t_grep '^model matches reference' "$T_DIR/second.out" "same model"
t_log "resumed at step 30 from $ELASTIC_CHECKPOINT_DIR after the node snapshot was lost: ok"
rm -f /dev/shm/elastic-"$ELASTIC_JOB_ID"-*
exit 0
