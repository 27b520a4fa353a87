#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/grow_in_place.sh: a grant on a new node while elastic_train
# runs under elastic-run on 2 GPUs of node1. On a runtime that starts ranks
# inside a running mpirun under fault tolerance (Open MPI 5.0.x: `elastic-run
# --runtime` says "joins in place"), the 2 ranks that run start 2 more on
# node2 at a step boundary (MPI_Comm_spawn with PMIX_ADD_HOST), merge with
# them and hand them the committed state: no rank restarts, no relaunch, the
# training goes on at 4 from the next step with each sample once per epoch
# and ends with the same model as a run that never changed. Elsewhere the
# job re-forms onto the 4 GPUs (every rank restarts) with the same result.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
# (6 epochs: the grant starts and the order reaches
# elastic-run before the end even on a loaded host)
args="--epochs 6 --samples 4096 --global-batch 128 --step-sleep 20000"
lr_start "$args" 0
lr_wait_step 15
# A grant of 2 GPUs on node2, as elasticd starts one; then SIGUSR1 to
# elastic-run, what it does itself on the controller's word of a grant.
t_grant_start "$lead" 2
er=$(t_pgrep -f "^./elastic-run -v -- $train" | head -n1)
[ -n "$er" ] || t_fail "no elastic-run process found"
t_log "grant $grant running on node2: SIGUSR1 to elastic-run (pid $er)"
kill -USR1 "$er"
t_wait_job "$lead" 180
scancel "$grant" 2>/dev/null || true
grep -av '^step [0-9]*[1-9] ' "$T_DIR/lead.out"
t_grep "job $lead: 2 ranks on node1:2 GPUs" "$T_DIR/lead.out" "the first launch did not use the 2 GPUs of node1"
t_grep "^done: .* size 4 \(started [24]\).* 0 bad, 0 violations" "$T_DIR/lead.out" "the run did not finish at size 4 with every sample once per epoch"
t_grep "^model matches reference" "$T_DIR/lead.out" "the final model differs from the run without change"
spawn_failed=$(t_runtime_failed_spawn "$T_DIR/lead.out") &&
	t_log "the runtime failed the growth in place ($spawn_failed): the re-form that elastic-run fell back to is checked instead"
if ! t_runtime_grows || [ -n "$spawn_failed" ]; then
	t_grep "re-form 1: 4 ranks on node1:2 GPUs \(job $lead\), node2:2 GPUs \(job $grant\)" "$T_DIR/lead.out" "no re-form onto the 4 GPUs"
	t_log "PASS (${spawn_failed:+the runtime failed the spawn; }re-formed to grow): $(grep -ao 're-form 1:.*' "$T_DIR/lead.out")"
	exit 0
fi
! grep -aq 're-form [0-9]*:' "$T_DIR/lead.out" || t_fail "elastic-run relaunched: $(grep -am1 're-form [0-9]*:' "$T_DIR/lead.out")"
t_grep "^done: .* size 4 \(started 2\)" "$T_DIR/lead.out" "the ranks that finished did not start at 2"
t_grep "grow in place: 2 new ranks join the 2 running" "$T_DIR/lead.out" "elastic-run did not plan a growth in place"
t_grep "grew in place: 2 ranks joined, 4 at step [0-9]+, no relaunch .*GPUs now: node1:2 GPUs \(job $lead\), node2:2 GPUs \(job $grant\)" \
	"$T_DIR/lead.out" "elastic-run did not see the 4 ranks on the grown set"
t_grep "job $lead: finished \(1 launch," "$T_DIR/lead.out" "elastic-run did not finish after one launch"
# The 2 ranks that ran went on: they grew, none of them restarted or read a
# snapshot; the 2 joiners took the committed step from them.
[ "$(grep -ac 'grow in place: size 2 -> 4' "$T_DIR/lead.out")" = 2 ] ||
	t_fail "not both running ranks grew in place: $(grep -a 'grow in place' "$T_DIR/lead.out")"
! grep -aq 'resumed at committed step' "$T_DIR/lead.out" || t_fail "a rank resumed from a snapshot"
joined=$(grep -ao 'joined in place at committed step [0-9]*: rank [0-9]* of 4' "$T_DIR/lead.out" | sort -u)
# ("joined in place at committed step N: rank R of 4")
[ "$(echo "$joined" | awk '{print $7}' | sort -u | wc -l)" = 1 ] && [ "$(echo "$joined" | awk '{print $9}' | sort | paste -sd,)" = "2,3" ] ||
	t_fail "the joiners did not take one committed step as ranks 2 and 3: $joined"
n=$(echo "$joined" | awk '{print $7; exit}' | tr -d :)
# the next step is the first at size 4: none redone, none skipped
first4=$(awk '/^step [0-9]+ .* size 4 / {print $2; exit}' "$T_DIR/lead.out")
[ "$first4" = "$n" ] || t_fail "the first step at size 4 is ${first4:-none}, want $n (the one after the $n committed)"
grep -aq "^step $((n - 1)) .* size 2 " "$T_DIR/lead.out" || t_fail "step $((n - 1)) was not the last at size 2"
t_log "PASS: grew in place after step $n: $(grep -ao 'grew in place: .*after the order)' "$T_DIR/lead.out"); $(grep -ao 'grow in place: size 2 -> 4 in [0-9.]* ms (spawn [0-9.]*, merge [0-9.]*)' "$T_DIR/lead.out" | head -1)"
