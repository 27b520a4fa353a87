#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/big_job.sh: one big elastic job on a site-sized testbed cluster: RANKS
# ranks (default 128) over NODES nodes (default 16) of 8 fake GPUs, one
# elastic_train rank per GPU under elastic-run, side by side with the same at
# 8 ranks (2 nodes x 4 GPUs) in one run: how the costs grow with the job.
# The ranks sleep most of each step (--step-sleep), so that 2 cores hold them.
# Each event is timed from its cause to the next committed step (rank 0's
# step lines carry the time of their commit):
#   1. the launch: sbatch's job start to step 0 (mpirun, the runtime's daemon
#      on every node, MPI_Init of every rank, libelastic's first agreement);
#   2. one rank SIGKILLed (a rank on the fifth node, or the last);
#   3. one node lost: every process of the job on the last node stopped and
#      SIGKILLed at once (its daemon, its rank wrappers, its ranks);
#   4. planned resizes (bench/big_job_planned-inner.sh, with elasticd): a
#      job of RANKS/2 to RANKS GPUs whose grants fill the second half of the
#      nodes; the grant nodes drained (a shrink to RANKS/2), then resumed (a
#      grow back to RANKS); the pause is the longest time between two
#      committed steps from the order to the first step at the new size.
# Events 2-4 run BIG_REPEAT times each; the table gives the median and the
# largest. It asserts what each job must keep through them: every sample once
# in each epoch, no step twice, and the final model equal to a run without
# events. It prints one table, and elastic-run's own lines about the events
# of the big job.
#
# usage (on the host, as root): bench/big_job.sh [NODES [GPUS_PER_NODE]]
#   ELASTIC_TESTBED_RUNTIME picks the root (default ompi6: a lost rank or node
#   heals in place; ompi5 and sid work too). Build its tree first
#   (testbed/check, or configure and make in build-testbed-RUNTIME). The
#   cluster is instance "big"; BENCH_KEEP=1 leaves the last cluster and the
#   jobs' files.
#   BIG_STEP_SLEEP_US (default 300000): each step's pause. BIG_REPEAT
#   (default 5). BIG_SMALL=0: the big job alone. BIG_PLANNED=0: no planned
#   resizes.
set -euo pipefail
case "${1:-}" in -h | --help) sed -n '3,/^set -euo/p' "$0" | sed '$d' | cut -c3-; exit 0 ;; esac
big_nodes=${1:-16} big_gpus=${2:-8}
top=$(cd "$(dirname "$0")/.." && pwd)
export ELASTIC_TESTBED_RUNTIME=${ELASTIC_TESTBED_RUNTIME:-ompi6}
export ELASTIC_TESTBED_INSTANCE=big
# Slurm's default: 128 ranks starting on 2 cores keep slurmds from answering
# a 10 s ping, and slurmctld would requeue the job as if a node had died
export ELASTIC_TESTBED_SLURMD_TIMEOUT=${ELASTIC_TESTBED_SLURMD_TIMEOUT:-300}
C=$top/testbed/cluster
build=build-testbed$([ "$ELASTIC_TESTBED_RUNTIME" = ompi5 ] || echo "-$ELASTIC_TESTBED_RUNTIME")
train=/src/$build/examples/elastic_train
[ -x "$top/$build/examples/elastic_train" ] ||
	{ echo "big_job: $build/examples/elastic_train is not built (bench/big_job.sh --help)" >&2; exit 1; }
sleep_us=${BIG_STEP_SLEEP_US:-300000}
repeat=${BIG_REPEAT:-5}
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "big_job: BIG_REPEAT must be a whole number above 0" >&2; exit 2; }
R=$(mktemp -d /tmp/big_job.XXXXXX) # the figures, on the host

