#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_fail.sh: a DDP script's own exception under sbatch + elastic-run
# (tests/python/fail_job.py, 2 ranks, default options, the two jobs side by side):
#  - save: rank 0's torch.save raises after the last epoch. The training is complete:
#    elastic-run does not relaunch it.
#  - bug: rank 1 raises in epoch 1 at every launch. The other rank stops at its next
#    step boundary (it does not train on without it); one retry (steps were committed
#    before the failure), which commits none before it fails: the job ends.
# Each job ends FAILED with exit status 1 (the rank's own), in a bounded time, and the
# first traceback is the output's last lines, after elastic-run's line naming the rank.
set -u
. "$(dirname "$0")/common.sh"
py_cluster_setup

cat >"$T_DIR/fail.sbatch" <<SB
#!/bin/bash
export OMP_NUM_THREADS=1
exec $top_builddir/launcher/elastic-run -v -- python3 $here/fail_job.py "\$1" $T_DIR
SB
declare -A job
n=1
for how in save bug; do
	job[$how]=$(t_sbatch root -N1 -n1 -w node$n --gres=gpu:2 -o "$T_DIR/$how.out" \
		--export="ALL,PYTHONPATH=$PYTHONPATH" "$T_DIR/fail.sbatch" "$how")
	n=$((n + 1))
done
t0=$SECONDS
expect() { # how launches exception
	local how=$1 out=$T_DIR/$1.out launches ec tail
	t_wait_job "${job[$how]}" 150 FAILED
	t_log "$how: ended after $((SECONDS - t0)) s"
	launches=$(grep -ac '^launch: rank 0 ' "$out")
	[ "$launches" = "$2" ] || { cat "$out"; t_fail "$how: $launches launches, expected $2"; }
	ec=$(scontrol show job "${job[$how]}" | grep -o ' ExitCode=[0-9:]*')
	[ "$ec" = " ExitCode=1:0" ] || { cat "$out"; t_fail "$how: the job's${ec:- ExitCode=?}, expected 1:0"; }
	# elastic-run's last line names the failing rank; the traceback follows it, whole
	t_grep "^elastic-run [0-9:.]+: the first failure, launch 1: rank [01] on node[0-9] GPU [0-9]+: exit status 1; it wrote:" "$out" "$how: elastic-run names the failure"
	tail=$(sed -n '/^elastic-run [0-9:.]*: the first failure/,$p' "$out")
	grep -q '^ *Traceback (most recent call last):' <<<"$tail" &&
		[[ "$(tail -n1 "$out")" =~ $3 ]] ||
		{ cat "$out"; t_fail "$how: the first traceback is not the output's end"; }
	t_log "$how: $launches launch(es), $ec, last line: $(tail -n1 "$out")"
}
expect save 1 "^ *(OSError|RuntimeError): .*no-such-dir"
expect bug 2 "^ *ValueError: a bug in the user's step"
# the survivors of rank 1's failure stop at their next step boundary: they do not train
# epoch 1 to its end without it (8 steps)
grep -aq '^epoch 1 mean loss' "$T_DIR/bug.out" &&
	{ cat "$T_DIR/bug.out"; t_fail "bug: the survivors trained on without the failed rank"; }
exit 0
