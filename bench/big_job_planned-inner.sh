#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/big_job_planned-inner.sh: the planned resizes of bench/big_job.sh, run
# inside the testbed root against its running cluster (testbed/cluster exec).
# One elastic job of RANKS = NODES x GPUS at most, RANKS/2 at least: its own
# allocation is the first half of the nodes, elasticd grants it the GPUs of
# the other half. REPEAT times: the grant nodes drained (elastic-ctl drain:
# elasticd orders their release, a planned shrink to RANKS/2), then resumed
# (a planned grow back to RANKS). Each resize, timed from the order: s to
# the first step at the new size, and the longest pause between two
# committed steps until then. One line per resize on stdout:
#   shrink|grow SECONDS_TO_NEW_SIZE LONGEST_PAUSE
# then "ok STEPS" once the job has trained to its end with every sample once,
# no step twice and the static run's model. Arguments: NODES GPUS REPEAT
# STEP_SLEEP_US.
. "${top_srcdir:-/src}/tests/lib.sh"
. "${top_srcdir:-/src}/tests/controller/ctl-lib.sh"
nodes=${1:?nodes} gpus=${2:?gpus} repeat=${3:?repeat} sleep_us=${4:?step sleep}
ranks=$((nodes * gpus)) half=$((nodes / 2))
low=$((half * gpus))
[ "$half" -ge 1 ] || t_fail "at least 2 nodes"
T_KEEP=${BENCH_KEEP:-}
ctl_setup
ctl_need_trainer
t_ompi_env
ctl_conf PolicyMode=priority CoolDown=0 "MaxGpusPerJob=$ranks" DefaultGrace=60 TickSeconds=1
# the cluster's elastic.conf (the SPANK and job_submit plugins) lets the job
# ask for all of it
sed -i "s/^MaxGpusPerJob=.*/MaxGpusPerJob=$ranks/" "$(dirname "$SLURM_CONF")/elastic.conf"
scontrol reconfigure && sleep 3

# epochs of 40 steps, enough for every resize at the pause; once they are
# over the pause ends (--sleep-while) and the rest trains at full speed
gb=$((2 * ranks)) step_s=$(awk -v u="$sleep_us" 'BEGIN { print u / 1e6 }')
epochs=${BIG_EPOCHS:-$(awk -v r="$repeat" -v n="$ranks" -v s="$step_s" \
	'BEGIN { e = 2 * r * (15 + 0.6 * n) / (40 * s); print 3 + int(2 * e + 1) }')}
targs="--samples $((40 * gb)) --global-batch $gb"
ctl_reference "$epochs" "$targs"
ctl_start
touch "$T_DIR/slow"
job=$(ctl_train_job big alice acct_a "--epochs $epochs $targs --step-sleep $sleep_us --sleep-while $T_DIR/slow --compare $T_DIR/ref.model" "" \
	--elastic-gpus="$low-$ranks" -N "$half" -n "$low" --ntasks-per-node="$gpus" --gres=gpu:"$gpus")
out=$T_DIR/big.out
ctl_wait_line 600 "$out" "^step [0-9]+ epoch [0-9]+ size $ranks " "the job does not train at $ranks"
t_log "job $job trains at $ranks ($epochs epochs)"

# s from $1 to the first step at size $2, and the longest time between two
# committed steps from the last one before $1 to that one
resized() {
	awk -v a="$1" -v want="$2" '
		/^step [0-9]+ / {
			for (i = 1; i <= NF; i++) { if ($i ~ /^t=/) t = substr($i, 3) + 0; if ($i == "size") n = $(i + 1) }
			if (t <= a + 0) { pt = t; next }
			if (pt && t - pt > gap) gap = t - pt
			pt = t
			if (n == want) { printf "%.1f %.1f", t - a, gap; exit }
		}' "$out"
}
wait_size() { # since size what
	local end=$((SECONDS + 600))
	until [ -n "$(resized "$1" "$2")" ]; do
		[ $SECONDS -lt $end ] || { tail -n 30 "$out" >&2; t_fail "$3: not at $2 ranks 600 s after the order"; }
		[ -n "$(squeue -h -j "$job" -o %T)" ] || { tail -n 30 "$out" >&2; t_fail "$3: the job ended"; }
		sleep 0.5
	done
}
for ((r = 1; r <= repeat; r++)); do
	grant_nodes=$(for l in $(squeue -h -n "elastic:$job" -t R -o %N); do scontrol show hostnames "$l"; done | sort -u)
	[ -n "$grant_nodes" ] || t_fail "job $job holds no grant at $ranks"
	sleep 3
	t=$(date +%s.%N)
	for n in $grant_nodes; do ctl drain "$n" >/dev/null; done
	wait_size "$t" "$low" "shrink $r"
	echo "shrink $(resized "$t" "$low")"
	sleep 3
	t=$(date +%s.%N)
	ctl resume >/dev/null
	wait_size "$t" "$ranks" "grow $r"
	echo "grow $(resized "$t" "$ranks")"
done
rm "$T_DIR/slow"
t_wait_job "$job" 1800
ctl_train_done "$out" "$epochs"
echo "ok $(grep -ac '^step [0-9]* ' "$out")"