die() { echo "big_job: $*" >&2; exit 1; }
in_root() { "$C" exec -- "$@"; }
now() { date +%s.%N; }
# seconds from $1 to the time of the first step line after it
to_step() {
	in_root awk -v a="$1" '/^step [0-9]+ / { for (i = 1; i <= NF; i++) if ($i ~ /^t=/) { t = substr($i, 3) + 0
		if (t > a + 0) { printf "%.1f %s", t - a, $2; exit } } }' "$D/big.out"
}
# the event at $1 in three figures: s to the next committed step, s to the
# first step at full size again, and the GPU-s held without training between
# (RANKS x that time, less each step's size x the step time before the event)
event() {
	in_root awk -v a="$1" -v full="$ranks" '
		/^step [0-9]+ / {
			for (i = 1; i <= NF; i++) { if ($i ~ /^t=/) t = substr($i, 3) + 0; if ($i == "size") n = $(i + 1) }
			if (t <= a + 0) { if (pt) { d[++nd] = t - pt } pt = t; next }
			if (!first) { first = t; asort(d); per = d[int(nd / 2) + 1] }
			used += n * per
			if (n == full) { printf "%.1f %.1f %.0f", first - a, t - a, full * (t - a) - used; exit }
		}' "$D/big.out"
}
# Whether the job runs: it has ended when squeue names an end state or no
# longer knows it (MinJobAge on). A query that fails otherwise (slurmctld
# past MessageTimeout while 128 ranks start on 2 cores) does not say it
# ended: it is asked again, and after three failures the job counts as
# running (the callers' own limits bound the wait).
job_alive() {
	local out try
	for try in 1 2 3; do
		if out=$(in_root squeue -h -j "$job" -o %T 2>&1); then
			case $out in
			"" | COMPLETED | FAILED | CANCELLED* | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | PREEMPTED | BOOT_FAIL | DEADLINE) return 1 ;;
			*) return 0 ;;
			esac
		fi
		[[ $out != *"Invalid job id"* ]] || return 1
		sleep 2
	done
	echo "big_job: squeue failed three times ($out); job $job counts as running" >&2
	return 0
}
wait_full_after() { # time seconds
	local end=$((SECONDS + $2))
	until [ "$(event "$1" | wc -w)" = 3 ]; do
		[ $SECONDS -lt $end ] || { in_root tail -n 30 "$D/big.out"; die "not back at $ranks ranks $2 s after the event"; }
		job_alive || { in_root tail -n 30 "$D/big.out"; die "the job ended"; }
		sleep 0.5
	done
}
wait_step_after() { # time seconds
	local end=$((SECONDS + $2))
	until [ -n "$(to_step "$1")" ]; do
		[ $SECONDS -lt $end ] || { in_root tail -n 30 "$D/big.out"; die "no step committed $2 s after the event"; }
		job_alive || { in_root tail -n 30 "$D/big.out"; die "the job ended"; }
		sleep 0.5
	done
}
# pids of job $job's processes whose comm matches $1 (a regex) on node $2
# (all: any node)
job_pids() { in_root bash "$D/pids.sh" "$job" "$1" "$2"; }
rss_mib() { # pids
	in_root bash -c 'for p in '"$1"'; do awk "/^VmRSS:/ { print \$2 }" /proc/$p/status 2>/dev/null; done' |
		awk '{ s += $1; n++ } END { printf "%.1f", n ? s / 1024 / n : 0 }'
}
# median (max) of field $1 of the lines of file $2
median_max() {
	[ -s "$2" ] || { echo "-"; return; }
	awk -v f="$1" '{ print $f }' "$2" | sort -g |
		awk '{ a[NR] = $1 } END { m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
			printf "%.1f (max %.1f)", m, a[NR] }'
}

