#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_ddp_models.sh: DDP scripts with the models users train, under Slurm,
# elasticd and elastic-run (tests/python/ddp_checks.py: mean loss, rank-0 seed only, a
# DataLoader with 2 workers, a tracked counter, clipping, an in-step weight edit):
#  - a small transformer language model (LayerNorm, AdamW, warmup + cosine per step, bf16
#    autocast, Dropout);
#  - examples/pytorch's ResNet (BatchNorm2d, Dropout; SGD, a per-step StepLR).
# Each is alice's sbatch --elastic-gpus=2-4 on node1, whose other 2 GPUs stay taken, and
# goes through five events, healing or re-forming each time as its runtime allows:
#  1. a grow: 2 GPUs of node2 are freed, elasticd grants them, the job trains at 4 ranks;
#  2. a rank SIGKILLed: rank 3 (on the grant) kills itself at its first step;
#  3. a grant cancelled: scancel of the job's grant; elasticd grants node2's GPUs again;
#  4. a node lost: every process of the job on node2 SIGKILLed and its grant cancelled;
#     elasticd grants node2's GPUs once more;
#  5. a shrink: bob's elastic job (2 GPUs) arrives, fair share takes 2 of alice's 4.
# Each job ends at 2 ranks with one model on every rank (BatchNorm's num_batches_tracked
# equal to the committed steps), the learning rate of a failure-free run at every committed
# step, each sample once per epoch, the model saved and reloaded, and an evaluation loss
# (the ResNet's with BatchNorm's running statistics) near the failure-free run's.
set -u
. "$(dirname "$0")/common.sh"
. "$top_srcdir/tests/controller/ctl-lib.sh"
py_need_torch
ctl_setup
t_need_spank
t_mpi_scratch

verify() { # dir epochs python-lines
	python3 - "$here" "$1" "$2" <<PY || t_fail "the elastic run disagrees with the failure-free one (see above)"
import sys
sys.path.insert(0, sys.argv[1])
from ddp_verify import Runs
r = Runs(sys.argv[2], int(sys.argv[3]))
$3
sys.exit(0 if r.ok else 1)
PY
}
# the failure-free references, one rank: the transformer and the ResNet
EPOCHS=12
mkdir -p "$T_DIR/lm" "$T_DIR/cnn"
chmod 1777 "$T_DIR/lm" "$T_DIR/cnn"
timeout -s KILL 300 $MPIRUN -x EPOCHS=$EPOCHS -np 1 python3 "$here/ddp_checks.py" lm1 "$T_DIR/lm" \
	>"$T_DIR/lm/lm1.out" 2>&1 || { cat "$T_DIR/lm/lm1.out"; t_fail "transformer reference run"; }
timeout -s KILL 300 $MPIRUN -x EPOCHS=$EPOCHS -np 1 python3 "$here/ddp_checks.py" cnn1 "$T_DIR/cnn" \
	>"$T_DIR/cnn/cnn1.out" 2>&1 || { cat "$T_DIR/cnn/cnn1.out"; t_fail "ResNet reference run"; }

# Wait for a committed step at a size matching $2 among the LR lines after the first
# $seen; then $seen counts them all.
seen=0
wait_size() { # out size-regex what
	local end=$((SECONDS + 240))
	until grep -a '^LR step' "$1" 2>/dev/null | tail -n +$((seen + 1)) | grep -aEq " size $2\$"; do
		[ $SECONDS -lt $end ] || { grep -av '^USED\|^STEP' "$1" | tail -n 30; t_fail "$3: no committed step at size $2"; }
		case "$(t_job_state "$job")" in PENDING | RUNNING | CONFIGURING) ;; *)
			grep -av '^USED\|^STEP' "$1" | tail -n 30; t_fail "$3: the job ended" ;; esac
		sleep 0.1
	done
	seen=$(grep -ac '^LR step' "$1")
}
# the job's running grants, all on node2 (node1's other GPUs stay taken): sets grants
node2_grants() {
	local l
	l=$(ctl_grants "$job" | awk '$2 == "RUNNING"')
	[ -n "$l" ] || { squeue; t_fail "job $job has no running grant"; }
	! awk '$3 != "node2"' <<<"$l" | grep -q . || { squeue; t_fail "job $job has a grant outside node2"; }
	grants=$(awk '{print $1}' <<<"$l" | paste -sd' ')
}
cat >"$T_DIR/ddp.sbatch" <<SBATCH
#!/bin/bash
export OMP_NUM_THREADS=1
exec $top_builddir/launcher/elastic-run -v -- python3 $here/ddp_checks.py \$1 \$2
SBATCH
chmod 755 "$T_DIR/ddp.sbatch"

