# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/wild_checks.py: the habits of DDP scripts found in the wild, over
# slurm_elastic.torch (run by tests/python/wild.sh under mpirun --with-ft ulfm):
#   env       torchrun's variables read after the import and before init_process_group
#   unseeded  a resnet18-sized model (11 M parameters, BatchNorm) built without a seed,
#             after rank 0 alone drew random numbers (a validation split): ranks start
#             from different weights, and every rank trains rank 0's model
# Each rank prints "OK <scenario> rank R" when its checks pass; the unseeded scenario
# saves each rank's final parameters to OUT.R.pt for the shell to compare.
import os
import signal
import sys

import slurm_elastic.torch as dist  # noqa: E402  (the variables exist from here on)


def env():
    # as torchrun scripts do, before init_process_group
    seen = {k: os.environ[k] for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE")}
    dist.init_process_group("gloo")
    want = {"RANK": dist.get_rank(), "WORLD_SIZE": dist.get_world_size(),
            "LOCAL_RANK": int(os.environ["OMPI_COMM_WORLD_LOCAL_RANK"]),
            "LOCAL_WORLD_SIZE": int(os.environ["OMPI_COMM_WORLD_LOCAL_SIZE"])}
    for k, v in want.items():
        if int(seen[k]) != v:
            raise SystemExit("rank %d: %s=%s before init, %d after" % (dist.get_rank(), k,
                                                                       seen[k], v))
    for k in ("MASTER_ADDR", "MASTER_PORT"):
        if not os.environ.get(k):
            raise SystemExit("rank %d: %s is not set" % (dist.get_rank(), k))
    print("OK env rank %d: %s" % (dist.get_rank(), " ".join("%s=%s" % kv for kv in
                                                            sorted(seen.items()))), flush=True)
    dist.destroy_process_group()


def resnet18(classes=10):
    """torchvision's resnet18, layer for layer (BasicBlock x [2, 2, 2, 2])."""
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

        def forward(self, x):
            y = self.b2(self.c2(self.b1(self.c1(x)).relu()))
            return (y + (self.down(x) if self.down is not None else x)).relu()

    layers, cin = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                   nn.MaxPool2d(3, 2, 1)], 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(cin, cout, stride), Block(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes)]
    return nn.Sequential(*layers)


def unseeded(out):
    import torch
    import torch.nn.functional as F
    from torch.utils.data import DataLoader, TensorDataset

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    # the data: the same on every rank (its own generator, as a dataset on disk is)
    g = torch.Generator().manual_seed(7)
    x, y = torch.rand(60, 3, 32, 32, generator=g), torch.randint(0, 10, (60,), generator=g)
    if rank == 0:
        torch.randperm(60)[:6]  # rank 0 alone draws a validation split: the RNGs part
    net = resnet18()
    first = sum(float(p.double().sum()) for p in net.parameters())
    print("INIT rank %d %.17g" % (rank, first), flush=True)
    model = dist.DistributedDataParallel(net)
    sampler = dist.DistributedSampler(len(x), batch_size=12, shuffle=False)
    loader = DataLoader(TensorDataset(x, y), batch_sampler=sampler)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    dist.track(opt)
    kill = tuple(int(v) for v in os.environ.get("KILL", "-1,-1").split(","))
    it = 0
    for epoch in range(dist.start_epoch(), 1):
        sampler.set_epoch(epoch)
        for xb, yb in loader:
            opt.zero_grad()
            F.cross_entropy(model(xb), yb).backward()
            if (rank, it) == kill:
                print("KILL rank %d in step %d" % (rank, it), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            opt.step()
            it += 1
    rank = dist.get_rank()
    torch.save({k: v.clone() for k, v in model.module.state_dict().items()},
               "%s.%d.pt" % (out, rank))
    steps = dist.current().ctx.step
    dist.destroy_process_group()
    print("OK unseeded rank %d: %d steps committed, world %d" % (rank, steps,
                                                                 int(os.environ["WORLD_SIZE"])),
          flush=True)


if __name__ == "__main__":
    {"env": lambda: env(), "unseeded": lambda: unseeded(sys.argv[2])}[sys.argv[1]]()
