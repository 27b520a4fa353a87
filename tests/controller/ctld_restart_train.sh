#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/ctld_restart_train.sh: slurmctld stopped (state saved, as for an
# upgrade or a failover), kept down 3 s and started again while a shrink's release is in
# flight, with real training: alice's job (elastic_train under elastic-run) trains at 8
# GPUs, bob's elastic job arrives, and the moment elastic-run hears the release order
# slurmctld goes down. alice's job must train again at its new size within the launch
# bound (GPU-seconds held without training bounded), grow back to 8 once bob's job
# ends, and complete with the static run's model, every sample once per epoch and no
# step committed twice; no grant is left over and elasticd stays up.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_need_trainer
t_ompi_env
t_ctld_files
ctl_block_nodes node3 node4
targs="--samples 4096 --global-batch 128"
epochs=60
ctl_reference $epochs "$targs"
ctl_start
out=$T_DIR/alice.out

# Latest size rank 0 of alice's job reported, and the number of step lines so far.
size_now() { grep -aEo '^step [0-9]+ epoch [0-9]+ size [0-9]+' "$out" 2>/dev/null | tail -n1 | awk '{print $6}'; }
steps_now() { grep -ac '^step [0-9]' "$out" 2>/dev/null || true; }
wait_size() { # size timeout
	local end=$((SECONDS + $2))
	until [ "$(size_now)" = "$1" ]; do
		[ $SECONDS -lt $end ] || { tail -n 40 "$out" >&2; t_fail "alice's job does not train at size $1 after $2 s (now $(size_now))"; }
		sleep 0.1
	done
}

j1=$(ctl_train_job alice alice acct_a "--epochs $epochs $targs --step-sleep 25000 --compare $T_DIR/ref.model" "" \
	--elastic-gpus=1-8 --elastic-grace=30 -N1 -n1)
ctl_wait_split 30 "$j1=8"
wait_size 8 90
t_log "alice's job $j1 trains at 8"

j2=$(ctl_job bob acct_b 1 8 30 5000)
ctl_client bob "$j2"
ctl_wait_line 60 "$out" "controller: release grant" "no release order reached alice's job"
t_ctld_restart 3
back=$SECONDS
t_log "slurmctld stopped at alice's release order, down 3 s, answering again"

# Training again at its new size (below 8: bob's job has its share).
n0=$(steps_now)
end=$((SECONDS + 120))
until [ "$(steps_now)" -gt "$n0" ] && [ "$(size_now)" -lt 8 ]; do
	[ $SECONDS -lt $end ] || { tail -n 40 "$out" >&2; t_fail "alice's job did not train again within 120 s of slurmctld's return"; }
	sleep 0.1
done
gap=$((SECONDS - back))
held=$(size_now)
t_log "alice trains at $held again ${gap} s after slurmctld answered"
# the launch bound once the job has shown its first commits: 30 s, plus a relaunch
[ "$gap" -le 50 ] || t_fail "alice's job held its GPUs ${gap} s without training (bound 30 s + a relaunch)"
grep -a "no step committed .* the launch bound" "$out" | sed 's/^/bound: /' || true

# slurmctld's outage is no end of the jobs: elasticd cancelled none of alice's grants
# for that (a failed query while slurmctld restarted is not "ended")
grep -a "job $j1: ended or no longer elastic\|cancelled grant .*(its elastic job ended)" "$T_DIR/elasticd.log" &&
	t_fail "elasticd took alice's running job for ended during slurmctld's restart"
scancel "$j2"
wait_size 8 120
t_log "bob's job ended: alice trains at 8 again"
t_wait_job "$j1" 400
ctl_train_done "$out" $epochs
# elasticd cancels a finished job's grants at its next tick
end=$((SECONDS + 15))
while left=$(squeue -h -o '%i %j %T' | awk '$2 ~ /^elastic:/') && [ -n "$left" ]; do
	[ $SECONDS -lt $end ] || t_fail "grants left over 15 s after alice's job ended: $left"
	sleep 0.5
done
ctl_alive || t_fail "elasticd died"
t_log "PASS: at most $((held * gap)) GPU-s held without training after the restart ($held GPUs x ${gap} s)"
