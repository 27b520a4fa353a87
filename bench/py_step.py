# SPDX-License-Identifier: GPL-2.0-or-later
# bench/py_step.py: what a step costs through the Python binding (slurm_elastic) against
# a plain mpi4py Allreduce of the same buffer, at 1 MiB and at the PyTorch example's
# gradient size; run under mpirun --with-ft ulfm by bench/py_step.sh.
"""Per-step cost of slurm_elastic against plain mpi4py.

Columns, for each size (float32), in microseconds per iteration of a loop of
N iterations (median over interleaved rounds):
  mpi4py       comm.Allreduce(MPI.IN_PLACE, buf) on a duplicate of COMM_WORLD
  binding      ctx.allreduce(buf), N of them inside one open step (the call)
  step         for step in ctx.steps(): ctx.allreduce(buf)  (begin, reduce,
               agreement, update-after-commit: the whole protocol per step)
The overhead of a step is (step - mpi4py); of the call, (binding - mpi4py).
"""
import statistics
import sys
import time

import numpy as np
from mpi4py import MPI

import slurm_elastic as se

N = int(sys.argv[1]) if len(sys.argv) > 1 else 200
SIZES = [("1 MiB", 262144), ("example grads (37.5 KiB)", 64 * 128 + 128 + 128 * 10 + 10 + 2)]


ROUNDS = 7


def timed(comm, fn, n):
    """Seconds per iteration of fn over n iterations (ranks in step at the start)."""
    comm.Barrier()
    t0 = time.perf_counter()
    fn(n)
    return (time.perf_counter() - t0) / n


def main():
    ctx = se.Context()
    state = np.zeros(262144, dtype=np.float32)
    ctx.register("state", state)
    comm = MPI.COMM_WORLD.Dup()
    rows = []
    for label, n in SIZES:
        buf = np.ones(n, dtype=np.float32)

        def plain(k):
            for _ in range(k):
                comm.Allreduce(MPI.IN_PLACE, buf)

        def call(k):
            for step in ctx.steps(ctx.step + 1):
                for _ in range(k):
                    ctx.allreduce(buf)

        def steps(k):
            for step in ctx.steps(ctx.step + k):
                ctx.allreduce(buf)
                step.on_commit(lambda: None)

        res = {"plain": [], "call": [], "steps": []}
        for _ in range(ROUNDS):  # interleaved: noise hits all three alike
            for name, fn in (("plain", plain), ("call", call), ("steps", steps)):
                res[name].append(timed(comm, fn, N))
        med = {k: statistics.median(v) * 1e6 for k, v in res.items()}
        rows.append((label, n * 4, med["plain"], med["call"], med["steps"]))
    if ctx.rank == 0:
        print("slurm_elastic per-step cost, %d ranks, %d iterations x %d rounds, median of "
              "the rounds (us per iteration)" % (ctx.size, N, ROUNDS))
        print("%-26s %9s %9s %9s %9s %18s" % ("size", "bytes", "mpi4py", "binding", "step",
                                              "step - mpi4py"))
        for label, b, plain_us, call_us, step_us in rows:
            print("%-26s %9d %9.1f %9.1f %9.1f %9.1f (%+.0f%%)"
                  % (label, b, plain_us, call_us, step_us, step_us - plain_us,
                     100 * (step_us - plain_us) / plain_us))
        sys.stdout.flush()
    comm.Free()
    ctx.complete()
    ctx.close()


if __name__ == "__main__":
    main()
