#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/ddp.sh: DDP scripts as torch users write them, over slurm_elastic.torch,
# under mpirun --with-ft ulfm on one host (tests/python/ddp_checks.py), the ranks forked by
# a warm interpreter through elastic-run's rank wrapper as in a job (the two reference runs
# and the example start cold): mean loss, no seed
# on ranks other than 0, SGD with momentum and two param groups, a per-step StepLR,
# clipping, an in-step edit of a weight, a DataLoader with 2 workers, a tracked counter.
#  - 1 and 3 ranks (uneven shares of a 40-sample global batch) train the same model;
#  - a rank SIGKILLed in the middle of step 20 at 3 ranks: the survivors drop the step,
#    heal in place and end with the same model, the same learning rate at every committed
#    step, each sample trained once per epoch, the model saved after the loop; their
#    loops see the dropped step's body (dist.committed() False) and none of the batches
#    prepared for the old world;
#  - the same when the DataLoader had already taken the epoch's last batches: a kill in
#    step 11 of 13, and (on a runtime that shrinks in place) a planned shrink from 4 ranks
#    to 2 after step 10: the rest of the epoch is trained in the epoch;
#  - BatchNorm + Dropout, with and without a kill: buffers identical on every rank,
#    num_batches_tracked equal to the committed steps;
#  - without the elastic sampler, uneven batches give the mean gradient over all samples;
#  - torch.amp.GradScaler: a step whose optimizer.step() it skips (overflow) ends at the
#    next forward, committed without an update, alike on every rank;
#  - a rank stuck inside a step ends by init_process_group's timeout, with a message
#    and a non-zero status;
#  - an untracked LR scheduler or GradScaler, optimizer.step() outside a step, track()
#    after the first step and a model converted to float64 after wrapping are refused on
#    every rank with a message naming them.
set -u
. "$(dirname "$0")/common.sh"
python3 -c 'import torch' 2>/dev/null || t_skip "no torch in this Python (Debian: python3-torch)"
t_scratch
t_mpi_scratch
export EPOCHS=3
# The DataLoader workers fork from their rank, as before Python 3.14, but in
# exact_kill and the example, which start them Python's way (forkserver from 3.14
# on: a worker imports torch again, seconds of CPU for each of the 44 ranks).
export LOADER_START=fork

# The ranks start as elastic-run starts them in a job: forked by a warm
# interpreter (python3 -m slurm_elastic.warm, torch and ddp_checks.py's
# imports done once) through the rank wrapper, elastic-run --rank. The
# references, exact1 and exact, and the example start cold (COLD=1).
export ELASTIC_RUN_VERBOSE=1
py_zygote ddptest "$here/ddp_checks.py"
run() { # scenario np [VAR=value...]: mpirun's status in $status
	local sc=$1 np=$2 wrap="$top_builddir/launcher/elastic-run --rank"
	shift 2
	status=0
	[ -n "${COLD:-}" ] && wrap=""
	timeout -s KILL 180 env "$@" $MPIRUN -x KILL_STEP -x KILL_RANK -x EPOCHS -x RAISE_STEP -x LOADER_START \
		-x HANG_STEP -x HANG_RANK -x HANG_TIMEOUT -x SLURMD_NODENAME -x ELASTIC_RUN_WARM -x ELASTIC_RUN_VERBOSE -np "$np" \
		$wrap python3 "$here/ddp_checks.py" "$sc" "$T_DIR" >"$T_DIR/$sc.out" 2>&1 || status=$?
}
ok() { # scenario ranks-that-must-pass
	local n
	n=$(grep -c "^OK $1 rank" "$T_DIR/$1.out" || true)
	[ "$n" = "$2" ] || { grep -v '^USED\|^LR' "$T_DIR/$1.out" | tail -n 40; t_fail "$1: $n of $2 ranks passed"; }
}

