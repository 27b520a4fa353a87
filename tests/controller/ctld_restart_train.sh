#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/ctld_restart_train.sh: slurmctld stopped (state saved, as for an
# upgrade or a failover) and started again, twice, with real training: alice's job
# (elastic_train under elastic-run, elasticd splitting the GPUs) trains at 8 GPUs.
#  1. down 5 s while she trains: she trains on through it, her grants kept;
#  2. down 3 s from the moment elastic-run hears a shrink's release order (bob's job
#     arrived): she trains again at her new size within elastic-run's bounds
#     (GPU-seconds held without training bounded);
#  3. down 3 s from the moment a planned re-form's srun into one of her grants asks
#     for its step (ctl_srun_hold): she trains again within the same bounds;
#  4. down 3 s from the moment elasticd submits a grant for her (bob's job ended;
#     submit_hold.c holds the submission until slurmctld is down): she trains on
#     through it, elasticd submits a grant once slurmctld answers, she trains at 8
#     on it within 60 s, and she never holds more than her 8 GPUs (no grant doubled).
# She completes with the static run's model, every sample once per epoch and no step
# committed twice; elasticd never took her job for ended, no grant is left over and
# elasticd stays up.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
ctl_setup
ctl_need_trainer
t_ompi_env
t_ctld_files
ctl_block_nodes node3 node4
targs="--samples 4096 --global-batch 128"
epochs=100
ctl_reference $epochs "$targs"
# elasticd's grant submissions, held on demand (case 4)
hold=$T_DIR/submit-hold
mkdir -p "$hold"
chmod 777 "$hold"
cc -shared -fPIC -o "$T_DIR/submit_hold.so" "${top_srcdir:-/src}/tests/controller/submit_hold.c" -ldl ||
	t_fail "cannot build submit_hold.so"
LD_PRELOAD=$T_DIR/submit_hold.so SUBMIT_HOLD_DIR=$hold ctl_start
ctl_srun_hold
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

# (--launch-timeout 15: the bound of a launch that cannot start after a restart)
touch "$T_DIR/slow"
j1=$(CTL_TRAIN_PATH=$T_DIR/bin CTL_RUN_ARGS="--launch-timeout 15" ctl_train_job alice alice acct_a "--epochs $epochs $targs --step-sleep 25000 --sleep-while $T_DIR/slow --compare $T_DIR/ref.model" "" \
	--elastic-gpus=1-8 --elastic-grace=30 -N1 -n1)
ctl_wait_split 30 "$j1=8"
wait_size 8 90
t_log "alice's job $j1 trains at 8"

# 1. slurmctld down 5 s (longer than elasticd's tick) while alice trains: she trains on
# through it at 8, and no grant ends.
grants() { squeue -h -n "elastic:$j1" -t R -o %i | sort | paste -sd' '; }
before=$(grants)
n0=$(steps_now)
t_ctld_restart 5
[ "$(size_now)" = 8 ] && [ "$(steps_now)" -gt $((n0 + 20)) ] ||
	t_fail "alice did not train on at 8 while slurmctld was down ($n0 -> $(steps_now) steps, size $(size_now))"
sleep 2 # a tick of elasticd's with slurmctld back
[ "$(grants)" = "$before" ] || t_fail "alice's grants changed over slurmctld's restart: '$before' -> '$(grants)'"
t_log "slurmctld down 5 s: alice trained $(($(steps_now) - n0)) steps through it at 8, her grants kept"

# 2. slurmctld stopped at a shrink's release order (the re-form's sruns to come).
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
# elastic-run's bounds: mpirun may run on 10 s once every rank ended (an srun that
# cannot end its step), the next launch 15 s without a commit (--launch-timeout 15),
# 5 s from SIGTERM to SIGKILL, and 15 s are left for the launch that trains
[ "$gap" -le 45 ] || t_fail "alice's job held its GPUs ${gap} s without training (bounds 10 + 15 + 5 s, 15 s to relaunch)"
grep -a "no step committed .* the launch bound" "$out" | sed 's/^/bound: /' || true

# 3. slurmctld stopped while a planned re-form's srun into a grant asks for its step
# (once she holds a grant again: the launch bound may have given hers back).
end=$((SECONDS + 90))
until squeue -h -n "elastic:$j1" -t R -o %i | grep -q .; do
	[ $SECONDS -lt $end ] || t_fail "alice holds no grant 90 s after the second restart"
	sleep 0.2
done
echo any >"$T_DIR/hold-list"
er=$(t_pgrep -f "elastic-run -v .*-- $train" | head -n1)
[ -n "$er" ] || t_fail "no elastic-run of alice's"
n_before=$(grep -ac "re-form [0-9]*" "$out" || true)
kill -USR1 "$er"
g=$(ctl_srun_wait any 60)
: >"$T_DIR/hold-list"
t_log "alice's planned re-form asks for a step in job $g: slurmctld stops now"
T_CTLD_DOWN_HOOK="touch '$T_DIR/held-$g'" t_ctld_restart 3
back=$SECONDS
n0=$(steps_now)
end=$((SECONDS + 120))
until [ "$(steps_now)" -gt "$n0" ]; do
	[ $SECONDS -lt $end ] || { tail -n 40 "$out" >&2; t_fail "alice's job did not train again within 120 s of slurmctld's return (srun creation)"; }
	sleep 0.1
