#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/watchdog_report.sh: a rank its step watchdog ends is not
# lost. Under elastic-run with ELASTIC_STEP_TIMEOUT=2, rank 2 is stopped
# (SIGSTOP) in the middle of the training: the others wait for it in a
# collective until their watchdog ends them with exit 75, with no
# MPI_Finalize fence between their exits. Rank 1's wrapper is held still
# meanwhile, as on a host too loaded to run it: the runtime ends a launch's
# other processes within half a second of the first exit, so that wrapper
# dies before it can say how its rank ended. The rank says it itself before
# it exits: elastic-run counts no rank lost, relaunches over the same GPUs,
# and the training ends with the model of a run without the stall.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
LR_RUN_ARGS="--mpirun-arg -x --mpirun-arg ELASTIC_STEP_TIMEOUT=2 " \
	lr_start "--epochs 4 --samples 4096 --global-batch 128 --step-sleep 20000" 1
lr_wait_step 15
w1=$(lr_wrapper 1) w2=$(lr_wrapper 2)
[ -n "$w1" ] && [ -n "$w2" ] || t_fail "no wrapper of rank 1 or of rank 2 found"
t_env_has "$w2" ELASTIC_STEP_TIMEOUT=2 ||
	t_fail "rank 2's wrapper has no ELASTIC_STEP_TIMEOUT=2 (elastic-run's --mpirun-arg -x)"
r2=$(pgrep -P "$w2" | head -n1)
[ -n "$r2" ] || t_fail "rank 2's wrapper (pid $w2) has no child"
lr_hold "$w1" 8 "rank 1's wrapper"
kill -STOP "$r2"
t_log "rank 1's wrapper (pid $w1) held; rank 2 (pid $r2) stopped"
# (Open MPI 5 sends SIGCONT to every process at the first exit; a runtime
# that does not is given it here, so that rank 2 ends too.)
sleep 3
kill -CONT "$r2" 2>/dev/null || true
t_wait_job "$lead" 120
wait
t_log "rank 1's wrapper: $(tail -n 1 "$T_DIR/hold.out")"
grep -a 'mpirun ended\|did not finish\|re-form 1:' "$T_DIR/lead.out" || true
t_grep 'a step did not finish in 2 s: exiting 75' "$T_DIR/lead.out" "no step watchdog ended a rank"
ended=$(grep -a -m1 'mpirun ended' "$T_DIR/lead.out")
[[ "$ended" == *", 0 lost"* ]] ||
	t_fail "a rank its watchdog ended counted as lost: $ended"
[[ "$ended" != *" 0 asked to re-form"* ]] ||
	t_fail "no rank reported the watchdog's exit 75: $ended"
t_grep "re-form 1: 3 ranks" "$T_DIR/lead.out" "no relaunch over the same 3 GPUs"
t_grep "^done: .* 0 bad, 0 violations" "$T_DIR/lead.out" "samples not used exactly once per epoch"
t_grep "^model matches reference" "$T_DIR/lead.out" "the final model differs from the run without the stall"
t_log "PASS: ${ended#*: }"
