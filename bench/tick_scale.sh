#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/tick_scale.sh: elasticd's tick on a site-sized cluster, with the
# whole job list read per tick (ELASTICD_QUERY=full) beside the targeted
# queries (the default), in one run.
#
# Every node has BLOCK GPUs held by a plain job (so grants fragment over the
# nodes). JOBS elastic jobs of alice and bob, MIN-MAX 1-MAX, priorities
# 1000 + 100 * i, proto-clients on the channel that give GPUs back at once
# (PolicyMode=priority, TickSeconds=1, CoolDown=0), take the rest of the
# GPUs in grants. Per mode, once the grants are steady: over WINDOW seconds
# two running jobs swap priorities every 5 s (a shrink and a grow: grants
# released, cancelled and submitted); from elasticd's metrics before and
# after, the ticks in the window, their mean, the bucket their p50 and p99
# fall in, and the mean time per tick reading slurmctld (observe),
# deciding and acting on Slurm; the grants held. elasticd is restarted for
# each mode and takes over the grants of the one before.
#
# usage: tick_scale.sh [--jobs N] [--max N] [--block N] [--window S] [--modes "full targeted"]
# Run inside a testbed cluster of many nodes, e.g. (on the host)
#   ELASTIC_TESTBED_NODES=64 ELASTIC_TESTBED_GPUS_PER_NODE=8 ELASTIC_TESTBED_INSTANCE=tick \
#     testbed/cluster up && ... testbed/cluster exec -- bench/tick_scale.sh
# (about 2 minutes per mode at the defaults).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)
export top_builddir=${top_builddir:-/src/build-testbed}
jobs=24 max=16 block=4 window=60 modes="full targeted"
while [ $# -gt 0 ]; do
	case "$1" in
	--jobs) jobs=$2; shift 2 ;;
	--max) max=$2; shift 2 ;;
	--block) block=$2; shift 2 ;;
	--window) window=$2; shift 2 ;;
	--modes) modes=$2; shift 2 ;;
	-h | --help) sed -n '2,25p' "$0" | cut -c3-; exit 0 ;;
	*) echo "tick_scale: unknown argument '$1'" >&2; exit 2 ;;
	esac
done
. "$top_srcdir/tests/lib.sh"
. "$top_srcdir/tests/controller/ctl-lib.sh"
T_NAME=tick_scale
ctl_setup
ctl_conf TickSeconds=1 PolicyMode=priority CoolDown=0 Hysteresis=1 "MetricsAddress=127.0.0.1:0"

mapfile -t nodes < <(sinfo -h -N -o %N | sort -u)
gpus=$(scontrol show node "${nodes[0]}" | sed -n 's/.*Gres=gpu:\([0-9]*\).*/\1/p')
[ "$block" -lt "$gpus" ] || t_fail "--block $block leaves no GPU of $gpus on a node"
[ "$block" -gt 0 ] && ctl_block_gpus "$block" "${nodes[@]}"

running_grants() { squeue -h -t R -o '%j' | grep -c '^elastic:' || true; }

ids=()
for i in $(seq "$jobs"); do
	u=alice a=acct_a
	[ $((i % 2)) = 0 ] && u=bob a=acct_b
	ids+=("$(ctl_job "$u" "$a" 1 "$max" 5 $((1000 + 100 * i)))")
done
for j in "${ids[@]}"; do
	until [ "$(t_job_state "$j")" = RUNNING ]; do sleep 0.2; done
	ctl_client "$(squeue -h -j "$j" -o %u)" "$j"
done
t_log "$jobs elastic jobs 1-$max on ${#nodes[@]} nodes x $gpus GPUs ($block a node held by plain jobs)"

rows=()
for mode in $modes; do
	: >"$T_DIR/elasticd.log"
	ELASTICD_QUERY=$mode ctl_start
	# steady: the running grants unchanged for 10 s (at most 5 minutes)
	last=-1 same=0 end=$((SECONDS + 300))
	while [ "$same" -lt 10 ] && [ $SECONDS -lt $end ]; do
		n=$(running_grants)
		if [ "$n" = "$last" ]; then same=$((same + 1)); else same=0 last=$n; fi
		sleep 1
	done
	ctl_scrape >"$T_DIR/m0.$mode"
	t0=$SECONDS
	k=0
	while [ $((SECONDS - t0)) -lt "$window" ]; do
		a=${ids[$((k % jobs))]} b=${ids[$(((k + jobs / 2) % jobs))]}
		pa=$(squeue -h -j "$a" -o %Q) pb=$(squeue -h -j "$b" -o %Q)
		scontrol update JobId="$a" Priority="$pb"
		scontrol update JobId="$b" Priority="$pa"
		k=$((k + 1))
		sleep 5
	done
	ctl_scrape >"$T_DIR/m1.$mode"
	held=$(running_grants)
	kill "$CTL_PID"
	wait "$CTL_PID" 2>/dev/null
	CTL_PID=""
	rows+=("$(python3 - "$mode" "$T_DIR/m0.$mode" "$T_DIR/m1.$mode" "$held" "$k" <<'PY'
import re, sys
mode, f0, f1, held, flips = sys.argv[1:]
def read(f):
    b, ph, s, c = {}, {}, 0.0, 0
    for l in open(f):
        m = re.match(r'slurm_elastic_tick_seconds_bucket\{le="([^"]+)"\} (\d+)', l)
        if m: b[m.group(1)] = int(m.group(2))
        m = re.match(r'slurm_elastic_tick_phase_seconds_total\{phase="(\w+)"\} ([\d.]+)', l)
        if m: ph[m.group(1)] = float(m.group(2))
        if l.startswith('slurm_elastic_tick_seconds_sum '): s = float(l.split()[1])
        if l.startswith('slurm_elastic_tick_seconds_count '): c = int(l.split()[1])
    return b, ph, s, c
b0, p0, s0, c0 = read(f0)
b1, p1, s1, c1 = read(f1)
n = c1 - c0
def q(x):
    for le in b1:
        if b1[le] - b0.get(le, 0) >= x * n:
            return "<= %s ms" % ("%g" % (float(le) * 1000) if le != "+Inf" else "inf")
ph = lambda k: 1000 * (p1.get(k, 0) - p0.get(k, 0)) / max(n, 1)
print("| %-8s | %5d | %6s | %7.1f ms | %-10s | %-10s | %6.1f ms | %6.1f ms | %6.1f ms |" % (
    mode, n, held, 1000 * (s1 - s0) / max(n, 1), q(0.5), q(0.99), ph("observe"), ph("decide"), ph("act")))
PY
)")
	t_log "${rows[-1]}"
done

echo
echo "elasticd's ticks, $jobs elastic jobs on ${#nodes[@]} nodes x $gpus GPUs, ${window} s windows with a priority swap every 5 s"
echo
echo "| queries  | ticks | grants | mean tick | p50 | p99 | observe | decide | act |"
echo "| --- | ---: | ---: | ---: | --- | --- | ---: | ---: | ---: |"
printf '%s\n' "${rows[@]}"
