#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/planned_reform.sh: a planned re-form loses no step. While
# elastic_train runs under elastic-run over a job and its grant, elastic-run
# gets SIGUSR1 (what it does itself on a controller order): the ranks stop
# together after one committed step N (exit 75), elastic-run relaunches, and
# the new launch's first step is N+1: nothing redone, nothing skipped; the
# final model equals a run without any re-form.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
lr_start "--epochs 2 --samples 4096 --global-batch 128 --step-sleep 20000" 1
lr_wait_step 15
# The batch script exec'd elastic-run: it is the job's batch step process.
er=$(pgrep -f "^./elastic-run -v -- $train" | head -n1)
[ -n "$er" ] || t_fail "no elastic-run process found"
t_log "SIGUSR1 to elastic-run (pid $er)"
kill -USR1 "$er"
t_wait_job "$lead" 120
cat "$T_DIR/lead.out" | grep -av '^step [0-9]*[1-9] '
t_grep "mpirun ended .* 3 asked to re-form" "$T_DIR/lead.out" "the ranks did not all stop for a re-form (exit 75)"
t_grep "re-form 1: 3 ranks" "$T_DIR/lead.out" "no relaunch over the same 3 GPUs"
# All ranks stopped after the same committed step, and the relaunch resumed
# there and went on with the next step.
stops=$(grep -ao 'planned re-form: stopping after committed step [0-9]*' "$T_DIR/lead.out" | awk '{print $NF}' | sort -u)
[ "$(echo "$stops" | wc -w)" = 1 ] || t_fail "ranks stopped after different steps: $stops"
resumed=$(grep -ao 'resumed at committed step [0-9]*' "$T_DIR/lead.out" | awk '{print $NF}' | sort -u)
[ "$resumed" = "$stops" ] || t_fail "stopped after committed step $stops but resumed at '$resumed'"
first=$(lr_first_step_after_reform)
[ "$first" = "$stops" ] || t_fail "first step after the re-form is $first, want $stops (0-based: the next one)"
last=$stops
t_grep "^done: .* 0 bad, 0 violations" "$T_DIR/lead.out" "samples not used exactly once per epoch"
t_grep "^model matches reference" "$T_DIR/lead.out" "the final model differs from the run without re-form"
t_log "PASS: all ranks stopped after $last committed steps; the relaunch went on with step $first"
