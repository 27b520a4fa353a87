# SPDX-License-Identifier: GPL-2.0-or-later
# python/slurm_elastic/_kept.py: what the DDP-shaped layer keeps through failures: the
# tracked objects, the models', samplers' and RNGs' states, serialized into one buffer
# registered with libelastic.
"""The kept state of :class:`slurm_elastic.torch.Job`: what is tracked, how it is
serialized, and where a dropped step or a resume takes it back from."""

import gc as _gc
import os as _os
import pickle as _pickle
import random as _random
import struct as _struct
import zlib as _zlib

import numpy as _np
import torch as _torch

_MAGIC = b"SETS0001"
_HEAD = _struct.Struct("<8sQQQ")  # magic, tensor bytes, meta bytes, meta crc


class _Ref:
    """A tensor's place in the serialized state."""

    __slots__ = ("i",)

    def __init__(self, i):
        self.i = i

    def __reduce__(self):
        return (_Ref, (self.i,))


class _Opaque:
    """A value the serializer pickles whole, without looking inside for
    tensors (the RNG states: hundreds of ints)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __reduce__(self):
        return (_Opaque, (self.value,))


def _map(obj, fn):
    """obj rebuilt with fn(x) in place of each leaf x (dicts, plain lists and
    tuples are walked)."""
    if isinstance(obj, dict):
        d = {k: _map(v, fn) for k, v in obj.items()}
        return type(obj)(d) if type(obj) is not dict else d
    if type(obj) in (list, tuple):
        return type(obj)(_map(v, fn) for v in obj)
    return fn(obj)


def _strip(obj, out):
    """obj with every tensor replaced by a _Ref into out (a list)."""
    def leaf(x):
        if isinstance(x, _torch.Tensor):
            out.append(x)
            return _Ref(len(out) - 1)
        return x
    return _map(obj, leaf)


def _fill(obj, tensors):
    """_strip undone: each _Ref replaced by its tensor."""
    return _map(obj, lambda x: tensors[x.i] if isinstance(x, _Ref) else x)


class _Arena:
    """The training state serialized into one registered byte buffer:
    a header, the tensors' bytes, then the pickled rest (structure, Python
    values, each tensor's dtype/shape/device)."""

    def __init__(self, capacity, pinned=False):
        capacity = (capacity + 7) // 8 * 8
        if pinned:
            # page-locked: the GPU copies into it asynchronously, at its
            # full bandwidth, and one synchronization ends the save
            self.t = _torch.zeros(capacity, dtype=_torch.uint8, pin_memory=True)
            self.buf = self.t.numpy()
        else:
            self.buf = _np.zeros(capacity, dtype=_np.uint8)
            self.t = _torch.from_numpy(self.buf)
        self.used = 0

    def save(self, state):
        tensors = []
        skel = _strip(state, tensors)
        specs, off = [], _HEAD.size
        for t in tensors:
            n = t.numel() * t.element_size()
            specs.append((t.dtype, tuple(t.shape), str(t.device), off, n))
            off += n
        meta = _pickle.dumps((skel, specs), protocol=_pickle.HIGHEST_PROTOCOL)
        end = off + len(meta)
        if end > self.buf.size:
            raise RuntimeError(
                "slurm_elastic: the training state (%.1f MiB) does not fit the %.1f MiB "
                "registered for it: pass a larger state_capacity to slurm_elastic.torch."
                "init() (or set ELASTIC_TORCH_STATE_MB) on every rank"
                % (end / 2**20, self.buf.size / 2**20))
        on_gpu = False
        for t, (_, _, _, o, n) in zip(tensors, specs):
            if n:
                src = t.detach().contiguous().reshape(-1)
                if src.dtype == _torch.bool:
                    src = src.to(_torch.uint8)
                if src.device.type == "cpu":
                    self.t[o:o + n].copy_(src.view(_torch.uint8))
                else:
                    self.t[o:o + n].copy_(src.view(_torch.uint8), non_blocking=True)
                    on_gpu = True
        if on_gpu:
            _torch.cuda.synchronize()  # the bytes are in host memory before libelastic reads them
        self.buf[off:end] = _np.frombuffer(meta, dtype=_np.uint8)
        _HEAD.pack_into(self.buf, 0, _MAGIC, off - _HEAD.size, len(meta),
                        _zlib.crc32(meta))
        self.used = end
        return end

    @classmethod
    def over(cls, buf):
        """An arena reading the bytes of buf (a uint8 array), not a copy."""
        a = cls.__new__(cls)
        a.buf, a.t, a.used = buf, _torch.from_numpy(buf), buf.size
        return a

    def load(self):
        magic, tbytes, mbytes, crc = _HEAD.unpack_from(self.buf, 0)
        if magic != _MAGIC:
            return None
        off = _HEAD.size + tbytes
        meta = self.buf[off:off + mbytes].tobytes()
        if _zlib.crc32(meta) != crc:
            raise RuntimeError("slurm_elastic: the kept training state is damaged "
                               "(checksum of its description differs)")
        skel, specs = _pickle.loads(meta)
        tensors = []
        for dtype, shape, device, o, n in specs:
            raw = self.t[o:o + n].clone()
            if dtype == _torch.bool:
                t = raw.to(_torch.bool)
            else:
                t = raw.view(dtype) if n else _torch.empty(0, dtype=dtype)
            tensors.append(t.reshape(shape))
        return _fill(skel, tensors)


