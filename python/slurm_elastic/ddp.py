# SPDX-License-Identifier: GPL-2.0-or-later
# python/slurm_elastic/ddp.py: the DDP-shaped PyTorch layer: a job that commits a step at
# optimizer.step(), torch's DistributedDataParallel reducing through libelastic, an elastic
# batch sampler, and every stateful object kept through state_dict/load_state_dict.
"""Elastic training for ordinary PyTorch DDP scripts.

A torchrun DDP script keeps its loop; the lines marked change::

    import slurm_elastic.torch as dist                         # torch.distributed
    from slurm_elastic.torch import DistributedDataParallel as DDP, DistributedSampler

    dist.init_process_group("gloo")
    model = DDP(Net())
    sampler = DistributedSampler(ds, batch_size=128)           # the global batch
    loader = DataLoader(ds, batch_sampler=sampler, num_workers=2,   # batch_sampler
                        persistent_workers=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, 10)
    dist.track(opt, sched)                                     # state to keep
    for epoch in range(dist.start_epoch(), epochs):            # resume where it was
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            opt.step()                                         # the commit point
        sched.step()
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), "model.pt")
    dist.destroy_process_group()                               # training complete

``init_process_group``, ``get_rank``, ``get_world_size``,
``is_initialized`` and ``destroy_process_group`` answer as
torch.distributed's do, for the elastic job's world (:func:`init` returns
the :class:`Job` itself, with the same as attributes and methods).

What happens underneath:

* A step begins at the first training forward of the model (``train()``
  mode, gradients enabled) and ends at ``optimizer.step()``: the ranks
  agree there (libelastic, ULFM ``MPIX_Comm_agree``) that the step
  succeeded everywhere. Only then does the optimizer apply it. A step
  during which the world changed (a rank or a node lost) is dropped on
  every survivor: the optimizer step is skipped, the model, buffers and
  every tracked object go back to where they were when the step began, and
  its samples are handed out again by the sampler. The loop body of that
  step runs to its end (``committed()`` is False after its
  ``optimizer.step()``; ``step()`` counts committed steps only); the batches
  the DataLoader's workers had prepared for the old world are never handed
  to the loop.
* Gradients are reduced by torch's own DistributedDataParallel through a
  comm hook that sums them with libelastic. Each rank's gradient is
  weighted by its share of the step's samples, so a mean loss (PyTorch's
  default) gives the mean over the global batch whatever the world size
  and however unevenly it is split; with equal shares this is DDP's
  average. On the CPU a thread reduces each bucket DDP hands over while
  backward computes the next ones (DDP's first bucket holds 1 MB of
  gradients: a smaller model has one bucket, nothing to overlap).
* At the first step rank 0's parameters, buffers and tracked state go to
  every rank, as DDP's construction broadcast does (a script that seeds
  nothing trains one model). Buffers (BatchNorm running statistics) are
  rank 0's on every rank at each commit, as with DDP's
  ``broadcast_buffers``.
* The state kept is the model's ``state_dict`` and those of the tracked
  objects (optimizers, LR schedulers, GradScaler, any object with
  ``state_dict``/``load_state_dict``, plain dicts of counters), the sampler's
  position and the RNG states (torch, Python's random, NumPy's legacy
  global). It is serialized at each step's begin into memory registered
  with libelastic: a re-form resumes from it (the last committed step), a
  growth in place hands it to the new ranks.
* ``RANK``, ``LOCAL_RANK``, ``WORLD_SIZE`` and ``LOCAL_WORLD_SIZE`` are
  set as torchrun sets them before the script reads them (by elastic-run's
  rank wrapper, or at this module's import under plain mpirun), and follow
  the world after an in-place change (as do ``job.rank`` and ``job.size``).

What is refused, on every rank, with a message naming it: an optimizer,
LR scheduler or GradScaler over the model that is not tracked (found at the
first step); ``track()`` after training began; ``optimizer.step()`` outside
a step; a state that outgrows its registered space; a parameter whose dtype
or device changed after the model was wrapped (``model.to(torch.float64)``).
"""

import atexit as _atexit
import os as _os
import socket as _socket
import sys as _sys
import zlib as _zlib

import numpy as _np
import torch as _torch