# One size: its cluster, the job with its faults, then the planned resizes;
# its figures in $R/LABEL.*
run_size() { # nodes gpus label
	local nodes=$1 gpus=$2 L=$3 t0 gb epochs args start all nr vr victim lost vn t r
	ranks=$((nodes * gpus))
	export ELASTIC_TESTBED_NODES=$nodes ELASTIC_TESTBED_GPUS_PER_NODE=$gpus
	"$C" down >/dev/null 2>&1 || true
	t0=$(now)
	"$C" up >/tmp/big_job_up.log 2>&1 || { tail -n 30 /tmp/big_job_up.log; die "the cluster did not come up"; }
	awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f\n", b - a }' >"$R/$L.up"
	D=$(in_root mktemp -d /tmp/big_job.XXXXXX)
	in_root chmod 755 "$D"
	in_root tee "$D/pids.sh" >/dev/null <<'EOS'
. /src/tests/lib.sh # t_env_has
want=("SLURM_JOB_ID=$1")
[ "$3" = all ] || want+=("SLURMD_NODENAME=$3")
for p in /proc/[0-9]*; do
	read -r c 2>/dev/null <"$p/comm" || continue
	[[ $c =~ ^($2)$ ]] && t_env_has "${p#/proc/}" "${want[@]}" && echo -n "${p#/proc/} "
done
true
EOS
	# epochs of 40 steps (2 samples per rank and step), enough for every
	# event at the step pause; once they are over the pause ends
	# (--sleep-while) and the rest trains at full speed
	gb=$((2 * ranks))
	epochs=$(awk -v r="$repeat" -v n="$ranks" -v u="$sleep_us" \
		'BEGIN { e = 2 * r * (15 + 0.6 * n) / (40 * u / 1e6); print 3 + int(2 * e + 1) }')
	args="--epochs $epochs --samples $((40 * gb)) --global-batch $gb"
	# the run without events: 4 ranks, no Slurm, no pause
	in_root bash -c "cd $D && eval \"\$(bash /src/testbed/cluster-inner.sh env --ompi)\" &&
		ELASTIC_JOB_ID=bigref mpirun --with-ft ulfm --oversubscribe --bind-to none -np 4 $train $args --quiet --out ref.model >ref.out 2>&1" ||
		{ in_root tail "$D/ref.out"; die "the reference run failed"; }
	in_root cp "/src/$build/launcher/elastic-run" "$D/"
	in_root touch "$D/slow"
	job=$(in_root sbatch --parsable -N "$nodes" -n "$ranks" --ntasks-per-node="$gpus" --gres=gpu:"$gpus" \
		-o "$D/big.out" -D "$D" --wrap "eval \"\$(bash /src/testbed/cluster-inner.sh env --ompi)\"
exec ./elastic-run -v -- $train $args --step-sleep $sleep_us --sleep-while slow --compare ref.model")
	# 1. the launch: from the job's start to step 0
	t=$((SECONDS + 120))
	until [ "$(in_root squeue -h -j "$job" -o %T)" = RUNNING ]; do
		[ $SECONDS -lt $t ] || die "job $job did not start"
		sleep 0.2
	done
	start=$(in_root scontrol show job "$job" | sed -n 's/.* StartTime=\([^ ]*\).*/\1/p')
	start=$(date -d "$start" +%s)
	wait_step_after "$start" 600
	to_step "$start" | awk '{ print $1 }' >"$R/$L.launch"
	all=$(job_pids 'elastic_train|lt-elastic_trai' all)
	nr=$(wc -w <<<"$all")
	[ "$nr" = "$ranks" ] || die "$nr ranks running, $ranks expected"
	rss_mib "$all" >"$R/$L.rss"
	victim=node$((nodes >= 5 ? 5 : nodes)) lost=node$nodes
	echo "$victim $lost" >"$R/$L.nodes"
	for ((r = 1; r <= repeat; r++)); do
		# 2. one rank killed: the first rank found on the victim's node
		vr=$(job_pids 'elastic_train|lt-elastic_trai' "$victim" | awk '{ print $1 }')
		[ -n "$vr" ] || die "no rank on $victim"
		wait_step_after "$(now)" 120
		t=$(in_root bash -c "date +%s.%N; kill -KILL $vr")
		wait_full_after "$t" 600
		event "$t" >>"$R/$L.rank"
		echo >>"$R/$L.rank"
		# 3. one node lost: every process of the job on the last node at once
		sleep 5
		vn=$(job_pids 'prted|elastic-run|elastic_train|lt-elastic_trai' "$lost")
		[ -n "$vn" ] || die "no process of job $job on $lost"
		wc -w <<<"$vn" >"$R/$L.lostprocs"
		t=$(in_root bash -c "date +%s.%N; kill -STOP $vn 2>/dev/null; kill -KILL $vn 2>/dev/null; true")
		wait_full_after "$t" 600
		event "$t" >>"$R/$L.node"
		echo >>"$R/$L.node"
		sleep 5
		echo "big_job: $L: rank kill and node loss $r of $repeat done" >&2
	done
	in_root rm -f "$D/slow"
	t=$((SECONDS + 1800))
	while job_alive; do
		[ $SECONDS -lt $t ] || die "job $job still running 30 min on"
		sleep 2
	done
	in_root cat "$D/big.out" >"$R/$L.out"
	local done_line match steps uniq_steps
	done_line=$(grep -a '^done: ' "$R/$L.out" || true)
	match=$(grep -a '^model matches reference' "$R/$L.out" || true)
	steps=$(grep -ac '^step [0-9]* ' "$R/$L.out")
	uniq_steps=$(grep -a '^step [0-9]* ' "$R/$L.out" | awk '{ print $2 }' | sort -un | wc -l)
	grep -aq ' 0 bad, 0 violations' <<<"$done_line" && [ -n "$match" ] && [ "$steps" = "$uniq_steps" ] || {
		printf '%s\n%s\nstep lines: %d, distinct steps: %d\n' "${done_line:-no done line}" "${match:-no model comparison}" "$steps" "$uniq_steps" >&2
		die "FAILED: $L: the job lost or repeated work (above; its output: $R/$L.out)"
	}
	echo "$steps steps once, every sample once an epoch, the static run's model" >"$R/$L.result"
	# 4. the planned resizes
	if [ "${BIG_PLANNED:-1}" != 0 ]; then
		in_root env top_srcdir=/src top_builddir="/src/$build" BENCH_KEEP="${BENCH_KEEP:-}" \
			bash /src/bench/big_job_planned-inner.sh "$nodes" "$gpus" "$repeat" "$sleep_us" >"$R/$L.planned" 2>&1 ||
			{ tail -n 30 "$R/$L.planned"; die "FAILED: $L: the planned resizes (their output: $R/$L.planned)"; }
		grep '^shrink ' "$R/$L.planned" | cut -d' ' -f2- >"$R/$L.shrink"
		grep '^grow ' "$R/$L.planned" | cut -d' ' -f2- >"$R/$L.grow"
	fi
	[ -n "${BENCH_KEEP:-}" ] || "$C" down >/dev/null 2>&1
}
trap '[ -n "${BENCH_KEEP:-}" ] || "$C" down >/dev/null 2>&1' EXIT

labels=(big) sizes=("$big_nodes $big_gpus")
[ "${BIG_SMALL:-1}" = 0 ] || { labels+=(small); sizes+=("2 4"); }
for i in "${!labels[@]}"; do
	# shellcheck disable=SC2086
	run_size ${sizes[i]} "${labels[i]}"
done

# The table: one column per size; fig WHAT prints a figure per size, a line
# each.
fig() {
	local L
	for L in "${labels[@]}"; do
		case $1 in
		up | launch | rss) cat "$R/$L.$1" ;;
		*) median_max "${1#*:}" "$R/$L.${1%%:*}" && echo ;;
		esac
	done
}
row() { # text what ("": the sizes)
	local f=()
	if [ -n "$2" ]; then mapfile -t f < <(fig "$2"); else f=("${cols[@]}"); fi
	printf '  %-46s' "$1"
	printf ' | %-22s' "${f[@]}"
	printf '\n'
}
cols=()
for i in "${!labels[@]}"; do
	read -r n g <<<"${sizes[i]}"
	cols+=("$((n * g)) ranks ($n x $g)")
