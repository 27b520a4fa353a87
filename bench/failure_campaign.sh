#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/failure_campaign.sh [RUNS]: the failure injection campaign on a private testbed
# cluster: 4 and 8 ranks over 2 fake nodes, RUNS runs (default 50) of each path (A: one
# rank SIGKILLed, healed in place; B: node 2's part of the job killed: healed in place
# where the runtime survives a lost daemon (ELASTIC_TESTBED_RUNTIME=ompi6), re-formed
# by elastic-run otherwise; C, on ompi6 only: the same after node 2's link went down
# first, a silent loss), each checked against a run without failure; then RUNS planned
# shrinks N -> N/2 under elasticd (tests/controller/shrink_campaign.sh: in place on
# ompi6, re-formed on ompi5). Prints the pass counts and the times (kill or order to
# the first committed step after: median, max) per path and size; the whole log of each
# goes to $TMPDIR (or /tmp). About 15 s a failure run and 5 s a shrink here.
# Needs a build tree inside the testbed root: ./testbed/check makes build-testbed
# (build-testbed-ompi6 with ELASTIC_TESTBED_RUNTIME=ompi6; ELASTIC_BUILD_DIR names
# another one, as a path inside the root).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-50}
[[ $runs =~ ^[1-9][0-9]*$ ]] || {
	echo "usage: bench/failure_campaign.sh [RUNS]   (RUNS: a positive number, default 50)" >&2
	exit 2
}
def=/src/build-testbed
[ "${ELASTIC_TESTBED_RUNTIME:-ompi5}" = ompi6 ] && def=/src/build-testbed-ompi6
build=${ELASTIC_BUILD_DIR:-$def}
[ -x "$top/${build#/src/}/examples/elastic_train" ] || {
	echo "failure_campaign: no build at $build (run ./testbed/check once, or set ELASTIC_BUILD_DIR)" >&2
	exit 1
}
inst=campaign
trap '"$top/testbed/cluster" --instance $inst down >/dev/null 2>&1 || true' EXIT
ELASTIC_BUILD_DIR=$build "$top/testbed/cluster" --instance $inst up >/dev/null
# One campaign: NAME (of its log), its title, the test, its settings; then
# the patterns of its summary lines.
campaign() { # name title test "VAR=value ..." pattern...
	local log=${TMPDIR:-/tmp}/failure_campaign.$1.log test=$3 vars=$4 pat=() p
	echo "== $2 (log: $log)"
	shift 4
	for p in "$@"; do pat+=(-e "$p"); done
	# shellcheck disable=SC2086 # the settings, word-split on purpose
	"$top/testbed/cluster" --instance $inst exec -- env top_builddir="$build" $vars \
		bash "/src/tests/$test" >"$log" 2>&1 || true
	grep -a "${pat[@]}" "$log" | sed 's/^\[[^]]*\] /  /'
}
for np in 4 8; do
	campaign "np$np" "$np ranks over 2 nodes, $runs runs of each path" libelastic/cluster_failures.sh \
		"ELASTIC_CLUSTER_RUNS=$runs ELASTIC_CLUSTER_NP=$np" '] path [ABC] (' 'FAILED' 'cluster: '
done
for np in 4 8; do
	campaign "shrink$np" "planned shrink $np -> $((np / 2)) ranks, $runs runs" controller/shrink_campaign.sh \
		"ELASTIC_SHRINK_RUNS=$runs ELASTIC_SHRINK_NP=$np" 'planned shrinks' ": libelastic's pause" 'FAIL'
done
