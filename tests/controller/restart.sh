#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/restart.sh: elasticd is stateless. SIGKILLed in the middle
# of a shrink (release ordered, not yet acknowledged) and started again, it
# resumes the release from what slurmctld holds and reaches the right split
# with no orphan grant; a job that ends while elasticd is down loses its
# grants as soon as elasticd is back; killed right after submitting grants,
# it submits no duplicates when it is back. After an upgrade, a grant of the
# older elasticd that ignores the signal to end is cancelled 5 s after its
# release.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_block_nodes node3 node4
ctl_start

# No grant may exist that is not of a running elastic job of this test.
no_orphans() { # allowed-jobs...
	local id name st ok j
	while read -r id name st; do
		ok=0
		for j in "$@"; do [ "$name" = "elastic:$j" ] && ok=1; done
		[ $ok = 1 ] || t_fail "orphan grant $id ($name, $st)"
	done < <(squeue -h -o '%i %j %T' | awk '$2 ~ /^elastic:/')
}

j1=$(ctl_job alice acct_a 1 8 30 5000)
ctl_client alice "$j1" -a 3 # acknowledges 3 s after an order
ctl_wait_split 30 "$j1=8"

j2=$(ctl_job bob acct_b 1 8 30 5000)
ctl_client bob "$j2"
ctl_wait_line 20 "$T_DIR/client-$j1.out" "^[0-9.]+ release " "no release order to job $j1"
grant=$(grep -E -m1 "^[0-9.]+ release " "$T_DIR/client-$j1.out" | awk '{print $3}')
ctl_kill9
t_log "killed during the release of grant $grant (not acknowledged yet): $(scontrol show job "$grant" | grep -o 'AdminComment=[^ ]*')"
squeue -h -t R -o %i | grep -qx "$grant" || t_fail "grant $grant ended without elasticd"
sleep 1
ctl_start
ctl_wait_split 40 "$j1=4" "$j2=4"
t_log "restarted elasticd reached 4/4 in ${CTL_WAITED}s"
grep -q "release of grant $grant was ordered before" "$T_DIR/elasticd.log" ||
	t_fail "the restarted elasticd did not resume the release of grant $grant"
grep -q "acknowledged the release of grant $grant" "$T_DIR/elasticd.log" ||
	t_fail "the job's acknowledgement of grant $grant did not reach the new elasticd"
no_orphans "$j1" "$j2"
sleep 2
ctl_wait_split 5 "$j1=4" "$j2=4" # and it stays there
no_orphans "$j1" "$j2"
t_log "no orphan grants; grants: $(squeue -h -o '%j:%b' | grep elastic: | tr '\n' ' ')"

# A job ends while elasticd is down: its grants are orphans until it is back.
ctl_kill9
scancel "$j1"
sleep 2
left=$(ctl_grants "$j1" | grep -c RUNNING || true)
t_log "job $j1 ended while elasticd was down; $left of its grants still run"
t0=$(date +%s.%N)
ctl_start
end=$((SECONDS + 5))
while ctl_grants "$j1" | grep -q RUNNING; do
	[ $SECONDS -lt $end ] || t_fail "grants of ended job $j1 survive the restart: $(ctl_grants "$j1")"
	sleep 0.05
done
t_log "its grants were cancelled $(awk "BEGIN{printf \"%.2f\", $(date +%s.%N) - $t0}")s after the restart"
ctl_wait_split 30 "$j2=8"
no_orphans "$j2"

# Killed right after submitting grants (a grow in flight): the restarted
# elasticd finds them by name and submits no second set.
ctl_kill9
scancel "$j2"
j3=$(ctl_job alice acct_a 1 8 30)
ctl_client alice "$j3"
skip=$(wc -l <"$T_DIR/elasticd.log")
ctl_start
end=$((SECONDS + 20))
until tail -n +"$((skip + 1))" "$T_DIR/elasticd.log" | grep -q "job $j3: growing .* submitted"; do
	[ $SECONDS -lt $end ] || t_fail "no grant submitted for job $j3"
	sleep 0.01
