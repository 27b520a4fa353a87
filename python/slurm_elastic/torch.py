# SPDX-License-Identifier: GPL-2.0-or-later
# python/slurm_elastic/torch.py: the PyTorch layer: a model + optimizer wrapper whose
# parameters, gradients and optimizer state live in flat registered tensors, gradient
# all-reduce through libelastic, update after commit, and a torch Sampler.
"""PyTorch on libelastic (CPU tensors, or CUDA tensors through NCCL).

Two APIs:

* The DDP-shaped one (:mod:`slurm_elastic.ddp`, exported here): a torchrun
  DDP script keeps its loop; ``import slurm_elastic.torch as dist``,
  ``DistributedDataParallel``, ``DistributedSampler``, ``dist.track(...)``
  and ``dist.start_epoch()`` are what changes. Start here.
* The step loop below (:class:`ElasticDataParallel`, ``edp.steps()``): a
  failed step is replayed exactly, with gradient accumulation over
  micro-batches of a constant global batch.

:class:`ElasticDataParallel` makes a model and its optimizer elastic:

* the parameters become views of one flat float32 tensor, the optimizer's
  state (created at once, not lazily at the first ``optimizer.step()``)
  views of another; both are registered with the context, so a step that
  is redone, a relaunch that resumes, or a rank that joins sees exactly the
  last committed model and optimizer;
* the gradients are views of one flat buffer, reduced by one
  ``elastic_allreduce`` (with the loss and the sample count) and divided by
  the samples of the global batch: the same update whatever the world size;
* the optimizer's update and the sampler's advance run only after the step is
  committed (libelastic's update-after-commit mode: nothing is copied per
  step, and a change of registered state inside a step fails the step on
  every rank with EPROTO).

The loop::

    import torch, torch.nn.functional as F
    import slurm_elastic as se
    from slurm_elastic.torch import ElasticDataParallel

    with se.Context() as ctx:
        model = Net(); opt = torch.optim.Adam(model.parameters(), 1e-3)
        edp = ElasticDataParallel(ctx, model, opt, nsamples=len(X),
                                  global_batch=128, max_micro=32, seed=1)
        for step in edp.steps(epochs=10):
            for idx in step.micro_batches():
                loss = F.cross_entropy(model(X[idx]), y[idx], reduction="sum")
                loss.backward()
                step.add_loss(loss)
            edp.reduce(step)

Habits that would silently break the registration are caught at the next
step (:class:`RegistrationError`, the same on every rank, since every rank
runs the same code):

* ``optimizer.zero_grad()`` (``set_to_none=True``, PyTorch's default) and
  gradients that ``backward`` allocates anew: supported; their values are
  copied into the flat buffer before the reduction (one copy).
* ``param.data = ...``, ``model.to(...)``/``.double()``/``.cuda()`` that
  replace a parameter, parameters added after wrapping: refused.
* ``optimizer.load_state_dict(...)`` directly (it replaces the state
  tensors): refused; use :meth:`ElasticDataParallel.load_state_dict`, which
  copies into the registered storage.
* optimizer state created later (a new param group): refused.

The optimizer's own ``step()`` applies the update (its state is made at
wrapping by a step with zero gradients and learning rate 0). Under
elastic-run, a relaunch of a Python rank starts from a warm interpreter
(:mod:`slurm_elastic.warm`) that has imported torch and torch._dynamo
already.

Parameters must be float32, all on the CPU or all on one CUDA device. On
CUDA the flat tensors live on the GPU; the gradients are summed there with
NCCL (``Context.gpu_allreduce``, libelastic's communicator, rebuilt after a
change); the registered copies are pinned host tensors (a "shadow") that the
wrapper copies the model and optimizer state into after each committed
update, and back onto the GPU when a step is redone or a relaunch resumed.
RNG state is not registered (a model with dropout draws different masks
after a redo).
"""

import copy as _copy

import torch as _torch
from torch.utils.data import Sampler as _TorchSampler

