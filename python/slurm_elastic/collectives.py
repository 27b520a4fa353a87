# SPDX-License-Identifier: GPL-2.0-or-later
# python/slurm_elastic/collectives.py: torch.distributed's collectives over the elastic
# job's world (all_reduce, broadcast, all_gather, reduce, barrier, the object ones,
# new_group, get_backend), exported by slurm_elastic.torch.
"""torch.distributed's collectives, as scripts call them, on the elastic world.

The signatures are torch's; tensors are changed in place. Where they run:

* **Inside a training step** (between the model's training forward and
  ``optimizer.step()``), a collective is part of the step. If the world
  changes during the step, the step is dropped on every survivor
  (``committed()`` is False after its ``optimizer.step()``) and what the
  collective returned in it is not to be used (it may be this rank's own
  values, or a partial sum).
* **Between steps** (an epoch's metrics, a checkpoint broadcast before the
  loop), a collective runs as a step of its own that trains nothing and is
  not counted by ``step()``. If the world changes during it, it runs again
  on the healed world: it returns once it completed on every rank of the
  world then current (``get_world_size()``), never with a partial result.
  Each such call saves the training state once, as a step's begin does.
* Before the first step it begins the job's first step (wrap the model in
  ``DistributedDataParallel`` first).

Ops: ``ReduceOp.SUM``, ``MAX``, ``MIN`` and ``AVG`` (floating point).
Groups: the whole world only (``new_group()`` of every rank,
``group.WORLD``). ``async_op=True`` returns a completed work. CUDA tensors
go through host memory (these calls carry metrics and checkpoints; the
gradients go through NCCL in DDP's comm hook).
"""

import pickle as _pickle

import numpy as _np
import torch as _torch
import torch.distributed as _dist

from slurm_elastic import _grads
from slurm_elastic import ddp as _ddp

ReduceOp = _dist.ReduceOp

__all__ = ["ReduceOp", "group", "GroupMember", "all_reduce", "broadcast", "all_gather",
           "all_gather_object", "broadcast_object_list", "reduce", "barrier", "new_group",
           "get_backend"]


class _World:
    """The one group: every rank of the elastic job's current world."""

    def size(self):
        return _ddp.current().size

    def rank(self):
        return _ddp.current().rank

    def __repr__(self):
        return "<slurm_elastic world group>"


class group:  # noqa: N801  (torch.distributed.group)
    WORLD = _World()


GroupMember = group

_SUM, _MAX, _MIN, _AVG = ReduceOp.SUM, ReduceOp.MAX, ReduceOp.MIN, ReduceOp.AVG


def _whole(g, what):
    if g is not None and not isinstance(g, _World):
        raise ValueError("slurm_elastic: %s(group=%r): the collectives run on the whole "
                         "elastic world only (group=None or group.WORLD)" % (what, g))


def _done(async_op, result=None):
    return _grads.make_work(result) if async_op else None


def _op_name(op, tensor, what):
    for o, name in ((_SUM, "sum"), (_MAX, "max"), (_MIN, "min"), (_AVG, "avg")):
        if op == o:
            if name == "avg" and not tensor.is_floating_point():
                raise ValueError("slurm_elastic: %s(op=ReduceOp.AVG) of a %s tensor: AVG needs "
                                 "a floating-point tensor" % (what, tensor.dtype))
            return name
    raise ValueError("slurm_elastic: %s(op=%s): the ops are ReduceOp.SUM, MAX, MIN and AVG"
                     % (what, op))


def _wide(tensor):
    """tensor on the host as a dtype libelastic reduces (float32/float64,
    int32/int64): a copy."""
    t = tensor.detach().to("cpu")
    if t.dtype in (_torch.float32, _torch.float64, _torch.int32, _torch.int64):
        return t.clone().contiguous()
    if t.is_floating_point():
        return t.to(_torch.float64).contiguous()
    if t.is_complex():
        raise TypeError("slurm_elastic: complex tensors are not reduced")
    return t.to(_torch.int64).contiguous()


