#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/device/step_cost.py: the per-step cost of ElasticDataParallel against plain
# torch on the same device, one rank (run under mpirun -np 1): an MLP 1024 -> W -> W
# -> 10 with Adam on one batch, the same steps both ways. Plain: forward, backward,
# optimizer.step(), synchronize. Elastic: the same inside edp.steps() (gradients
# through elastic_gpu_allreduce on CUDA, the commit agreement, the optimizer step on
# the flat state, the copy into the pinned host shadows). Prints
# "COST W=... params ...: plain X ms, elastic Y ms (+Z ms) a step (medians)".
import argparse
import statistics
import time

import torch
import torch.nn.functional as F

import slurm_elastic as se
from slurm_elastic.torch import ElasticDataParallel


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--width", type=int, default=128)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--batch", type=int, default=256)
    return p.parse_args()


def setup(a, dev):
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(1024, a.width), torch.nn.ReLU(),
                                torch.nn.Linear(a.width, a.width), torch.nn.ReLU(),
                                torch.nn.Linear(a.width, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    X = torch.randn(a.batch, 1024, device=dev)
    y = torch.randint(0, 10, (a.batch,), device=dev)
    return model, opt, X, y


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def plain(a, dev):
    model, opt, X, y = setup(a, dev)
    times = []
    for i in range(a.steps + 5):
        t0 = time.perf_counter()
        opt.zero_grad(set_to_none=False)
        loss = F.cross_entropy(model(X), y)
        loss.backward()
        opt.step()
        sync(dev)
        if i >= 5:  # warm-up
            times.append(time.perf_counter() - t0)
    return statistics.median(times), sum(p.numel() for p in model.parameters())


def elastic(a, dev, ctx):
    model, opt, X, y = setup(a, dev)
    edp = ElasticDataParallel(ctx, model, opt)
    times, t = [], [0.0]

    def done(i):  # commit to commit: the whole step, begin and checks included
        sync(dev)
        now = time.perf_counter()
        if i >= 5:  # warm-up
            times.append(now - t[0])
        t[0] = now

    for step in edp.steps(total=a.steps + 5):
        loss = F.cross_entropy(model(X), y, reduction="sum")
        loss.backward()
        step.add_loss(loss)
        edp.reduce(step, divide_by=a.batch)
        step.on_commit(lambda i=step.index: done(i))
    shadow = sum(h.numel() for h in getattr(edp, "_host", [])) * 4 if dev.type == "cuda" else 0
    return statistics.median(times), shadow


def main():
    a = parse()
    dev = torch.device(a.device)
    with se.Context() as ctx:
        tp, n = plain(a, dev)
        te, shadow = elastic(a, dev, ctx)
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU"
    print("COST W=%d on %s, %.1fM params, batch %d: plain torch %.3f ms, ElasticDataParallel "
          "%.3f ms (%+.3f ms) a step (medians of %d)%s" % (
              a.width, name, n / 1e6, a.batch, tp * 1e3, te * 1e3, (te - tp) * 1e3, a.steps,
              ", %.0f MB of shadows copied to the host a step" % (shadow / 1e6)
              if shadow else ""), flush=True)


if __name__ == "__main__":
    main()