def _rng_state():
    st = {"torch": _torch.get_rng_state(), "random": _random.getstate(),
          "numpy": _np.random.get_state()}
    if _torch.cuda.is_initialized():
        st["cuda"] = _torch.cuda.get_rng_state()  # the current device's (Dropout on the GPU)
    return st


def _set_rng_state(st):
    _torch.set_rng_state(st["torch"])
    _random.setstate(st["random"])
    _np.random.set_state(st["numpy"])
    if "cuda" in st and _torch.cuda.is_available():
        _torch.cuda.set_rng_state(st["cuda"])


def _stateful_kinds():
    """The classes whose objects the first step looks for: optimizers, LR
    schedulers, GradScalers (torch.amp's and torch.cuda.amp's)."""
    from torch.optim import lr_scheduler as ls
    sched = (getattr(ls, "LRScheduler", None) or getattr(ls, "_LRScheduler"),
             ls.ReduceLROnPlateau)
    scalers = []
    for mod, name in (("torch.amp", "GradScaler"), ("torch.cuda.amp", "GradScaler")):
        try:
            scalers.append(getattr(__import__(mod, fromlist=[name]), name))
        except (ImportError, AttributeError):
            pass
    return _torch.optim.Optimizer, sched, tuple(scalers)


class Kept:
    """The state one job keeps: the models wrapped (``models``), the elastic
    samplers (``samplers``), the objects tracked (``tracked``: (name,
    object)), and the count of side steps committed (``side``:
    collectives between training steps, not counted as training steps).
    ``arena`` holds them serialized as the open step began, registered with
    libelastic; ``base`` rank 0's, as the first step received them, until
    the next step's begin saves its own."""

    def __init__(self, capacity=None):
        self.capacity = capacity  # bytes (None: capacity_bytes picks)
        self.tracked = []
        self.models = []
        self.samplers = []
        self.side = 0
        self.arena = None
        self.base = None

    def add(self, name, o):
        """Track o under name: a dict, or an object with state_dict() and
        load_state_dict()."""
        if any(n == name for n, _ in self.tracked):
            raise ValueError("slurm_elastic: track(): the name %r is taken" % name)
        if not isinstance(o, dict) and not (hasattr(o, "state_dict")
                                            and hasattr(o, "load_state_dict")):
            raise TypeError("slurm_elastic: track(%s=...): a %s has no state_dict()/"
                            "load_state_dict(): track a dict, or an object that has "
                            "them" % (name, type(o).__name__))
        self.tracked.append((name, o))

    def state(self, world):
        """Everything kept, as one structure (tensors inside), for a world
        of ``world`` ranks."""
        st = {"models": [m.module.state_dict() for m in self.models],
              "samplers": [s.state_dict() for s in self.samplers],
              "rng": _Opaque(_rng_state()), "world": world, "side": self.side,
              "objs": {}}
        for name, o in self.tracked:
            st["objs"][name] = dict(o) if isinstance(o, dict) else o.state_dict()
        return st

    def load(self, st, samplers=True, models=True, objs=True):
        """Put a structure made by :meth:`state` back into the live objects."""
        if models:
            with _torch.no_grad():
                for m, sd in zip(self.models, st["models"]):
                    m.module.load_state_dict(sd)
        if samplers:
            for s, sd in zip(self.samplers, st["samplers"]):
                s.load_state_dict(sd)
        if objs:
            self.side = st.get("side", 0)
            for name, o in self.tracked:
                sd = st["objs"][name]
                if isinstance(o, dict):
                    o.clear()
                    o.update(sd)
                else:
                    o.load_state_dict(sd)
            _set_rng_state(st["rng"].value)

    def check_untracked(self):
        """Refuse an optimizer, LR scheduler or GradScaler over the model that
        would not be kept (its state would silently restart after a re-form)."""
        params = {id(p) for m in self.models for p in m.parameters()}
        kept = {id(o) for _, o in self.tracked}
        # the schedulers inside a tracked SequentialLR/ChainedScheduler are in
        # its state_dict
        kept |= {id(c) for _, o in self.tracked for c in getattr(o, "_schedulers", ())}
        optk, schedk, scalerk = _stateful_kinds()
        opts, scheds, scalers = [], [], []
        # one pass over the collector's objects; issubclass(type(o)) reads no
        # attribute of o (some objects warn on any)
        for o in _gc.get_objects():
            t = type(o)
            if issubclass(t, optk):
                opts.append(o)
            elif issubclass(t, schedk):
                scheds.append(o)
            elif scalerk and issubclass(t, scalerk):
                scalers.append(o)
        opts = [o for o in opts
                if any(id(p) in params for g in o.param_groups for p in g["params"])]
        missing = [type(o).__name__ for o in opts if id(o) not in kept]
        optids = {id(o) for o in opts}
        missing += ["%s (an LR scheduler)" % type(o).__name__ for o in scheds
                    if id(getattr(o, "optimizer", None)) in optids and id(o) not in kept]
        missing += ["GradScaler" for o in scalers
                    if getattr(o, "_enabled", True) and id(o) not in kept]
        if missing:
            raise RuntimeError(
                "slurm_elastic: %s of the model %s not kept: pass %s to "
                "slurm_elastic.torch.track() before the training loop, or a re-form "
                "would restart %s from scratch"
                % (", ".join(missing), "is" if len(missing) == 1 else "are",
                   "it" if len(missing) == 1 else "them",
                   "it" if len(missing) == 1 else "them"))

    def capacity_bytes(self):
        """The registered space: state_capacity, ELASTIC_TORCH_STATE_MB, or
        4 x the parameters + 2 x the buffers + 4 MiB."""
        if self.capacity:
            return int(self.capacity)
        mb = _os.environ.get("ELASTIC_TORCH_STATE_MB")
        if mb:
            try:
                return int(float(mb) * 2**20)
            except ValueError:
                raise ValueError("ELASTIC_TORCH_STATE_MB=%r is not a number of MiB" % mb)
        p = sum(t.numel() * t.element_size() for m in self.models for t in m.parameters())
        b = sum(t.numel() * t.element_size() for m in self.models for t in m.buffers())
        return 4 * p + 2 * b + 4 * 2**20

    def open(self, ctx, world):
        """Register the state with libelastic (the first step's begin), in
        page-locked memory when a model is on a GPU."""
        self.arena = _Arena(self.capacity_bytes(), pinned=any(
            p.is_cuda for m in self.models for p in m.parameters()))
        self.arena.save(self.state(world))
        ctx.register("torch_state", self.arena.buf)

    def save(self, world):
        """Serialize the state now into the registered bytes."""
        self.arena.save(self.state(world))

    def from_rank0(self, ctx, rank, world):
        """Rank 0's state to every rank, as DDP's construction broadcast does
        (a script that seeds nothing trains one model), whatever its size.
        It travels in a copy: the registered bytes are this step's begin
        state, which libelastic checks is unchanged at the commit. Until the
        next step's begin saves it, that copy is what a dropped step goes
        back to (last). False when the world failed."""
        mine = None
        if rank == 0:  # its state now (a checkpoint loaded since the begin)
            st = self.state(world)
            # (room for what a checkpoint may have added, not the whole capacity)
            mine = _Arena(min(self.arena.buf.size, 2 * self.arena.used + 2**20))
            try:
                mine.save(st)
            except RuntimeError:
                mine = _Arena(self.arena.buf.size)
                mine.save(st)
        used = _np.array([(mine.used + 7) // 8 if mine else 0], dtype=_np.int64)
        if not ctx.allreduce(used, "max"):
            return False
        words = _np.zeros(int(used[0]), dtype=_np.int64)
        if mine is not None:
            words[:] = mine.buf.view(_np.int64)[:words.size]
        if not ctx.allreduce(words):
            return False
        self.base = _Arena.over(words.view(_np.uint8))
        if rank != 0:
            self.load(self.base.load())
        return True

    def last(self):
        """The state a dropped step goes back to: the registered bytes, or
        rank 0's as the first step received them."""
        return (self.base or self.arena).load()