COLD=1 run exact1 1
ok exact1 1
COLD=1 run exact 3
ok exact 3
run exact_kill 3 KILL_RANK=2 KILL_STEP=20 LOADER_START=
ok exact_kill 2
t_grep '^KILL rank 2 at step 20' "$T_DIR/exact_kill.out" "the victim was killed in step 20"
# the loop saw the dropped step's own body, and none of the 4 batches its DataLoader's
# 2 workers had prepared for the world of 3
n=$(grep -c '^LOOP rank [01]: [0-9]* bodies, [0-9]* committed, 1 dropped' "$T_DIR/exact_kill.out" || true)
[ "$n" = 2 ] || { grep '^LOOP' "$T_DIR/exact_kill.out"; t_fail "exact_kill: the survivors' loops saw more than the dropped step"; }
t_log "the loop after a heal: $(grep -m1 '^LOOP rank 0' "$T_DIR/exact_kill.out")"
run bn 2
ok bn 2
run bn_kill 3 KILL_RANK=1 KILL_STEP=17
ok bn_kill 2
t_grep '^KILL rank 1 at step 17' "$T_DIR/bn_kill.out" "the victim was killed in step 17"
run lm1 1
ok lm1 1
run lm_kill 3 KILL_RANK=0 KILL_STEP=18
ok lm_kill 2
t_grep "^KILL rank 0 at step 18" "$T_DIR/lm_kill.out" "rank 0 was killed in step 18"
# the whole launch ends in step 15 (SIGTERM on every rank); a relaunch on 3 ranks
# resumes from the node snapshot: model, optimizer, scheduler, counter, sampler, RNG
mkdir -p "$T_DIR/shm"
run exact_stop 2 ELASTIC_JOB_ID=ddp$$ ELASTIC_SHM_DIR=$T_DIR/shm ELASTIC_SNAPSHOT_EVERY=1 STOP_STEP=15
t_grep '^TERM rank 1 at step 15' "$T_DIR/exact_stop.out" "the first launch ended in step 15"
run exact_resume 3 ELASTIC_JOB_ID=ddp$$ ELASTIC_SHM_DIR=$T_DIR/shm ELASTIC_SNAPSHOT_EVERY=1
ok exact_resume 3
t_grep '^RESUMED at step 15 epoch 1 size 3' "$T_DIR/exact_resume.out" "the relaunch resumed at step 15"
# an exception between two steps (as a DataLoader worker's death raises in the loop), with
# snapshots every 5 steps (as on a runtime that heals in place): the process keeps its
# last committed step with its update and after-step work on the way out, and the
# relaunch resumes there
run exact_raise 2 ELASTIC_JOB_ID=ddpr$$ ELASTIC_SHM_DIR=$T_DIR/shm ELASTIC_SNAPSHOT_EVERY=5 RAISE_STEP=12
t_grep 'RuntimeError: RAISED after step 12' "$T_DIR/exact_raise.out" "the first launch raised after step 12"
run exact_reraise 2 ELASTIC_JOB_ID=ddpr$$ ELASTIC_SHM_DIR=$T_DIR/shm ELASTIC_SNAPSHOT_EVERY=5
ok exact_reraise 2
t_grep '^RESUMED at step 13 epoch 0 size 2' "$T_DIR/exact_reraise.out" "the relaunch resumed after the last committed step (13 steps)"
# a step dropped among the epoch's last batches, which the DataLoader's workers had
# already taken (a rank killed in step 11 of 13): the loop skips the batches prepared
# for the world of 3, and the DataLoader's new pass hands out the rest of the epoch
# inside it (checked below: each sample once per epoch, exact1's model and LR)
# a rank stuck inside step 6 (init_process_group(timeout=20 s): the steps before it,
# the first with its DataLoader workers starting, must finish within that on a
# loaded host): it ends with status 75
# and libelastic's message, and mpirun ends non-zero, not hangs
run exact_hang 2 HANG_RANK=1 HANG_STEP=6 HANG_TIMEOUT=20
t_grep '^HANG rank 1 at step 6' "$T_DIR/exact_hang.out" "rank 1 hung in step 6"
t_grep 'libelastic\[1\]: a step did not finish in 20 s: exiting 75' "$T_DIR/exact_hang.out" \
	"the stuck rank ended with the step timeout's message"
[ "$status" != 0 ] && [ "$status" != 137 ] ||
	{ tail -n 30 "$T_DIR/exact_hang.out"; t_fail "exact_hang: mpirun ended with status $status (0: a hang passed as success; 137: it hung)"; }
t_log "a rank stuck in a step: ended by the step timeout, mpirun status $status"
# a timeout that cannot be one is refused, naming it, before anything starts
out=$(python3 -c 'import slurm_elastic.torch as d; d.init_process_group("gloo", timeout=-5)' 2>&1) &&
	t_fail "init_process_group(timeout=-5) was taken: $out"
grep -q 'timeout=-5: expected a datetime.timedelta or seconds in (0, 86400\]' <<<"$out" ||
	t_fail "timeout=-5 refused without naming it: $out"
run exact_tail_kill 3 KILL_RANK=2 KILL_STEP=11
ok exact_tail_kill 2
! grep -q "last batches\|were not trained" "$T_DIR/exact_tail_kill.out" ||
	t_fail "exact_tail_kill: $(grep -m1 "last batches\|were not trained" "$T_DIR/exact_tail_kill.out")"
