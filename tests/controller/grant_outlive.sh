#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/grant_outlive.sh: a grant never outlives its job, even while
# elasticd is down: each grant's time limit ends no later than its lead's, and
# when the lead ends with elasticd stopped, the grants end by themselves
# within their poll interval (10 s) plus slurmctld's reaction.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_block_nodes node3 node4

CTL_SBATCH_EXTRA="-t 30" # the lead may run 30 minutes
j1=$(ctl_job alice acct_a 1 8 30)
end=$((SECONDS + 30))
until [ "$(t_job_state "$j1")" = RUNNING ]; do
	[ $SECONDS -lt $end ] || t_fail "job $j1 did not start"
	sleep 0.2
done
sleep 2 # grants start seconds after their lead: a copy of its limit would end later
ctl_start
ctl_client alice "$j1"
ctl_wait_split 30 "$j1=8"
t_log "job $j1 grew to 8 GPUs in ${CTL_WAITED}s: $(ctl_grants "$j1" | tr '\n' ';')"

# End time of a job, in seconds since the epoch.
end_of() { date -d "$(scontrol show job "$1" | grep -o 'EndTime=[^ ]*' | cut -d= -f2)" +%s; }
lead_end=$(end_of "$j1")
for g in $(ctl_grants "$j1" | awk '{print $1}'); do
	ge=$(end_of "$g")
	[ "$ge" -le "$lead_end" ] ||
		t_fail "grant $g ends at $(date -d @"$ge" +%T), after its job $j1 ($(date -d @"$lead_end" +%T))"
done
t_log "every grant ends no later than job $j1 ($(date -d @"$lead_end" +%T))"

ctl_kill9
scancel "$j1"
t0=$(date +%s.%N)
end=$((SECONDS + 30))
while ctl_grants "$j1" | grep -q .; do
	[ $SECONDS -lt $end ] || t_fail "grants of job $j1 still there 30 s after it ended, elasticd down: $(ctl_grants "$j1" | tr '\n' ';')"
	sleep 0.2
done
t_log "PASS: with elasticd down, the grants of ended job $j1 ended by themselves $(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}") s after it"
