#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/resize_reform.sh: planned shrink and grow by re-forming (path B): one
# training run goes 8 -> 5 -> 3 -> 8 ranks; each launch leaves at a step boundary
# (--stop-after, as on a controller's order) and the next resumes from the node snapshot.
# The model must equal a run that never changed size, every sample once per epoch; the
# pause of each resize (last commit before to first commit after) is reported.
set -u
. "$(dirname "$0")/common.sh"

args="--step-sleep 2000 --epochs 3 --samples 4096 --global-batch 128"
t_scratch
t_mpi_scratch
unset ELASTIC_WATCHDOG
export ELASTIC_JOB_ID="resize$$"
rm -f /dev/shm/elastic-"$ELASTIC_JOB_ID"-*

(
	unset ELASTIC_JOB_ID
	t_reference 120 8 $args --quiet
)

last_t=""
pauses=""
n=0
for spec in 8:20 5:25 3:30 8:0; do
	np=${spec%%:*}
	stop=${spec##*:}
	n=$((n + 1))
	out=$T_DIR/launch$n.out
	extra=""
	[ "$stop" != 0 ] && extra="--stop-after $stop"
	[ $n = 4 ] && extra="--compare $T_DIR/ref.model"
	timeout -s KILL 120 $MPIRUN -np "$np" "$TRAIN" $args $extra >"$out" 2>&1
	rc=$?
	[ $rc = 0 ] || { tail -20 "$out"; t_fail "launch $n on $np ranks ended with $rc"; }
	first=$(awk '/^step [0-9]+ /{ print $2; exit }' "$out")
	first_t=$(awk '/^step [0-9]+ /{ for (i = 1; i <= NF; i++) if ($i ~ /^t=/) { print substr($i, 3); exit } }' "$out")
	sizes=$(awk '/^step [0-9]+ /{ print $6 }' "$out" | sort -u | tr '\n' ' ')
	[ "$sizes" = "$np " ] || t_fail "launch $n ran at sizes '$sizes', expected $np"
	if [ $n -gt 1 ]; then
		[ "$first" = "$expect" ] || t_fail "launch $n began at step $first, expected $expect"
		t_grep "resumed at committed step $expect" "$out" "launch $n resumed"
		pauses="$pauses $(awk -v a="$last_t" -v b="$first_t" 'BEGIN { printf "%.0f", (b - a) * 1000 }')"
	fi
	last=$(awk '/^step [0-9]+ /{ s = $2 } END { print s }' "$out")
	last_t=$(awk '/^step [0-9]+ /{ for (i = 1; i <= NF; i++) if ($i ~ /^t=/) t = substr($i, 3) } END { print t }' "$out")
	expect=$((last + 1))
	t_log "launch $n: $np ranks, steps $first..$last"
done
t_grep '^done: 96 steps, 3 epochs, size 8 .* 0 bad, 0 violations' "$out" "the last launch finished"
t_grep '^model matches reference' "$out" "same model as the run at a constant size"
ls /dev/shm/elastic-"$ELASTIC_JOB_ID"-* >/dev/null 2>&1 && t_fail "snapshots left after completion"
t_log "8 -> 5 -> 3 -> 8: model identical to the constant-size run; pause per resize (ms, last commit to first commit after, including the relaunch):$pauses"
exit 0
