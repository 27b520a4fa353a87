#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/big_job.sh: one big elastic job on a site-sized testbed cluster: RANKS
# ranks (default 128) over NODES nodes (default 16) of 8 fake GPUs, one
# elastic_train rank per GPU under elastic-run, in one Slurm allocation. The
# ranks sleep most of each step (--step-sleep), so that 2 cores hold them.
# Three events, each timed from its cause to the next committed step (rank
# 0's step lines carry the time of their commit):
#   1. the launch: sbatch's job start to step 0 (mpirun, the runtime's daemon
#      on every node, MPI_Init of every rank, libelastic's first agreement);
#   2. one rank SIGKILLed (a rank on the fifth node);
#   3. one node lost: every process of the job on the last node stopped and
#      SIGKILLed at once (its daemon, its rank wrappers, its ranks).
# It asserts what the job must keep through them: every sample once in each
# epoch, no step twice, and the final model equal to a run without events (4
# ranks, no Slurm). It prints one table, and elastic-run's own lines about
# each event.
#
# usage (on the host, as root): bench/big_job.sh [NODES [GPUS_PER_NODE]]
#   ELASTIC_TESTBED_RUNTIME picks the root (default ompi6: a lost rank or node
#   heals in place; ompi5 and sid work too). Build its tree first
#   (testbed/check, or configure and make in build-testbed-RUNTIME). The
#   cluster is instance "big"; BENCH_KEEP=1 leaves it and the job's files.
#   BIG_STEP_SLEEP_US (default 300000): each step's pause.
set -euo pipefail
case "${1:-}" in -h | --help) sed -n '3,/^set -euo/p' "$0" | sed '$d' | cut -c3-; exit 0 ;; esac
nodes=${1:-16} gpus=${2:-8}
ranks=$((nodes * gpus))
top=$(cd "$(dirname "$0")/.." && pwd)
export ELASTIC_TESTBED_RUNTIME=${ELASTIC_TESTBED_RUNTIME:-ompi6}
export ELASTIC_TESTBED_INSTANCE=big ELASTIC_TESTBED_NODES=$nodes ELASTIC_TESTBED_GPUS_PER_NODE=$gpus
C=$top/testbed/cluster
build=build-testbed$([ "$ELASTIC_TESTBED_RUNTIME" = ompi5 ] || echo "-$ELASTIC_TESTBED_RUNTIME")
train=/src/$build/examples/elastic_train
[ -x "$top/$build/examples/elastic_train" ] ||
	{ echo "big_job: $build/examples/elastic_train is not built (bench/big_job.sh --help)" >&2; exit 1; }
sleep_us=${BIG_STEP_SLEEP_US:-300000}
# 3 epochs of 40 steps; 2 samples per rank and step
gb=$((2 * ranks))
args="--epochs 3 --samples $((40 * gb)) --global-batch $gb"

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
wait_full_after() { # time seconds
	local end=$((SECONDS + $2))
	until [ "$(event "$1" | wc -w)" = 3 ]; do
		[ $SECONDS -lt $end ] || { in_root tail -n 30 "$D/big.out"; die "not back at $ranks ranks $2 s after the event"; }
		[ -n "$(in_root squeue -h -j "$job" -o %T 2>/dev/null || true)" ] || { in_root tail -n 30 "$D/big.out"; die "the job ended"; }
		sleep 0.5
	done
}
wait_step_after() { # time seconds
	local end=$((SECONDS + $2))
	until [ -n "$(to_step "$1")" ]; do
		[ $SECONDS -lt $end ] || { in_root tail -n 30 "$D/big.out"; die "no step committed $2 s after the event"; }
		state=$(in_root squeue -h -j "$job" -o %T 2>/dev/null || true)
		[ -n "$state" ] || { in_root tail -n 30 "$D/big.out"; die "the job ended"; }
		sleep 0.5
	done
}
# pids of job $job's processes whose comm matches $1 (a regex) on node $2
# (all: any node)
job_pids() { in_root bash "$D/pids.sh" "$job" "$1" "$2"; }
rss_mib() { # pids
	in_root bash -c 'for p in '"$1"'; do awk "/^VmRSS:/ { print \$2 }" /proc/$p/status 2>/dev/null; done' |
		awk '{ s += $1; n++ } END { printf "%.0f MiB (%.1f each)", s / 1024, n ? s / 1024 / n : 0 }'
}