done
gap3=$((SECONDS - back))
held3=$(size_now)
t_log "alice trains at $(size_now) again ${gap3} s after slurmctld answered (its srun asked for a step while it was down)"
[ "$gap3" -le 45 ] || t_fail "alice's job held its GPUs ${gap3} s without training after the srun-creation restart"
[ "$(grep -ac "re-form [0-9]*" "$out")" -gt "$n_before" ] || t_fail "no re-form after SIGUSR1"

# slurmctld's outage is no end of the jobs: elasticd cancelled none of alice's grants
# for that (a failed query while slurmctld restarted is not "ended")
ended_in_log() { grep -a "job $j1: ended or no longer elastic\|job $j1: \(cancelled\|ended\) grant .*(its elastic job ended)" "$T_DIR/elasticd.log"; }
! ended_in_log || t_fail "elasticd took alice's running job for ended during slurmctld's restart"

# 4. slurmctld stopped as elasticd submits a grant: bob's job ends, alice grows back.
# First alice settles at her share beside bob: the grants given back in case 3 come
# again, and a growth still under way would need slurmctld for its relaunch.
end=$((SECONDS + 90)) since=
while :; do
	if [ "$(ctl_gpus "$j1")" = "$(size_now)" ] && ! squeue -h -n "elastic:$j1" -t PD,CF -o %i | grep -q .; then
		since=${since:-$SECONDS}
		[ $((SECONDS - since)) -lt 3 ] || break
	else
		since=
	fi
	[ $SECONDS -lt $end ] || t_fail "alice did not settle within 90 s after the third restart (at $(size_now), holding $(ctl_gpus "$j1"))"
	sleep 0.2
done
t_log "alice trains on all the $(size_now) GPUs she holds, no grant of hers starting"
touch "$hold/arm"
scancel "$j2"
end=$((SECONDS + 60))
until [ -e "$hold/waiting" ]; do
	[ $SECONDS -lt $end ] || t_fail "elasticd submitted no grant within 60 s of bob's end"
	sleep 0.05
done
t_log "elasticd submits a grant for alice: slurmctld stops now"
from=$(($(wc -l <"$T_DIR/elasticd.log") + 1))
n0=$(steps_now)
T_CTLD_DOWN_HOOK="touch '$hold/go'" t_ctld_restart 3
back4=$SECONDS
trained=$(($(steps_now) - n0))
[ "$trained" -gt 20 ] || t_fail "alice did not train on while slurmctld was down at the submission ($trained steps)"
# a grant submitted for her once slurmctld answered; never more than her 8 GPUs (the
# most she holds, sampled from here to her growth)
most=0
peak() { local g; g=$(ctl_gpus "$j1"); [ "$g" -le "$most" ] || most=$g; }
end=$((SECONDS + 60))
until tail -n +"$from" "$T_DIR/elasticd.log" | grep -aqE "job $j1: growing .*: grant [0-9]+ submitted"; do
	peak
	[ $SECONDS -lt $end ] || { tail -n 20 "$T_DIR/elasticd.log" >&2; t_fail "elasticd submitted no grant for alice within 60 s of slurmctld's return"; }
	sleep 0.2
done
for i in $(seq 25); do
	peak
	sleep 0.2
done
# and she trains on the grant: at 8 again, within elastic-run's bounds of the grant's start
# (Slurm starts it once the node answers the restarted slurmctld)
end=$((SECONDS + 60))
until [ "$(size_now)" = 8 ]; do
	peak
	[ $SECONDS -lt $end ] && [ "$(t_job_state "$j1")" = RUNNING ] || {
		tail -n 20 "$out" >&2
		squeue -h -o '%i %j %T %R' >&2
		t_fail "alice does not train at 8 again $((SECONDS - back4)) s after slurmctld answered (at $(size_now), job $(t_job_state "$j1"))"
	}
	sleep 0.2
done
grown=$((SECONDS - back4))
[ "$most" -le 8 ] || t_fail "alice held $most GPUs after the submission that met slurmctld down (a grant doubled)"
# (all of it while her job ran: its end would make the case say nothing)
[ "$(t_job_state "$j1")" = RUNNING ] && ! ended_in_log ||
	t_fail "alice's job was no longer running at the end of the fourth restart (more epochs needed)"
t_log "slurmctld down as elasticd submitted: alice trained $trained steps through it; $(tail -n +"$from" "$T_DIR/elasticd.log" | grep -aE "job $j1: (growing|submit of)" | head -n 2 | sed 's/^\[[^]]*\] elasticd: //' | paste -sd';' -); at 8 again $grown s after slurmctld answered, at most $most GPUs held"

# (bob's job, submitted as slurmctld went down, may be gone by now; alice's growth
# after the restart may come only after her training ended)
scancel "$j2" 2>/dev/null || true
rm "$T_DIR/slow" # the rest of the 100 epochs at full speed
t_wait_job "$j1" 400
ctl_train_done "$out" $epochs
# elasticd cancels a finished job's grants at its next tick (one still completing has
# been ended: Slurm waits for its node after the restart)
ctl_no_grants_left 15 "after alice's job ended"
ctl_alive || t_fail "elasticd died"
t_log "PASS: at most $((held * gap)) GPU-s held without training after the restart at the release ($held GPUs x ${gap} s), $((held3 * gap3)) after the one at the srun ($held3 GPUs x ${gap3} s)"
