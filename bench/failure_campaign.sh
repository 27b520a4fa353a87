#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/failure_campaign.sh [RUNS]: the failure injection campaign on a private testbed
# cluster: 4 and 8 ranks over 2 fake nodes, RUNS runs (default 50) of each path (A: one
# rank SIGKILLed, healed in place; B: node 2's part of the job killed, elastic-run
# re-forms), each checked against a run without failure. Prints the pass counts and the
# recovery times (kill to the first committed step after: median, max) per path and
# size; the whole log of each size goes to $TMPDIR (or /tmp). About 30 s a run here.
# Needs a build tree inside the testbed root: ./testbed/check makes build-testbed
# (ELASTIC_BUILD_DIR names another one, as a path inside the root).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-50}
[[ $runs =~ ^[1-9][0-9]*$ ]] || {
	echo "usage: bench/failure_campaign.sh [RUNS]   (RUNS: a positive number, default 50)" >&2
	exit 2
}
build=${ELASTIC_BUILD_DIR:-/src/build-testbed}
[ -x "$top/${build#/src/}/examples/elastic_train" ] || {
	echo "failure_campaign: no build at $build (run ./testbed/check once, or set ELASTIC_BUILD_DIR)" >&2
	exit 1
}
inst=campaign
trap '"$top/testbed/cluster" --instance $inst down >/dev/null 2>&1 || true' EXIT
ELASTIC_BUILD_DIR=$build "$top/testbed/cluster" --instance $inst up >/dev/null
for np in 4 8; do
	log=${TMPDIR:-/tmp}/failure_campaign.np$np.log
	echo "== $np ranks over 2 nodes, $runs runs of each path (log: $log)"
	"$top/testbed/cluster" --instance $inst exec -- env top_builddir="$build" \
		ELASTIC_CLUSTER_RUNS="$runs" ELASTIC_CLUSTER_NP="$np" \
		bash /src/tests/libelastic/cluster_failures.sh >"$log" 2>&1 || true
	grep -a -e '] path [AB] (' -e 'FAILED' -e 'cluster: ' "$log" | sed 's/^\[[^]]*\] /  /'
done
