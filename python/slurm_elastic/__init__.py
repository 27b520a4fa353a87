# SPDX-License-Identifier: GPL-2.0-or-later
# python/slurm_elastic/__init__.py: the user-facing Python API over libelastic (the
# context, the step loop that hides ELASTIC_REDO, the elastic sampler and the batch plan).
"""Elastic, fault-tolerant data-parallel training on Slurm, from Python.

slurm_elastic wraps libelastic (see elastic(3)): a step is committed only
when every surviving rank agrees that it succeeded; when a rank dies the
survivors roll the registered state back to the last committed step and redo
it at the smaller size; a planned resize or a lost node re-forms the job
(elastic-run relaunches it) and it resumes from the last committed step.

A minimal loop::

    import numpy as np
    import slurm_elastic as se

    with se.Context() as ctx:                 # MPI_Init + elastic_init
        w = np.zeros(10)
        ctx.register("w", w)                  # everything a step changes
        for step in ctx.steps(100):           # ELASTIC_REDO is handled here
            g = np.ones(10)
            if not ctx.allreduce(g):          # world failed: step is redone
                continue
            step.on_commit(lambda: w.__isub__(0.1 * g / ctx.size))

Errors of the library raise :class:`Error` (an :class:`OSError` with the
library's errno and text). Calls that can block (the step agreement,
collectives, recovery) release the GIL. PyTorch users want
:mod:`slurm_elastic.torch`.

What the library's own process exits skip: libelastic ends the process with
``_exit`` in four documented cases (planned re-form, recovery watchdog, step
timeout, the guard of finalize). Before it does, the hook given to
:meth:`Context.on_exit` runs (at most 5 s, on a thread of the library's) and
Python's ``sys.stdout``/``sys.stderr`` are flushed; ``finally`` blocks,
``atexit`` handlers, context managers and object finalizers of the
interpreter do **not** run then.
"""

import atexit as _atexit
import os as _os
import signal as _signal
import sys as _sys
import traceback as _traceback

from . import _core
from ._core import Error, batch_plan as _batch_plan

__all__ = [
    "Context",
    "Error",
    "ElasticSampler",
    "BatchPlan",
    "batch_plan",
    "mpi_init",
    "COMMITTED",
    "REDO",
    "EXIT_REFORM",
]

COMMITTED = _core.COMMITTED
REDO = _core.REDO
EXIT_REFORM = _core.EXIT_REFORM
COPY_AT_COMMIT = _core.COPY_AT_COMMIT
UPDATE_AFTER_COMMIT = _core.UPDATE_AFTER_COMMIT


# An uncaught exception is the program's own failure: the rank ends with
# status 1 (not 75, a re-form's), and its traceback goes to the file
# elastic-run's rank wrapper names (ELASTIC_ERROR_FILE), which elastic-run
# prints again at the job's end. Python's own hook still prints it here.
_uncaught = []
_prev_excepthook = _sys.excepthook


def _excepthook(et, ev, tb):
    _uncaught.append(et)
    path = _os.environ.get("ELASTIC_ERROR_FILE")
    if path:
        try:
            with open(path, "w") as f:
                f.write("".join(_traceback.format_exception(et, ev, tb)))
        except OSError:
            pass
    _prev_excepthook(et, ev, tb)


_sys.excepthook = _excepthook


def mpi_init():
    """Initialize MPI (thread level SERIALIZED) unless it already is.

    Returns True if this call initialized it. :class:`Context` calls it;
    call it yourself only to use MPI before the context exists.
    """
    return _core.mpi_init()


