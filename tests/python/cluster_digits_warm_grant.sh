#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_digits_warm_grant.sh: warm interpreters for ranks in a
# grant's step. The PyTorch example (train.sbatch without its --elastic-gpus
# line: no elasticd here) on node1's 2 GPUs and a grant of 2 more GPUs on the
# same node trains at 4 ranks: ranks 2 and 3 run in the grant's own step
# (srun --overlap into it: device confinement). elastic-run keeps a zygote in
# each of the two jobs on node1. Once both are ready, a planned re-form
# (SIGUSR1 to elastic-run) must start all 4 ranks warm, those of the grant
# forked by the grant's zygote, and the job completes with each committed
# step applied once and each sample used once an epoch.
set -u
. "$(dirname "$0")/common.sh"
py_cluster_setup
epochs=8

py_plain_sbatch
lead=$(t_sbatch root -N1 -n1 -w node1 --gres=gpu:2 -H -o "$T_DIR/job.out" \
	--export="ALL,PYTHONPATH=$PYTHONPATH,ELASTIC_BIN=$top_builddir/launcher,TRAIN=$ex/train_digits.py,EPOCHS=$epochs,STEP_SLEEP=0.1,TRAIN_ARGS=--timings" \
	"$T_DIR/train.sbatch")
t_grant_release "$lead" 2 node1
t_log "job $lead (node1, 2 GPUs) + grant $grant (node1, 2 GPUs)"
py_wait_step "$lead" 3 0.05
t_grep "^step [0-9]+ epoch [0-9]+ size 4 " "$T_DIR/job.out" "training at 4 ranks"
end=$((SECONDS + 150))
until [ "$(grep -ac 'elastic-run warm node1: ready' "$T_DIR/job.out")" -ge 2 ]; do
	[ $SECONDS -lt $end ] || { cat "$T_DIR/job.out"; t_fail "no zygote ready for each of the 2 jobs on node1"; }
	sleep 0.1
done
# the zygotes, not the ranks they forked (which show the zygote's command line)
zs=$(t_pgrep -f "^[^ ]*python[0-9.]* (-[^ ]+ )*-m slurm_elastic.warm .*elastic-warm\.$lead\..*\.node1\.($lead|$grant) " || true)
z=0
for p in $zs; do
	pp=$(awk '/^PPid:/ { print $2 }' "/proc/$p/status" 2>/dev/null)
	[[ " $(echo $zs) " == *" $pp "* ]] || z=$((z + 1))
done
[ "$z" = 2 ] || t_fail "$z zygotes named for the job and its grant on node1, expected 2"
last=$(grep -a '^step [0-9]* ' "$T_DIR/job.out" | tail -1 | awk '{print $2}')
er=$(py_elastic_run_pid "$lead")
[ -n "$er" ] || t_fail "elastic-run of job $lead not found"
kill -USR1 "$er"
t_log "both zygotes ready; planned re-form asked (SIGUSR1 to elastic-run $er) after step $last"
py_wait_line "$T_DIR/job.out" '^timings \(resumed' 120 "no relaunch"
t_grep 're-form 1: 4 ranks' "$T_DIR/job.out" "elastic-run re-formed the job at 4 ranks"
n=$(awk '/re-form 1:/ { f = 1 } f && /elastic-run --rank [0-3]: started warm: pid/' "$T_DIR/job.out" | sort -u | wc -l)
[ "$n" = 4 ] || { grep -a 'elastic-run --rank' "$T_DIR/job.out"; t_fail "$n of 4 ranks of the re-form started warm"; }
t_wait_job "$lead" 300
t_grep "^done: $((epochs * 12)) steps, $epochs epochs, size 4, each committed step applied once: yes, samples once per epoch: yes" \
	"$T_DIR/job.out" "completed at 4 ranks, each step once, each sample once an epoch"
sleep 1
left=$(t_pgrep -f "slurm_elastic.warm .*elastic-warm.$lead\." || true)
[ -z "$left" ] || t_fail "zygote processes outlived the job: $left"
t_log "PASS: re-form 1: 4 of 4 ranks started warm (2 by the grant's zygote); $(grep -a '^timings (resumed' "$T_DIR/job.out" | head -1)"
