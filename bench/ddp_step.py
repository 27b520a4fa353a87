# SPDX-License-Identifier: GPL-2.0-or-later
# bench/ddp_step.py: a training step of torch's own DDP (gloo) against the same step through
# slurm_elastic.torch, same model, global batch and world size; run by bench/ddp_step.sh,
# one mode per launch (argv[1]: gloo, nccl, elastic, or elastic-sync:
# without the overlap of the reduction with backward); tests/device/check.sh runs it on a GPU.
"""Per-step cost of slurm_elastic.torch against torch DDP (gloo on the CPU,
nccl on a GPU).

The model is examples/pytorch/resnet_ddp.py's ResNet (width argv[3]) on
random images of argv[6] x argv[6] pixels (default 8), on device argv[5]
(default cpu), SGD with momentum, a global batch of argv[4] split over
the ranks, argv[2] timed steps after 5 warm-up steps. Rank 0 prints
``MODE step_ms MEDIAN`` and, for elastic, ``elastic keep_ms MEDIAN`` (the
serialization of the training state that each step begins with) and
``elastic layout_ms MEDIAN`` (the check of the parameters' dtypes and
devices, at each step's begin too).
"""
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                                "examples", "pytorch"))
from resnet_ddp import ResNet  # noqa: E402

mode, steps, width, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
device = torch.device(sys.argv[5] if len(sys.argv) > 5 else "cpu")
pixels = int(sys.argv[6]) if len(sys.argv) > 6 else 8
torch.set_num_threads(1)
torch.manual_seed(1)
if device.type == "cuda":
    if device.index is None:  # "cuda": the rank's GPU, as torchrun's LOCAL_RANK says
        device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    torch.cuda.set_device(device)
if mode == "elastic-sync":  # each bucket reduced on the thread of backward, no overlap
    os.environ["ELASTIC_TORCH_OVERLAP"] = "0"
if mode in ("gloo", "nccl"):
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    dist.init_process_group(mode)
else:
    import slurm_elastic.torch as dist
    from slurm_elastic.torch import DistributedDataParallel as DDP
    dist.init_process_group()
rank, size = dist.get_rank(), dist.get_world_size()
model = DDP(ResNet(width).to(device))
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
if mode.startswith("elastic"):
    dist.track(opt)
    dist.start_epoch()
    job = dist.current()
local = batch // size + (1 if rank < batch % size else 0)
x = torch.randn(local, 1, pixels, pixels, device=device)
y = torch.randint(0, 10, (local,), device=device)
sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
times, keep, layout = [], [], []
for i in range(steps + 5):
    t0 = time.perf_counter()
    opt.zero_grad()
    F.cross_entropy(model(x), y).backward()
    opt.step()
    sync()  # the GPU's work of the step is done
    t1 = time.perf_counter()
    if i >= 5:
        times.append(t1 - t0)
        if mode.startswith("elastic"):
            k0 = time.perf_counter()
            job.kept.save(job.size)
            keep.append(time.perf_counter() - k0)
            k0 = time.perf_counter()
            job._check_layout()  # the dtype/device check each step begins with
            layout.append(time.perf_counter() - k0)
if rank == 0:
    params = sum(p.numel() for p in model.parameters())
    print("%s step_ms %.3f (%d ranks, %d params, global batch %d, %s)"
          % (mode, 1e3 * statistics.median(times), size, params, batch, device), flush=True)
    if keep:
        print("%s keep_ms %.3f (%.1f MiB of state a step)"
              % (mode, 1e3 * statistics.median(keep), job.kept.arena.used / 2**20), flush=True)
        print("%s layout_ms %.4f (%d parameters checked)"
              % (mode, 1e3 * statistics.median(layout), len(list(model.parameters()))),
              flush=True)
dist.destroy_process_group()