tails="exact_tail_kill"
# a planned shrink in place (4 ranks to 2, as elastic-run asks when GPUs are released)
# at step 10 of the epoch's 13, after the DataLoader had taken its last batches; the
# rank wrapper reports a leaver's exit to mpirun as elastic-run's ranks do
if t_runtime_in_place; then
	printf '%s 2\n%s 3\n' "$(hostname)" "$(hostname)" >"$T_DIR/leave"
	run exact_tail_shrink 4 SHRINK_STEP=10 \
		ELASTIC_RUN_LEAVE=$T_DIR/leave
	ok exact_tail_shrink 2
	t_grep '^LR step 11 .* size 2$' "$T_DIR/exact_tail_shrink.out" "the ranks shrank in place to 2 after step 10"
	tails="$tails exact_tail_shrink"
else
	t_log "exact_tail_shrink: not run (this MPI runtime does not shrink in place; sid's does)"
fi
t_log "trained: $(grep -h '^STEPS' "$T_DIR"/exact1.out "$T_DIR"/exact.out "$T_DIR"/exact_kill.out | sort -u | tr '\n' ';')"

python3 - "$here" "$T_DIR" "$EPOCHS" "$tails" <<'PY' || t_fail "the runs disagree (see above)"
import sys
sys.path.insert(0, sys.argv[1])
from ddp_verify import Runs
r = Runs(sys.argv[2], int(sys.argv[3]))
for sc in ["exact", "exact_kill"] + sys.argv[4].split():
    r.check(sc, model_ref="exact1", lr_ref="exact1")
# the relaunch: the first launch's committed steps before the resume point, then the relaunch's
r.check("exact_resume", outs=["exact_stop", "exact_resume"], model_ref="exact1", lr_ref="exact1")
r.check("exact_reraise", outs=["exact_raise", "exact_reraise"], model_ref="exact1", lr_ref="exact1")
r.check("bn")
r.check("bn_kill", lr_ref="exact1")
# the transformer (AdamW, warmup + cosine, bf16 autocast, dropout)
r.check("lm_kill", lr_ref="lm1", eval_ref="lm1")
sys.exit(0 if r.ok else 1)
PY

run own_data 2
ok own_data 2
run scaler 2
ok scaler 2
cmp -s "$T_DIR/scaler.0.npy" "$T_DIR/scaler.1.npy" || t_fail "scaler: the ranks' models differ"
t_log "GradScaler: an overflow skipped one optimizer step on every rank, the scale halved once"
t_log "without the sampler: uneven batches (10 and 30 samples) give the 40-sample mean gradient"

for what in untracked untracked_scaler step_outside late_track dtype; do
	run "refuse_$what" 2
	n=$(grep -c '^REFUSED rank' "$T_DIR/refuse_$what.out" || true)
	[ "$n" = 2 ] || { cat "$T_DIR/refuse_$what.out"; t_fail "refuse_$what: refused on $n of 2 ranks"; }
	t_log "refused ($what): $(grep -m1 '^REFUSED rank' "$T_DIR/refuse_$what.out" | cut -d: -f2- | cut -c1-160)"
done
t_grep 'StepLR .an LR scheduler.' "$T_DIR/refuse_untracked.out" "the untracked scheduler is named"
t_grep 'GradScaler of the model is not kept' "$T_DIR/refuse_untracked_scaler.out" "the untracked GradScaler is named"
t_grep "parameter 'weight' changed from float32 on cpu to float64 on cpu after DistributedDataParallel wrapped it" \
	"$T_DIR/refuse_dtype.out" "the parameter whose dtype changed after wrapping is named"

# the example: a torchrun DDP script and its elastic port, at most 10 lines apart
ex=$top_srcdir/examples/pytorch
n=$(diff "$ex/resnet_ddp.py" "$ex/resnet_elastic.py" | grep '^>' | grep -Evc '^> (#|""")' || true)
[ "$n" -le 10 ] || t_fail "resnet_elastic.py changes $n lines of resnet_ddp.py (10 at most)"
python3 -c 'import sklearn' 2>/dev/null && {
	timeout -s KILL 180 $MPIRUN -np 2 python3 "$ex/resnet_elastic.py" --epochs 3 --out "$T_DIR/resnet.pt" \
		>"$T_DIR/resnet.out" 2>&1 || { cat "$T_DIR/resnet.out"; t_fail "examples/pytorch/resnet_elastic.py"; }
	t_grep '^epoch 2 loss [0-9.]+ lr 0.01500 accuracy' "$T_DIR/resnet.out" "the example's third epoch (StepLR decayed once)"
	[ -s "$T_DIR/resnet.pt" ] || t_fail "the example saved no model"
	t_log "example: $n lines changed from the torchrun script; $(tail -n1 "$T_DIR/resnet.out")"
}
n=$(cat "$T_DIR"/*.out | grep -c "started warm: pid" || true)
t_log "$n ranks forked by the warm interpreter"
t_log "PASS: DDP scripts: 1 and 3 ranks agree; a rank killed and healed around changes neither the model, the LR schedule nor the samples trained; BatchNorm buffers equal everywhere; misuse refused"
exit 0
