# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/common.sh: shared setup of the Python binding's tests (sourced): the
# package from the build tree, mpirun under ULFM as the libelastic tests run it.
here=$(cd "$(dirname "$0")" && pwd)
: "${top_srcdir:=$(cd "$here/../.." && pwd)}"
: "${top_builddir:=$(cd "${PWD}/.." && pwd)}"
. "$top_srcdir/tests/lib.sh"

[ -e "$top_builddir/python/slurm_elastic/_core.so" ] ||
	t_skip "the Python binding is not built (configure found no Python >= 3.12 headers)"
export PYTHONPATH=$top_builddir/python${PYTHONPATH:+:$PYTHONPATH}
export PYTHONDONTWRITEBYTECODE=1
command -v mpirun >/dev/null || t_skip "no mpirun in PATH"
ompi_info 2>/dev/null | grep -q "FT MPI support: yes" ||
	t_skip "this Open MPI has no ULFM fault tolerance (ompi_info: FT MPI support)"
export OMPI_MCA_coll=^han OMPI_MCA_btl_tcp_if_include=lo OMPI_MCA_oob_tcp_if_include=lo
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# one thread per rank: these 2 cores run several ranks
export OMP_NUM_THREADS=1
MPIRUN="mpirun --with-ft ulfm --oversubscribe --bind-to none -x PYTHONPATH -x OMP_NUM_THREADS"

t_mpi_scratch() {
	mkdir -p "$T_DIR/tmp" "$T_DIR/sm"
	chmod 1777 "$T_DIR/tmp" "$T_DIR/sm" # jobs of test users inherit them (--export=ALL)
	export TMPDIR=$T_DIR/tmp OMPI_MCA_btl_sm_backing_directory=$T_DIR/sm
}

# run scenario $2 of script $1 on $3 ranks; output in $T_DIR/<scenario>
t_py() { # script scenario np [args...]
	local script=$1 sc=$2 np=$3
	shift 3
	timeout -s KILL 120 $MPIRUN -np "$np" python3 "$here/$script" "$sc" "$@" >"$T_DIR/$sc" 2>&1
}

# every one of n ranks printed "OK scenario"
t_py_ok() { # scenario n
	local n
	n=$(grep -c "^OK $1 rank" "$T_DIR/$1" || true)
	[ "$n" = "$2" ] || { cat "$T_DIR/$1"; t_fail "$1: $n of $2 ranks passed"; }
	t_log "$1: passed on $2 ranks"
}