class BatchPlan(tuple):
    """This rank's share of a global batch (see elastic_batch_plan(3)).

    Fields: ``active`` (ranks with samples), ``share`` (samples of the
    global batch on this rank), ``offset`` (of the share in the global
    batch), ``micro`` (samples per micro-batch), ``accum`` (micro-batches per
    step, the same on every active rank). The global batch stays constant
    whatever the world size; micro-batches and accumulation follow it.
    """

    __slots__ = ()
    _fields = ("active", "share", "offset", "micro", "accum")

    def __new__(cls, t):
        return tuple.__new__(cls, t)

    active = property(lambda self: self[0])
    share = property(lambda self: self[1])
    offset = property(lambda self: self[2])
    micro = property(lambda self: self[3])
    accum = property(lambda self: self[4])

    def micro_batches(self, items):
        """Split this rank's items (a list of its share) into micro-batches.

        Yields ``accum`` lists of at most ``micro`` items; the last ones may
        be short or empty at the end of an epoch.
        """
        for m in range(self.accum):
            yield items[m * self.micro:(m + 1) * self.micro]

    def __repr__(self):
        return "BatchPlan(active=%d, share=%d, offset=%d, micro=%d, accum=%d)" % self


def batch_plan(global_batch, max_micro, size, rank, sizes=()):
    """Plan this rank's part of a global batch of ``global_batch`` samples.

    ``max_micro`` is the most samples a rank processes at once, ``size`` and
    ``rank`` describe the world, ``sizes`` the allowed world sizes (empty:
    any). Raises :class:`Error` (EINVAL) for impossible inputs.
    """
    return BatchPlan(_batch_plan(global_batch, max_micro, size, rank, tuple(sizes)))


class Step:
    """One step of :meth:`Context.steps`: its index, its batch plan, and
    work to do once it is committed (``on_commit``)."""

    __slots__ = ("index", "_after", "plan", "redo", "_failed")

    def __init__(self, index, redo):
        self.index = index
        self.redo = redo  # True when this is a redo after a change of the world
        self._after = []
        self.plan = None
        self._failed = False

    def on_commit(self, fn):
        """Run ``fn()`` after the step is committed (update after commit).

        In UPDATE_AFTER_COMMIT mode this is the only place where registered
        state may change; a step that is redone never runs it.
        """
        self._after.append(fn)

    def fail(self):
        """Mark the step failed for a reason of the caller's: it is redone."""
        self._failed = True