done
ctl_kill9
before=$(ctl_grants "$j3" | wc -l)
t_log "killed right after submitting $before grant(s) for job $j3: $(ctl_grants "$j3" | tr '\n' ';')"
ctl_start
ctl_wait_split 30 "$j3=8"
sleep 2
ctl_wait_split 5 "$j3=8"
[ "$(ctl_grants "$j3" | grep -vc RUNNING)" = 0 ] || t_fail "grants of job $j3 left pending: $(ctl_grants "$j3")"
no_orphans "$j3"
t_log "after the restart job $j3 holds 8 GPUs with $(ctl_grants "$j3" | wc -l) grants, none pending, none duplicated"
# An upgrade: a grant submitted by an older elasticd has a script that
# ignores the signal a released grant now ends on. Once its job released
# it, it is cancelled ENDING_MS (5 s) later; the new grants released with
# it end COMPLETED.
ctl_kill9
scancel -n "elastic:$j3"
end=$((SECONDS + 20))
while [ -n "$(ctl_grants "$j3")" ]; do
	[ $SECONDS -lt $end ] || t_fail "grants of job $j3 did not end: $(ctl_grants "$j3")"
	sleep 0.2
done
t_upgrade=$(date +%Y-%m-%dT%H:%M:%S)
# (a user may not name a job elastic:..., root may rename it)
old=$(t_sbatch alice -A acct_a -J old-grant -w node2 --gres=gpu:1 -N1 -n1 -o /dev/null \
	--wrap 'while sleep 10; do :; done')
end=$((SECONDS + 30))
until [ "$(t_job_state "$old")" = RUNNING ]; do
	[ $SECONDS -lt $end ] || t_fail "the old-style grant $old did not start"
	sleep 0.2
done
scontrol update JobId="$old" Name="elastic:$j3" AdminComment="elastic-grant:job=$j3" ||
	t_fail "cannot make job $old a grant of job $j3"
ctl_start
ctl_wait_split 30 "$j3=8"
on2=$(ctl_grants "$j3" | awk '$3 == "node2" {print $1}' | paste -sd, -)
ctl drain node2 >/dev/null || t_fail "elastic-ctl drain node2 failed"
ctl_wait_line 40 "$T_DIR/elasticd.log" "job $j3: cancelled grant $old \(its work done, it did not end on its signal\)" \
	"the old-style grant $old was not cancelled after its release"
acked=$(grep -aEo "acknowledged the release of grant $old after [0-9]+ ms" "$T_DIR/elasticd.log" | tail -n1)
[ -n "$acked" ] || t_fail "job $j3 did not acknowledge the release of grant $old"
# The log's times: from the acknowledgement to the cancel
gap=$(awk -v g="$old" '
	function ms(l) { match(l, /[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\.[0-9]+/); split(substr(l, RSTART, RLENGTH), t, ":"); return (t[1] * 3600 + t[2] * 60 + t[3]) * 1000 }
	$0 ~ "acknowledged the release of grant " g " " { a = ms($0) }
	$0 ~ "cancelled grant " g " " { c = ms($0) }
	END { printf "%d", c - a }' "$T_DIR/elasticd.log")
[ "$gap" -ge 4500 ] && [ "$gap" -le 15000 ] ||
	t_fail "grant $old was cancelled $gap ms after its release was acknowledged, not 5-15 s"
end=$((SECONDS + 30))
# (the grants node2 held when it was drained)
acct() { sacct -X -n -P -S "$t_upgrade" -j "$on2" -o JobID,NodeList,State; }
until [ -n "$(acct)" ] && ! acct | grep -qE '\|(RUNNING|PENDING|COMPLETING)$'; do
	[ $SECONDS -lt $end ] || t_fail "sacct does not show node2's grants ended: $(acct | paste -sd' ' -)"
	sleep 1
done
ctl resume node2 >/dev/null || t_fail "elastic-ctl resume node2 failed"
acct | grep -q "^$old|node2|CANCELLED" || t_fail "the old-style grant's record: $(acct | grep "^$old|")"
[ -z "$(acct | grep -v "^$old|" | grep -v '|COMPLETED$')" ] ||
	t_fail "new grants released with it did not end COMPLETED: $(acct | paste -sd' ' -)"
t_log "upgrade: the old-style grant $old was cancelled $gap ms after its job released it; on node2 in sacct: $(acct | paste -sd' ' -)"
ctl_alive || t_fail "elasticd died"
t_log "PASS"
