#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/py_step.sh: the Python binding's per-step cost against plain mpi4py (py_step.py)
# at 1 MiB and at the PyTorch example's gradient size, BENCH_PY_NP ranks (default 2: one
# per core here), BENCH_PY_STEPS iterations a round (default 200). Needs the binding built and mpi4py.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_builddir=${top_builddir:-$(cd "${PWD}/.." && pwd)}
[ -e "$top_builddir/python/slurm_elastic/_core.so" ] || { echo "py_step: the Python binding is not built; skipped"; exit 0; }
python3 -c 'import mpi4py' 2>/dev/null || { echo "py_step: no mpi4py (python3-mpi4py); skipped"; exit 0; }
export PYTHONPATH=$top_builddir/python${PYTHONPATH:+:$PYTHONPATH} OMP_NUM_THREADS=1
# the testbed's Open MPI settings (testbed/cluster env --ompi)
eval "$(bash "$here/../testbed/cluster-inner.sh" env --ompi)"
exec mpirun --with-ft ulfm --oversubscribe --bind-to none -x PYTHONPATH -x OMP_NUM_THREADS \
	-np "${BENCH_PY_NP:-2}" python3 "$here/py_step.py" "${BENCH_PY_STEPS:-200}"
