#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/controller/run-sanitized.sh: the controller's cluster tests against an
# AddressSanitizer + UndefinedBehaviorSanitizer build of elasticd and
# elastic-ctl (leak check at exit included). Run on the host, as root, with a
# testbed cluster up:
#   ELASTIC_TESTBED_INSTANCE=NAME tests/controller/run-sanitized.sh [TEST...]
# Builds ${ELASTIC_ASAN_BUILD:-build-asan} (gitignored) inside the root; exits
# non-zero if a test fails or a sanitizer reports anything. Each test sees
# ELASTIC_TEST_SANITIZED=1: a bound on how fast elasticd answers may widen.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
b=${ELASTIC_ASAN_BUILD:-build-asan}
tests=("$@")
[ ${#tests[@]} -gt 0 ] || tests=(scenario grace restart auth)
cd "$top"
testbed/run bash -c "set -e; mkdir -p $b && cd $b
	[ -f Makefile ] || ../configure -q CFLAGS='-g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer' \
		LDFLAGS='-fsanitize=address,undefined' >/dev/null
	make -s -j2 -C common >/dev/null && make -s -j2 -C plugin/elasticd elasticd elastic-ctl >/dev/null"
testbed/cluster exec -- bash -c '
	out=$(mktemp -d /tmp/sanitized.XXXXXX); chmod 1777 "$out"
	export ASAN_OPTIONS=log_path=$out/asan:detect_leaks=1 UBSAN_OPTIONS=log_path=$out/ubsan:print_stacktrace=1
	bad=0
	for t in '"${tests[*]}"'; do
		if ELASTIC_TEST_SANITIZED=1 top_srcdir=/src top_builddir=/src/'"$b"' bash /src/tests/controller/$t.sh >"$out/$t.log" 2>&1; then
			echo "PASS: $t (sanitized)"
		else
			echo "FAIL: $t (sanitized): $(tail -n 1 "$out/$t.log")"
			echo "---- last lines of $out/$t.log"; tail -n 40 "$out/$t.log"; bad=1
		fi
	done
	if ls "$out"/asan.* "$out"/ubsan.* >/dev/null 2>&1; then
		cat "$out"/asan.* "$out"/ubsan.* 2>/dev/null; echo "sanitizer reports above"; bad=1
	else
		echo "no sanitizer reports"
	fi
	exit $bad'
