#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/planned_reform.sh: a planned re-form loses no step. While
# elastic_train runs under elastic-run over a job and its grant, elastic-run
# gets SIGUSR1 (what it does itself on a controller order): the ranks stop
# together after one committed step N (exit 75), elastic-run relaunches, and
# the new launch's first step is N+1: nothing redone, nothing skipped; the
# final model equals a run without any re-form. A second SIGUSR1 the moment
# the relaunch starts waits until its ranks can take it. At the first, rank
# 1's wrapper is held still, as on a host too loaded to run it: the runtime
# ends a launch's other ranks (SIGTERM, then SIGKILL) as soon as one exits,
# so that wrapper dies before it can say how its rank ended. The rank says
# it itself, before MPI_Finalize: no rank looks lost.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
lr_start "--epochs 2 --samples 4096 --global-batch 128 --step-sleep 20000" 1
lr_wait_step 15
# The batch script exec'd elastic-run: it is the job's batch step process.
er=$(t_pgrep -f "^./elastic-run -v -- $train" | head -n1)
[ -n "$er" ] || t_fail "no elastic-run process found"
w1=$(lr_wrapper 1 "SLURM_JOB_ID=$lead")
[ -n "$w1" ] || t_fail "no wrapper of rank 1 found"
lr_hold "$w1" 3 "rank 1's wrapper"
t_log "rank 1's wrapper (pid $w1) held; SIGUSR1 to elastic-run (pid $er)"
kill -USR1 "$er"
# A second re-form asked the moment the relaunch starts, before its ranks
# can take SIGUSR1 (their handler comes with elastic_init): elastic-run
# holds it until they committed a step, rather than ending them with it.
end=$((SECONDS + 60))
until grep -aq "re-form 1: " "$T_DIR/lead.out"; do
	[ $SECONDS -lt $end ] || t_fail "no relaunch after SIGUSR1"
	sleep 0.02
done
kill -USR1 "$er"
t_log "SIGUSR1 again as the relaunch started"
t_wait_job "$lead" 120
wait
t_log "rank 1's wrapper: $(tail -n 1 "$T_DIR/hold.out")"
cat "$T_DIR/lead.out" | grep -av '^step [0-9]*[1-9] '
# (A rank still exiting when mpirun sees the first exit 75 may get its
# SIGTERM: "failed" with status 143. A rank SIGUSR1 ended before it could
# take it never reports: "lost".)
[ "$(grep -acE 'mpirun ended .* [1-3] asked to re-form, 0 killed, 0 lost' "$T_DIR/lead.out")" = 2 ] ||
	t_fail "the ranks did not stop cleanly for both re-forms (exit 75): $(grep -a 'mpirun ended' "$T_DIR/lead.out")"
t_grep "re-form 1: 3 ranks" "$T_DIR/lead.out" "no relaunch over the same 3 GPUs"
t_grep "re-form 2: 3 ranks" "$T_DIR/lead.out" "no second relaunch over the same 3 GPUs"
# At each re-form all ranks stopped after the same committed step, and the
# relaunch resumed there and went on with the next step.
stops=$(grep -ao 'planned re-form: stopping after committed step [0-9]*' "$T_DIR/lead.out" | awk '{print $NF}' | sort -n | uniq -c | awk '$1 == 3 { print $2 }' | paste -sd' ')
[ "$(echo "$stops" | wc -w)" = 2 ] || t_fail "ranks did not stop together at two steps: $(grep -ao 'stopping after committed step [0-9]*' "$T_DIR/lead.out" | sort | uniq -c)"
resumed=$(grep -ao 'resumed at committed step [0-9]*' "$T_DIR/lead.out" | awk '{print $NF}' | sort -n -u | paste -sd' ')
[ "$resumed" = "$stops" ] || t_fail "stopped after committed steps $stops but resumed at '$resumed'"
first=$(lr_first_step_after_reform)
[ "$first" = "${stops%% *}" ] || t_fail "first step after the re-form is $first, want ${stops%% *} (0-based: the next one)"
last=$stops
t_grep "^done: .* 0 bad, 0 violations" "$T_DIR/lead.out" "samples not used exactly once per epoch"
t_grep "^model matches reference" "$T_DIR/lead.out" "the final model differs from the run without re-form"
t_log "PASS: all ranks stopped after $last committed steps; the relaunch went on with step $first"