import slurm_elastic as _se
from slurm_elastic import _grads
from slurm_elastic._kept import Kept as _Kept
from slurm_elastic._sampler import DistributedSampler

__all__ = ["init", "current", "Job", "DistributedDataParallel", "DistributedSampler",
           "init_process_group", "destroy_process_group", "is_initialized", "get_rank",
           "get_world_size", "track", "start_epoch", "step", "committed"]

_job = None  # the Job of this process
_backend = None  # what init_process_group was given (get_backend)


def _torchrun_env():
    """``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK`` and ``LOCAL_WORLD_SIZE`` as
    torchrun sets them, from the start: a torchrun script reads them before
    ``init_process_group`` (``torch.cuda.set_device(int(os.environ
    ["LOCAL_RANK"]))``). elastic-run's rank wrapper sets them before the
    script starts; under plain mpirun they come from mpirun's variables
    here, at import; a process started alone is rank 0 of 1.
    ``MASTER_ADDR``/``MASTER_PORT`` get torchrun's defaults where all ranks
    share one host and the user set none (nothing connects there)."""
    e = _os.environ
    if e.get("ELASTIC_RUN_GEN") is not None:
        return  # (a warm interpreter imports this before it knows its rank)
    for ours, mpi, alone in (("RANK", "OMPI_COMM_WORLD_RANK", "0"),
                             ("WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "1"),
                             ("LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "0"),
                             ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "1")):
        if mpi in e:
            e[ours] = e[mpi]
        else:
            e.setdefault(ours, alone)
    if e["LOCAL_WORLD_SIZE"] == e["WORLD_SIZE"]:
        e.setdefault("MASTER_ADDR", "127.0.0.1")
    e.setdefault("MASTER_PORT", "29500")


_torchrun_env()



DEFAULT_TIMEOUT = 1800.0  # seconds: torch.distributed's default for gloo (30 min)


def _step_timeout(timeout):
    """libelastic's step time limit (``ELASTIC_STEP_TIMEOUT``, read when the
    job starts) from torch's ``timeout``: the argument, else the
    environment's value, else torch's default. A rank whose step (forward to
    ``optimizer.step()``) takes longer ends with status 75 and a message
    ("a step did not finish in N s"): a hang ends the launch with a non-zero
    status, and elastic-run relaunches from the last committed step."""
    if timeout is None:
        _os.environ.setdefault("ELASTIC_STEP_TIMEOUT", "%g" % DEFAULT_TIMEOUT)
        return
    try:
        s = float(timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout)
    except (TypeError, ValueError):
        s = -1.0
    if not 0 < s <= 86400:
        raise ValueError("slurm_elastic.torch: timeout=%r: expected a datetime.timedelta or "
                         "seconds in (0, 86400]" % (timeout,))
    _os.environ["ELASTIC_STEP_TIMEOUT"] = "%g" % s


def init(state_capacity=None, timeout=None):
    """Start the elastic job of this process (MPI, libelastic) and return
    its :class:`Job`; where a torchrun script calls
    ``dist.init_process_group``. A second call returns the same job.

    ``state_capacity`` (bytes) sizes the memory that keeps the training
    state; by default 4 x the model's parameters + 2 x its buffers + 4 MiB
    (room for Adam's two moments and a scheduler), or the environment's
    ``ELASTIC_TORCH_STATE_MB``.

    ``timeout`` (a ``datetime.timedelta`` or seconds) bounds a step, as
    torch's bounds a collective: a rank stuck in a step longer ends with
    status 75 and a message, and the job re-forms from the last committed
    step. Default: ``ELASTIC_STEP_TIMEOUT`` from the environment, else 30
    minutes (torch's default)."""
    global _job
    if _job is None:
        _step_timeout(timeout)
        _job = Job(state_capacity)
    return _job


def init_process_group(backend=None, init_method=None, timeout=None, **kwargs):
    """:func:`init` under torch.distributed's name, so that a script that
    imports this module as ``dist`` keeps its line. ``timeout`` bounds a
    step (:func:`init`). ``backend`` and the other arguments (rendezvous,
    rank, world size) are not needed: the world is the job's MPI world.
    Returns the :class:`Job`."""
    global _backend
    if backend is not None:
        _backend = str(backend)
    return init(timeout=timeout)


def is_initialized():
    """True once :func:`init` ran."""
    return _job is not None


def get_rank(group=None):
    """This process's rank in the current world (it changes after a rank
    below it was lost and healed around)."""
    return current().rank


def get_world_size(group=None):
    """The size of the current world."""
    return current().size


def destroy_process_group(group=None):
    """:meth:`Job.close`: the training is complete."""
    current().close()


def track(*objs, **named):
    """:meth:`Job.track` of the current job."""
    return current().track(*objs, **named)


def step():
    """Training steps committed so far: the step counter to log. A dropped
    step is not counted, nor a collective called between steps; after a
    resume it goes on from the snapshot's."""
    j = current()
    return j.ctx.step - j.kept.side


def committed():
    """Whether the last ``optimizer.step()`` committed. False after a dropped
    step: the loop body runs to its end for it (its update undone), so a
    running meter of loss or accuracy skips it with ``if not
    dist.committed(): continue`` after ``optimizer.step()``."""
    return current()._last_committed


def start_epoch():
    """:attr:`Job.epoch` of the current job: the epoch to start the loop
    from (0, or the first one not finished after a resume)."""
    return current().epoch


def current():
    """The job made by :func:`init` (RuntimeError before)."""
    if _job is None:
        raise RuntimeError("slurm_elastic.torch.init() was not called: call it first, where "
                           "a torchrun script calls torch.distributed.init_process_group()")
    return _job


def _forkserver_workers():
    """DataLoader workers started through a forkserver (Python 3.14's
    default) end with this rank and ignore elastic-run's SIGUSR1: the
    forkserver preloads slurm_elastic._workers. The user's own preload list
    is kept (multiprocessing offers no getter)."""
    import multiprocessing
    import multiprocessing.forkserver as fs
    server = getattr(fs, "_forkserver", None)
    mods = list(getattr(server, "_preload_modules", None) or ["__main__"])
    if "slurm_elastic._workers" not in mods:
        multiprocessing.set_forkserver_preload(mods + ["slurm_elastic._workers"])


class Job:
    """The elastic training job of this process (made by :func:`init`): its
    world and its steps. What it keeps is ``kept`` (slurm_elastic._kept),
    its gradients and buffers are reduced by slurm_elastic._grads.

    Attributes: ``rank``, ``size``, ``local_rank``, ``local_size`` (the
    current world), ``epoch`` (the epoch to start from: the first one not
    finished, after a resume), ``resumed`` (this process took the state of
    an earlier launch or of running ranks), ``ctx`` (the underlying
    :class:`slurm_elastic.Context`).
    """

    def __init__(self, state_capacity=None):
        self.ctx = _se.Context(commit_mode=_se.UPDATE_AFTER_COMMIT)
        if _os.environ.get("ELASTIC_RUN_JOIN_BASE") is not None:
            # Started by a growth in place (elastic-run on Open MPI 5): the
            # running ranks' DataLoaders hold batches for the old world that
            # a joiner's does not, so the DDP layer has them re-form at the
            # new size instead (libelastic does it when a joiner leaves).
            print("slurm_elastic.torch: a growth in place: the job re-forms at its new size "
                  "instead", file=_sys.stderr, flush=True)
            _os._exit(_se.EXIT_REFORM)
        _forkserver_workers()
        # after the Context's own exit handler was registered: runs before it
        _atexit.register(self._keep_at_exit)
        self.kept = _Kept(state_capacity)  # what is kept, and its registered bytes
        self._fifo = []  # tags of batches handed out and not yet stepped
        self._tail_warned = -1  # the epoch mark of the last warning of a drop in a tail
        self._started = False  # the first step began (state registered)
        self._settled = False  # the first step's state applied (_settle)
        self._open = False  # a step is open
        self._reduced = False  # the comm hook ran in the open step
        self._failed = False  # a reduction of the open step failed
        self._reducer = None  # the thread of CPU reductions (_grads.Reducer), once needed
        self._tags = []  # the sampler's batches of the open step
        self._dropped = 0  # the last step was dropped (at this epoch mark)
        self._last_committed = True  # the last step ended committed (committed())
        self._epoch_marks = 1  # set_epoch() calls that changed the epoch, + 1
        self._fsizes = 0  # samples given to the model's forward in this step
        self._hooked = set()
        self._done = False
        self._hosts_stale = False
        e = _os.environ
        self.local_rank = int(e.get("OMPI_COMM_WORLD_LOCAL_RANK", e.get("LOCAL_RANK", 0)))
        self.local_size = int(e.get("OMPI_COMM_WORLD_LOCAL_SIZE", e.get("LOCAL_WORLD_SIZE", 1)))
        self._export_env()
        self.ctx.on_change(self._world_changed)

    # -- the world --
    rank = property(lambda self: self.ctx.rank, doc="rank in the current world")
    size = property(lambda self: self.ctx.size, doc="size of the current world")
    resumed = property(lambda self: self.ctx.resumed,
                       doc="True if this process took the state of an earlier launch "
                           "(a re-form) or of the running ranks (a growth in place)")

    def _world_changed(self):
        """libelastic's change callback: RANK/WORLD_SIZE at once, the local
        ones at the next step (_where: a collective)."""
        self._hosts_stale = True
        self._export_env()

    def _export_env(self):
        _os.environ.update(RANK=str(self.rank), WORLD_SIZE=str(self.size),
                           LOCAL_RANK=str(self.local_rank),
                           LOCAL_WORLD_SIZE=str(self.local_size))

    def _where(self):
        """LOCAL_RANK/LOCAL_WORLD_SIZE from the hosts of the current world
        (inside a step: a collective)."""
        h = _zlib.crc32(_socket.gethostname().encode()) & 0x7FFFFFFF
        hosts = self.ctx.allgather([h], self.size)
        self._hosts_stale = False
        if hosts is None:
            return
        mine = [r for r, x in enumerate(hosts) if x == h]
        self.local_rank, self.local_size = mine.index(self.rank), len(mine)
        self._export_env()

    # -- what is kept --
    def track(self, *objs, **named):
        """Keep these objects through failures, re-forms and growths:
        anything with ``state_dict()``/``load_state_dict()`` (optimizers, LR
        schedulers, ``torch.amp.GradScaler``, your own classes) or a dict
        (of counters: restored in place). Call it once the objects exist
        and before the first training step. Positional objects are named by
        their order (the same on every rank and every launch)."""
        if self._started:
            raise RuntimeError("slurm_elastic: track() after the first step began (the "
                               "first training forward, start_epoch() or a collective "
                               "such as all_reduce): call it before them")
        for i, o in enumerate(objs):
            named.setdefault("%s%d" % (type(o).__name__, i), o)
        for name, o in named.items():
            self.kept.add(name, o)
            if isinstance(o, _torch.optim.Optimizer) and id(o) not in self._hooked:
                o.register_step_pre_hook(self._pre_step)
                o.register_step_post_hook(self._post_step)
                self._hooked.add(id(o))
        return self

    # -- the step --
    def _start(self):
        """The first step: register the state and begin (libelastic resumes
        a snapshot, or hands a joiner the running ranks' state). What it
        brings is applied by _settle."""
        if not self.kept.models:
            raise RuntimeError("slurm_elastic: no model: wrap it in "
                               "slurm_elastic.torch.DistributedDataParallel first")
        self.kept.check_untracked()
        self.kept.open(self.ctx, self.size)
        self._started = True
        self.ctx._c.step_begin()
        self._open = True

    def _settle(self):
        """The first step's state, once the script is ready to train (its
        first training forward, or start_epoch()): the snapshot's after a
        resume, else rank 0's on every rank. A collective called before
        (a checkpoint broadcast) begins the first step without this, so that
        a snapshot resumed wins over a checkpoint the script loads there."""
        self._settled = True
        world = self.size
        if self.ctx.resumed:
            st = self.kept.arena.load()
            self.kept.load(st)
            world = st["world"]
        elif not self.kept.from_rank0(self.ctx, self.rank, self.size):
            self._failed = True
            return
        self._where()
        # a world of another size than the state's: the sampler's hand-out
        # starts again from the kept positions
        if world != self.size:
            self._bump()

    def _check_layout(self):
        """Refuse a model whose parameters changed dtype or device after it
        was wrapped (``model.to(torch.float64)``, ``.cuda()``): DDP's buckets
        and the kept state were laid out for the old ones, and the ranks
        would drift apart. One comparison of a list per step."""
        for m in self.kept.models:
            now = [(p.dtype, p.device) for p in m._elastic_params]
            if now == m._elastic_layout:
                continue
            for name, (dt, dev), p in zip(m._elastic_names, m._elastic_layout,
                                          m._elastic_params):
                if (p.dtype, p.device) != (dt, dev):
                    raise RuntimeError(
                        "slurm_elastic: the model's parameter %r changed from %s on %s to %s "
                        "on %s after DistributedDataParallel wrapped it (model.to(), .double(), "
                        ".cuda()...): move or convert the model before wrapping it"
                        % (name, str(dt).replace("torch.", ""), dev,
                           str(p.dtype).replace("torch.", ""), p.device))

    def _begin(self):
        self._check_layout()
        if not self._started:
            self._start()
        if not self._settled:
            self._settle()
            return
        if self._open:
            if not self._reduced:
                return  # a forward of the same step (accumulation, several models)
            self._end()  # no optimizer step came (GradScaler skipped it)
        self._open_step()

    def _open_step(self):
        """Save the state and begin a step (a training step, or a side step
        of collectives)."""
        if self._dropped:
            # what the dropped iteration did after its optimizer.step() (a
            # per-step scheduler, counters) goes too, unless an epoch ended
            # in between: then the epoch's own work is kept
            if self._dropped == self._epoch_marks:
                self.kept.load(self.kept.last(), samplers=False, models=False)
            self._dropped = 0
        world = self.size
        self.kept.save(self.size)
        self.kept.base = None
        self.ctx._c.step_begin()
        self._open, self._reduced, self._failed = True, False, False
        self._fsizes, self._tags = 0, []
        if self.size != world:  # a growth in place: the joiners' first collective too
            self._where()
            self._bump()

    def collective(self, run, what):
        """Run ``run()`` (libelastic collectives; True when they succeeded) on
        the current world. Inside a training step it is part of the step: a
        failure drops the step. Between steps it is a side step of its own,
        which trains nothing and is not counted by :func:`step`: a failure
        runs it again on the healed world, until it commits. Before the
        first step it begins the first step (the model must be wrapped)."""
        if self._done:
            raise RuntimeError("slurm_elastic: %s after destroy_process_group()" % what)
        if not self._started:
            if not self.kept.models:
                raise RuntimeError(
                    "slurm_elastic: %s before the model is wrapped: the job's world and "
                    "its state start with DistributedDataParallel(model), wrap it first"
                    % what)
            self._check_layout()
            self._start()
        if self._open:
            self._drain()
            if not run():  # (quick when the step failed already)
                self._failed = True
            return
        while True:
            self._open_step()
            ok = run()
            size0 = self.size
            if not ok:
                self.ctx._c.step_fail()
            r = self.ctx._c.step_commit()
            self._open = False
            if self.size != size0:
                self._bump()
            if r == _se.COMMITTED:
                self.kept.side += 1
                return

    def _keep_at_exit(self):
        """The process ends between steps without close() (an exception in
        the loop, as when a DataLoader worker dies): the state is kept at
        each step's begin, so after a committed step its update and the
        iteration's after-step work are not in the kept bytes yet. They go
        there now, before libelastic keeps the last committed step on the
        node for a relaunch. After a dropped step the kept bytes are already
        the committed state (the after-step work is to be undone)."""
        if self._started and not self._done and not self._open and not self._dropped \
                and not self.ctx._c.closed:
            self.kept.save(self.size)

    def _bump(self):
        for s in self.kept.samplers:
            s._bump()

    def _forward(self, model, args, kwargs):
        if not (model.training and _torch.is_grad_enabled()):
            return
        self._begin()
        # one batch of the sampler per training forward, in the order they
        # were handed out (the DataLoader keeps it)
        if self._fifo:
            self._tags.append(self._fifo.pop(0))
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, _torch.Tensor) and a.dim() > 0:
                self._fsizes += a.shape[0]
                break

    def _hook(self, state, bucket):
        buf = bucket.buffer()
        if not self._open:
            raise RuntimeError("slurm_elastic: backward outside a training step (the model's "
                               "forward ran in eval() mode or without gradients?)")
        self._reduced = True
        if self._failed:
            return _grads.done_future(buf)
        if self._tags and self._fresh():
            # the sampler's batches say this rank's share of the step
            total = sum(t.total for t in self._tags)
            buf.mul_(sum(t.local for t in self._tags) / total if total else 0.0)

            def reduce():
                return _grads.allreduce(self.ctx, buf)
        else:
            # the samples the forwards were given, summed with the gradients:
            # sum(n_r * g_r) / sum(n_r)
            wide = _torch.empty(buf.numel() + 1, dtype=_torch.float64 if buf.dtype ==
                                _torch.float64 else _torch.float32, device=buf.device)
            _torch.mul(buf, float(self._fsizes), out=wide[:-1])
            wide[-1] = float(self._fsizes)

            def reduce():
                ok = _grads.allreduce(self.ctx, wide)
                if ok:
                    n = float(wide[-1])
                    buf.copy_(wide[:-1] / n if n > 0 else wide[:-1] * 0)
                return ok
        if buf.device.type == "cuda" or not _grads.OVERLAP or bucket.is_last():
            # (NCCL's reduction is queued on the stream already; after the
            # last bucket backward has nothing left to overlap: it is reduced
            # here, after the reducer thread's, in DDP's order)
            self._drain()
            if not self._failed and not reduce():
                self._failed = True
            return _grads.done_future(buf)
        if self._reducer is None:
            self._reducer = _grads.Reducer(self)
        return self._reducer.submit(reduce, buf)

    def _drain(self):
        """Wait until the reductions handed to the reducer thread are done:
        before any other MPI call of this process (MPI_THREAD_SERIALIZED)."""
        if self._reducer is not None:
            self._reducer.q.join()

    def _fresh(self):
        return all(t.gen == t.sampler.gen for t in self._tags)

    def _pre_step(self, optimizer, args, kwargs):
        if not self._open:
            raise RuntimeError(
                "slurm_elastic: optimizer.step() outside a training step: call it once per "
                "step, after loss.backward() of the model's forward in train() mode")
        if not self._end():
            for g in optimizer.param_groups:
                for p in g["params"]:
                    p.grad = None  # torch's optimizers skip a parameter without gradient

    def _post_step(self, optimizer, args, kwargs):
        if self._dropped:
            self.kept.load(self.kept.last(), samplers=False, objs=False)

    def _end(self):
        """End the open step: rank 0's buffers everywhere, the agreement.
        Returns True if committed. A dropped step's samples go back to the
        sampler (every rank bumps together: the world changed, or some rank
        held a batch of the current hand-out) and it is marked for undoing
        (_post_step: the model; the next _begin: the rest)."""
        self._drain()
        tags, ctx = self._tags, self.ctx
        fresh = 1 if self._fresh() else 0
        size0 = self.size
        ok = not self._failed
        ints = _np.array([fresh, 1 - fresh], dtype=_np.int64)
        if ok and self._hosts_stale:
            self._where()
        if ok:
            synced = _grads.sync_buffers(self.ctx, self.rank, self.kept.models, ints)
            ok = synced is not None
            ints = synced if ok else ints
        if not ok or not fresh:
            ctx._c.step_fail()
        r = ctx._c.step_commit()
        self._open, self._tags, self._reduced = False, [], False
        self._last_committed = r == _se.COMMITTED
        if r == _se.COMMITTED:
            for t in tags:
                t.sampler._advance(t)
            if self.size != size0:  # a planned shrink in place
                self._bump()
            return True
        if self.size != size0 or (ok and ints[0] > 0):
            self._bump()
        self._dropped = self._epoch_marks
        if any(s._spent and not (s._refills and s._owes()) for s in self.kept.samplers):
            self._dropped_in_tail()
        return False

    def _dropped_in_tail(self):
        """A step was dropped after the epoch's last batch was taken from the
        sampler by something other than a DataLoader's pass (which makes a
        new one: _FreshBatches), such as a loop over the sampler itself or a
        loader of the script's own: the loop would end the epoch without the
        dropped samples, and with the dropped iteration's
        after-step work (a per-step scheduler) kept. Under elastic-run every
        rank (they all see the same drop and the same sampler) ends for a
        re-form from the last committed step, whose DataLoader hands out the
        epoch's tail again; elsewhere each rank says what goes wrong."""
        if _os.environ.get("ELASTIC_RUN_GEN") is not None:
            if self.rank == 0:
                print("slurm_elastic.torch: a step among the epoch's last batches was "
                      "dropped after the loader had taken them all: re-forming from "
                      "committed step %d" % self.ctx.step, file=_sys.stderr, flush=True)
            self.ctx._c.reform_now()
        if self._tail_warned == self._epoch_marks:
            return  # the batches in flight after it are dropped too: said once
        self._tail_warned = self._epoch_marks
        print("slurm_elastic.torch: warning: rank %d: a step among the epoch's last batches "
              "was dropped after the loader had taken them all (not under elastic-run, "
              "which would re-form): its samples are trained at the start of the next "
              "epoch, and what the iteration did after optimizer.step() (a per-step LR "
              "scheduler, counters) is kept" % self.rank, file=_sys.stderr, flush=True)

    # -- the end --
    @property
    def epoch(self):
        """The epoch to start the loop from: 0 on a fresh start, the first
        epoch not finished after a resume. Reading it begins the first step
        (the state is taken from rank 0 or from the snapshot here), so
        read it after creating the model, optimizer, schedulers and
        sampler, and after :meth:`track`."""
        if not self._settled:
            self._begin()
        if not self.kept.samplers:
            return 0
        return self.kept.samplers[0].epoch

    def close(self):
        """Mark the training complete (collective; a later launch starts
        afresh) once the loop is done. MPI is finalized at the interpreter's
        exit, after the script's last lines ran, so a model saved after
        close() is saved whatever MPI_Finalize does."""
        if self._done:
            return
        self._drain()
        if self._open:
            self._end()
        for s in self.kept.samplers:
            left = s._untrained()
            if left:
                print("slurm_elastic: warning: rank %d: %d samples of epoch %d were not "
                      "trained: a step among the epoch's last batches failed after the "
                      "loader had taken them all" % (self.rank, left, s.epoch),
                      file=_sys.stderr, flush=True)
        self.ctx.complete()
        self._done = True


