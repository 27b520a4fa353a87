#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/sanitize.sh: AddressSanitizer + UndefinedBehaviorSanitizer (leak check
# at exit included) over what runs on one host: an instrumented build of the
# whole tree (${ELASTIC_ASAN_BUILD:-build-asan}/), then
#  1. the unit tests (cmocka: config and protocol, policy, grants, GPU sets,
#     batch plan, environment parser);
#  2. libelastic's single-host tests under mpirun with instrumented ranks
#     (api_misuse, kill_one_rank, resume_shm);
#  3. the controller's cluster tests against instrumented elasticd and
#     elastic-ctl (tests/controller/run-sanitized.sh; not with
#     ELASTIC_ASAN_CONTROLLER=0).
# Under the runtime ELASTIC_TESTBED_RUNTIME names (its root and cluster); on
# Open MPI 6, kill_one_rank's lost rank heals in place.
# Run on the host, as root, with a testbed cluster up (testbed/check runs it
# on its cluster 'check'). Exits non-zero on any failed test and on any
# sanitizer report. Leaks inside Open MPI, PMIx, PRRTE, hwloc and libevent
# (not ours, reported at every MPI exit) are suppressed by library name.
#   tests/sanitize.sh --controller-tests   prints the controller tests of step 3
set -euo pipefail
ctl_tests="scenario grace restart auth drain drift jam"
[ "${1:-}" != --controller-tests ] || { echo "$ctl_tests"; exit 0; }
top=$(cd "$(dirname "$0")/.." && pwd)
b=${ELASTIC_ASAN_BUILD:-build-asan}
cd "$top"
san_cflags='-g -O1 -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined'
echo "sanitize: building $b (ASan + UBSan)"
testbed/run bash -c "set -e; mkdir -p $b && cd $b
	[ -f Makefile ] || ../configure -q CFLAGS='$san_cflags' LDFLAGS='-fsanitize=address,undefined' >/dev/null
	{ make -s -j${ELASTIC_BUILD_JOBS:-2} && make -s -j${ELASTIC_BUILD_JOBS:-2} -C tests check TESTS=; } \
		>/tmp/asan-make.log 2>&1 || { tail -n 40 /tmp/asan-make.log; exit 1; }"
rc=0
testbed/cluster exec -- bash -c '
	b=/src/'"$b"'
	supp=$(mktemp /tmp/lsan-supp.XXXXXX)
	printf "leak:%s\n" libmpi.so libopen-pal.so libopen-rte.so libpmix.so libprrte.so libhwloc.so libevent >"$supp"
	chmod 644 "$supp"
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		LSAN_OPTIONS=suppressions=$supp:print_suppressions=0
	# Open MPI 6 opens its UCX components in MPI_Init, and UCX under ASan
	# dies there (SEGV in opal_common_ucx_mca_register): the testbed uses
	# TCP and shared memory only, so UCX stays closed
	export OMPI_MCA_pml=^ucx OMPI_MCA_osc=^ucx OMPI_MCA_btl=^uct
	bad=0
	for d in common launcher libelastic plugin/elasticd; do
		if make -s -C "$b/$d" check >"$b/$d.sanitize.log" 2>&1; then
			echo "PASS: $d unit tests (sanitized)"
		else
			echo "FAIL: $d unit tests (sanitized)"; grep -h -A30 -E "ERROR: (Address|Leak)Sanitizer|runtime error" "$b/$d"/test/*.log 2>/dev/null | head -n 60
			tail -n 20 "$b/$d.sanitize.log"; bad=1
		fi
	done
	# Open MPI and PMIx are built without frame pointers: the fast unwinder
	# loses the stack of their allocations, and only full stacks let the
	# suppressions above name the library.
	export ASAN_OPTIONS=$ASAN_OPTIONS:fast_unwind_on_malloc=0
	for t in api_misuse kill_one_rank resume_shm; do
		trc=0
		ELASTIC_KILL_RUNS=2 ELASTIC_RESUME_RUNS=2 top_srcdir=/src top_builddir=$b \
			bash /src/tests/libelastic/$t.sh >"$b/$t.sanitize.log" 2>&1 || trc=$?
		if [ $trc = 77 ]; then
			# a skip is no pass: testbed/check counts only PASS and FAIL lines
			echo "SKIP: libelastic/$t (sanitized): $(grep -m1 SKIP "$b/$t.sanitize.log")"
		elif [ $trc = 0 ]; then
			if grep -qE "ERROR: (Address|Leak)Sanitizer|runtime error:" "$b/$t.sanitize.log"; then
				echo "FAIL: libelastic/$t (sanitized): a sanitizer report"; grep -A30 -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$b/$t.sanitize.log" | head -n 60; bad=1
			else
				echo "PASS: libelastic/$t (sanitized)"
			fi
		else
			echo "FAIL: libelastic/$t (sanitized)"; grep -A30 -E "ERROR: (Address|Leak)Sanitizer|runtime error:" "$b/$t.sanitize.log" | head -n 60
			tail -n 20 "$b/$t.sanitize.log"; bad=1
		fi
	done
	rm -f "$supp"
	exit $bad' || rc=1
# (elasticd and elastic-ctl do not use MPI: testbed/check runs them under
# one runtime only, ELASTIC_ASAN_CONTROLLER=0 under the others)
if [ "${ELASTIC_ASAN_CONTROLLER:-1}" = 1 ]; then
	# shellcheck disable=SC2086 # one word per test
	ELASTIC_ASAN_BUILD=$b tests/controller/run-sanitized.sh $ctl_tests || rc=1
fi
exit $rc
