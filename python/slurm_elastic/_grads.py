# SPDX-License-Identifier: GPL-2.0-or-later
# python/slurm_elastic/_grads.py: how the DDP-shaped layer reduces: torch's DDP over a
# process group of one rank, its buckets summed through libelastic (on a thread that
# overlaps backward on the CPU), and rank 0's buffers sent at each commit.
"""Gradient and buffer reduction of :class:`slurm_elastic.torch.Job`."""

import os as _os
import queue as _queue
import threading as _threading

import numpy as _np
import torch as _torch
import torch.distributed as _dist


def make_work(result):
    """A finished c10d Work holding result (for the one-rank group that
    stands in for the world in DDP's own collectives)."""
    fut = _torch.futures.Future()
    fut.set_result(result)
    return _torch._C._distributed_c10d._create_work_from_future(fut)


class SelfGroup(_dist.ProcessGroup):
    """A process group of this rank alone. DDP runs its construction-time
    checks and buffer broadcasts on it (nothing to do for one rank); the
    real reductions go through the comm hook, over libelastic's world."""

    def __init__(self):
        super().__init__(0, 1)

    def broadcast(self, tensors, opts):
        return make_work(tensors)

    def allgather(self, outputs, inputs, opts):
        for o, i in zip(outputs[0], inputs):
            o.copy_(i)
        return make_work(outputs)

    def allreduce(self, tensors, opts):
        return make_work(tensors)

    def size(self):
        return 1

    def getBackendName(self):
        return "slurm-elastic"


# ELASTIC_TORCH_OVERLAP=0: each bucket's reduction runs inside DDP's comm hook,
# on the thread of backward (for a side-by-side measure, bench/ddp_step.sh)
OVERLAP = _os.environ.get("ELASTIC_TORCH_OVERLAP", "1") != "0"


class Reducer:
    """One thread that runs the CPU reductions of DDP's buckets, in the order
    DDP hands them over (the same on every rank), while backward computes the
    next buckets' gradients: libelastic's allreduce releases the GIL. DDP
    waits for every bucket's future before backward returns, so the
    thread is idle when the step commits; after a reduction failed, the
    step's later buckets are not reduced, as on the thread of backward."""

    def __init__(self, job):
        self.job, self.q = job, _queue.Queue()
        _threading.Thread(target=self._run, name="slurm_elastic reducer", daemon=True).start()

    def submit(self, reduce, buf):
        fut = _torch.futures.Future()
        self.q.put((reduce, buf, fut))
        return fut

    def _run(self):
        while True:
            reduce, buf, fut = self.q.get()
            try:
                if not self.job._failed and not reduce():
                    self.job._failed = True
                fut.set_result(buf)
            except BaseException as e:  # to backward, which raises it
                self.job._failed = True
                fut.set_exception(e)
            finally:
                self.q.task_done()


def allreduce(ctx, buf):
    """Sum buf (a gradient bucket, CPU or CUDA) over the world; False when
    the world failed."""
    if buf.device.type == "cuda":
        return ctx.gpu_allreduce(buf.data_ptr(), buf.numel(),
                                      {_torch.float32: "float32",
                                       _torch.float64: "float64"}[buf.dtype],
                                      _torch.cuda.current_stream(buf.device).cuda_stream)
    if buf.dtype in (_torch.float32, _torch.float64):
        return ctx.allreduce(buf.numpy())
    wide = buf.to(_torch.float32)
    ok = ctx.allreduce(wide.numpy())
    buf.copy_(wide)
    return ok


def done_future(buf):
    """A finished future holding buf (what a comm hook returns)."""
    fut = _torch.futures.Future()
    fut.set_result(buf)
    return fut


def sync_buffers(ctx, rank, models, flags):
    """One collective: rank 0's buffers to every rank (the others add
    zeros), with the step's flags (how many ranks hold batches of the
    current hand-out, how many do not). Integer buffers travel as two
    float64 halves each, exact for any int64. Returns the flags summed
    over the ranks, or None when the world failed."""
    bufs = [b for m in models for b in m.module.buffers()]
    fl = [b for b in bufs if b.is_floating_point()]
    it = [b for b in bufs if not b.is_floating_point()]
    nf, ni = sum(b.numel() for b in fl), sum(b.numel() for b in it)
    vec = _torch.zeros(len(flags) + nf + 2 * ni, dtype=_torch.float64)
    vec[:len(flags)] = _torch.from_numpy(flags.astype(_np.float64))
    if rank == 0:
        off = len(flags)
        for b in fl:
            n = b.numel()
            vec[off:off + n] = b.detach().reshape(-1).cpu().to(_torch.float64)
            off += n
        if it:
            v = _torch.cat([b.detach().reshape(-1).cpu().to(_torch.int64) for b in it])
            vec[off:off + ni] = (v >> 32).to(_torch.float64)
            vec[off + ni:off + 2 * ni] = (v & 0xFFFFFFFF).to(_torch.float64)
    if not ctx.allreduce(vec.numpy()):
        return None
    with _torch.no_grad():
        off = len(flags)
        for b in fl:
            n = b.numel()
            b.copy_(vec[off:off + n].view(b.shape))
            off += n
        if it:
            v = (vec[off:off + ni].to(_torch.int64) << 32) | \
                vec[off + ni:off + 2 * ni].to(_torch.int64)
            o = 0
            for b in it:
                n = b.numel()
                b.copy_(v[o:o + n].view(b.shape))
                o += n
    return vec[:len(flags)].numpy().astype(_np.int64)