class DistributedDataParallel(_torch.nn.parallel.DistributedDataParallel):
    """torch's DistributedDataParallel over the elastic job's world.

    Use it as DDP: ``model = DistributedDataParallel(Net())``, then
    ``model(x)``, ``loss.backward()``, ``model.module`` for the plain
    model, ``no_sync()`` for accumulation. The gradients are reduced
    through libelastic (the comm hook); DDP's own process group is this
    rank alone. ``job`` defaults to the one :func:`init` made; other
    keyword arguments go to torch's DDP (``process_group`` and
    ``register_comm_hook`` are taken)."""

    def __init__(self, module, job=None, **kwargs):
        job = job or current()
        if job._started:
            raise RuntimeError("slurm_elastic: wrap the model before the first step begins "
                               "(the first training forward, start_epoch() or a "
                               "collective)")
        if "process_group" in kwargs:
            raise ValueError("slurm_elastic: DistributedDataParallel runs over the elastic "
                             "job's world: do not pass process_group")
        # DDP's own buffer broadcast has nothing to do on a group of one (the
        # job sends rank 0's buffers at each commit); torch >= 2.14 names it
        # forward_sync_buffers and warns on broadcast_buffers
        import inspect
        params = inspect.signature(_torch.nn.parallel.DistributedDataParallel).parameters
        if "forward_sync_buffers" in params:
            kwargs.setdefault("forward_sync_buffers", False)
        elif "broadcast_buffers" in params:
            kwargs.setdefault("broadcast_buffers", False)
        super().__init__(module, process_group=_grads.SelfGroup(), **kwargs)
        super().register_comm_hook(job, job._hook)
        # what the buckets and the kept state were laid out for (Job._check_layout)
        named = list(module.named_parameters())
        self._elastic_names = [n for n, _ in named]
        self._elastic_params = [p for _, p in named]
        self._elastic_layout = [(p.dtype, p.device) for p in self._elastic_params]
        self._elastic_job = job
        job.kept.models.append(self)

    def register_comm_hook(self, state, hook):
        raise RuntimeError("slurm_elastic: the gradients are reduced by the elastic job's "
                           "comm hook; another hook cannot replace it")

    def forward(self, *args, **kwargs):
        self._elastic_job._forward(self, args, kwargs)
        return super().forward(*args, **kwargs)
