# SPDX-License-Identifier: GPL-2.0-or-later
# testbed/tests/lib.sh: helpers of the testbed's own tests (sourced). They
# run on the host, as root, like the scripts they test; each claim is one
# tb_ok/tb_fail line, and the script exits 1 at the first failure.
set -euo pipefail
TT_NAME=$(basename "$0" .sh)
TT_TB=$(cd "$(dirname "$0")/.." && pwd)
tt_ok() { printf '[%s] ok: %s\n' "$TT_NAME" "$*"; }
tt_fail() {
	printf '[%s] FAIL: %s\n' "$TT_NAME" "$*" >&2
	exit 1
}
# Run a command, keep its output in $TT_OUT and its status in $TT_RC.
tt_run() {
	TT_RC=0
	TT_OUT=$("$@" 2>&1) || TT_RC=$?
}
tt_expect_fail() { # what command...
	local what=$1
	shift
	tt_run "$@"
	[ "$TT_RC" != 0 ] || tt_fail "$what: '$*' exited 0: $TT_OUT"
}
tt_expect_out() { # what pattern (grep -E) in $TT_OUT
	grep -qE -- "$2" <<<"$TT_OUT" || tt_fail "$1: no line matching '$2' in: $TT_OUT"
}
