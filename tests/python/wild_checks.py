# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/wild_checks.py: the habits of DDP scripts found in the wild, over
# slurm_elastic.torch (run by tests/python/wild.sh under mpirun --with-ft ulfm):
#   env       torchrun's variables read after the import and before init_process_group
#   unseeded  a resnet18-sized model (11 M parameters, BatchNorm) built without a seed,
#             after rank 0 alone drew random numbers (a validation split): ranks start
#             from different weights, and every rank trains rank 0's model
#   collectives       torch.distributed's collectives against torch's own over gloo (in
#             the same processes), before the first step, between steps, inside a step
#   collectives_kill  a rank lost as the others call all_reduce between steps
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


def _tiny():
    import torch
    model = dist.DistributedDataParallel(torch.nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dist.track(opt)
    return model, opt


def _train_step(model, opt, between=None):
    """One training step; between(): called inside it (after backward)."""
    import torch
    opt.zero_grad()
    model(torch.ones(3, 4)).sum().backward()
    if between:
        between()
    opt.step()


def collectives(port):
    """Each collective against torch.distributed's own over gloo, in the same
    processes: inside a training step, and between steps (a side step)."""
    import torch
    import torch.distributed as tdist
    rank, n = int(os.environ["OMPI_COMM_WORLD_RANK"]), int(os.environ["OMPI_COMM_WORLD_SIZE"])
    os.environ["USE_LIBUV"] = "0"  # (the Debian torch has no libuv)
    tdist.init_process_group("gloo", init_method="tcp://127.0.0.1:%s" % port, rank=rank,
                             world_size=n)
    dist.init_process_group("gloo")
    model, opt = _tiny()
    R = dist.ReduceOp
    bad, refused = [], set()

    def same(what, ours, theirs):
        if isinstance(ours, torch.Tensor):
            ok = ours.dtype == theirs.dtype and torch.equal(ours, theirs)
        else:
            ok = ours == theirs
        if not ok:
            bad.append("%s: %r != gloo's %r" % (what, ours, theirs))

    def every(where):
        g = torch.Generator().manual_seed(11 + rank)
        for dt in (torch.float32, torch.float64, torch.int64, torch.int32, torch.float16,
                   torch.uint8):
            base = torch.randint(0, 9, (5,), generator=g).to(dt)
            for op, name in ((R.SUM, "SUM"), (R.MAX, "MAX"), (R.MIN, "MIN")):
                a, b = base.clone(), base.clone()
                dist.all_reduce(a, op=op)
                try:
                    tdist.all_reduce(b, op=op)
                except RuntimeError:  # a dtype this torch's gloo refuses: its wide result
                    w = base.to(torch.float64 if dt.is_floating_point else torch.int64)
                    tdist.all_reduce(w, op=op)
                    b = w.to(dt)
                    refused.add(str(dt))
                same("%s all_reduce %s %s" % (where, name, dt), a, b)
        a, b = torch.arange(4, dtype=torch.float32) * (rank + 1), None
        b = a.clone()
        dist.all_reduce(a, op=R.AVG)
        tdist.all_reduce(b)  # gloo has no AVG
        same(where + " all_reduce AVG", a, b / n)
        x = torch.randn(3, 2, generator=g)
        a, b = x.clone(), x.clone()
        dist.broadcast(a, src=n - 1)
        tdist.broadcast(b, src=n - 1)
        same(where + " broadcast", a, b)
        la, lb = [torch.empty(3, 2) for _ in range(n)], [torch.empty(3, 2) for _ in range(n)]
        dist.all_gather(la, x)
        tdist.all_gather(lb, x)
        for i in range(n):
            same("%s all_gather[%d]" % (where, i), la[i], lb[i])
        obj = {"rank": rank, "loss": 0.5 * rank, "tag": "r%d" % rank * (rank + 1)}
        oa, ob = [None] * n, [None] * n
        dist.all_gather_object(oa, obj)
        tdist.all_gather_object(ob, obj)
        same(where + " all_gather_object", oa, ob)
        oa = [obj, rank] if rank == 1 else [None, None]
        ob = list(oa)
        dist.broadcast_object_list(oa, src=1)
        tdist.broadcast_object_list(ob, src=1)
        same(where + " broadcast_object_list", oa, ob)
        a, b = x.clone(), x.clone()
        dist.reduce(a, dst=n - 1, op=R.MAX)
        tdist.reduce(b, dst=n - 1, op=R.MAX)
        if rank == n - 1:
            same(where + " reduce", a, b)
        dist.barrier()
        tdist.barrier()

    dist.start_epoch()
    every("before the first step")
    _train_step(model, opt)
    every("between steps")
    _train_step(model, opt, lambda: every("inside a step"))
    same("get_backend()", dist.get_backend(), "gloo")
    same("new_group()", dist.new_group() is dist.group.WORLD, True)
    try:
        dist.new_group([0])
        bad.append("new_group([0]) was taken")
    except ValueError:
        pass
    same("step()", dist.step(), 2)
    sides = dist.current().ctx.step - dist.step()
    dist.destroy_process_group()
    tdist.destroy_process_group()
    if bad:
        raise SystemExit("rank %d: %s" % (rank, "; ".join(bad[:6])))
    print("OK collectives rank %d: equal to gloo's%s; 2 training steps, %d side steps"
          % (rank, " (%s against gloo's int64/float64 result: gloo refuses them here)"
             % ", ".join(sorted(refused)) if refused else "", sides), flush=True)


def collectives_kill():
    """A rank lost as the others call all_reduce between steps: they run it
    again on the healed world, whose sum it is."""
    import torch
    dist.init_process_group("gloo")
    model, opt = _tiny()
    dist.start_epoch()
    _train_step(model, opt)
    rank = dist.get_rank()
    if rank == 2:
        print("KILL rank 2 before all_reduce", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    t = torch.ones(3)
    dist.all_reduce(t)
    n = dist.get_world_size()
    _train_step(model, opt)
    steps = dist.step()
    dist.destroy_process_group()
    if not (t == n).all() or n != 2 or steps != 2:
        raise SystemExit("rank %d: all_reduce of ones gave %s on a world of %d; %d steps"
                         % (rank, t.tolist(), n, steps))
    print("OK collectives_kill rank %d: all_reduce %s on the healed world of %d" % (
        rank, t.tolist(), n), flush=True)


if __name__ == "__main__":
    {"env": lambda: env(), "unseeded": lambda: unseeded(sys.argv[2]),
     "collectives": lambda: collectives(sys.argv[2]),
     "collectives_kill": lambda: collectives_kill()}[sys.argv[1]]()
