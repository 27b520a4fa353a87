#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/reform_lost_grant.sh: path B under Slurm. elastic_train runs
# under elastic-run over a 2-GPU job and a 2-GPU grant job on another node;
# the grant is cancelled mid-run (its daemon and ranks die with it, and Open
# MPI ends the whole mpirun). elastic-run re-forms on the 2 GPUs left, the
# trainer resumes from its last committed step (node-local snapshot) and ends
# with the same model as a run that never failed, each sample once per epoch.
# With a runtime that survives a lost daemon (Open MPI 6: `elastic-run
# --runtime`), mpirun goes on instead: the two ranks left heal in place
# (no relaunch), elastic-run says so and takes the 2 GPUs left as its set.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
lr_start "--epochs 3 --samples 4096 --global-batch 128 --step-sleep 20000" 2
# Well under way on 4 ranks: lose the grant.
lr_wait_step 20
t_log "cancelling grant $grant"
t_kill=$(date +%s.%N)
scancel "$grant"
t_wait_job "$lead" 180
cat "$T_DIR/lead.out"
t_grep "job $lead: 4 ranks on node1:2 GPUs" "$T_DIR/lead.out" "the first launch did not use 4 GPUs"
if t_runtime_in_place; then
	t_grep "2 ranks lost; the survivors healed in place at 2 ranks" "$T_DIR/lead.out" "the survivors did not heal in place"
	t_grep "GPUs now: .*node1:2 GPUs \(job $lead\)" "$T_DIR/lead.out" "elastic-run did not take the 2 GPUs left as its set"
	! grep -q 're-form [0-9]*:' "$T_DIR/lead.out" || t_fail "elastic-run relaunched: $(grep -m1 're-form [0-9]*:' "$T_DIR/lead.out")"
	t_first=$(awk -v k="$t_kill" '/^step [0-9]+ .*first commit after a change/ {
		for (i = 1; i <= NF; i++) if ($i ~ /^t=/) c = substr($i, 3)
		if (c >= k) { print c; exit } }' "$T_DIR/lead.out")
	[ -n "$t_first" ] || t_fail "no step committed after the grant was cancelled"
	t_grep "^done: .* size 2 .* 0 bad, 0 violations" "$T_DIR/lead.out" "the run did not finish at size 2 with every sample once"
	t_grep "^model matches reference" "$T_DIR/lead.out" "the final model differs from the run without failure"
	t_grep "job $lead: finished \(1 launch," "$T_DIR/lead.out" "elastic-run did not finish after one launch"
	t_log "PASS: healed in place; scancel to first committed step after: $(awk -v a="$t_kill" -v b="$t_first" 'BEGIN { printf "%.0f", (b - a) * 1000 }') ms"
	exit 0
fi
t_grep "re-form 1: 2 ranks on node1:2 GPUs \(job $lead\)" "$T_DIR/lead.out" "no re-form on the 2 GPUs left"
# The relaunch resumed: its first step is past the ones done before the loss.
first=$(lr_first_step_after_reform)
t_first=$(awk '/re-form 1:/{f=1} f && /^step [0-9]+ /{sub(/.*t=/, ""); print $1; exit}' "$T_DIR/lead.out")
[ -n "$first" ] && [ "$first" -ge 20 ] || t_fail "the relaunch started at step '${first:-none}', not from the snapshot (>= 20)"
t_grep "^done: .* size 2 .* 0 bad, 0 violations" "$T_DIR/lead.out" "the run did not finish at size 2 with every sample once"
t_grep "^model matches reference" "$T_DIR/lead.out" "the final model differs from the run without failure"
ms=$(awk -v a="$t_kill" -v b="$t_first" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
t_log "PASS: $(grep -ao 're-form 1.*' "$T_DIR/lead.out"); scancel to first committed step after: $ms ms (resumed at step $first)"
