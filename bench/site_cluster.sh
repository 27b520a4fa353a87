#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/site_cluster.sh: a site-sized testbed cluster on this machine: NODES
# slurmd (one per node, default 64) of GPUS fake GPUs each (default 8), with
# the runtime's confinement and, on ompi6 and sid, a network namespace per
# node. Prints how long it takes to come up, what it costs in memory, how long
# one step over every node and every GPU takes, and how long it takes to stop.
#
# usage (on the host, as root): bench/site_cluster.sh [NODES [GPUS]]
#   ELASTIC_TESTBED_RUNTIME picks the root (ompi5, the default; ompi6; sid).
#   The cluster is instance "site"; BENCH_KEEP=1 leaves it up.
set -euo pipefail
nodes=${1:-64} gpus=${2:-8}
top=$(cd "$(dirname "$0")/.." && pwd)
export ELASTIC_TESTBED_INSTANCE=site ELASTIC_TESTBED_NODES=$nodes ELASTIC_TESTBED_GPUS_PER_NODE=$gpus
C=$top/testbed/cluster
runtime=${ELASTIC_TESTBED_RUNTIME:-ompi5}

avail_kib() { awk '/^MemAvailable:/ { print $2 }' /proc/meminfo; }
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

"$C" down >/dev/null 2>&1 || true
sync
echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
m0=$(avail_kib)
t0=$(date +%s.%N)
"$C" up >/tmp/site_cluster_up.log 2>&1 || { tail -n 30 /tmp/site_cluster_up.log; echo "site_cluster: the cluster did not come up" >&2; exit 1; }
up_s=$(since "$t0")
sleep 5 # the daemons' first registrations and timers
m1=$(avail_kib)
# The RSS of this instance's daemons, by their pid files.
rss=$("$C" exec -- bash -c 'cd "$ELASTIC_TESTBED_DIR/run" && for f in *.pid; do
	p=$(cat "$f" 2>/dev/null) && r=$(awk "/^VmRSS:/ { print \$2 }" /proc/$p/status 2>/dev/null) &&
		echo "${f%.pid} $r"; done' | awk '
	$1 ~ /^slurmd-/ { sd += $2; n++; next } $1 ~ /^netns-/ { ns += $2; nn++; next } { other[$1] = $2 }
	END { printf "RSS: slurmd x%d %.0f MiB (%.1f MiB each)", n, sd / 1024, n ? sd / 1024 / n : 0
		if (nn) printf "; network namespace holders x%d %.0f MiB", nn, ns / 1024
		for (k in other) printf "; %s %.0f MiB", k, other[k] / 1024 }')
idle=$("$C" exec -- sinfo -h -N -t idle -o %N | sort -u | wc -l)
ngpus=$("$C" exec -- sinfo -h -N -o '%N %G' | sort -u | awk -F'gpu:' '{ split($2, a, /[(,]/); s += a[1] } END { print s }')
t1=$(date +%s.%N)
hosts=$("$C" exec -- srun -N "$nodes" -n "$nodes" --gres=gpu:"$gpus" -t 5 \
	bash -c 'echo "$SLURMD_NODENAME $CUDA_VISIBLE_DEVICES"' 2>/tmp/site_cluster_srun.log | sort -u) ||
	{ cat /tmp/site_cluster_srun.log; echo "site_cluster: a step over every node failed" >&2; exit 1; }
step_s=$(since "$t1")
nstep=$(wc -l <<<"$hosts")
sample=$(head -n 1 <<<"$hosts")
if [ -z "${BENCH_KEEP:-}" ]; then
	t2=$(date +%s.%N)
	"$C" down >/dev/null 2>&1
	down_s=$(since "$t2")
else
	down_s="(left up: ELASTIC_TESTBED_INSTANCE=site testbed/cluster down)"
fi

printf 'site cluster, runtime %s: %d nodes x %d GPUs\n' "$runtime" "$nodes" "$gpus"
printf '  up in %s s (testbed/cluster up, the root cached); %d nodes idle, %d GPUs in sinfo\n' "$up_s" "$idle" "$ngpus"
printf '  memory: %.0f MiB less available after up; %s\n' "$(((m0 - m1) / 1024))" "$rss"
printf '  one step on every node with all its GPUs: %d nodes answered in %s s (e.g. "%s")\n' "$nstep" "$step_s" "$sample"
printf '  down in %s s\n' "$down_s"
[ "$idle" = "$nodes" ] && [ "$nstep" = "$nodes" ] && [ "$ngpus" = $((nodes * gpus)) ] ||
	{ echo "site_cluster: FAILED: $idle of $nodes nodes idle, $nstep answered, $ngpus GPUs" >&2; exit 1; }
