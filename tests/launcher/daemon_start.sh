#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/daemon_start.sh: the runtime's daemon on the grant's node
# fails to start once (its srun step in the grant runs and exits 1, as a
# PRRTE daemon that cannot reach mpirun does), so mpirun starts no rank
# anywhere. Which node failed is unknown then: elastic-run launches again on
# the same GPUs instead of holding node2 out as lost for 10 s, as the same
# (first) world, no re-form, and the job trains at 4 ranks from the second
# launch on. (A second failure in a row
# would hold the silent nodes out: tests/launcher/lost_node.sh.)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
t_need_cluster
t_scratch
mkdir -p "$T_DIR/bin"
# srun as elastic-run's launch agent calls it, but the first daemon for
# node2 runs "exit 1" in its place, in the grant's step
cat >"$T_DIR/bin/srun" <<EOS
#!/bin/bash
a=("\$@")
if [[ " \$* " == *" -w node2 "* && "\${a[-1]}" == *prted* ]] && mkdir "$T_DIR/failed-once" 2>/dev/null; then
	echo "test: node2's daemon fails to start (exit 1 in its place)" >&2
	a[-1]="exit 1"
fi
exec /usr/bin/srun "\${a[@]}"
EOS
chmod +x "$T_DIR/bin/srun"
LR_PATH=$T_DIR/bin lr_start "--epochs 4 --samples 4096 --global-batch 128 --step-sleep 20000" 2
t_wait_job "$lead" 180
cat "$T_DIR/lead.out"
[ -d "$T_DIR/failed-once" ] || t_fail "node2's daemon was never started through srun (no failure injected)"
t_grep "mpirun started no rank \(status [0-9]+\): launching again on the same GPUs" "$T_DIR/lead.out" \
	"elastic-run did not see a launch that started nothing"
! grep -aq "never said how they ended" "$T_DIR/lead.out" ||
	t_fail "a node was held out as lost: $(grep -a -m1 'never said how they ended' "$T_DIR/lead.out")"
# (the launch again forms the first world: no re-form)
t_grep "job $lead: 4 ranks on node1:2 GPUs \(job $lead\), node2:2 GPUs \(job $grant\) \(again: the launch before started no rank\)" \
	"$T_DIR/lead.out" "the second launch did not take node2's GPUs, or was not told as the first launch again"
! grep -aq 're-form [0-9]' "$T_DIR/lead.out" || t_fail "counted as a re-form: $(grep -a -m1 're-form [0-9]' "$T_DIR/lead.out")"
t_grep "^done: .* size 4 .* 0 bad, 0 violations" "$T_DIR/lead.out" "the run did not finish at size 4 with every sample once"
t_grep "^model matches reference" "$T_DIR/lead.out" "the final model differs from the run without failure"
t_log "PASS: $(grep -ao 'mpirun started no rank.*' "$T_DIR/lead.out"); $(grep -ao 'job [0-9]*: 4 ranks.*again.*' "$T_DIR/lead.out")"
