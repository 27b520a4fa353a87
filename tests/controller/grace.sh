#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/grace.sh: a job that never acknowledges a release loses the
# grant when its grace time ends (not before, and at most 2 s after); one that
# refuses loses it the same way.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_block_nodes node3 node4
ctl_start
GRACE=4

now() { date +%s.%N; }
running() { squeue -h -t R -o %i | grep -qx "$1"; }

# Wait for the next release order in a client's output after line N; then
# time the grant's end against it. Sets DT.
time_release() { # client-file skip-lines what
	local line rel_t grant end
	end=$((SECONDS + 20))
	until line=$(tail -n +"$(($2 + 1))" "$1" | grep -E -m1 "^[0-9.]+ release "); do
		[ $SECONDS -lt $end ] || t_fail "$3: no release order"
		sleep 0.05
	done
	rel_t=${line%% *}
	grant=$(echo "$line" | awk '{print $3}')
	t_log "$3: release of grant $grant ordered: $line"
	scontrol show job "$grant" | grep -o 'AdminComment=[^ ]*' | sed 's/^/    /'
	end=$((SECONDS + GRACE + 10))
	while running "$grant"; do
		[ $SECONDS -lt $end ] || t_fail "$3: grant $grant still running $((GRACE + 10)) s after the order"
		sleep 0.05
	done
	DT=$(awk "BEGIN{printf \"%.2f\", $(now) - $rel_t}")
	t_log "$3: grant $grant gone ${DT}s after the release order (grace ${GRACE}s)"
	awk "BEGIN{exit !($DT >= $GRACE - 0.2)}" || t_fail "$3: grant cancelled before the grace time (${DT}s < ${GRACE}s)"
	awk "BEGIN{exit !($DT <= $GRACE + 2)}" || t_fail "$3: forced release took ${DT}s > grace + 2 s"
	grep -q "grant $grant (grace deadline passed: forced)" "$T_DIR/elasticd.log" ||
		t_fail "$3: elasticd did not log a forced release of grant $grant"
}

j1=$(ctl_job alice acct_a 1 8 "$GRACE" 5000)
ctl_client alice "$j1" -N
ctl_wait_split 30 "$j1=8"
t_log "job $j1 (never acknowledges) holds 8 GPUs"

j2=$(ctl_job bob acct_b 1 8 "$GRACE" 5000)
ctl_client bob "$j2"
time_release "$T_DIR/client-$j1.out" 0 "silent job"
ctl_wait_split 30 "$j1=4" "$j2=4"
t_log "4/4 after the forced release"

# Same job now refuses (a new client says hello again on a new connection).
for p in $CTL_CLIENTS; do
	tr '\0' ' ' </proc/"$p"/cmdline 2>/dev/null | grep -q -- "-j $j1 " && kill "$p"
done
skip=$(wc -l <"$T_DIR/client-$j1.out")
ctl_client alice "$j1" -R
ctl_wait_line 10 "$T_DIR/client-$j1.out" "hello job=$j1" "refusing client did not connect"
sleep 1.5
scontrol update JobId="$j2" Priority=10000
time_release "$T_DIR/client-$j1.out" "$skip" "refusing job"
grep -q "^[0-9.]* refused grant=" "$T_DIR/client-$j1.out" || t_fail "the client did not refuse"
grep -q "refused the release of grant" "$T_DIR/elasticd.log" || t_fail "elasticd did not log the refusal"
ctl_wait_split 30 "$j1=3" "$j2=5"
ctl_alive || t_fail "elasticd died"
t_log "PASS"
