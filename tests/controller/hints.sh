#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/hints.sh: job_submit/elastic, inside slurmctld, tells
# elasticd when an elastic job is updated (a UDP hint) and that it is alive,
# so elasticd stops polling its elastic jobs between ticks and still acts on a
# priority update at once. With TickSeconds=20, two elastic jobs 5/3 on 8
# GPUs: the hints are seen (log line), 10 s between ticks cost slurmctld no
# job load by SlurmUser beyond the plugin's own (sdiag), elasticd acts on a
# priority update within 1.5 s (the next tick is up to 20 s away), and
# datagrams that are not hints are ignored with one log line.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
scontrol show config | grep -Eq '^JobSubmitPlugins += .*elastic' ||
	t_skip "job_submit/elastic is not loaded in this cluster"
ctl_conf PolicyMode=priority TickSeconds=20
ctl_block_nodes node3 node4
ctl_start

j1=$(ctl_job alice acct_a 1 8 10 5000)
ctl_client alice "$j1"
j2=$(ctl_job bob acct_b 1 8 10 3000)
ctl_client bob "$j2"
ctl_wait_split 60 "$j1=5" "$j2=3"
t_log "jobs $j1 (5000) and $j2 (3000): 5/3 after ${CTL_WAITED}s"
end=$((SECONDS + 30))
until grep -q "hints arrive from job_submit/elastic" "$T_DIR/elasticd.log"; do
	[ $SECONDS -lt $end ] || t_fail "no hint from job_submit/elastic reached elasticd in 30 s"
	sleep 0.2
done
t_log "elasticd: $(grep -o 'hints arrive from job_submit/elastic.*' "$T_DIR/elasticd.log" | head -n1)"

# Between ticks: SlurmUser's single-job loads over 10 s. The plugin loads
# only new jobs (none here); polling the two elastic jobs would be about 80.
slurm_user=$(scontrol show config | sed -n 's/^SlurmUser *= *\([^(]*\)(.*/\1/p')
sleep 2
sdiag --reset >/dev/null
sleep 10
loads=$(sdiag | awk '/^Remote Procedure Call statistics by message type/ { m = 1 }
	m && $1 == "REQUEST_JOB_INFO_SINGLE" { for (i = 1; i <= NF; i++) if ($i ~ /^count:/) print substr($i, 7); exit }')
byuser=$(sdiag | awk -v u="$slurm_user" '/statistics by user/ { m = 1 } m && $1 == u { for (i = 1; i <= NF; i++) if ($i ~ /^count:/) print substr($i, 7); exit }')
t_log "10 s between ticks: ${loads:-0} single-job loads in all, ${byuser:-0} RPCs of $slurm_user; the most frequent RPCs: $(sdiag | awk '/statistics by message type/ { m = 1; next } /statistics by user/ { m = 0 } m && /count:/ { for (i = 1; i <= NF; i++) if ($i ~ /^count:/) print substr($i, 7), $1 }' | sort -rn | head -n 4 | tr '\n' ' ')"
[ "${loads:-0}" -le 12 ] || t_fail "${loads} single-job loads in 10 s: elasticd still polls its elastic jobs"

# A priority update: elasticd acts on it at once, long before the next tick.
t0=$(date +%s.%N)
scontrol update JobId="$j2" Priority=9000 || t_fail "cannot raise job $j2's priority"
ctl_wait_split 10 "$j1=3" "$j2=5"
acted=$(sed -n "s/^\[\([^]]*\)\] elasticd: job $j1: shrinking 5 -> 3 GPUs.*/\1/p" "$T_DIR/elasticd.log" | head -n1)
[ -n "$acted" ] || t_fail "no 'job $j1: shrinking 5 -> 3' in elasticd's log"
dt=$(awk -v a="$t0" -v b="$(date -d "$acted" +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
t_log "job $j2's priority 3000 -> 9000: elasticd acted after $dt s, 3/5 in Slurm after ${CTL_WAITED}s (TickSeconds=20)"
awk -v d="$dt" 'BEGIN { exit !(d < 1.5) }' || t_fail "elasticd acted on the priority update after $dt s: no hint"

# Not hints: counted, said once, nothing else happens.
for _ in 1 2 3; do
	printf 'GET / HTTP/1.0\r\n\r\n' >"/dev/udp/$CTL_HOST/$CTL_PORT"
done
sleep 0.3
[ "$(grep -c 'a datagram on the hint port is not a hint' "$T_DIR/elasticd.log")" = 1 ] ||
	t_fail "datagrams that are not hints: expected one log line"
ctl_alive || t_fail "elasticd died on datagrams that are not hints"
[ "$(ctl_gpus "$j1")/$(ctl_gpus "$j2")" = 3/5 ] || t_fail "the split moved after the bad datagrams"
t_log "PASS"
