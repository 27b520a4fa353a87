#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/cluster_misuse.sh: misuse of the PyTorch binding under sbatch + elastic-run
# (2 ranks, one job per misuse, run side by side on node1..node4): registered state
# changed inside a step (on rank 0 only), registration that differs across ranks, a
# parameter replaced (param.data = ...) between steps: every rank gets a clear error
# naming the misuse and the job fails without a relaunch loop (--max-stuck 0);
# zero_grad(set_to_none=True) is supported: that job completes.
set -u
. "$(dirname "$0")/common.sh"
py_cluster_setup

t_ompi_env # the jobs inherit the testbed's Open MPI settings (sbatch --export=ALL)
cat >"$T_DIR/misuse.sbatch" <<SB
#!/bin/bash
export OMP_NUM_THREADS=1
exec $top_builddir/launcher/elastic-run -v --max-stuck 0 -- python3 $here/misuse_job.py "\$1"
SB
declare -A job
n=1
for how in inside mismatch param_data set_to_none; do
	job[$how]=$(t_sbatch root -N1 -n1 -w node$n --gres=gpu:2 -o "$T_DIR/$how.out" \
		--export="ALL,PYTHONPATH=$PYTHONPATH" "$T_DIR/misuse.sbatch" "$how")
	n=$((n + 1))
done
# every rank's line, then the job's end
expect() { # how state regex-of-both-ranks' text
	local how=$1 r line
	t_wait_job "${job[$how]}" 300 "$2"
	for r in 0 1; do
		line=$(grep -a "^rank $r: " "$T_DIR/$how.out" | head -1)
		[[ $line =~ $3 ]] || { cat "$T_DIR/$how.out"; t_fail "$how: rank $r said '${line:-nothing}', expected /$3/"; }
		t_log "$how: $line"
	done
	if [ "$2" = FAILED ]; then
		grep -aq 're-form 1:' "$T_DIR/$how.out" && t_fail "$how: elastic-run relaunched a misuse"
		t_grep 'failures in a row on the same GPUs: giving up' "$T_DIR/$how.out" "$how: elastic-run gave up at once"
	fi
}
expect inside FAILED "ERROR Error: .*(registered state 'extra' changed inside step 2|another rank's registered state changed inside step 2)"
grep -aq "^rank 0: .*registered state 'extra' changed inside step 2" "$T_DIR/inside.out" ||
	t_fail "inside: rank 0 (the one that changed it) was not told which buffer"
expect mismatch FAILED "ERROR Error: .*the ranks registered different state"
expect param_data FAILED "ERROR RegistrationError: parameter 0 no longer uses the registered storage \(param.data = "
expect set_to_none COMPLETED "OK 8 steps"
exit 0
