#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/daemon_grant.sh: a grant's end costs only its own GPUs. elastic_train
# runs on 5 ranks: 2 GPUs of the job on node1, and on node2 a 1-GPU grant (whose step
# hosts node2's daemon) and a 2-GPU grant (its ranks in its own steps, started from
# that daemon). The 1-GPU grant is cancelled: its daemon ends, and with it the ranks of
# the other grant. That node is not held out as lost then (Slurm no longer lists the
# daemon's grant, but lists the other): the job trains on the other grant's 2 GPUs
# again in its next launch (Open MPI 5: the re-form after the lost daemon; Open MPI
# 6: a re-form at once after the heal in place, onto the GPUs left with no rank),
# not 10 s later (or never, on Open MPI 6), with every sample once and the model of
# a run without failure.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
lr_start "--epochs 12 --samples 4096 --global-batch 128 --step-sleep 30000" 1 2
t_log "lead $lead (node1:2), grants $grant1 (node2:1, the daemon's) and $grant (node2:2)"
lr_wait_step 20
t_grep "job $lead: 5 ranks on node1:2 GPUs \(job $lead\), node2:3 GPUs \(job $grant1\)" "$T_DIR/lead.out" \
	"the first launch did not use 5 GPUs with node2's daemon in grant $grant1"
t_kill=$(date +%s.%N)
scancel "$grant1"
t_log "cancelled grant $grant1 (node2's daemon)"
t_wait_job "$lead" 180
out=$T_DIR/lead.out
# the first launch with node2's 2 GPUs again, and when its first step came
re=$(grep -aE "re-form [0-9]+: 4 ranks on node1:2 GPUs \(job $lead\), node2:2 GPUs \(job $grant\)" "$out" | head -n1)
[ -n "$re" ] || { cat "$out"; t_fail "no launch on node2's other grant after grant $grant1 ended"; }
n=$(sed -n 's/.*re-form \([0-9]*\):.*/\1/p' <<<"$re")
[ "$n" = 1 ] || t_fail "back on node2's other grant only at re-form $n (at 1 expected)"
t_back=$(tr -d '\0' <"$out" | awk -v r="re-form $n:" 'index($0, r) { f = 1 } f && /^step [0-9]+ .* size 4 / {
	for (i = 1; i <= NF; i++) if ($i ~ /^t=/) { print substr($i, 3); exit } }')
[ -n "$t_back" ] || t_fail "no step at 4 ranks after re-form $n"
# the re-form's start, from its line's clock (elastic-run HH:MM:SS.mmm: re-form N: ...):
# a relaunch's start-up is the host's load, the hold-out is elastic-run's
t_re=$(date -d "$(date -d "@${t_kill%.*}" +%F) $(awk '{ sub(/:$/, "", $2); print $2 }' <<<"$re")" +%s.%N)
took=$(awk -v a="$t_kill" -v b="$t_re" 'BEGIN { printf "%.1f", b - a }')
back=$(awk -v a="$t_kill" -v b="$t_back" 'BEGIN { printf "%.1f", b - a }')
# (a lost node is held out 10 s: the re-form starts before, after 2 s of the replacement
# on Open MPI 6)
awk -v t="$took" 'BEGIN { exit !(t < 8) }' || t_fail "the re-form onto node2's other grant began only ${took} s after the cancel"
! grep -a "node2: its ranks never said how they ended" "$out" ||
	t_fail "node2 was held out as lost though its other grant lives"
t_grep "^done: .* 0 bad, 0 violations" "$out" "samples not used exactly once per epoch"
t_grep "^model matches reference" "$out" "the final model differs from the run without failure"
grep -aE "node2: (its ranks ended with the grant|the grant that hosted its daemon)|healed in place|re-form [0-9]+:" "$out" |
	sed 's/^elastic-run /[daemon_grant] /' || true
t_log "PASS: ${re#*: }; re-formed ${took} s and training at 4 again ${back} s after the cancel"
