#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/site_soak.sh: a site-sized cluster for MINUTES (default 60) of the
# life a site gives it, with nothing lost: 64 nodes x 8 fake GPUs (testbed
# instance "soak"), elasticd, and
#   - 24 elastic jobs (elastic_train under elastic-run, --compare against a
#     static 2-rank run) of four users (alice, bob, and carol and dave, whom
#     it adds to the root), MIN-MAX from 1-4 to 4-64, their maxima
#     halved until every rank alive at once fits in half the memory
#     available (one idle rank's RSS measured first; at most 200 ranks);
#     a job that ends is replaced while a new one has time to finish; the
#     first 2 slots of at most 4 GPUs run the PyTorch example instead
#     (examples/pytorch/train_digits.py, at most 12 epochs, its final
#     model against a static 2-rank run's within float32 noise);
#   - plain jobs of 1-8 GPUs holding them 30-300 s, one every 2 s while at
#     most 20 wait;
#   - a running elastic job's priority changed every 30 s; the policy
#     changed to fairshare by SIGHUP at 45 %;
#   - a node lost every 10 min (every process of the node SIGKILLed, its
#     slurmd too, the node DOWN), back 60 s later; never a node where an
#     elastic job's batch script runs (the job would end with it);
#   - slurmctld restarted at 30 %, elasticd SIGKILLed and started at 60 %.
# Ranks sleep most of each step (1 s), so that 2 cores hold them; the
# nodes' slurmd and ranks run in one cpu cgroup beside the controller's
# daemons, as on a site, where these run on a host of their own
# (ELASTIC_TESTBED_NODE_CPU=own; shared: as in the tests, every process
# weighs alike, and elasticd's ticks wait for a CPU behind the ranks). It ends
# with one table: each job's result (every sample once, steps once and in
# order, the static run's model, COMPLETED), the sizes it ran at, GPU-s held
# and trained, heals in place, growths and shrinks in place and re-forms by
# cause; GPU sharing sampled every 30 s (each rank's job, cgroup and GPU
# against Slurm's GPU indices, and every GPU held by one job); grants and
# steps left over; elasticd's tick p50/p99 and RSS; its share of
# slurmctld's time (sdiag). Exit 1 when anything was lost.
#
# usage (on the host, as root): bench/site_soak.sh [MINUTES]
#   ELASTIC_TESTBED_RUNTIME (default ompi6; ompi5 and sid work too; build
#   the runtime's tree first, as for bench/big_job.sh). SOAK_NODES (64),
#   SOAK_GPUS (8), SOAK_JOBS (24), SOAK_TORCH_JOBS (2; 0 without torch
#   and sklearn in the root), SOAK_STEP_SLEEP_US (1000000),
#   SOAK_NODE_LOSS_EVERY_S (600; at most a third of the run),
#   SOAK_NODE_DOWN_S (60), SOAK_COOLDOWN_S (120: elastic.conf's CoolDown),
#   SOAK_MAX_RANKS (200), SOAK_TAIL_S (how long the elastic jobs may run on
#   after MINUTES; default half the run, at least 600). BENCH_KEEP=1 leaves
#   the cluster up. The run's files stay in the root's
#   /tmp/site_soak-inner.*; /tmp/site_soak.dir names the latest.
set -euo pipefail
case "${1:-}" in -h | --help) sed -n '3,/^set -euo/p' "$0" | sed '$d' | cut -c3-; exit 0 ;; esac
minutes=${1:-60}
[[ "$minutes" =~ ^[1-9][0-9]*$ ]] || { echo "site_soak: MINUTES must be a whole number above 0 (--help)" >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
export ELASTIC_TESTBED_RUNTIME=${ELASTIC_TESTBED_RUNTIME:-ompi6}
export ELASTIC_TESTBED_INSTANCE=soak ELASTIC_TESTBED_NODES=${SOAK_NODES:-64}
export ELASTIC_TESTBED_NODE_CPU=${ELASTIC_TESTBED_NODE_CPU:-own}
export ELASTIC_TESTBED_GPUS_PER_NODE=${SOAK_GPUS:-8}
C=$top/testbed/cluster
build=build-testbed$([ "$ELASTIC_TESTBED_RUNTIME" = ompi5 ] || echo "-$ELASTIC_TESTBED_RUNTIME")
for f in examples/elastic_train launcher/elastic-run plugin/elasticd/elasticd; do
	[ -x "$top/$build/$f" ] || { echo "site_soak: $build/$f is not built (bench/site_soak.sh --help)" >&2; exit 1; }
done
"$C" down >/dev/null 2>&1 || true
# the soak's two more users, in the root before slurmctld starts (it finds
# their uids when it loads the associations)
"$top/testbed/run" bash -c 'for u in carol:2003 dave:2004; do id "${u%%:*}" >/dev/null 2>&1 ||
	useradd -m -u "${u##*:}" -U -s /bin/bash "${u%%:*}"; done'
t0=$(date +%s.%N)
m0=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
"$C" up >/tmp/site_soak_up.log 2>&1 || { tail -n 30 /tmp/site_soak_up.log; echo "site_soak: the cluster did not come up" >&2; exit 1; }
m1=$(awk '/^MemAvailable:/ { print $2 }' /proc/meminfo)
echo "site_soak: $ELASTIC_TESTBED_NODES nodes x $ELASTIC_TESTBED_GPUS_PER_NODE GPUs ($ELASTIC_TESTBED_RUNTIME) up in $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s, $(((m0 - m1) / 1024)) MiB"
trap '[ -n "${BENCH_KEEP:-}" ] || "$C" down >/dev/null 2>&1' EXIT
rc=0
mapfile -t soak_env < <(env | grep '^SOAK_' || true)
"$C" exec -- env "${soak_env[@]}" top_srcdir=/src top_builddir="/src/$build" \
	bash /src/bench/site_soak-inner.sh "$minutes" || rc=$?
exit $rc