import slurm_elastic as _se
from slurm_elastic.ddp import (  # noqa: F401  (the DDP-shaped API, see slurm_elastic.ddp)
    DistributedDataParallel, DistributedSampler, Job, committed, current, destroy_process_group,
    get_rank, get_world_size, init, init_process_group, is_initialized, start_epoch, step, track)
from slurm_elastic.collectives import (  # noqa: F401  (torch.distributed's collectives)
    GroupMember, ReduceOp, all_gather, all_gather_object, all_reduce, barrier, broadcast,
    broadcast_object_list, get_backend, group, new_group, reduce)


class RegistrationError(RuntimeError):
    """A parameter or optimizer state tensor is not a view of the registered
    storage (replaced since wrapping), so a redo or resume would miss it."""


def _flat_views(tensors, name, device=None):
    """A flat float32 tensor (on device, default the CPU) holding copies of
    tensors, and views into it."""
    total = sum(t.numel() for t in tensors)
    if total == 0:
        raise ValueError("%s: nothing to register" % name)
    flat = _torch.zeros(total, dtype=_torch.float32, device=device)
    views, off = [], 0
    for t in tensors:
        n = t.numel()
        v = flat[off:off + n].view(t.shape)
        v.copy_(t.detach())
        views.append(v)
        off += n
    return flat, views


def _same_storage(t, view):
    return (t is not None and t.data_ptr() == view.data_ptr() and t.shape == view.shape
            and t.dtype == view.dtype and t.device == view.device)


class ElasticSampler(_TorchSampler):
    """The step loop's sampler (:class:`slurm_elastic.ElasticSampler`) as a
    torch Sampler, nothing more: what ``ElasticDataParallel(...,
    nsamples=...)`` makes for its steps (``edp.sampler``). A DDP script
    uses :class:`DistributedSampler` instead.

    Iterating yields this rank's sample indices of the current step (its
    share of the global batch, see :class:`slurm_elastic.BatchPlan`); use it
    with a DataLoader whose batch_size is ``plan().micro``. The position is
    registered state: it advances only after a step is committed, rolls back
    with a redo and resumes after a re-form. Every sample is used once per
    epoch whatever the world sizes.
    """

    def __init__(self, ctx, nsamples, global_batch, max_micro, seed=0, shuffle=True):
        self.es = _se.ElasticSampler(ctx, nsamples, global_batch, max_micro, seed, shuffle)

    epoch = property(lambda self: self.es.epoch, doc="current epoch")
    consumed = property(lambda self: self.es.consumed, doc="samples used in this epoch")

    def plan(self):
        """This step's batch plan."""
        return self.es.plan()

    def __iter__(self):
        return iter(self.es.indices())

    def __len__(self):
        return self.es.plan().share


class Step(_se.Step):
    """A step of :meth:`ElasticDataParallel.steps`: ``plan`` (the batch
    plan), ``indices`` (this rank's samples), ``loss``/``samples`` (global,
    after :meth:`ElasticDataParallel.reduce`), ``epoch``."""

    __slots__ = ("indices", "epoch", "_loss", "loss", "samples")

    def micro_batches(self):
        """This rank's indices as ``plan.accum`` lists of at most ``plan.micro``
        (tensors of int64); empty ones are skipped."""
        for mb in self.plan.micro_batches(self.indices):
            if mb:
                yield _torch.tensor(mb, dtype=_torch.int64)

    def add_loss(self, loss):
        """Add a micro-batch's summed loss (a tensor or float) to the step's."""
        self._loss += float(loss.detach() if isinstance(loss, _torch.Tensor) else loss)