class Context:
    """A libelastic context on MPI_COMM_WORLD (``elastic_init``).

    Creating it initializes MPI when needed and reads the ``ELASTIC_*``
    environment (elastic(3)); it is collective over the job's ranks. Use it
    as a context manager: on a normal exit of the ``with`` block it marks
    the training complete (removes this job's node snapshots) and finalizes
    MPI under the library's guard; on an exception it keeps the snapshots so
    that a relaunch resumes, and finalizes MPI.

    ``commit_mode`` is :data:`COPY_AT_COMMIT` (the library copies the
    registered state at each commit; the state may change anywhere in the
    step) or :data:`UPDATE_AFTER_COMMIT` (the default here: change state only
    in :meth:`Step.on_commit` callbacks; nothing is copied per step).
    """

    def __init__(self, commit_mode=UPDATE_AFTER_COMMIT, log=None, log_level=_core.LOG_INFO):
        mpi_init()
        # ELASTIC_STOP_SIGNAL=none: planned re-forms off, SIGUSR1 is the program's
        self._usr1 = _os.environ.get("ELASTIC_STOP_SIGNAL") != "none"
        if self._usr1 and callable(_signal.getsignal(_signal.SIGUSR1)):
            raise RuntimeError(
                "SIGUSR1 has a Python handler: libelastic uses SIGUSR1 for planned "
                "re-forms (grow, shrink at a step boundary); remove the handler "
                "(signal.signal(signal.SIGUSR1, signal.SIG_DFL)) before creating the "
                "Context, or run with ELASTIC_STOP_SIGNAL=none to turn planned "
                "re-forms off")
        self._c = _core.Context()
        self._c.set_commit_mode(commit_mode)
        self.commit_mode = commit_mode
        self._hooks = []
        self._c.set_exit_hook(self._run_exit_hooks)
        if log is not None:
            self._c.set_log(log, log_level)
        self._change = []
        self._c.set_change_callback(self._on_change)
        self._done = False
        # a Context never closed (no with-block) still finalizes MPI at exit
        _atexit.register(self.close)

    # -- properties --
    rank = property(lambda self: self._c.rank, doc="rank in the current world")
    size = property(lambda self: self._c.size, doc="size of the current world")
    step = property(lambda self: self._c.step,
                    doc="committed steps so far = index of the next step")
    resumed = property(lambda self: self._c.resumed,
                       doc="True if this rank resumed from a snapshot (re-form), or was "
                           "started by a growth in place and took the committed state "
                           "from the running ranks")
    comm_handle = property(lambda self: self._c.comm_handle,
                           doc="MPI_Comm of the current world, as an int "
                               "(mpi4py: MPI.Comm.fromhandle); changes after a REDO")

    def stats(self):
        """The library's counters as a dict: commits, redos, recoveries,
        last_recovery_s, last_failure_time, resumed_step, initial_size,
        shrinks (planned shrinks in place) and grows (growths in place: ranks
        started on new nodes joined this world)."""
        return self._c.stats()

    def env(self):
        """The ELASTIC_* environment as the library parsed it (a dict)."""
        return self._c.env()

    # -- registration --
    def register(self, name, buffer):
        """Register a state buffer under a unique name (before the first step).

        ``buffer`` is any writable C-contiguous object with the buffer protocol
        (a numpy array; a CPU torch tensor through ``tensor.numpy()``). Its
        memory is held until the context ends, so it must not be resized.
        Registered state must be identical on every rank at commit.
        """
        self._c.register(name, buffer)

    def on_change(self, fn):
        """Call ``fn()`` after the world changed (recovery), once the library
        rebuilt its communicator. An exception raised by ``fn`` reaches the
        caller of the call during which the change happened."""
        self._change.append(fn)

    def on_exit(self, fn):
        """Call ``fn(status, why)`` before the library ends the process with
        ``_exit`` (see the module documentation for what is skipped)."""
        self._hooks.append(fn)

    def _on_change(self):
        for fn in self._change:
            fn()

    def _run_exit_hooks(self, status, why):
        for fn in self._hooks:
            fn(status, why)

    # -- the step loop --
    def steps(self, total=None, more=None):
        """Iterate over steps until ``total`` steps are committed (None: for
        ever), and while ``more()`` (if given) is true before a step begins.

        Each iteration begins a step and yields a :class:`Step`; when the body
        finishes, the ranks agree on the step. If the world changed (a rank
        died), the registered state is back at the last committed step and the
        same step index is yielded again (``step.redo`` is True): the body
        never sees ELASTIC_REDO. ``break`` leaves the loop between steps.
        """
        redo = False
        # a relaunch resumes here, before ``total`` is compared with the step
        self._c.start()
        while (total is None or self._c.step < total) and (more is None or more()):
            if self._usr1 and not self._c.stop_signal_intact():
                raise RuntimeError(
                    "SIGUSR1 was given another handler after the Context was created "
                    "(signal.signal or a library): planned re-forms would be lost; "
                    "leave SIGUSR1 to libelastic")
            self._c.step_begin()
            st = Step(self._c.step, redo)
            st_ok = True
            try:
                yield st
            except GeneratorExit:
                # break out of the loop (on every rank: the same code runs
                # everywhere): end the open step as failed so that the ranks
                # stay in agreement, then stop
                if not self._c.closed:
                    self._c.step_fail()
                    self._c.step_commit()
                raise
            if st._failed:
                self._c.step_fail()
                st_ok = False
            r = self._c.step_commit()
            if r == REDO:
                redo = True
                continue
            redo = False
            if st_ok:
                for fn in st._after:
                    fn()
                # every update is applied: the node snapshot may take it
                # now (a no-op when a callback called updated() already)
                if not self._c.closed:
                    self._c.step_updated()

    def updated(self):
        """Say, in an :meth:`Step.on_commit` callback, that every change of
        registered state for the committed step is applied (UPDATE_AFTER_COMMIT
        mode; elastic_step_updated). Where node snapshots are due, the step
        goes to the node now rather than when the next step begins: call it
        before reporting the step (a log line, a metric), so that a launch
        ended right after (mpirun after a lost node) does not redo a step the
        program reported. :meth:`steps` calls it after the callbacks anyway.
        Raises :class:`Error` (EPROTO) inside a step."""
        self._c.step_updated()

    def allreduce(self, buffer, op="sum"):
        """Reduce ``buffer`` over the ranks in place (MPI_IN_PLACE).

        ``op`` is "sum", "max" or "min"; items are float32, float64, int32 or
        int64. Returns True, or False when the world failed during this step:
        the step will be redone, so skip to its end. Raises :class:`Error` on
        misuse (outside a step: EPROTO).
        """
        return self._c.allreduce(buffer, op)

    def gpu_allreduce(self, ptr, count, dtype="float32", stream=0):
        """Sum a CUDA buffer over the ranks in place with NCCL
        (elastic_gpu_allreduce): ``ptr`` a device pointer (``t.data_ptr()``),
        ``count`` items of ``dtype`` ("float32" or "float64"), ``stream`` a
        cudaStream_t as an int (``torch.cuda.current_stream().cuda_stream``;
        0: the default stream); waits for the sum. Returns True, or False when
        the world failed during this step. Raises :class:`Error` ENODEV
        without NCCL or a GPU, EPROTO outside a step.
        """
        return self._c.gpu_allreduce(ptr, count, dtype, stream)

    def allgather(self, ints, cap):
        """Concatenate each rank's list of ints in rank order (at most ``cap``
        in all); None when the world failed during this step."""
        return self._c.allgather(ints, cap)

    # -- the end --
    def complete(self):
        """Mark the training finished (collective; removes node snapshots)."""
        self._c.complete()
        self._done = True

    def close(self, status=None):
        """Finalize MPI under the library's guard and end the context.
        ``status`` is the exit status if MPI_Finalize hangs (elastic(3)),
        0 by default. At the interpreter's exit after an uncaught exception
        MPI is not finalized: the rank ends at once with Python's status 1,
        and the others learn of it from the runtime."""
        if self._c.closed:
            return
        if status is None and _uncaught:
            # no MPI_Finalize: the others may wait for this rank in a
            # collective, where it would hang; the runtime tells them of
            # its end at once instead (the node snapshot stays)
            self._c.close()
            return
        self._c.finalize(0 if status is None else status)

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None and not self._done and not self._c.closed:
            self.complete()
        self.close(0 if et is None else 1)
        return False