done
printf '\nbig job, runtime %s, step pause %d ms; events %d times each: median (max)\n' \
	"$ELASTIC_TESTBED_RUNTIME" $((sleep_us / 1000)) "$repeat"
row "" ""
row "cluster up, s" up
row "launch: job start -> step 0, s" launch
row "rank SIGKILLed: to the next step, s" rank:1
row "  ... to full size again, s" rank:2
row "  ... GPU-s held without training" rank:3
row "node lost: to the next step, s" node:1
row "  ... to full size again, s" node:2
row "  ... GPU-s held without training" node:3
if [ "${BIG_PLANNED:-1}" != 0 ]; then
	row "planned shrink to half: to the new size, s" shrink:1
	row "  ... longest pause between steps, s" shrink:2
	row "planned grow back: to the new size, s" grow:1
	row "  ... longest pause between steps, s" grow:2
fi
row "ranks' RSS each, MiB" rss
for L in "${labels[@]}"; do
	echo "  $L: $(cat "$R/$L.result")$([ ! -s "$R/$L.planned" ] || echo "; planned: $(grep '^ok ' "$R/$L.planned" | cut -d' ' -f2) steps once, the static run's model")"
done
echo "  the big job's rank on $(cut -d' ' -f1 "$R/big.nodes"), its node $(cut -d' ' -f2 "$R/big.nodes") ($(cat "$R/big.lostprocs") processes); elastic-run said:"
grep -a -E 'healed|re-form [0-9]+:|lost|left out|finished' "$R/big.out" | sed 's/^/    /' | head -n 20
echo "  figures and outputs: $R"
