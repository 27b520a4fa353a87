#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/digits_replay.sh: examples/pytorch/replay.py, the bit-for-bit check of
# an elastic run against static runs of its world sizes. A run of the PyTorch
# example made of two launches, 2 ranks to step 8 and 3 ranks from its checkpoint
# on (as a re-form resumes), is replayed equal, with the line of step 8 missing
# from its log (a step committed as its launch ended: replayed at the size before
# it). The same log with one loss changed differs at that step (the replay stops
# after the stretch that shows it); a model with one bit of one parameter
# changed, or 0.0 for -0.0, differs; a log without its "done" line, and no
# training program, are refused by name.
set -u
. "$(dirname "$0")/common.sh"
python3 -c 'import torch, sklearn' 2>/dev/null || t_skip "no torch/sklearn (python3-torch, python3-sklearn)"
t_scratch
t_mpi_scratch
ex=$top_srcdir/examples/pytorch
train=(python3 "$ex/train_digits.py" --epochs 2 --seed 3)
cd "$T_DIR" || t_fail "no scratch directory"

# The elastic run: one launch on 2 ranks, then one on 3 resuming from its
# checkpoint.
ck=(-x ELASTIC_CHECKPOINT_DIR=$T_DIR/ck -x ELASTIC_CHECKPOINT_EVERY=1)
timeout -s KILL 120 $MPIRUN "${ck[@]}" -np 2 "${train[@]}" --steps 9 >job-0.out 2>&1 ||
	{ cat job-0.out; t_fail "the run's first launch"; }
timeout -s KILL 120 $MPIRUN "${ck[@]}" -np 3 "${train[@]}" --out job.npy >job-1.out 2>&1 ||
	{ cat job-1.out; t_fail "the run's second launch"; }
t_grep "^resumed at committed step 9" job-1.out "the second launch resumed from the checkpoint"
grep -hv "^step 8 " job-0.out job-1.out | grep -v "^done: 9 steps" >job.out
t_grep "^done: 24 steps" job.out "the run's 24 steps"

replay() { # out args...
	local out=$1
	shift
	timeout -s KILL 300 python3 "$ex/replay.py" --mpirun "$MPIRUN" "$@" >"$out" 2>&1
}
replay equal --log job.out --model job.npy --workdir w -- "${train[@]}"
rc=$?
[ $rc = 0 ] || { cat equal; t_fail "the run's own replay was not equal (exit $rc)"; }
t_grep "^replay: steps 0-8 on 2 ranks" equal "steps 0-8 (step 8 without a line) replayed on 2 ranks"
t_grep "^replay: steps 9-23 on 3 ranks" equal "steps 9-23 replayed on 3 ranks"
t_grep "^replay: equal to a static replay of its world sizes \(2 ranks to step 8, 3 ranks to step 23; .*the same loss at all 23 printed steps, every parameter bit for bit" \
	equal "the verdict"

# One loss changed at step 4: the replay stops after its first stretch.
loss=$(sed -n 's/^step 4 .* loss \([0-9.]*\) .*/\1/p' job.out)
[ -n "$loss" ] || t_fail "no loss of step 4 in job.out"
sed "/^step 4 /s/ loss $loss / loss 9.999999 /" job.out >wrong.out
replay wrong --log wrong.out --model job.npy --workdir w2 -- "${train[@]}"
rc=$?
[ $rc = 1 ] || { cat wrong; t_fail "a changed loss gave exit $rc, not 1"; }
t_grep "^replay: NOT EQUAL: step 4: the job's loss 9.999999 at 2 ranks, the replay's $loss at 2 ranks" \
	wrong "the changed step named, with both losses"
! grep -q "^replay: steps 9-" wrong || t_fail "the replay went on after the stretch that differs"

# The model's comparison, bit for bit (the replay's own model from above).
cat >model.py <<'PY'
import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
import replay  # noqa: E402

a = np.load("job.npy")
print("same:", replay.same_model("job.npy", "w/replay.npy", "-"))
b = a.copy()
b.view(np.uint32)[17] ^= 1  # the lowest bit of one parameter
np.save("bit.npy", b)
print("bit:", replay.same_model("bit.npy", "w/replay.npy", "-"))
z = np.zeros(4, np.float32)
np.save("zero.npy", z)
np.save("negzero.npy", -z)
print("zero:", replay.same_model("zero.npy", "negzero.npy", "-"))
PY
python3 model.py "$ex" >model 2>&1 || { cat model; t_fail "model.py"; }
t_grep "^same: None" model "the job's model equal to its replay's"
t_grep "^bit: 1 of 9610 parameters differ from the replay's, the first #17: " model "one bit of one parameter"
t_grep "^zero: 4 of 4 parameters differ" model "0.0 against -0.0"

# Refusals: a log of an unfinished job, no program.
grep -v "^done:" job.out >unfinished.out
replay unfinished --log unfinished.out --model job.npy -- "${train[@]}"
[ $? = 2 ] || t_fail "a log without its done line was not refused with exit 2: $(cat unfinished)"
t_grep "^replay: FAILED: unfinished.out: no 'done: N steps' line \(the job did not finish\)" unfinished \
	"the unfinished log named"
replay noprog --log job.out --model job.npy
[ $? = 2 ] || t_fail "no training program was not refused with exit 2: $(cat noprog)"
t_grep "error: no training program: give it after --" noprog "the missing program named"
t_log "replayed equal (2 ranks to step 8, 3 to 23, step 8's line missing); a changed loss stops at its step; one bit, 0.0 against -0.0 differ; an unfinished log and no program refused"
t_cleanup 0
