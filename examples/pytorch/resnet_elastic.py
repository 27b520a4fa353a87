#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# examples/pytorch/resnet_elastic.py: resnet_ddp.py (a plain torchrun DDP script) made
# elastic with slurm_elastic.torch: `diff resnet_ddp.py resnet_elastic.py` shows the change.
# Run it under elastic-run (sbatch --elastic-gpus) or mpirun --with-ft ulfm.
"""Train a small ResNet on sklearn's digits, elastically."""
import argparse
import os
import time

import torch
import slurm_elastic.torch as dist
import torch.nn as nn
import torch.nn.functional as F
from slurm_elastic.torch import DistributedDataParallel as DDP, DistributedSampler
from torch.utils.data import DataLoader, TensorDataset


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c)
        self.conv2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c)

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        return F.relu(x + self.bn2(self.conv2(y)))


class ResNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(1, c, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(c), nn.ReLU())
        self.layer1, self.layer2 = Block(c), Block(c)
        self.drop = nn.Dropout(0.2)
        self.fc = nn.Linear(c, 10)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(self.drop(x.mean((2, 3))))


def digits():
    from sklearn.datasets import load_digits
    d = load_digits()
    X = torch.tensor(d.data / 16.0, dtype=torch.float32).view(-1, 1, 8, 8)
    y = torch.tensor(d.target)
    return TensorDataset(X[:1500], y[:1500]), TensorDataset(X[1500:], y[1500:])


def evaluate(model, ds):
    model.eval()
    with torch.no_grad():
        X, y = ds.tensors
        acc = (model(X).argmax(1) == y).float().mean().item()
    model.train()
    return acc


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=8)
    p.add_argument("--batch", type=int, default=64, help="samples a step, all ranks")
    p.add_argument("--out", default="resnet.pt")
    a = p.parse_args()
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    train, test = digits()
    model = DDP(ResNet())
    sampler = DistributedSampler(train, batch_size=a.batch)
    loader = DataLoader(train, batch_sampler=sampler,
                        num_workers=2, persistent_workers=True)
    decay = [p for n, p in model.named_parameters() if p.dim() > 1]
    other = [p for n, p in model.named_parameters() if p.dim() <= 1]
    opt = torch.optim.SGD([{"params": decay, "weight_decay": 5e-4},
                           {"params": other, "weight_decay": 0}], lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=3, gamma=0.3)
    crit = nn.CrossEntropyLoss()
    dist.track(opt, sched)
    t0 = time.time()
    for epoch in range(dist.start_epoch(), a.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            opt.zero_grad()
            loss = crit(model(x), y)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 2.0)
            opt.step()
        sched.step()
        acc = evaluate(model, test)
        if dist.get_rank() == 0:
            print("epoch %d loss %.4f lr %.5f accuracy %.4f (%.1f s)"
                  % (epoch, loss.item(), sched.get_last_lr()[0], acc, time.time() - t0),
                  flush=True)
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), a.out)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