# node1's other 2 GPUs and node2's last 2 stay taken: alice's job holds at most 4, and
# bob's job takes 2 of them
ctl_block_nodes node3 node4
ctl_block_gpus 2 node1 node2
ctl_start

five_events() { # scenario dir verify-args
	local out=$T_DIR/$2/$1.out bob sizes free2 grants
	# node2's other 2 GPUs, freed for the grow
	ctl_block_gpus 2 node2
	free2=${CTL_BLOCKERS##* }
	# slow steps while the events are staged, full speed after the last: at 0.6 s a step,
	# the 156 steps outlast the four waits for warm interpreters and relaunches (each up
	# to 20 s with Python 3.14, whose DataLoader workers each import torch)
	echo 0.6 >"$T_DIR/$2/sleep"
	job=$(t_sbatch alice -A acct_a --elastic-gpus=2-4 -N1 -n1 -w node1 -o "$out" \
		--export="ALL,PYTHONPATH=$PYTHONPATH,EPOCHS=$EPOCHS,SLEEP_FILE=$T_DIR/$2/sleep,KILL_RANK=3,KILL_STEP=0,KILL_FROM=1" \
		"$T_DIR/ddp.sbatch" "$1" "$T_DIR/$2")
	echo "$job" >>"$T_DIR/jobs"
	seen=0
	wait_size "$out" 2 "$1 start"
	t_log "$1: job $job trains at 2 ranks on node1"
	# 1. a grow and 2. a rank SIGKILLed
	# (rank 3 exists only at 4 ranks: it dies at its first step, before any commit)
	scancel "$free2"
	ctl_wait_line 240 "$out" '^KILL rank 3 at step' "$1: rank 3 did not kill itself"
	t_log "$1: 1. grown to 4 ranks on node1's and node2's GPUs"
	seen=$(grep -ac '^LR step' "$out")
	wait_size "$out" '[0-9]+' "$1 after the kill"
	t_log "$1: 2. $(grep -am1 '^KILL rank 3' "$out"); trains on at $(grep -a '^LR step' "$out" | tail -n1 | awk '{print $NF}') ranks"
	# 3. the job's grants cancelled, 4. node2 lost: elasticd grants nothing on node2
	# until the job trains at 2 ranks (elastic-ctl pause node2), then grants again
	ctl pause node2 >/dev/null || t_fail "elastic-ctl pause node2"
	node2_grants
	scancel $grants
	t_log "$1: 3. grants $grants (node2) cancelled"
	wait_size "$out" 2 "$1 after the scancel"
	ctl resume node2 >/dev/null || t_fail "elastic-ctl resume node2"
	wait_size "$out" 4 "$1 grown again"
	ctl pause node2 >/dev/null || t_fail "elastic-ctl pause node2"
	node2_grants
	py_kill_node "$grants" node2
	t_log "$1: 4. node2 lost: SIGKILLed$victims, grants $grants cancelled"
	wait_size "$out" 2 "$1 after the node loss"
	ctl resume node2 >/dev/null || t_fail "elastic-ctl resume node2"
	wait_size "$out" 4 "$1 grown once more"
	# 5. a shrink: fair share with bob's job
	bob=$(ctl_job bob acct_b 2 2 30)
	t_log "$1: 5. bob's elastic job $bob (2 GPUs) submitted"
	wait_size "$out" 2 "$1 shrink"
	rm "$T_DIR/$2/sleep"
	t_wait_job "$job" 300
	scancel "$bob"
	t_wait_job "$bob" 60 CANCELLED
	grep -av '^USED\|^LR\|^STEP' "$out" | tail -n 15
	n=$(grep -ac "^OK $1 rank" "$out" || true)
	[ "$n" = 2 ] || t_fail "$1: $n of 2 ranks passed their checks at the end"
	grep -aq ' size 2$' <(grep -a '^LR step' "$out" | tail -n 1) || t_fail "$1 did not end at 2 ranks"
	verify "$T_DIR/$2" "$EPOCHS" "r.check(\"$1\", ranks=2, $3)"
	sizes=$(grep -a '^LR step' "$out" | awk '{print $NF}' | uniq | paste -sd' ' -)
	t_log "$1: sizes $sizes over $(grep -a '^LR step' "$out" | awk '{print $3}' | sort -u | wc -l) committed steps; $(grep -ac 're-form [0-9]*:' "$out") re-forms, $(grep -ac 'healed' "$out") heals"
}

five_events lm_five lm 'lr_ref="lm1", eval_ref="lm1"'
five_events cnn_five cnn 'lr_ref="cnn1", eval_ref="cnn1"'
t_log "PASS: a transformer and a ResNet each grown, a rank killed, a grant cancelled, a node lost and shrunk by elasticd: the reference's LR and samples, one model"
exit 0
