# SPDX-License-Identifier: GPL-2.0-or-later
# tests/libelastic/common.sh: shared setup of the libelastic mpirun tests (sourced): paths,
# the ULFM check, the testbed's Open MPI settings (t_ompi_env), and statistics helpers.
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$(cd "${PWD}/.." && pwd)}"
. "$top_srcdir/tests/lib.sh"

TRAIN=$top_builddir/examples/elastic_train
[ -x "$TRAIN" ] || t_fail "$TRAIN is not built (make -C examples)"
command -v mpirun >/dev/null || t_skip "no mpirun in PATH"
ompi_info 2>/dev/null | grep -q "FT MPI support: yes" ||
	t_skip "this Open MPI has no ULFM fault tolerance (ompi_info: FT MPI support)"

t_ompi_env
MPIRUN="mpirun --with-ft ulfm --oversubscribe --bind-to none"

# median and max of the numbers on stdin (one a line), as "MEDIAN MAX COUNT"
t_stats() {
	sort -g | awk '{ v[NR] = $1 } END {
		if (NR == 0) { print "- - 0"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.1f %.1f %d\n", m, v[NR], NR }'
}

# ms between the KILL line and the first commit after the change in file $1,
# by their timestamps: the killed rank's last line can reach mpirun's output
# after the survivors' first commit (path A, 1 run in 50).
t_recovery_ms() {
	awk '/^KILL / { for (i = 1; i <= NF; i++) if ($i ~ /^t=/) k = substr($i, 3) }
	     /first commit after a change/ {
		for (i = 1; i <= NF; i++) if ($i ~ /^t=/) c[++n] = substr($i, 3) }
	     END { if (k == "") exit
		for (j = 1; j <= n; j++) if (c[j] >= k && (m == "" || c[j] < m)) m = c[j]
		if (m != "") printf "%.1f\n", (m - k) * 1000 }' "$1"
}

# After t_scratch: keep this test's mpirun session directories and shared-memory
# segments inside its scratch directory, so that a job killed whole (SIGKILL to
# mpirun) leaves nothing behind and a stale one never collides with a new mpirun.
t_mpi_scratch() {
	mkdir -p "$T_DIR/tmp" "$T_DIR/sm"
	export TMPDIR=$T_DIR/tmp OMPI_MCA_btl_sm_backing_directory=$T_DIR/sm
}

# The run without events that a test compares against: elastic_train on NP
# ranks with ARGS, LIMIT seconds at most; its model goes to $T_DIR/ref.model,
# its output to $T_DIR/ref.out (shown, and the test failed, when it fails).
t_reference() { # limit np args...
	local limit=$1 np=$2
	shift 2
	timeout -s KILL "$limit" $MPIRUN -np "$np" "$TRAIN" "$@" --out "$T_DIR/ref.model" \
		>"$T_DIR/ref.out" 2>&1 || { cat "$T_DIR/ref.out"; t_fail "the reference run failed"; }
}
