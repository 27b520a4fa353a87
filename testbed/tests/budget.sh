#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# testbed/tests/budget.sh: testbed/budget names every phase and test of a
# check run that took longer than its budget in testbed/budget.tsv, the
# first matching line of its kind deciding, and nothing when all kept it.
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# (a table of its own: the real one's figures change with the suite)
printf '# comment\nphase\t*: make check, *\t1500\nphase\t*\t120\ntest\t*/tests/demo/scenario.sh\t200\ntest\t*\t75\n' >"$tmp/budget.tsv"

# A run inside every budget: nothing said.
printf '600\tompi5\tmake check, runtime ompi5 (unit tests)\n30\tsid\tbuild inside the root (sid)\n' >"$tmp/phases.tsv"
printf '40.5\tbuild-testbed\ttests/launcher/lost_node.sh\tPASS\n150.0\tbuild-testbed-sid\ttests/demo/scenario.sh\tPASS\n' >"$tmp/tests.tsv"
tt_run bash "$TT_TB/budget" "$tmp" "$tmp/budget.tsv"
[ "$TT_RC" = 0 ] && [ -z "$TT_OUT" ] || tt_fail "a run within its budgets: rc $TT_RC: $TT_OUT"
tt_ok "a run within every budget: nothing said"

# One phase and two tests over: each named with its time and its budget;
# the demo's own line (200 s) wins over the default for tests (75 s).
printf '1900\tompi5\tmake check, runtime ompi5 (unit tests)\n30\tsid\tbuild inside the root (sid)\n' >"$tmp/phases.tsv"
printf '240.2\tbuild-testbed-sid\ttests/demo/scenario.sh\tPASS\n90.0\tbuild-testbed\ttests/launcher/lost_node.sh\tFAIL\n150.0\tbuild-testbed\ttests/demo/scenario.sh\tPASS\n' >"$tmp/tests.tsv"
tt_run bash "$TT_TB/budget" "$tmp" "$tmp/budget.tsv"
tt_expect_out "a phase over" '^over budget: phase ompi5: make check, runtime ompi5 \(unit tests\) took 1900 s, its budget is 1500 s$'
tt_expect_out "a test over its own line" '^over budget: test build-testbed-sid/tests/demo/scenario.sh \(PASS\) took 240.2 s, its budget is 200 s$'
tt_expect_out "a test over the default" '^over budget: test build-testbed/tests/launcher/lost_node.sh \(FAIL\) took 90.0 s, its budget is 75 s$'
n=$(grep -c '^over budget:' <<<"$TT_OUT")
[ "$n" = 3 ] || tt_fail "3 items over budget, $n named: $TT_OUT"
tt_ok "a phase and two tests over budget: each named with its time and budget, the others not"
