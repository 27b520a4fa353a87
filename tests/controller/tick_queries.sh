#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/tick_queries.sh: a tick asks slurmctld about elasticd's
# grants and elastic jobs in one job-state RPC and loads again only a record
# that changed (at site size, loading each of them every tick made the tick
# 5x slower). One elastic job 1-4 with one GPU free on each of the 4 nodes
# (plain jobs hold the other 3): its leader and three 1-GPU grants.
#   - Over 10 s of ticks (TickSeconds=1; hints from job_submit/elastic, so
#     nothing is polled between ticks) slurmctld answers no more single-job
#     loads than the grant scripts' own (sdiag, all users) and the job's
#     record read again once 10 s old; a load per grant and job would be
#     four a tick.
#   - An update of the job (its tag's MAX 4 -> 2 by scontrol) is acted on
#     within 3 s: the hint makes elasticd read that record again.
#   - A grant cancelled by hand is seen ended and replaced (the job holds 4
#     GPUs again, in a new grant) once MAX is back to 4.
#   - Six new plain jobs are read once each, not at every tick while
#     younger than 5 s; a plain job tagged by hand right after sbatch is
#     still seen as elastic within 3 s.
#   - When the job ends, neither it nor its grants are loaded again.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
scontrol show config | grep -Eq '^JobSubmitPlugins += .*elastic' ||
	t_skip "job_submit/elastic is not loaded in this cluster"
ctl_conf PolicyMode=priority TickSeconds=1 "MetricsAddress=127.0.0.1:0"
mapfile -t nodes < <(sinfo -h -N -o %N | sort -u)
[ "${#nodes[@]}" = 4 ] || t_skip "needs 4 nodes (has ${#nodes[@]})"
ctl_block_gpus 3 "${nodes[@]}"
ctl_start
ticks() { ctl_scrape | sed -n 's/^slurm_elastic_tick_seconds_count //p'; }
sdiag_count() { # message type
	sdiag | awk -v t="$1" '/^Remote Procedure Call statistics by message type/ { m = 1 }
		m && $1 == t { for (i = 1; i <= NF; i++) if ($i ~ /^count:/) print substr($i, 7); exit }'
}

j=$(ctl_job alice acct_a 1 4 10 3000)
ctl_client alice "$j"
ctl_wait_split 60 "$j=4"
grants=$(squeue -h -n "elastic:$j" -t R -o %i | sort)
[ "$(wc -l <<<"$grants")" = 3 ] || t_fail "job $j holds 4 GPUs in $(wc -l <<<"$grants") grants, not 3"
end=$((SECONDS + 30))
until grep -q "hints arrive from job_submit/elastic" "$T_DIR/elasticd.log"; do
	[ $SECONDS -lt $end ] || t_fail "no hint from job_submit/elastic reached elasticd in 30 s"
	sleep 0.2
done
t_log "job $j: 4 GPUs, grants $(tr '\n' ' ' <<<"$grants")after ${CTL_WAITED}s"

# (jobs younger than 5 s are read each tick until elasticd knows they are
# neither elastic nor grants: the plain jobs too)
sleep 6
t0=$(ticks)
sdiag --reset >/dev/null
sleep 10
loads=$(sdiag_count REQUEST_JOB_INFO_SINGLE) states=$(sdiag_count REQUEST_JOB_STATE)
n=$(($(ticks) - t0))
# each grant script asks squeue about the job every 10 s (one load or two in
# 10 s); the job's record is read again once 10 s old (once or twice)
limit=$((2 * 3 + 2))
t_log "10 s: $n ticks, ${loads:-0} single-job loads (at most $limit), ${states:-0} job-state RPCs"
# (with a load per tick of the job alone, at least 8 + 3)
[ "$n" -ge 8 ] || t_fail "only $n ticks in 10 s at TickSeconds=1"
[ "${loads:-0}" -le "$limit" ] || t_fail "${loads} single-job loads in $n ticks: records are loaded each tick"

