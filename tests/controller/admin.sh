#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/admin.sh: elastic-ctl pause, drain and resume, as admins use
# scontrol. Only root/SlurmUser may change them; paused, elasticd neither grows
# nor shrinks a job; a drained node loses its grants at the next tick (within
# the grace) and gets none; resume brings the split back. Pauses and drains are
# kept across an elasticd restart (its state file); a state file that is not
# elasticd's pauses everything, naming the line.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_block_nodes node3 node4
ctl_start

# grants of job J running on node N
grants_on() { squeue -h -t R -n "elastic:$1" -o %N | grep -cx "$2" || true; }

j1=$(ctl_job alice acct_a 1 8 10 5000)
ctl_client alice "$j1"
ctl_wait_split 30 "$j1=8"

out=$(setpriv --reuid=alice --regid="$(id -g alice)" --init-groups \
	env ELASTIC_MUNGE_SOCKET="$ELASTIC_MUNGE_SOCKET" "$CTL_BIN/elastic-ctl" -c "$CTL_HOST:$CTL_PORT" pause 2>&1) &&
	t_fail "alice could pause elastic activity: $out"
[[ "$out" == *"only root or SlurmUser"* ]] || t_fail "alice's pause was refused without saying who may: $out"
t_log "alice may not pause: $out"
out=$(ctl drain nodeX 2>&1) && t_fail "drain of an unknown node accepted: $out"
[[ "$out" == *"no node 'nodeX'"* ]] || t_fail "drain of an unknown node: $out"

out=$(ctl pause) || t_fail "pause failed: $out"
[[ "$out" == "elastic activity: paused"* ]] || t_fail "pause said: $out"
ctl status | grep -q "^elastic activity: paused" || t_fail "status does not say paused: $(ctl status)"
j2=$(ctl_job bob acct_b 1 8 10 5000)
ctl_client bob "$j2"
sleep 5
ctl_wait_split 1 "$j1=8" # not shrunk for the newcomer
grep -q "job $j1: .*release" "$T_DIR/elasticd.log" && t_fail "a release was ordered while paused"
t_log "paused: job $j1 kept its 8 GPUs for 5 s with job $j2 waiting"
out=$(ctl resume) || t_fail "resume failed: $out"
ctl_wait_split 40 "$j1=4" "$j2=4"
t_log "resumed: 4/4 after ${CTL_WAITED}s"

# drain the node where job j1 has grants
node=$(squeue -h -t R -n "elastic:$j1" -o %N | sort | uniq -c | sort -rn | awk 'NR == 1 {print $2}')
[ -n "$node" ] || t_fail "job $j1 has no running grant"
t0=$(date +%s.%N)
out=$(ctl drain "$node") || t_fail "drain $node failed: $out"
t_log "$out"
end=$((SECONDS + 20))
while [ "$(grants_on "$j1" "$node")" != 0 ] || [ "$(grants_on "$j2" "$node")" != 0 ]; do
	[ $SECONDS -lt $end ] || t_fail "grants still on drained $node after 20 s: $(squeue -h -o '%j %T %N %b' | tr '\n' ';')"
	sleep 0.2
done
t_log "drained $node: no grant runs there $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s after the drain"
sleep 3
[ "$(grants_on "$j1" "$node")$(grants_on "$j2" "$node")" = 00 ] || t_fail "a grant started on drained $node"
ctl show | grep -q "drained: $node" || t_fail "show does not list $node: $(ctl show)"
out=$(ctl resume "$node") || t_fail "resume $node failed: $out"
ctl_wait_split 40 "$j1=4" "$j2=4"
t_log "$node resumed: 4/4 again after ${CTL_WAITED}s ($out)"
ctl_alive || t_fail "elasticd died"

# kept across a restart (a crash, an upgrade), as slurmctld keeps a drained node
other=node1
[ "$node" = node1 ] && other=node2
ctl drain "$node" >/dev/null || t_fail "drain $node failed"
ctl pause "$other" >/dev/null || t_fail "pause $other failed"
before=$(ctl show)
ctl_kill9
ctl_start
[ "$(ctl show)" = "$before" ] || t_fail "the restart changed '$before' into '$(ctl show)'"
grep -q "elastic activity as administrators left it ($T_DIR/elasticd.state)" "$T_DIR/elasticd.log" ||
	t_fail "elasticd did not say what it restored"
t_log "kept across a SIGKILL and a start: $before"
# a state file that is not elasticd's: everything paused until an administrator looks
echo "node $node dran" >>"$T_DIR/elasticd.state"
ctl_kill9
ctl_start
ctl show | grep -q "^elastic activity: paused" || t_fail "a broken state file did not pause: $(ctl show)"
grep -q "line 4: 'node $node dran' is not .*elastic activity PAUSED" "$T_DIR/elasticd.log" ||
	t_fail "elasticd did not name the broken line: $(grep -a 'state file' "$T_DIR/elasticd.log")"
t_log "broken state file: $(grep -a 'state file' "$T_DIR/elasticd.log" | tail -n1 | cut -c1-160)"
out=$(ctl resume) || t_fail "resume failed: $out"
grep -q '^# elasticd' "$T_DIR/elasticd.state" && ! grep -q dran "$T_DIR/elasticd.state" ||
	t_fail "resume did not rewrite the state file: $(cat "$T_DIR/elasticd.state")"
ctl_alive || t_fail "elasticd died"
t_log "PASS"