class ElasticSampler:
    """The elastic sampler over ``nsamples`` samples (elastic_sampler(3)).

    Shuffled per epoch from ``seed``. Its position is registered with the
    context, so it rolls back and resumes with the rest of the state. Each
    step takes the next ``global_batch`` samples of the epoch, split over
    the ranks by the batch plan: every sample is used once per epoch
    whatever the sizes.

    It is the sampler of a ``ctx.steps()`` loop; ``ElasticDataParallel``
    makes one itself, and a DDP script uses
    ``slurm_elastic.torch.DistributedSampler``.
    """

    def __init__(self, ctx, nsamples, global_batch, max_micro, seed=0, shuffle=True):
        if global_batch < 1 or max_micro < 1:
            raise ValueError("global_batch and max_micro must be >= 1")
        self._s = _core.Sampler(nsamples, seed, shuffle)
        self._s.register(ctx._c)
        self.ctx = ctx
        self.global_batch = global_batch
        self.max_micro = max_micro
        self.nsamples = nsamples

    epoch = property(lambda self: self._s.epoch, doc="current epoch")
    consumed = property(lambda self: self._s.consumed, doc="samples used this epoch")

    def plan(self):
        """This step's :class:`BatchPlan` (fewer samples at the end of an epoch)."""
        n = self._s.step_samples(self.global_batch)
        env = self.ctx.env()
        return batch_plan(n, self.max_micro, self.ctx.size, self.ctx.rank, env["sizes"])

    def indices(self, plan=None):
        """This rank's sample indices for the current step (no advance)."""
        return self._s.indices(tuple(plan if plan is not None else self.plan()))

    def advance(self):
        """Move past the current step's global batch (a state change: in
        UPDATE_AFTER_COMMIT mode call it from :meth:`Step.on_commit`).
        Returns True when this completed an epoch."""
        return self._s.advance(self.global_batch)