def _words(nbytes):
    return (nbytes + 7) // 8


def _bytes_of(tensor):
    """tensor's bytes on the host (uint8, contiguous)."""
    t = tensor.detach().to("cpu").contiguous()
    if t.dtype == _torch.bool:
        t = t.to(_torch.uint8)
    return t.reshape(-1).view(_torch.uint8).numpy()


def _set_bytes(tensor, raw):
    """tensor's elements from raw (uint8 numpy, its exact byte count)."""
    src = _torch.from_numpy(_np.array(raw, dtype=_np.uint8))
    if tensor.dtype == _torch.bool:
        val = src.view(_torch.uint8).to(_torch.bool)
    else:
        val = src.view(tensor.dtype)
    with _torch.no_grad():
        tensor.copy_(val.reshape(tensor.shape))


def all_reduce(tensor, op=_SUM, group=None, async_op=False):
    """Reduce ``tensor`` over every rank, in place (torch's signature)."""
    _whole(group, "all_reduce")
    name = _op_name(op, tensor, "all_reduce")
    j = _ddp.current()
    box = {}

    def run():
        w = _wide(tensor)
        ok = j.ctx.allreduce(w.numpy(), "sum" if name == "avg" else name)
        box["w"] = w
        return ok

    j.collective(run, "all_reduce")
    w = box["w"]
    if name == "avg":
        w = w / j.size
    with _torch.no_grad():
        tensor.copy_(w.to(tensor.dtype))
    return _done(async_op, [tensor])


def reduce(tensor, dst, op=_SUM, group=None, async_op=False):
    """Reduce ``tensor`` over every rank into rank ``dst``'s; the others'
    stay as they were."""
    _whole(group, "reduce")
    keep = tensor.detach().clone()
    all_reduce(tensor, op)
    if _ddp.current().rank != dst:
        with _torch.no_grad():
            tensor.copy_(keep)
    return _done(async_op, [tensor])


def _gather_words(mine, j):
    """Every rank's uint8 array (lengths may differ), in rank order: a list
    of numpy arrays, or None when the world failed."""
    n = j.size
    lens = _np.zeros(n, dtype=_np.int64)
    lens[j.rank] = mine.size
    if not j.ctx.allreduce(lens):
        return None
    w = int(max(_words(int(x)) for x in lens)) if n else 0
    buf = _np.zeros(n * w, dtype=_np.int64)
    flat = buf.view(_np.uint8)
    flat[j.rank * w * 8:j.rank * w * 8 + mine.size] = mine
    if not j.ctx.allreduce(buf):
        return None
    return [flat[r * w * 8:r * w * 8 + int(lens[r])].copy() for r in range(n)]


def _exchange(j, what, fn):
    """fn() (libelastic collectives: bytes, or None when the world failed)
    run by Job.collective: its result, or None in a training step that will
    be dropped (the results are not to be used)."""
    box = [None]

    def run():
        box[0] = fn()
        return box[0] is not None

    j.collective(run, what)
    return box[0]


def all_gather(tensor_list, tensor, group=None, async_op=False):
    """Every rank's ``tensor`` into ``tensor_list`` (one tensor per rank, of
    ``tensor``'s shape and dtype), in rank order, byte for byte."""
    _whole(group, "all_gather")
    j = _ddp.current()
    mine = _bytes_of(tensor)
    parts = _exchange(j, "all_gather", lambda: _gather_words(mine, j))
    if parts is None:
        return _done(async_op, [tensor_list])
    if len(tensor_list) != len(parts):
        raise ValueError("slurm_elastic: all_gather: tensor_list has %d tensors for a world "
                         "of %d ranks" % (len(tensor_list), len(parts)))
    for t, raw in zip(tensor_list, parts):
        if raw.size != tensor.numel() * tensor.element_size():
            raise ValueError("slurm_elastic: all_gather: the ranks' tensors differ in size")
        _set_bytes(t, raw)
    return _done(async_op, [tensor_list])


