#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_digits_warm.sh: warm interpreters under sbatch + elastic-run. The
# PyTorch example (train.sbatch without its --elastic-gpus line: no elasticd here) on
# node1's 2 GPUs and a grant of 2 on node2 trains at 4 ranks; elastic-run starts a zygote
# (python3 -m slurm_elastic.warm) on each node. Once node1's is ready, node2 is lost (its
# processes SIGKILLed, the grant cancelled): the re-form at 2 ranks must start both ranks
# from node1's zygote ("started warm", the rank's timings say warm) and resume after the
# last committed step. Then one of those forked ranks is SIGKILLed: its wrapper must
# report the death so that ULFM heals the job in place (1 rank, no re-form for the
# failure); 2 s later a planned re-form puts a rank on its GPU again. The job completes
# at 2 ranks with each committed step applied once and each sample used once an
# epoch, and no zygote outlives it. With a runtime that survives a lost daemon
# (Open MPI 6) the node loss heals in place; the re-form is then asked for by
# hand (SIGUSR1 to elastic-run: a planned re-form on the 2 GPUs left).
set -u
. "$(dirname "$0")/common.sh"
py_cluster_setup
# 12 steps an epoch. On a loaded machine node1's zygote was ready only at
# step 60 and the re-form resumed at 68: with 6 epochs (72 steps) the kill
# "after step first + 3" came with the last step, and the job ended at 2
# ranks. 9 epochs leave room.
epochs=9

py_plain_sbatch
lead=$(t_sbatch root -N1 -n1 -w node1 --gres=gpu:2 -H -o "$T_DIR/job.out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,ELASTIC_BIN=$top_builddir/launcher,TRAIN=$ex/train_digits.py,EPOCHS=$epochs,STEP_SLEEP=0.1,TRAIN_ARGS=--timings" \
	"$T_DIR/train.sbatch")
t_grant_release "$lead" 2
t_log "job $lead (node1, 2 GPUs) + grant $grant (node2, 2 GPUs)"
py_wait_step "$lead" 3 0.05
end=$((SECONDS + 120))
until grep -aq 'elastic-run warm node1: ready' "$T_DIR/job.out"; do
	[ $SECONDS -lt $end ] || { cat "$T_DIR/job.out"; t_fail "no zygote ready on node1"; }
	sleep 0.1
done
t_log "$(grep -a 'elastic-run warm node1: ready' "$T_DIR/job.out")"
last=$(grep -a '^step [0-9]* ' "$T_DIR/job.out" | tail -1 | awk '{print $2}')
py_wait_step "$lead" $((last + 1)) 0.05
t_grep "^step [0-9]+ epoch [0-9]+ size 4 " "$T_DIR/job.out" "training at 4 ranks over 2 nodes"
py_kill_node "$grant" node2
last=$(grep -a '^step [0-9]* ' "$T_DIR/job.out" | tail -1 | awk '{print $2}')
t_log "node2 lost after committed step $last: SIGKILLed$victims, grant $grant cancelled"
if t_runtime_in_place; then
	end=$((SECONDS + 60))
	until grep -aq 'the survivors healed in place at 2 ranks' "$T_DIR/job.out"; do
		[ $SECONDS -lt $end ] || { cat "$T_DIR/job.out"; t_fail "node1's ranks did not heal in place"; }
		sleep 0.1
	done
	last=$(grep -a '^step [0-9]* ' "$T_DIR/job.out" | tail -1 | awk '{print $2}')
	py_wait_step "$lead" $((last + 1)) 0.05
	last=$(grep -a '^step [0-9]* ' "$T_DIR/job.out" | tail -1 | awk '{print $2}')
	er=$(py_elastic_run_pid "$lead")
	[ -n "$er" ] || t_fail "elastic-run of job $lead not found"
	kill -USR1 "$er"
	t_log "healed in place at 2 ranks; planned re-form asked (SIGUSR1 to elastic-run $er) after step $last"
fi

# the re-form: both ranks forked by node1's zygote, resumed after step $last
py_wait_line "$T_DIR/job.out" '^timings \(resumed' 120 "no relaunch"
t_grep 're-form 1: 2 ranks' "$T_DIR/job.out" "elastic-run re-formed the job at 2 ranks"
n=$(awk '/re-form 1:/ { f = 1 } f && /elastic-run --rank [01]: started warm: pid/' "$T_DIR/job.out" | wc -l)
[ "$n" = 2 ] || { grep -a 'elastic-run --rank' "$T_DIR/job.out"; t_fail "$n of 2 ranks of the re-form started warm"; }
t_grep '^timings \(resumed, step [0-9]+, warm\)' "$T_DIR/job.out" "rank 0 says it was forked warm"
read -r first < <(awk '/re-form 1:/ { f = 1 } f && /^step [0-9]+ .*first commit after a change/ { print $2; exit }' "$T_DIR/job.out")
[ -n "${first:-}" ] && [ "$first" -gt "$last" ] || t_fail "the relaunch's first step '${first:-}' is not after step $last"
t_log "re-form: 2 ranks started warm, resumed at step $first; $(grep -a '^timings (resumed' "$T_DIR/job.out" | head -1)"

# a forked rank SIGKILLed: healed in place, not re-formed
pid=$(awk '/re-form 1:/ { f = 1 } f && /elastic-run --rank 1: started warm: pid/ {
	for (i = 1; i <= NF; i++) if ($i == "pid") print $(i + 1); exit }' "$T_DIR/job.out")
[ -n "$pid" ] && [ -d "/proc/$pid" ] || t_fail "rank 1's process (pid '${pid:-}') is not running"
py_wait_step "$lead" $((first + 3)) 0.05
kill -KILL "$pid"
t_log "rank 1 (pid $pid, forked by the zygote) SIGKILLed after step $((first + 3))"
t_wait_job "$lead" 300
grep -av '^step ' "$T_DIR/job.out" | tail -12
# healed in place at 1 rank, then (its GPU held with no rank for 2 s) a
# planned re-form puts a rank on it again: no re-form for the failure itself
t_grep "^redo step [0-9]+: size now 1" "$T_DIR/job.out" "the killed warm rank was not healed in place"
awk '/^redo step [0-9]+: size now 1/ { f = 1 } f && /held with no rank for/ { r = 1 }
	f && /re-form 2:/ { exit !r } END { exit !r }' "$T_DIR/job.out" ||
	t_fail "the killed warm rank caused a re-form instead of healing in place"
t_grep "^done: $((epochs * 12)) steps, $epochs epochs, size 2, each committed step applied once: yes, samples once per epoch: yes" \
	"$T_DIR/job.out" "completed at 2 ranks (a rank again on the killed one's GPU), each step once, each sample once an epoch"
sleep 1
left=$(t_pgrep -f "slurm_elastic.warm .*elastic-warm.$lead\." || true)
[ -z "$left" ] || t_fail "zygote processes outlived the job: $left"
t_log "no zygote left after the job"
exit 0
