#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/throughput.sh: PolicyMode=throughput with real training.
# Two C trainers whose scaling differs by construction: "lin" spends 12 ms per
# sample, split among its ranks (near-linear: a step's 770 ms of work dwarfs the
# tens of ms a loaded host adds to each commit), "sat" 200 ms a step whatever
# its size and 0.4 ms per sample (a second GPU adds 0.06 of one). On node1's
# 4 GPUs (node2 blocked) both run at 2; node2's 4 GPUs come free, both are
# tried at 4 (one doubling past what each was measured at), and once measured
# there elasticd gives sat 1 GPU (its floor of half its fair share would gain
# under ThroughputMinGain=30) and lin 7 (5 or 6 when load slows it: still
# more than fairshare's 4). elasticd's log explains the shrink
# in efficiencies, its metrics show the rates measured per size and
# elastic-ctl status the efficiency; a restarted elasticd reads the models
# back and keeps the split. Each job finishes with its static run's model
# and each sample once per epoch.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_need_trainer
t_ompi_env
ctl_conf PolicyMode=throughput CoolDown=2 "MetricsAddress=127.0.0.1:0"
ctl_block_nodes node3 node4
ctl_block_gpus 4 node2
blocker2=${CTL_BLOCKERS##* }

targs="--samples 1024 --global-batch 64"
ctl_references "$targs" 12 16
ctl_start
# The scrape's lines that start with PREFIX (fixed string); 1 if none.
metric() { # prefix
	ctl_scrape | grep -F "$1" | grep -v '^#'
}
job() { # name user account epochs sleeps
	ctl_train_job "$1" "$2" "$3" "--epochs $4 $targs $5 --compare $T_DIR/ref-$4.model" "" \
		--elastic-gpus=1-8 --elastic-grace=30 -N1 -n1
}
lin=$(job lin alice acct_a 16 "--sample-sleep 12000")
sat=$(job sat bob acct_b 12 "--step-sleep 200000 --sample-sleep 400")
ctl_wait_split 60 "$lin=2" "$sat=2"
t_log "node1's 4 GPUs: lin ($lin) 2, sat ($sat) 2"
# both measured at 2 before node2's GPUs come free
m=slurm_elastic_job_measured_samples_per_second
end=$((SECONDS + 30))
until metric "$m{jobid=\"$sat\",user=\"bob\",gpus=\"2\"}" >/dev/null &&
	metric "$m{jobid=\"$lin\",user=\"alice\",gpus=\"2\"}" >/dev/null; do
	[ $SECONDS -lt $end ] || t_fail "no rate measured at 2 GPUs in 30 s: $(metric "$m" | paste -sd';' -)"
	sleep 0.5
done
scancel "$blocker2"
t0=$SECONDS
# lin takes what sat does not use as far as each GPU adds 30 % of one: 7
# alone, 6 or 5 when the other lanes' load slows its larger worlds (fairshare
# would give 4 / 4)
split() { echo "$(ctl_gpus "$lin")/$(ctl_gpus "$sat")"; }
end=$((SECONDS + 90))
until [[ "$(split)" =~ ^[567]/1$ ]]; do
	[ $SECONDS -lt $end ] || { tail -n 30 "$T_DIR/elasticd.log" >&2; t_fail "no throughput split (lin 5-7, sat 1) in 90 s: lin/sat $(split)"; }
	sleep 0.2
done
t_log "node2 free: lin/sat $(split) after $((SECONDS - t0)) s; measured (GPUs=samples/s): sat $(metric "$m{jobid=\"$sat\"" | sed 's/.*gpus="\([0-9]*\)"} \(.*\)/\1=\2/' | paste -sd' ' -), lin $(metric "$m{jobid=\"$lin\"" | sed 's/.*gpus="\([0-9]*\)"} \(.*\)/\1=\2/' | paste -sd' ' -)"
why=$(grep -aEo "job $sat: shrink [0-9]+ -> 1 GPUs \(efficiency .*" "$T_DIR/elasticd.log" | tail -n 1)
[ -n "$why" ] || t_fail "elasticd did not explain sat's shrink in efficiencies: $(grep -a "job $sat: shrink" "$T_DIR/elasticd.log" | tail -n 2)"
eff=$(metric "slurm_elastic_job_efficiency{jobid=\"$lin\"") || t_fail "no efficiency metric for lin"
t_log "$why; lin's efficiency at its GPUs: ${eff##* }"
e=$(ctl status -p -j "$lin" | cut -d'|' -f14)
awk -v e="$e" 'BEGIN { exit !(e + 0 >= 0.5 && e + 0 <= 1.2) }' ||
	t_fail "elastic-ctl status shows lin's efficiency as '$e'"
# elastic-ctl scaling: lin's rate measured at 2 GPUs, and one row for the
# GPUs it holds (as elasticd last saw them: a grow may be under way), each
# with its model's prediction, efficiency and confidence
rows=$(ctl scaling -p -j "$lin")
awk -F'|' '$3 == 2 && $4 + 0 > 0 && $5 + 0 > 0 && $7 == "measured"' <<<"$rows" | grep -q . ||
	t_fail "elastic-ctl scaling shows no rate of lin measured at 2 GPUs: $(paste -sd' ' - <<<"$rows")"
[ "$(awk -F'|' '$3 + 0 > 0 && $5 + 0 > 0 && $6 + 0 > 0 && $7 ~ /^(measured|interpolated|extrapolated)$/ && $8 ~ /held/' <<<"$rows" | wc -l)" = 1 ] ||
	t_fail "elastic-ctl scaling has not one row, with a prediction, at the GPUs lin holds: $(paste -sd' ' - <<<"$rows")"
ctl scaling | sed 's/^/  /'
# A restart keeps what was measured: no new trial at 4 each.
kill -TERM "$CTL_PID"
t_wait_gone "$CTL_PID" 20 || t_fail "elasticd did not stop on SIGTERM"
[ -s "$T_DIR/elasticd.state.scaling" ] || t_fail "elasticd left no $T_DIR/elasticd.state.scaling"
ctl_start
ctl_wait_line 10 "$T_DIR/elasticd.log" "measured scaling of 2 jobs read back" "elasticd did not read the models back"
sleep 4
# (without its models elasticd would try sat again: 2 GPUs, its floor)
[[ "$(split)" =~ ^[567]/1$ ]] || t_fail "after the restart the split moved to lin/sat $(split)"
t_log "elastic-ctl status: lin's EFF $e; restarted elasticd read both models back and kept lin/sat $(split)"
t_wait_job "$sat" 200
t_wait_job "$lin" 200
ctl_train_done "$T_DIR/sat.out" 12
ctl_train_done "$T_DIR/lin.out" 16
t_log "PASS: throughput split lin/sat by their measured scaling; both models equal their static runs"