def all_gather_object(object_list, obj, group=None):
    """Every rank's picklable ``obj`` into ``object_list`` (world size
    long), in rank order."""
    _whole(group, "all_gather_object")
    j = _ddp.current()
    mine = _np.frombuffer(_pickle.dumps(obj), dtype=_np.uint8)
    parts = _exchange(j, "all_gather_object", lambda: _gather_words(mine, j))
    if parts is None:
        return
    if len(object_list) != len(parts):
        raise ValueError("slurm_elastic: all_gather_object: object_list has %d places for a "
                         "world of %d ranks" % (len(object_list), len(parts)))
    for i, raw in enumerate(parts):
        object_list[i] = _pickle.loads(raw.tobytes())


def _check_src(src, j, what):
    if not 0 <= src < j.size:
        raise ValueError("slurm_elastic: %s(src=%d): the world has ranks 0..%d"
                         % (what, src, j.size - 1))


def _bcast_bytes(mine, src, j, what):
    """src's uint8 array on every rank (None when the world failed)."""
    _check_src(src, j, what)  # (at each try: the world may have shrunk)
    n = _np.zeros(1, dtype=_np.int64)
    if j.rank == src:
        n[0] = mine.size
    if not j.ctx.allreduce(n):
        return None
    buf = _np.zeros(_words(int(n[0])), dtype=_np.int64)
    if j.rank == src:
        buf.view(_np.uint8)[:mine.size] = mine
    if not j.ctx.allreduce(buf):
        return None
    return buf.view(_np.uint8)[:int(n[0])].copy()


def broadcast(tensor, src, group=None, async_op=False):
    """Rank ``src``'s ``tensor`` into every rank's, byte for byte."""
    _whole(group, "broadcast")
    j = _ddp.current()
    _check_src(src, j, "broadcast")
    mine = _bytes_of(tensor)
    raw = _exchange(j, "broadcast", lambda: _bcast_bytes(mine, src, j, "broadcast"))
    if raw is None:
        return _done(async_op, [tensor])
    if raw.size != tensor.numel() * tensor.element_size():
        raise ValueError("slurm_elastic: broadcast: rank %d's tensor has another size than "
                         "this rank's" % src)
    if j.rank != src:
        _set_bytes(tensor, raw)
    return _done(async_op, [tensor])


def broadcast_object_list(object_list, src=0, group=None, device=None):
    """Rank ``src``'s picklable objects into every rank's ``object_list``
    (of the same length)."""
    _whole(group, "broadcast_object_list")
    j = _ddp.current()
    _check_src(src, j, "broadcast_object_list")
    mine = _np.frombuffer(_pickle.dumps(list(object_list)), dtype=_np.uint8)
    raw = _exchange(j, "broadcast_object_list",
                    lambda: _bcast_bytes(mine, src, j, "broadcast_object_list"))
    if raw is None:
        return
    got = _pickle.loads(raw.tobytes())
    if len(got) != len(object_list):
        raise ValueError("slurm_elastic: broadcast_object_list: rank %d sent %d objects for "
                         "%d places" % (src, len(got), len(object_list)))
    object_list[:] = got


def barrier(group=None, async_op=False, device_ids=None):
    """Wait until every rank of the world called it."""
    _whole(group, "barrier")
    j = _ddp.current()
    j.collective(lambda: j.ctx.allreduce(_np.zeros(1, dtype=_np.int64)), "barrier")
    return _done(async_op)


def new_group(ranks=None, timeout=None, backend=None, pg_options=None, **kwargs):
    """The whole world (``ranks`` None or every rank): the only group."""
    j = _ddp.current()
    if ranks is not None and sorted(int(r) for r in ranks) != list(range(j.size)):
        raise ValueError("slurm_elastic: new_group(ranks=%s): only the whole world (ranks "
                         "0..%d) is a group on the elastic world" % (list(ranks), j.size - 1))
    return group.WORLD


def get_backend(group=None):
    """The backend init_process_group was given ("gloo" by default)."""
    _whole(group, "get_backend")
    _ddp.current()
    return _ddp._backend or "gloo"
