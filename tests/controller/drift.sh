#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/drift.sh: stable allocations through the real elasticd. Two
# jobs share 7 GPUs (node3 and node4 blocked, one GPU of node2 too) at 4/3; their
# priorities, 5001 and 5000, swap six times, each swap given time for two
# decisions (CoolDown=0, Hysteresis=1): no GPU moves (squeue polled all along)
# and elasticd orders no grow or shrink (largest remainder alone would move a
# GPU at every swap). Allocations are read from squeue.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_conf PolicyMode=priority
ctl_block_nodes node3 node4
b=$(sbatch --parsable -J blocker -w node2 --gres=gpu:1 -N1 -n1 -o /dev/null --wrap 'sleep 3000') ||
	t_fail "1-GPU blocker on node2"
CTL_BLOCKERS="$CTL_BLOCKERS $b"
end=$((SECONDS + 20))
until [ "$(t_job_state "$b")" = RUNNING ]; do
	[ $SECONDS -lt $end ] || t_fail "1-GPU blocker on node2 did not start"
	sleep 0.2
done
ctl_start

j1=$(ctl_job alice acct_a 1 7 10 5001)
ctl_client alice "$j1"
ctl_wait_split 30 "$j1=7"
t_log "job 1 ($j1) alone: 7 GPUs after ${CTL_WAITED}s"

j2=$(ctl_job bob acct_b 1 7 10 5000)
ctl_client bob "$j2"
# Shares 3.5005 / 3.4995: job 1 shrinks to its step (4), job 2 starts at 3.
ctl_wait_split 40 "$j1=4" "$j2=3"
t_log "job 2 ($j2) arrived: 4/3 after ${CTL_WAITED}s"
sleep 2 # settled: the release acknowledged, the grant gone

moves() { grep -Ec "job ($j1|$j2): (grow|shrink) " "$T_DIR/elasticd.log"; }
m0=$(moves)
for swap in 1 2 3 4 5 6; do
	if [ $((swap % 2)) = 1 ]; then p1=5000 p2=5001; else p1=5001 p2=5000; fi
	scontrol update JobId="$j1" Priority=$p1
	scontrol update JobId="$j2" Priority=$p2
	end=$((SECONDS + 3)) # a decision on the event, then ticks every second
	while [ $SECONDS -lt $end ]; do
		g1=$(ctl_gpus "$j1") g2=$(ctl_gpus "$j2")
		[ "$g1/$g2" = 4/3 ] || t_fail "swap $swap ($p1 vs $p2): GPUs moved: $g1/$g2 (squeue), was 4/3"
		sleep 0.2
	done
	t_log "swap $swap: priorities $p1 vs $p2: still 4/3"
done
m1=$(moves)
[ "$m1" = "$m0" ] || t_fail "elasticd ordered $((m1 - m0)) grows/shrinks during the swaps: $(grep -E "job ($j1|$j2): (grow|shrink) " "$T_DIR/elasticd.log" | tail -n 4)"
t_log "6 swaps of 5001 vs 5000: 0 GPUs moved, 0 grow/shrink orders"

# Really short still moves: job 2 to 10000 (shares 2.33 / 4.67): 3/4.
scontrol update JobId="$j2" Priority=10000
ctl_wait_split 20 "$j1=3" "$j2=4"
t_log "job 2 to 10000: 3/4 after ${CTL_WAITED}s"
ctl_alive || t_fail "elasticd died"
t_log "PASS"