"$C" down >/dev/null 2>&1 || true
t0=$(now)
"$C" up >/tmp/big_job_up.log 2>&1 || { tail -n 30 /tmp/big_job_up.log; die "the cluster did not come up"; }
up_s=$(awk -v a="$t0" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
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
trap '[ -n "${BENCH_KEEP:-}" ] || "$C" down >/dev/null 2>&1' EXIT

# the run without events: 4 ranks, no Slurm, no pause
in_root bash -c "cd $D && eval \"\$(bash /src/testbed/cluster-inner.sh env --ompi)\" &&
	ELASTIC_JOB_ID=bigref mpirun --with-ft ulfm --oversubscribe --bind-to none -np 4 $train $args --quiet --out ref.model >ref.out 2>&1" ||
	{ in_root tail "$D/ref.out"; die "the reference run failed"; }

in_root cp "/src/$build/launcher/elastic-run" "$D/"
job=$(in_root sbatch --parsable -N "$nodes" -n "$ranks" --ntasks-per-node="$gpus" --gres=gpu:"$gpus" \
	-o "$D/big.out" -D "$D" --wrap "eval \"\$(bash /src/testbed/cluster-inner.sh env --ompi)\"
exec ./elastic-run -v -- $train $args --step-sleep $sleep_us --compare ref.model")
# the launch: from the job's start to step 0
end=$((SECONDS + 120))
until [ "$(in_root squeue -h -j "$job" -o %T)" = RUNNING ]; do
	[ $SECONDS -lt $end ] || die "job $job did not start"
	sleep 0.2
done
start=$(in_root scontrol show job "$job" | sed -n 's/.* StartTime=\([^ ]*\).*/\1/p')
start=$(date -d "$start" +%s)
wait_step_after "$start" 600
launch=$(to_step "$start")
all=$(job_pids 'elastic_train|lt-elastic_trai' all)
nr=$(wc -w <<<"$all")
rss=$(rss_mib "$all")
[ "$nr" = "$ranks" ] || die "$nr ranks running, $ranks expected"

# 2. one rank killed: the first rank found on the fifth node (or the last)
victim_node=node$((nodes >= 5 ? 5 : nodes))
vr=$(job_pids 'elastic_train|lt-elastic_trai' "$victim_node" | awk '{ print $1 }')
[ -n "$vr" ] || die "no rank on $victim_node"
wait_step_after "$(now)" 120
t_rank=$(in_root bash -c "date +%s.%N; kill -KILL $vr")
wait_full_after "$t_rank" 300
heal_rank=$(event "$t_rank")

# 3. one node lost: every process of the job on the last node at once
sleep 5
lost=node$nodes
vn=$(job_pids 'prted|elastic-run|elastic_train|lt-elastic_trai' "$lost")
[ -n "$vn" ] || die "no process of job $job on $lost"
t_node=$(in_root bash -c "date +%s.%N; kill -STOP $vn 2>/dev/null; kill -KILL $vn 2>/dev/null; true")
wait_full_after "$t_node" 300
heal_node=$(event "$t_node")

end=$((SECONDS + 1800))
while [ -n "$(in_root squeue -h -j "$job" -o %T 2>/dev/null)" ]; do
	[ $SECONDS -lt $end ] || die "job $job still running 30 min on"
	sleep 2
done
out=$(in_root cat "$D/big.out")
done_line=$(grep -a '^done: ' <<<"$out" || true)
match=$(grep -a '^model matches reference' <<<"$out" || true)
steps=$(grep -ac '^step [0-9]* ' <<<"$out")
uniq_steps=$(grep -a '^step [0-9]* ' <<<"$out" | awk '{ print $2 }' | sort -un | wc -l)

printf '\nbig job, runtime %s: %d ranks over %d nodes x %d GPUs, one allocation (job %s), step pause %d ms\n' \
	"$ELASTIC_TESTBED_RUNTIME" "$ranks" "$nodes" "$gpus" "$job" $((sleep_us / 1000))
printf '  cluster up in %s s; ranks: %s RSS\n' "$up_s" "$rss"
printf '  %-52s %s\n' "event" "s to the next step | s to full size again | GPU-s held without training" \
	"launch: job start -> step 0" "$launch (step)" \
	"one rank SIGKILLed ($victim_node)" "$(sed 's/ / | /g' <<<"$heal_rank")" \
	"one node lost ($lost: $(wc -w <<<"$vn") processes SIGKILLed)" "$(sed 's/ / | /g' <<<"$heal_node")"
echo "  elastic-run said:"
grep -a -E 'healed|re-form [0-9]+:|lost|left out|finished' <<<"$out" | sed 's/^/    /' | head -n 20
printf '  %s\n  %s\n  step lines: %d, distinct steps: %d\n' "${done_line:-no done line}" "${match:-no model comparison}" "$steps" "$uniq_steps"
[ -z "${BENCH_KEEP:-}" ] || echo "  files: $D (in the root)"
grep -aq ' 0 bad, 0 violations' <<<"$done_line" && [ -n "$match" ] && [ "$steps" = "$uniq_steps" ] ||
	die "FAILED: the job lost or repeated work (above)"
