#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/compare.sh: runs bench/compare.py (slurm-elastic against static
# allocation with restart-from-checkpoint; see its --help) on a cluster of 2
# nodes x 4 GPUs: the current one (SLURM_CONF) when it has that shape and is
# idle, else a private instance "benchc" started inside the testbed root and
# stopped at the end. Outside the testbed root it says how to run it.
#
# usage: compare.sh [BUILD_DIR] [compare.py options]
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
# The build tree: the argument, else the one `make bench` runs in (bench/).
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
	build=$1
	shift
elif [ -x ../plugin/elasticd/elasticd ]; then
	build=..
else
	build=${ELASTIC_BUILD_DIR:-/src/build-testbed}
fi
build=$(cd "$build" && pwd)
if ! command -v slurmctld >/dev/null || [ ! -f "$src/testbed/cluster-inner.sh" ] || [ "$(id -u)" != 0 ]; then
	echo "compare: SKIP: needs the testbed root as root; run:"
	echo "  testbed/run make -C build-NAME/bench bench   (or: testbed/run $0 /src/build-NAME)"
	exit 0
fi
own=""
shape=""
if [ -n "${SLURM_CONF:-}" ] && scontrol ping >/dev/null 2>&1; then
	shape=$(sinfo -h -N -o '%N %G' | sort -u | awk '{ n++; if ($2 == "gpu:4") g++ } END { print n + 0, g + 0 }')
	[ -z "$(squeue -h 2>/dev/null)" ] || shape=busy
	sbatch --help 2>&1 | grep -q -- --elastic-gpus || shape=noplugins
fi
if [ "$shape" != "2 2" ]; then
	own=benchc
	export ELASTIC_TESTBED_INSTANCE=benchc ELASTIC_TESTBED_NODES=2 ELASTIC_BUILD_DIR=$build
	unset ELASTIC_TESTBED_PORT_BASE
	bash "$src/testbed/cluster-inner.sh" up >/tmp/benchc-up.log 2>&1 ||
		{ cat /tmp/benchc-up.log; echo "compare: cannot start a private cluster"; exit 1; }
	eval "$(bash "$src/testbed/cluster-inner.sh" env)"
	trap 'bash "$src/testbed/cluster-inner.sh" down >/dev/null 2>&1' EXIT
	echo "compare: private cluster benchc (2 nodes x 4 GPUs) up"
fi
exec 9>"$ELASTIC_TESTBED_DIR/elasticd-test.lock"
flock -w 900 9 || { echo "compare: another elasticd user holds the lock"; exit 1; }
python3 "$src/bench/compare.py" --build "$build" "$@"
