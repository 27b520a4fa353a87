#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/giveback_ctld_down.sh: a grant its job gives back while
# slurmctld is down (the job's launch found no step there, as after a
# slurmctld restart) is cancelled once slurmctld answers, and the job gets a
# grant in its place. A stand-in job (a proto-client, 1-2 GPUs) holds its own
# GPU and one grant on node1; slurmctld stops; once elasticd has seen it
# down, the stand-in gives the grant back; slurmctld starts again 3 s later.
# elasticd says the cancel waits for slurmctld, cancels the grant within 15 s
# of its answer, and the job holds 2 GPUs again on a new grant; elasticd
# stays up.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
t_ctld_files
ctl_block_nodes node2 node3 node4
ctl_block_gpus 2 node1 # 2 free GPUs, both on node1
ctl_start

jc=$(ctl_job alice acct_a 1 2 30)
ctl_client alice "$jc" -b "$T_DIR/giveback"
ctl_wait_split 30 "$jc=2"
g=$(squeue -h -n "elastic:$jc" -t R -o %i)
[[ "$g" =~ ^[0-9]+$ ]] || t_fail "one running grant of job $jc expected, found '$g'"
ctl_wait_line 10 "$T_DIR/client-$jc.out" " grant $g " "the stand-in was not told of grant $g"
t_log "job $jc holds 2 GPUs: its own and grant $g"

log=$T_DIR/elasticd.log
le=$(($(wc -l <"$log") + 1))
# (run by t_ctld_restart once slurmctld is down)
give_back() {
	local end=$((SECONDS + 10))
	until tail -n +"$le" "$log" | grep -aq "no snapshot of slurmctld"; do
		[ $SECONDS -lt $end ] || t_fail "elasticd did not see slurmctld down within 10 s"
		sleep 0.1
	done
	touch "$T_DIR/giveback"
	end=$((SECONDS + 10))
	until tail -n +"$le" "$log" | grep -aq "job $jc: gives back grant $g"; do
		[ $SECONDS -lt $end ] || t_fail "elasticd did not hear grant $g given back within 10 s"
		sleep 0.1
	done
	rm -f "$T_DIR/giveback"
}
T_CTLD_DOWN_HOOK=give_back t_ctld_restart 3
tail -n +"$le" "$log" | grep -aq "job $jc: grant $g is cancelled once slurmctld answers" ||
	t_fail "elasticd does not say grant $g waits for slurmctld: $(tail -n +"$le" "$log" | grep -a -m2 "grant $g")"

end=$((SECONDS + 15))
until tail -n +"$le" "$log" | grep -aq "job $jc: cancelled grant $g (given back by the job: unusable)"; do
	[ $SECONDS -lt $end ] || {
		tail -n 20 "$log" >&2
		t_fail "grant $g, given back while slurmctld was down, not cancelled 15 s after it answered ($(squeue -h -j "$g" -o %T 2>/dev/null || echo gone))"
	}
	sleep 0.2
done
# seconds from elasticd's first snapshot after slurmctld's return to the cancel
stamp() { tail -n +"$le" "$log" | grep -a -m1 "$1" | sed 's/^\[\([^]]*\)\].*/\1/'; }
after=$(python3 -c 'import sys, datetime as d; f = lambda s: d.datetime.fromisoformat(s).timestamp(); print("%.1f" % (f(sys.argv[2]) - f(sys.argv[1])))' \
	"$(stamp "slurmctld answers again")" "$(stamp "cancelled grant $g ")")
ctl_wait_split 30 "$jc=2"
g2=$(squeue -h -n "elastic:$jc" -t R -o %i)
[ -n "$g2" ] && [ "$g2" != "$g" ] || t_fail "job $jc holds 2 GPUs without a new grant (grants: '$g2')"
ctl_alive || t_fail "elasticd died"
t_log "PASS: grant $g given back while slurmctld was down, cancelled ${after} s after elasticd saw it answer; job $jc at 2 again on grant $g2 ($CTL_WAITED s later)"