class ElasticDataParallel:
    """Data-parallel training of ``model`` with ``optimizer`` on libelastic.

    Registers the parameters (``params``) and the optimizer state
    (``optim``) as flat float32 storage and, when ``nsamples`` is given, an
    elastic sampler of ``global_batch`` samples a step, at most ``max_micro``
    at once on a rank. Must be created before the first step, identically on
    every rank (libelastic checks the registration at the first step).
    The context must be in UPDATE_AFTER_COMMIT mode (the default of
    :class:`slurm_elastic.Context`).
    """

    def __init__(self, ctx, model, optimizer, nsamples=None, global_batch=None,
                 max_micro=None, seed=0, shuffle=True):
        if ctx.commit_mode != _se.UPDATE_AFTER_COMMIT:
            raise ValueError("ElasticDataParallel needs a Context in UPDATE_AFTER_COMMIT "
                             "mode (optimizer.step() runs after the commit)")
        self.ctx, self.model, self.optimizer = ctx, model, optimizer
        self.params = [p for p in model.parameters() if p.requires_grad]
        opt_params = [p for g in optimizer.param_groups for p in g["params"]]
        if {id(p) for p in opt_params} != {id(p) for p in self.params}:
            raise ValueError("the optimizer must own exactly the model's trainable "
                             "parameters (%d in the optimizer, %d in the model)"
                             % (len(opt_params), len(self.params)))
        self.device = self.params[0].device if self.params else _torch.device("cpu")
        for i, p in enumerate(self.params):
            if p.dtype != _torch.float32 or p.device != self.device or \
                    p.device.type not in ("cpu", "cuda"):
                raise ValueError("parameter %d is %s on %s: the parameters must be float32, "
                                 "all on the CPU or all on one CUDA device (parameter 0 is "
                                 "on %s)" % (i, p.dtype, p.device, self.device))
        self._cuda = self.device.type == "cuda"
        # parameters: views of one flat tensor
        self.flat_params, views = _flat_views(self.params, "parameters", self.device)
        with _torch.no_grad():
            for p, v in zip(self.params, views):
                p.data = v
        self._pviews = views
        # gradients: views of one flat buffer, plus loss and count at the end
        n = self.flat_params.numel()
        self.flat_grad = _torch.zeros(n + 2, dtype=_torch.float32, device=self.device)
        self._gviews = []
        off = 0
        for p in self.params:
            v = self.flat_grad[off:off + p.numel()].view(p.shape)
            p.grad = v
            self._gviews.append(v)
            off += p.numel()
        # optimizer state: made now, then moved into flat storage
        self._materialize_state()
        self._flatten_state()
        if self._cuda:  # the registered copies: pinned host shadows
            self._host = [_torch.empty(t.numel(), dtype=_torch.float32, pin_memory=True)
                          for t in (self.flat_params, self.flat_optim)]
            self._to_host()
        else:
            self._host = [self.flat_params, self.flat_optim]
        ctx.register("params", self._host[0].numpy())
        ctx.register("optim", self._host[1].numpy())
        self.sampler = None
        if nsamples is not None:
            if global_batch is None or max_micro is None:
                raise ValueError("nsamples needs global_batch and max_micro")
            self.sampler = ElasticSampler(ctx, nsamples, global_batch, max_micro, seed,
                                          shuffle)

    # -- optimizer state --
    def _materialize_state(self):
        """Create the optimizer's lazily made state now: one step with zero
        gradients, learning rate 0 and no weight decay, then step counters
        back to 0 (the buffers' values are then what the first real step
        would have created them with: zeros, or the initial accumulator)."""
        if any(len(s) for s in self.optimizer.state.values()):
            raise RegistrationError("the optimizer already has state: wrap it before its "
                                    "first step (use load_state_dict to restore one)")
        saved = []
        for g in self.optimizer.param_groups:
            saved.append({k: g[k] for k in ("lr", "weight_decay") if k in g})
            if "lr" in g:
                g["lr"] = 0.0 if not isinstance(g["lr"], _torch.Tensor) else g["lr"] * 0
            if "weight_decay" in g:
                g["weight_decay"] = 0.0
        before = self.flat_params.clone()
        self.flat_grad.zero_()
        try:
            self.optimizer.step()
        finally:
            for g, s in zip(self.optimizer.param_groups, saved):
                g.update(s)
        with _torch.no_grad():
            self.flat_params.copy_(before)
        for s in self.optimizer.state.values():
            if "step" in s:
                st = s["step"]
                s["step"] = st.zero_() if isinstance(st, _torch.Tensor) else 0

    def _flatten_state(self):
        """Move the state into one flat tensor, grouped by key (all exp_avg,
        then all exp_avg_sq, ...)."""
        keys, tensors = [], []
        allkeys = sorted({k for p in self.params for k in self.optimizer.state.get(p, {})})
        for k in allkeys:
            for i, p in enumerate(self.params):
                s = self.optimizer.state.get(p, {})
                if k not in s:
                    continue
                v = s[k]
                if not isinstance(v, _torch.Tensor):
                    raise RegistrationError(
                        "optimizer state %r of parameter %d is a %s, not a tensor: it "
                        "cannot be registered" % (k, i, type(v).__name__))
                if not v.is_floating_point() or (v.device != self.device and v.numel() > 1):
                    raise RegistrationError("optimizer state %r of parameter %d is %s on "
                                            "%s: only floating tensors on the parameters' "
                                            "device (%s)" % (k, i, v.dtype, v.device,
                                                             self.device))
                keys.append((p, k, v.dtype))
                tensors.append(v.to(device=self.device, dtype=_torch.float32))
        if not tensors:  # plain SGD: no state; register one word anyway
            tensors = [_torch.zeros(1)]
        self.flat_optim, views = _flat_views(tensors, "optimizer state", self.device)
        self._oviews = []
        for (p, k, dt), v in zip(keys, views):
            if dt != _torch.float32:
                raise RegistrationError("optimizer state %r is %s: only float32 can live in "
                                        "the registered storage" % (k, dt))
            self.optimizer.state[p][k] = v
            self._oviews.append((p, k, v))
        self._nstate = sum(len(s) for s in self.optimizer.state.values())

    def check(self):
        """Raise :class:`RegistrationError` if the model or optimizer stopped
        using the registered storage (see the module documentation)."""
        params = [p for p in self.model.parameters() if p.requires_grad]
        if len(params) != len(self.params) or any(a is not b for a, b in
                                                   zip(params, self.params)):
            raise RegistrationError("the model's parameters changed after wrapping (added, "
                                    "removed or replaced): wrap the final model")
        for i, (p, v) in enumerate(zip(self.params, self._pviews)):
            if not _same_storage(p.data, v):
                raise RegistrationError(
                    "parameter %d no longer uses the registered storage (param.data = ..., "
                    "or model.to()/.double()/.cuda() replaced it): its changes would be "
                    "lost at the next redo or re-form; change values in place "
                    "(with torch.no_grad(): p.copy_(x)) instead" % i)
        for p, k, v in self._oviews:
            if not _same_storage(self.optimizer.state.get(p, {}).get(k), v):
                raise RegistrationError(
                    "optimizer state %r was replaced (optimizer.load_state_dict?): use "
                    "ElasticDataParallel.load_state_dict, which copies into the "
                    "registered storage" % k)
        if sum(len(s) for s in self.optimizer.state.values()) != self._nstate:
            raise RegistrationError("the optimizer created state after wrapping (a new "
                                    "param group?): it is not registered")

    def _adopt_grads(self):
        """Gradients allocated anew (zero_grad(set_to_none=True), then backward)
        are copied into the flat buffer and the views put back."""
        for p, v in zip(self.params, self._gviews):
            g = p.grad
            if g is None:
                v.zero_()
            elif not _same_storage(g, v):
                v.copy_(g)
            else:
                continue
            p.grad = v

    # -- state dicts --
    def state_dict(self):
        """{"model": ..., "optimizer": ...}, deep copies (the live ones are views
        of the registered storage and change with every step)."""
        return {"model": {k: t.clone() for k, t in self.model.state_dict().items()},
                "optimizer": _copy.deepcopy(self.optimizer.state_dict())}

    def load_state_dict(self, sd):
        """Load a state_dict() into the registered storage (between steps:
        before the first one, or in a Step.on_commit callback)."""
        with _torch.no_grad():
            missing = self.model.load_state_dict(sd["model"], strict=True)
        del missing
        self.optimizer.load_state_dict(sd["optimizer"])
        for p, k, v in self._oviews:
            new = self.optimizer.state[p][k]
            with _torch.no_grad():
                v.copy_(new)
            self.optimizer.state[p][k] = v
        self.check()
        self._to_host()

    # -- the loop --
    def steps(self, epochs=None, total=None):
        """Steps until the sampler finished ``epochs`` epochs (or ``total``
        steps are committed). Yields a :class:`Step` with this rank's plan and
        indices; the body runs forward/backward and calls :meth:`reduce`. At
        commit the optimizer steps and the sampler advances; a redo yields the
        same step again with the state of the last commit."""
        if epochs is not None and self.sampler is None:
            raise ValueError("steps(epochs=...) needs a sampler (nsamples=...)")
        def more():
            self.check()  # before the step begins: a refusal leaves no step open
            return epochs is None or self.sampler.epoch < epochs
        first = True
        for base in self.ctx.steps(total, more):
            if self._cuda and (first or base.redo):
                self._to_device()  # the committed state libelastic restored or resumed
            first = False
            st = Step(base.index, base.redo)
            st._after = base._after
            st._loss = 0.0
            st.loss = st.samples = None
            st.epoch = self.sampler.epoch if self.sampler else None
            if self.sampler is not None:
                st.plan = self.sampler.plan()
                st.indices = self.sampler.es.indices(st.plan)
            self.flat_grad.zero_()
            for p, v in zip(self.params, self._gviews):
                if p.grad is not v:
                    p.grad = v
            st.on_commit(self._apply)
            self._reduced = False
            yield st
            if not self._reduced:
                base.fail()
                raise RuntimeError("the step ended without ElasticDataParallel.reduce(step)")
            if st._failed:
                base.fail()

    def reduce(self, step, divide_by=None):
        """All-reduce the gradients, the loss and the sample count (one
        elastic_allreduce) and divide the gradients by the samples of the
        global batch (or ``divide_by``). Sets ``step.loss`` (mean per sample)
        and ``step.samples``. Returns False when the world failed during the
        step (it will be redone)."""
        self._reduced = True
        self._adopt_grads()
        n = self.flat_params.numel()
        self.flat_grad[n] = step._loss
        self.flat_grad[n + 1] = float(len(step.indices)) if hasattr(step, "indices") else 0.0
        if self._cuda:
            ok = self.ctx.gpu_allreduce(self.flat_grad.data_ptr(), self.flat_grad.numel(),
                                        "float32",
                                        _torch.cuda.current_stream(self.device).cuda_stream)
        else:
            ok = self.ctx.allreduce(self.flat_grad.numpy())
        if not ok:
            step.fail()
            return False
        samples = float(self.flat_grad[n + 1])
        div = divide_by if divide_by is not None else samples
        if div > 0:
            self.flat_grad[:n].div_(div)
        step.samples = int(samples)
        step.loss = float(self.flat_grad[n]) / samples if samples > 0 else float("nan")
        return True

    def _to_host(self):
        """CUDA: the committed model and optimizer state into the registered
        pinned shadows (a synchronous copy)."""
        if self._cuda:
            self._host[0].copy_(self.flat_params)
            self._host[1].copy_(self.flat_optim)

    def _to_device(self):
        """CUDA: the registered shadows (as libelastic restored them) onto the GPU."""
        with _torch.no_grad():
            self.flat_params.copy_(self._host[0])
            self.flat_optim.copy_(self._host[1])

    def _apply(self):
        self.optimizer.step()
        self._to_host()
        if self.sampler is not None:
            self.sampler.es.advance()
