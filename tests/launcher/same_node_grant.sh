#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/launcher/same_node_grant.sh: two jobs never run on one GPU. An
# elastic run holds GPU 0 of node1 in its own allocation and two grants on
# the same node (1 GPU; 2 GPUs): 4 ranks. A plain job of another user
# (bob) waits for a GPU of node1. The 1-GPU grant is cancelled: Slurm gives
# its GPU to bob's job at once, so the rank on that GPU must end with the
# grant (it runs in the grant's job step), the run heals without it and
# finishes with every sample once, and while bob's job runs no process of
# the elastic run is left on that GPU. Before that, a planned re-form stops
# the ranks in the grants' steps like the others and resumes.
set -euo pipefail
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib.sh"
lr_setup
lead=$(t_sbatch root -N1 -n1 -w node1 --gres=gpu:1 -H -o "$T_DIR/lead.out" -D "$T_DIR" --wrap "
exec ./elastic-run -v -- $train --epochs 3 --samples 4096 --global-batch 128 --step-sleep 150000")
t_grant_start "$lead" 2 node1
g2=$grant
t_grant_release "$lead" 1 node1
g1=$grant
gpu1=$(scontrol show job -d "$g1" | sed -n 's/.*GRES=gpu[^(]*(IDX:\([0-9]*\)).*/\1/p' | head -n1)
[ -n "$gpu1" ] || t_fail "no GPU index for grant $g1"
t_log "lead $lead (node1), grants $g2 (2 GPUs) and $g1 (GPU $gpu1), all on node1"
wait_step() { # N
	local end=$((SECONDS + 90))
	until grep -aq "^step $1 " "$T_DIR/lead.out" 2>/dev/null; do
		[ $SECONDS -lt $end ] || { cat "$T_DIR/lead.out"; t_fail "the run did not reach step $1"; }
		sleep 0.2
	done
}
wait_step 8
t_grep "job $lead: 4 ranks on node1:4 GPUs" "$T_DIR/lead.out" "the run did not start on the 4 GPUs of node1"
# A planned re-form first: the ranks in the grants' steps stop with the
# others (exit 75 through srun) and the relaunch resumes from the snapshot.
er=$(t_pgrep -f "^./elastic-run -v -- $train" | head -n1)
[ -n "$er" ] || t_fail "no elastic-run process found"
kill -USR1 "$er"
end=$((SECONDS + 60))
until grep -aq "re-form 1: " "$T_DIR/lead.out"; do
	[ $SECONDS -lt $end ] || t_fail "no relaunch after SIGUSR1"
	sleep 0.1
done
t_grep "mpirun ended .* [1-4] asked to re-form, 0 killed, 0 lost" "$T_DIR/lead.out" \
	"the ranks did not stop cleanly for the planned re-form (exit 75)"
wait_step 20
first=$(awk '/re-form 1:/ { f = 1 } f && /^step [0-9]+ / { print $2; exit }' "$T_DIR/lead.out")
[ -n "$first" ] && [ "$first" -ge 8 ] || t_fail "the relaunch started at step '${first:-none}', not from the snapshot (>= 8)"
t_log "planned re-form: the 4 ranks stopped, the relaunch resumed at step $first"
bob=$(t_sbatch bob -N1 -n1 -w node1 --gres=gpu:1 -o "$T_DIR/bob.out" -D "$T_DIR" \
	--wrap 'echo "bob CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES SLURM_JOB_GPUS=$SLURM_JOB_GPUS"; sleep 20')
sleep 1
[ "$(t_job_state "$bob")" = PENDING ] || t_fail "bob's job did not wait for node1 ($(t_job_state "$bob"))"
t_log "cancelling grant $g1 (GPU $gpu1 of node1) while bob's job $bob waits for a GPU there"
scancel "$g1"
end=$((SECONDS + 30))
until [ "$(t_job_state "$bob")" = RUNNING ]; do
	[ $SECONDS -lt $end ] || t_fail "bob's job did not start after the grant ended"
	sleep 0.2
done
t_log "bob's job runs"
# Processes of the elastic run (its job's environment) on GPU $gpu1 of node1.
on_gpu() {
	local p map out=""
	for p in /proc/[0-9]*; do
		t_env_has "${p#/proc/}" "ELASTIC_GPU=$gpu1" "SLURMD_NODENAME=node1" || continue
		[[ $T_ENV == *$'\n'ELASTIC_RUN_MAP=* ]] || continue
		map=${T_ENV#*$'\n'ELASTIC_RUN_MAP=}
		[[ ${map%%$'\n'*} == *"node1=$lead:"* ]] || continue
		out="$out ${p#/proc/}($({ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | cut -c1-60))"
	done
	echo "$out"
}
# The rank had KillWait (5 s) to end after SIGTERM when its step was killed.
end=$((SECONDS + 8))
while left=$(on_gpu) && [ -n "$left" ]; do
	[ $SECONDS -lt $end ] || t_fail "bob's job has GPU $gpu1 of node1 and the elastic run still runs there:$left"
	sleep 0.5
done
[ "$(t_job_state "$bob")" = RUNNING ] || t_fail "bob's job ended before the check"
[ "$(t_job_state "$lead")" = RUNNING ] || t_fail "the elastic run ended before the check: it proves nothing"
t_log "no process of the elastic run on GPU $gpu1 while bob's job holds it"
t_grep "^bob .* SLURM_JOB_GPUS=$gpu1$" "$T_DIR/bob.out" "bob's job did not get GPU $gpu1"
t_wait_job "$lead" 240
cat "$T_DIR/lead.out"
t_grep "^done: .* size 3 .* 0 bad, 0 violations" "$T_DIR/lead.out" "the run did not finish at size 3 with every sample once"
t_log "PASS"
