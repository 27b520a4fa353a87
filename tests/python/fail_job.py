#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/fail_job.py: a DDP script ported with slurm_elastic.torch, written as
# torchrun scripts are (a mean loss per epoch, torch.save by rank 0 after the loop,
# destroy_process_group last), that fails on the user's own error:
#   save  - rank 0's torch.save raises OSError (a bad path) after the last epoch;
#   bug   - rank 1 raises ValueError at the first step of epoch 1, at every launch.
# Usage: fail_job.py save|bug DIR
import os
import sys

import torch
import slurm_elastic.torch as dist
import torch.nn as nn
from slurm_elastic.torch import DistributedDataParallel as DDP, DistributedSampler
from torch.utils.data import DataLoader, TensorDataset

how, out = sys.argv[1], sys.argv[2]
EPOCHS = 3
torch.manual_seed(0)
torch.set_num_threads(1)
dist.init_process_group("gloo")
ds = TensorDataset(torch.randn(256, 8), torch.randint(0, 2, (256,)))
model = DDP(nn.Linear(8, 2))
sampler = DistributedSampler(ds, batch_size=32)
loader = DataLoader(ds, batch_sampler=sampler)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
crit = nn.CrossEntropyLoss()
dist.track(opt)
rank = dist.get_rank()
print("launch: rank %d of %d, from epoch %d" % (rank, dist.get_world_size(), dist.start_epoch()),
      flush=True)
for epoch in range(dist.start_epoch(), EPOCHS):
    sampler.set_epoch(epoch)
    total, n = 0.0, 0
    for i, (x, y) in enumerate(loader):
        if how == "bug" and rank == 1 and epoch == 1 and i == 0:
            raise ValueError("a bug in the user's step (epoch 1)")
        opt.zero_grad()
        loss = crit(model(x), y)
        loss.backward()
        opt.step()
        total, n = total + loss.item(), n + 1
    if rank == 0:
        print("epoch %d mean loss %.4f" % (epoch, total / n), flush=True)
if rank == 0:
    torch.save(model.module.state_dict(), os.path.join(out, "no-such-dir", "model.pt"))
dist.destroy_process_group()
