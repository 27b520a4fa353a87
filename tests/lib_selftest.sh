#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/lib_selftest.sh: the test helpers fail for real: t_fail inside a
# command substitution or a pipeline ends the whole test with status 1
# (before, it left only the subshell and the test went on to pass).
lib="${top_srcdir:-$(cd "$(dirname "$0")/.." && pwd)}/tests/lib.sh"
fail=0
_case() { # what script
	local out rc=0
	out=$(bash -c ". '$lib'; $2" 2>&1) || rc=$?
	if [ "$rc" = 1 ] && ! grep -q REACHED <<<"$out" && grep -q 'FAIL: inner' <<<"$out"; then
		echo "ok: $1 ends the test (status 1)"
	else
		echo "FAIL: $1: status $rc, output: $out"
		fail=1
	fi
}
_case 't_fail in $(...)' 'x=$(t_fail inner); echo REACHED; exit 0'
_case 't_fail in a helper called in $(...)' 'f() { t_fail inner; echo nope; }; id=$(f); echo REACHED $id; exit 0'
_case 't_fail in a pipeline' 'echo a | { read -r v; t_fail inner; }; echo REACHED; exit 0'
_case 't_fail in the main shell' 't_fail inner; echo REACHED'
out=$(bash -c ". '$lib'; x=\$(echo fine); echo \"got \$x\"; exit 0" 2>&1) && [ "$out" = "got fine" ] ||
	{ echo "FAIL: a test that does not fail is disturbed: $out"; fail=1; }
echo "ok: a subshell that does not fail changes nothing"

# A failed test leaves its scratch files next to its log (<test>.sh.files,
# under $top_builddir/tests); one that passes or skips leaves none.
b=$(mktemp -d)
_keep() { # what script want-kept
	local rc=0 f=$b/tests/selftest/keep.sh.files
	rm -rf "$f"
	top_builddir=$b bash -c ". '$lib'; t_scratch; echo output >\"\$T_DIR/job.out\"; $2" \
		/src/tests/selftest/keep.sh >/dev/null 2>&1 || rc=$?
	if [ "$3" = yes ] && [ "$(cat "$f/job.out" 2>/dev/null)" = output ]; then
		echo "ok: $1 (status $rc) keeps its scratch files"
	elif [ "$3" = no ] && [ ! -e "$f" ]; then
		echo "ok: $1 (status $rc) keeps nothing"
	else
		echo "FAIL: $1: status $rc, kept: $(ls -A "$f" 2>&1)"
		fail=1
	fi
}
_keep 'a test that fails' 't_fail inner' yes
_keep 'a test that fails in $(...)' 'x=$(t_fail inner); exit 0' yes
_keep 'a test that exits 1' 'exit 1' yes
_keep 'a test whose trap runs a command first' "trap 'true; t_cleanup' EXIT; t_fail inner" yes
_keep 'a test whose trap passes the status on' "trap 'rc=\$?; false; t_cleanup \$rc' EXIT; exit 0" no
_keep 'a test that passes' 'exit 0' no
_keep 'a test that skips' 't_skip why' no
rm -rf "$b"

# t_env_has: every VAR=VALUE given, whole lines of the exec'd environment
env_case() { # expected(0/1) what pid('self': the shell) VAR=VALUE...
	local want=$1 what=$2 pid=$3 got=0
	shift 3
	A_VAR=one B_VAR=two bash -c ". '$lib'; p=\$1; shift; [ \$p = self ] && p=\$\$; t_env_has \$p \"\$@\"" \
		_ "$pid" "$@" || got=1
	if [ "$got" = "$want" ]; then echo "ok: t_env_has $what"; else
		echo "FAIL: t_env_has $what: status $got, $want expected"; fail=1; fi
}
env_case 0 "finds both variables" self A_VAR=one B_VAR=two
env_case 1 "refuses a value that differs" self A_VAR=one B_VAR=tw
env_case 1 "refuses a prefix of a name" self _VAR=one
env_case 1 "refuses a process that is gone" 999999999 A_VAR=one
exit $fail
