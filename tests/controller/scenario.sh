#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/scenario.sh: the reference scenario on 2 nodes x 4 GPUs with
# elasticd and proto-clients standing in for the jobs: job 1 alone -> 8; job 2
# arrives -> 4/4; job 2's priority 10000 vs 5000 -> 5/3 (latency of each
# priority flip measured, median printed; no job dips below both its old and
# new size on the way: grants are released exactly); job 1 ends -> its grants go at once
# and job 2 grows to 8. Allocations are read from squeue, never from elasticd.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_conf PolicyMode=priority ${CTL_EXTRA_CONF:-}
ctl_block_nodes node3 node4
ctl_start

j1=$(ctl_job alice acct_a 1 8 10 5000)
ctl_client alice "$j1"
ctl_wait_split 30 "$j1=8"
t_log "job 1 ($j1) alone: 8 GPUs after ${CTL_WAITED}s; its grants:"
ctl_grants "$j1" | sed 's/^/    /'
[ "$(ctl_grants "$j1" | grep -c RUNNING)" -ge 1 ] || t_fail "no grant of job $j1 in squeue"
ctl_wait_line 5 "$T_DIR/client-$j1.out" "^[0-9.]+ grant " "job $j1 was not told of its grants"

# A held job and a deferred one cannot start whatever is freed: elasticd
# leaves them out of the split (job 1 keeps 8 over several ticks).
jh=$(CTL_SBATCH_EXTRA=-H ctl_job bob acct_b 1 8 10)
jd=$(CTL_SBATCH_EXTRA=--begin=now+3600 ctl_job bob acct_b 1 8 10)
for _ in 1 2 3 4 5 6 7 8 9 10 11 12; do
	sleep 0.25
	[ "$(ctl_gpus "$j1")" = 8 ] || t_fail "job $j1 shrank to $(ctl_gpus "$j1") for a held ($jh) or deferred ($jd) job"
done
scancel "$jh" "$jd"
t_log "held job $jh and deferred job $jd: job $j1 kept 8 GPUs for 3 s"

j2=$(ctl_job bob acct_b 1 8 10 5000)
ctl_client bob "$j2"
ctl_wait_split 40 "$j1=4" "$j2=4"
t_log "job 2 ($j2) arrived: 4/4 after ${CTL_WAITED}s"
ctl_wait_line 1 "$T_DIR/client-$j1.out" "^[0-9.]+ release " "job $j1 got no release order"
ctl_wait_line 1 "$T_DIR/client-$j1.out" "^[0-9.]+ ack " "job $j1 acknowledged nothing"

# The status tool agrees with squeue (at its next tick at the latest).
end=$((SECONDS + 4))
while :; do
	line=$(ctl status -p -j "$j2")
	IFS='|' read -r sj su smin smax starget sgpus sstate _ sconn _ _ <<<"$line"
	[ "$su" = bob ] && [ "$smin" = 1 ] && [ "$smax" = 8 ] && [ "$starget" = 4 ] &&
		[ "$sgpus" = 4 ] && [ "$sstate" = steady ] && [ "$sconn" = 1 ] && break
	[ $SECONDS -lt $end ] || t_fail "elastic-ctl status for job $j2 is '$line'"
	sleep 0.2
done
ctl status

lat=""
for round in 1 2 3 4 5; do
	t0=$(date +%s.%N)
	scontrol update JobId="$j2" Priority=10000
	ctl_wait_split 20 "$j1=3" "$j2=5"
	t_log "round $round: priority 10000 vs 5000 -> 5/3 in force after ${CTL_WAITED}s"
	[ "${CTL_MIN[$j1]}" -ge 3 ] && [ "${CTL_MIN[$j2]}" -ge 4 ] ||
		t_fail "a job dipped on the way to 5/3 (fewest GPUs: $j1 ${CTL_MIN[$j1]}, $j2 ${CTL_MIN[$j2]})"
	lat="$lat $CTL_WAITED"
	scontrol update JobId="$j2" Priority=5000
	ctl_wait_split 20 "$j1=4" "$j2=4"
	t_log "round $round: back to equal priorities -> 4/4 after ${CTL_WAITED}s"
	[ "${CTL_MIN[$j1]}" -ge 3 ] && [ "${CTL_MIN[$j2]}" -ge 4 ] ||
		t_fail "a job dipped on the way to 4/4 (fewest GPUs: $j1 ${CTL_MIN[$j1]}, $j2 ${CTL_MIN[$j2]})"
	lat="$lat $CTL_WAITED"
done
med=$(printf '%s\n' $lat | ctl_median)
t_log "priority update to new split in force: median ${med}s over 10 updates (${lat# })"
awk "BEGIN{exit !($med <= 5)}" || t_fail "median latency ${med}s is over 5 s"

scontrol update JobId="$j2" Priority=10000
ctl_wait_split 20 "$j1=3" "$j2=5"
t_log "5/3 again; now job 1 ends"
t0=$(date +%s.%N)
scancel "$j1"
end=$((SECONDS + 4))
while ctl_grants "$j1" | grep -q RUNNING; do
	[ $SECONDS -lt $end ] || t_fail "grants of ended job $j1 still run: $(ctl_grants "$j1")"
	sleep 0.05
done
t_log "job 1's grants ended $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t0}")s after scancel of job 1"
ctl_wait_split 30 "$j2=8"
t_log "job 2 alone: 8 GPUs after ${CTL_WAITED}s"
ctl_alive || t_fail "elasticd died"
t_log "PASS"
