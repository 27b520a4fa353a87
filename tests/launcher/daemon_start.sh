#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/daemon_start.sh: the runtime's daemon on the grant's node
# fails to start (its srun step in the grant runs and exits 1, as a PRRTE
# daemon that cannot reach mpirun does), so mpirun starts no rank anywhere:
# at the first launch, and again at a planned re-form (SIGUSR1) later. Which
# node failed is unknown then: elastic-run launches again on the same GPUs
# instead of holding node2 out as lost for 10 s, as the same world (the
# first one; re-form 1 "again"), so each counts once, and the job trains at
# 4 ranks with every sample once. (A second failure in a row would hold the
# silent nodes out: tests/launcher/lost_node.sh.)
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
t_need_cluster
t_scratch
mkdir -p "$T_DIR/bin"
# srun as elastic-run's launch agent calls it, but node2's first and third
# daemons (the first launch; the planned re-form's) run "exit 1" in their
# place, in the grant's step
cat >"$T_DIR/bin/srun" <<EOS
#!/bin/bash
a=("\$@")
if [[ " \$* " == *" -w node2 "* && "\${a[-1]}" == *prted* ]]; then
	n=\$((\$(cat "$T_DIR/node2-starts" 2>/dev/null || echo 0) + 1))
	echo \$n >"$T_DIR/node2-starts"
	if [ \$n = 1 ] || [ \$n = 3 ]; then
		echo "test: node2's daemon \$n fails to start (exit 1 in its place)" >&2
		a[-1]="exit 1"
	fi
fi
exec /usr/bin/srun "\${a[@]}"
EOS
chmod +x "$T_DIR/bin/srun"
LR_PATH=$T_DIR/bin lr_start "--epochs 4 --samples 4096 --global-batch 128 --step-sleep 20000" 2
lr_wait_step 20
er=$(t_pgrep -f "^./elastic-run -v -- $train" | head -n1)
[ -n "$er" ] || t_fail "no elastic-run process found"
t_log "SIGUSR1 to elastic-run (pid $er): a planned re-form"
kill -USR1 "$er"
t_wait_job "$lead" 180
cat "$T_DIR/lead.out"
[ "$(cat "$T_DIR/node2-starts" 2>/dev/null)" = 4 ] ||
	t_fail "node2's daemon was started $(cat "$T_DIR/node2-starts" 2>/dev/null || echo 0) times through srun, want 4 (two failed, each launched again)"
[ "$(grep -ac 'mpirun started no rank (status [0-9]*): launching again on the same GPUs' "$T_DIR/lead.out")" = 2 ] ||
	t_fail "elastic-run did not see both launches that started nothing"
! grep -aq "never said how they ended" "$T_DIR/lead.out" ||
	t_fail "a node was held out as lost: $(grep -a -m1 'never said how they ended' "$T_DIR/lead.out")"
# (each launch again forms the world the failed one was to: the first, then
# re-form 1; no re-form 2)
t_grep "job $lead: 4 ranks on node1:2 GPUs \(job $lead\), node2:2 GPUs \(job $grant\) \(again: the launch before started no rank\)" \
	"$T_DIR/lead.out" "the second launch did not take node2's GPUs, or was not told as the first launch again"
t_grep "re-form 1: 4 ranks on node1:2 GPUs" "$T_DIR/lead.out" "no planned re-form"
t_grep "re-form 1 again: 4 ranks on node1:2 GPUs \(job $lead\), node2:2 GPUs \(job $grant\)" "$T_DIR/lead.out" \
	"the planned re-form's launch again did not take node2's GPUs, or was not told as re-form 1 again"
! grep -aq 're-form 2' "$T_DIR/lead.out" || t_fail "counted as a second re-form: $(grep -a -m1 're-form 2' "$T_DIR/lead.out")"
t_grep "^done: .* size 4 .* 0 bad, 0 violations" "$T_DIR/lead.out" "the run did not finish at size 4 with every sample once"
t_grep "^model matches reference" "$T_DIR/lead.out" "the final model differs from the run without failure"
t_log "PASS: $(grep -ao 'job [0-9]*: 4 ranks.*again.*' "$T_DIR/lead.out"); $(grep -ao 're-form 1 again:.*' "$T_DIR/lead.out")"