tag=$(ctl_tag "$j")
t_start=$(date +%s.%N)
scontrol update JobId="$j" AdminComment="${tag/max=4/max=2}" || t_fail "cannot update job $j's tag"
ctl_wait_split 10 "$j=2"
acted=$(sed -n "s/^\[\([^]]*\)\] elasticd: job $j: shrinking 4 -> 2 GPUs.*/\1/p" "$T_DIR/elasticd.log" | head -n1)
[ -n "$acted" ] || t_fail "no 'job $j: shrinking 4 -> 2' in elasticd's log"
dt=$(awk -v a="$t_start" -v b="$(date -d "$acted" +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
t_log "MAX 4 -> 2 by scontrol: elasticd ordered the shrink after $dt s, 2 GPUs after ${CTL_WAITED}s"
awk -v d="$dt" 'BEGIN { exit !(d < 3) }' || t_fail "the update was acted on after $dt s (a kept record read again only when old?)"

scontrol update JobId="$j" AdminComment="$tag" || t_fail "cannot update job $j's tag back"
ctl_wait_split 10 "$j=4"
grants=$(squeue -h -n "elastic:$j" -t R -o %i | sort)
g=$(head -n 1 <<<"$grants")
scancel "$g" || t_fail "cannot cancel grant $g"
end=$((SECONDS + 30))
while [ "$(squeue -h -j "$g" -t R,CG -o %i 2>/dev/null)" = "$g" ]; do
	[ $SECONDS -lt $end ] || t_fail "grant $g still there 30 s after scancel"
	sleep 0.1
done
ctl_wait_split 30 "$j=4"
now=$(squeue -h -n "elastic:$j" -t R -o %i | sort)
grep -qx "$g" <<<"$now" && t_fail "grant $g still counted after its end"
t_log "grant $g cancelled: job $j back to 4 GPUs after ${CTL_WAITED}s, grants $(tr '\n' ' ' <<<"$now")"

# While hints arrive, a new plain job is read once, not at each tick while
# it is younger than 5 s: a tag added to it later comes with a hint.
sleep 2
sdiag --reset >/dev/null
for _ in 1 2 3 4 5 6; do
	t_sbatch bob -A acct_b -J plain -N1 -n1 --wrap 'sleep 300' >/dev/null
done
sleep 8
loads=$(sdiag_count REQUEST_JOB_INFO_SINGLE)
t_log "6 plain jobs submitted: ${loads:-0} single-job loads in 8 s (at most $((limit + 12)); read at each tick while young, at least 30 more)"
[ "${loads:-0}" -le $((limit + 12)) ] || t_fail "${loads} single-job loads in 8 s: young plain jobs are read at each tick"

# A tag added by hand right after sbatch (job_submit/elastic refuses it once
# its job cache holds the job as plain, so a try may have to be repeated) is
# still seen: the job's first read finds it, or the update's hint names it.
p=
for _ in 1 2 3; do
	p=$(t_sbatch bob -A acct_b -J tagged -N1 -n1 --gres=gpu:1 --wrap 'sleep 3000')
	t_tag=$(date +%s.%N)
	scontrol update JobId="$p" AdminComment="elastic:min=1,max=2,grace=10,sizes=any,weight=1" \
		2>/dev/null && break
	scancel "$p"
	p=
done
[ -n "$p" ] || t_fail "three plain jobs could not be tagged right after sbatch"
end=$((SECONDS + 10))
until grep -q "elasticd: job $p: elastic job of" "$T_DIR/elasticd.log"; do
	[ $SECONDS -lt $end ] || t_fail "job $p, tagged by hand, not seen as elastic in 10 s"
	sleep 0.1
done
seen=$(sed -n "s/^\[\([^]]*\)\] elasticd: job $p: elastic job of.*/\1/p" "$T_DIR/elasticd.log" | head -n1)
dt=$(awk -v a="$t_tag" -v b="$(date -d "$seen" +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
t_log "job $p tagged by hand after sbatch: elastic in elasticd's eyes after $dt s"
awk -v d="$dt" 'BEGIN { exit !(d < 3) }' || t_fail "the hand tag was seen after $dt s"

# A job that ends takes its grants with it: the job-state RPC says each
# ended, and elasticd reads none of them again. (The test looks with the
# whole list only: squeue -j would be a single-job load itself.)
scancel "$p"
sleep 3
sdiag --reset >/dev/null
scancel "$j"
end=$((SECONDS + 30))
while squeue -h -o '%i %j' | grep -Eq "^$j |elastic:$j\$"; do
	[ $SECONDS -lt $end ] || t_fail "job $j or its grants still there 30 s after scancel"
	sleep 0.2
done
sleep 3
loads=$(sdiag_count REQUEST_JOB_INFO_SINGLE)
t_log "job $j and its 3 grants ended: ${loads:-0} single-job loads (at most 3, the grant scripts' own; each read again at its end, 4 more)"
[ "${loads:-0}" -le 3 ] || t_fail "${loads} single-job loads as a job and its grants ended: ended records read again"
t_log "PASS"
