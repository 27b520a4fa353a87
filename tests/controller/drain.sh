#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/drain.sh: a node drained under an elastic job. elasticd keeps
# planning (no policy error), grows nothing there, and when another job
# arrives the two share the GPUs left; resumed, the node is used again.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_block_nodes node3 node4
trap 'rc=$?; scontrol update NodeName=node2 State=RESUME >/dev/null 2>&1; ctl_cleanup $rc' EXIT
ctl_start

# Job 1's own GPU on node1: what it holds on node2 then is grants alone, which it
# gives back (a job whose own allocation is on the drained node keeps that GPU).
j1=$(CTL_SBATCH_EXTRA="-w node1" ctl_job alice acct_a 1 8 5 5000)
ctl_client alice "$j1"
ctl_wait_split 30 "$j1=8"
scontrol update NodeName=node2 State=DRAIN Reason=elastic-drain-test
t_log "job $j1 holds 8 GPUs; node2 drained"
sleep 3
ctl_wait_split 5 "$j1=8" # its GPUs on node2 stay
grep -q "policy refused" "$T_DIR/elasticd.log" && t_fail "policy refused input with a drained node: $(grep 'policy refused' "$T_DIR/elasticd.log" | head -n1)"

j2=$(ctl_job bob acct_b 1 8 5 5000)
ctl_client bob "$j2"
# Only node1 takes new work: the two jobs end up sharing its 4 GPUs.
end=$((SECONDS + 60))
while :; do
	a=$(ctl_gpus "$j1") b=$(ctl_gpus "$j2")
	on2=$(squeue -h -t R -o '%j %N' | awk -v j="elastic:$j2" '$1 == j && $2 == "node2"' | wc -l)
	[ "$on2" = 0 ] || t_fail "a grant of job $j2 runs on drained node2"
	if [ "$a" -ge 1 ] && [ "$b" -ge 1 ] && [ $((a + b)) = 4 ] &&
		! squeue -h -t R -o '%j %N' | grep -q "^elastic:$j1 node2"; then
		break
	fi
	[ $SECONDS -lt $end ] || t_fail "no split of node1 between $j1 and $j2 (now $a and $b; $(squeue -h -o '%j %T %N %b' | tr '\n' ';'))"
	sleep 0.2
done
t_log "with node2 drained: job $j1 holds $a, job $j2 holds $b GPUs, all on node1"
grep -q "policy refused" "$T_DIR/elasticd.log" && t_fail "policy refused input: $(grep 'policy refused' "$T_DIR/elasticd.log" | head -n1)"

scontrol update NodeName=node2 State=RESUME
ctl_wait_split 60 "$j1=4" "$j2=4"
t_log "node2 resumed: 4/4 again after ${CTL_WAITED}s"
ctl_alive || t_fail "elasticd died"
t_log "PASS"
