# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/ddp_checks.py: user-style DDP scripts over slurm_elastic.torch, run under
# mpirun by tests/python/ddp.sh: one scenario per invocation (argv[1], output dir argv[2]).
# Every rank prints "OK <scenario> rank R" when its checks passed, and the lines the shell
# side adds up across ranks and runs: USED (the samples of a committed step), LR (the
# learning rate a committed step used, also in <scenario>.rec), and a file of its final
# model and buffers.
import datetime
import os
import signal
import sys
import time
import zlib

# torchrun's variables as the script found them, before any import of ours: under
# elastic-run the rank wrapper sets them (checked in train())
TORCHRUN_ENV = {k: os.environ.get(k) for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE",
                                               "LOCAL_WORLD_SIZE")}

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import slurm_elastic.torch as dist
from slurm_elastic.torch import DistributedDataParallel as DDP, DistributedSampler


def _checked(body):
    """A USED or STEP line with its check: the ranks' output reaches the job's
    through several forwarders (mpirun, srun) that may splice one line with
    pieces of another; the verifier keeps only lines whose CRC holds."""
    body = " ".join(body.split())
    return "%s ck %08x END" % (body, zlib.crc32(body.encode()))

torch.set_num_threads(1)
scenario, out = (sys.argv[1], sys.argv[2]) if len(sys.argv) > 2 else ("", "")
failed = []
CUDA = os.environ.get("DEVICE", "cpu") == "cuda"  # the GPU check (tests/device) sets it


def record(line):
    """Print line, and append it whole to <out>/<scenario>.rec, which the
    verifier reads for LR and RESUMED lines. The job's output passes through
    forwarders that may cut a line; under load every rank's copy of one LR
    line was cut. One O_APPEND write of a line keeps it whole, in the order
    the ranks wrote (a relaunch's RESUMED after the earlier launch's lines)."""
    print(line, flush=True)
    fd = os.open(os.path.join(out, scenario + ".rec"), os.O_WRONLY | os.O_APPEND | os.O_CREAT,
                 0o666)
    try:
        os.write(fd, (line + "\n").encode())
    finally:
        os.close(fd)


def check(cond, what):
    if not cond:
        failed.append(what)
        print("CHECK FAILED rank %d: %s" % (dist.get_rank(), what), flush=True)


class Points(Dataset):
    """512 points in 10 dimensions, 3 classes; items carry their index so
    that the test can count what was trained."""

    def __init__(self, n=512):
        g = torch.Generator().manual_seed(7)
        self.X = torch.randn(n, 10, generator=g)
        self.y = (self.X[:, :3].sum(1) > 0).long() + (self.X[:, 3] > 1).long()

    def __len__(self):
        return len(self.X)

    def __getitem__(self, i):
        return self.X[i], self.y[i], i


class BNNet(nn.Module):
    """An MLP with BatchNorm and Dropout: buffers, and RNG in the forward."""

    def __init__(self):
        super().__init__()
        self.fc1, self.bn = nn.Linear(10, 32), nn.BatchNorm1d(32)
        self.drop, self.fc2 = nn.Dropout(0.1), nn.Linear(32, 3)

    def forward(self, x):
        return self.fc2(self.drop(F.relu(self.bn(self.fc1(x)))))


class Tokens(Dataset):
    """512 sequences of 13 tokens that follow a rule from a random start: a
    next-token task a tiny transformer learns in a few epochs."""

    def __init__(self, n=512, length=13, vocab=16):
        g = torch.Generator().manual_seed(11)
        seq = torch.zeros(n, length, dtype=torch.long)
        seq[:, 0] = torch.randint(0, vocab, (n,), generator=g)
        for t in range(1, length):
            seq[:, t] = (3 * seq[:, t - 1] + 1 + t % 2) % vocab
        self.seq = seq

    def __len__(self):
        return len(self.seq)

    def __getitem__(self, i):
        return self.seq[i, :-1], self.seq[i, 1:], i


class TinyLM(nn.Module):
    """A one-layer pre-norm transformer language model (LayerNorm, causal
    mask as a buffer, dropout 0.1 as torch's default)."""

    def __init__(self, vocab=16, d=32, length=12):
        super().__init__()
        self.emb, self.pos = nn.Embedding(vocab, d), nn.Parameter(torch.zeros(length, d))
        layer = nn.TransformerEncoderLayer(d, 2, 64, batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)
        self.register_buffer("mask", nn.Transformer.generate_square_subsequent_mask(length))

    def forward(self, x):
        h = self.emb(x) + self.pos[:x.shape[1]]
        return self.head(self.norm(self.enc(h, mask=self.mask, is_causal=True)))


class Images(Points):
    """The same points as 8x8 one-channel images (the 10 values tiled), for
    examples/pytorch's ResNet."""

    def __getitem__(self, i):
        img = self.X[i].repeat(7)[:64].view(1, 8, 8)
        return img, self.y[i], i


def resnet():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                    "examples", "pytorch"))
    from resnet_ddp import ResNet
    return ResNet(8)


def perm(epoch, n=512, seed=3):
    """The order of an epoch's samples: torch.randperm from seed + epoch, as
    DistributedSampler documents it."""
    return torch.randperm(n, generator=torch.Generator().manual_seed(seed + epoch)).tolist()


def final_state(model, path):
    sd = model.module.state_dict()
    flat = np.concatenate([t.detach().double().reshape(-1).cpu().numpy() for t in sd.values()])
    np.save(path, flat)


def train(kind, epochs=3, kill=None, workers=2, untracked=False):
    """The loop as a DDP script writes it. kind "exact": an MLP without
    randomness in its forward (runs at any world size must agree); "bn":
    BatchNorm and Dropout; "cnn": examples/pytorch's ResNet (BatchNorm2d,
    Dropout); "lm": a transformer. Only rank 0 seeds: the others' initial weights
    differ until rank 0's reach them. kill=(rank, step): that rank SIGKILLs
    itself in the middle of that step (after backward)."""
    # HANG_TIMEOUT: the step time limit, as torch's collective timeout is given
    hang_timeout = os.environ.get("HANG_TIMEOUT")
    # SHRINK_STEP (with ELASTIC_RUN_LEAVE, as elastic-run writes it): a planned shrink in
    # place at that step, asked for by every rank's own SIGUSR1; a rank's GPU is its number
    shrink = int(os.environ.get("SHRINK_STEP", "-1"))
    if shrink >= 0:
        os.environ["ELASTIC_GPU"] = os.environ["OMPI_COMM_WORLD_RANK"]
    dist.init_process_group("nccl" if CUDA else "gloo", **(
        {"timeout": datetime.timedelta(seconds=float(hang_timeout))} if hang_timeout else {}))
    if os.environ.get("ELASTIC_RUN_GEN") is not None:
        check(TORCHRUN_ENV["RANK"] == str(dist.get_rank()) and
              TORCHRUN_ENV["WORLD_SIZE"] == str(dist.get_world_size()) and
              TORCHRUN_ENV["LOCAL_RANK"] is not None and
              TORCHRUN_ENV["LOCAL_WORLD_SIZE"] is not None,
              "torchrun's variables at the script's start under elastic-run: %s (rank %d of %d)"
              % (TORCHRUN_ENV, dist.get_rank(), dist.get_world_size()))
    # as DDP scripts do: the device from LOCAL_RANK, which the job exports
    dev = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if CUDA else torch.device("cpu")
    if CUDA:
        torch.cuda.set_device(dev)
    if dist.get_rank() == 0:
        torch.manual_seed(5)
    if kind == "exact":
        net = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 3))
    elif kind == "lm":
        net = TinyLM()
    elif kind == "cnn":
        net = resnet()
    else:
        net = BNNet()
    model = DDP(net.to(dev))
    ds = Tokens() if kind == "lm" else Images() if kind == "cnn" else Points()
    sampler = DistributedSampler(ds, batch_size=40, seed=3)
    # LOADER_START: the workers' start method (fork, forkserver, spawn); unset or
    # empty: Python's default (forkserver from 3.14 on: each worker imports torch)
    start = os.environ.get("LOADER_START") or None
    loader = DataLoader(ds, batch_sampler=sampler, num_workers=workers,
                        persistent_workers=workers > 0,
                        multiprocessing_context=start if workers > 0 else None)
    decay = [p for p in model.parameters() if p.dim() > 1]
    other = [p for p in model.parameters() if p.dim() <= 1]
    if kind == "lm":  # AdamW, linear warmup then cosine, per step
        opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
        sched = torch.optim.lr_scheduler.SequentialLR(opt, [
            torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.1, total_iters=5),
            torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=13 * epochs)], milestones=[5])
    else:
        opt = torch.optim.SGD([{"params": decay, "weight_decay": 1e-3},
                               {"params": other, "weight_decay": 0}], lr=0.2, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.8)  # per step
    counters = {"iterations": 0}
    if not untracked:
        dist.track(opt, sched, counters=counters)
    # a rank that leaves in a planned shrink in place (exit 76) does so inside the
    # commit of its last step: it reports that step's samples on its way out
    pending = []
    dist.current().ctx.on_exit(lambda status, why: status == 76 and pending and
                               print(pending[0], flush=True))
    stop = int(os.environ.get("STOP_STEP", "-1"))
    fault = int(os.environ.get("RAISE_STEP", "-1"))
    hang = (int(os.environ.get("HANG_RANK", "-1")), int(os.environ.get("HANG_STEP", "-1")))
    # KILL_FROM=1: the victim dies at its first step from KILL_STEP on (a rank
    # that exists only after a growth), once: not again after a relaunch
    kill_from = os.environ.get("KILL_FROM") == "1"
    killed_mark = os.path.join(out, "killed." + scenario)
    step_sleep = float(os.environ.get("STEP_SLEEP", "0"))
    # SLEEP_FILE: the pause after each step is read from that file while it
    # exists (the test slows the job down while it stages its events)
    sleep_file = os.environ.get("SLEEP_FILE")
    start = dist.start_epoch()
    # what the loop sees: its bodies, and those after which the step was dropped
    bodies, dropped, first = 0, 0, dist.step()
    if dist.current().resumed and dist.get_rank() == 0:
        record("RESUMED at step %d epoch %d size %d" % (dist.current().ctx.step, start,
                                                        dist.get_world_size()))
    for epoch in range(start, epochs):
        sampler.set_epoch(epoch)
        for x, y, idx in loader:
            x, y = x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)
            opt.zero_grad()
            if kind == "lm":  # bf16 autocast
                with torch.autocast(dev.type, dtype=torch.bfloat16):
                    logits = model(x)
                loss = F.cross_entropy(logits.float().reshape(-1, 16), y.reshape(-1))
            else:
                loss = F.cross_entropy(model(x), y)  # reduction="mean", PyTorch's default
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            with torch.no_grad():  # an edit of the weights inside the step
                model.module.state_dict()[next(iter(model.module.state_dict()))].mul_(0.999)
            committed = dist.current().ctx.step
            lr = opt.param_groups[0]["lr"]
            if kill and int(os.environ.get("OMPI_COMM_WORLD_RANK", -1)) == kill[0] \
                    and (committed == kill[1] or (kill_from and committed >= kill[1] and
                                                  not os.path.exists(killed_mark))):
                open(killed_mark, "w").close()
                print("KILL rank %d at step %d" % (kill[0], committed), flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
            if shrink == committed:
                os.kill(os.getpid(), signal.SIGUSR1)
            if hang == (dist.get_rank(), committed):
                print("HANG rank %d at step %d" % (dist.get_rank(), committed), flush=True)
                time.sleep(3600)  # stuck inside the step (a deadlock, a dead file system)
            if stop == committed:  # the whole launch ends, as when a job is requeued
                print("TERM rank %d at step %d" % (dist.get_rank(), committed), flush=True)
                os.kill(os.getpid(), signal.SIGTERM)
            # USED and STEP lines end with their CRC (_checked): a line cut or spliced
            # by the forwarders is left out
            used = _checked("USED epoch %d step %d rank %d %s" % (
                epoch, committed, dist.get_rank(), " ".join(map(str, idx.tolist()))))
            pending[:] = [used]
            at = sampler.pos  # the step's global batch starts there (the sampler's state)
            opt.step()
            pending.clear()
            bodies += 1
            dropped += not dist.committed()
            check(dist.committed() == (dist.step() > committed),
                  "dist.committed() %s after step %d (now %d)" % (dist.committed(), committed,
                                                                  dist.step()))
            if dist.current().ctx.step > committed:  # the step was committed
                print(used, flush=True)
                # the whole global batch, as the sampler's documented shuffle gives it:
                # a rank killed right after a commit cannot report its own share
                print(_checked("STEP epoch %d step %d %s" % (epoch, committed, " ".join(
                    map(str, perm(sampler.epoch)[at:at + 40])))), flush=True)
                # every rank: a line cut by another rank's is still read from the others
                record("LR step %d %.10g size %d" % (committed, lr, dist.get_world_size()))
            sched.step()
            counters["iterations"] += 1
            if fault == committed:  # between two steps, as when a DataLoader worker dies
                raise RuntimeError("RAISED after step %d" % committed)
            if sleep_file:
                try:
                    with open(sleep_file) as f:
                        step_sleep = float(f.read())
                except (OSError, ValueError):
                    step_sleep = 0
            if step_sleep:
                time.sleep(step_sleep)
    steps = dist.current().ctx.step
    print("LOOP rank %d: %d bodies, %d committed, %d dropped" % (
        dist.get_rank(), bodies, steps - first, dropped), flush=True)
    check(bodies == steps - first + dropped, "the loop's bodies %d: %d committed + %d dropped"
          % (bodies, steps - first, dropped))
    check(os.environ.get("RANK") == str(dist.get_rank()) and
          os.environ.get("WORLD_SIZE") == str(dist.get_world_size()),
          "RANK/WORLD_SIZE %s/%s follow the world (%d/%d)" % (
              os.environ.get("RANK"), os.environ.get("WORLD_SIZE"), dist.get_rank(),
              dist.get_world_size()))
    if kind in ("lm", "cnn") and dist.get_rank() == 0:
        model.eval()  # BatchNorm from its running statistics
        with torch.no_grad():
            if kind == "lm":
                x, y = ds.seq[:64, :-1].to(dev), ds.seq[:64, 1:].to(dev)
                ev = F.cross_entropy(model(x).reshape(-1, 16), y.reshape(-1)).item()
            else:
                x = torch.stack([ds[i][0] for i in range(64)]).to(dev)
                ev = F.cross_entropy(model(x), ds.y[:64].to(dev)).item()
        print("EVAL loss %.4f" % ev, flush=True)
    dist.destroy_process_group()
    # code after the training runs: the model is saved and reloads
    final_state(model, os.path.join(out, "%s.%d.npy" % (scenario, dist.get_rank())))
    if dist.get_rank() == 0:
        torch.save(model.module.state_dict(), os.path.join(out, scenario + ".pt"))
        back = resnet() if kind == "cnn" else type(net)() if kind != "exact" else nn.Sequential(
            nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 3))
        back.load_state_dict(torch.load(os.path.join(out, scenario + ".pt")))
    check(counters["iterations"] == steps,
          "the tracked counter %d counts each committed training step once (%d)"
          % (counters["iterations"], steps))
    if kind in ("bn", "cnn"):
        bn = model.module.bn if kind == "bn" else model.module.layer1.bn1
        nbt = bn.num_batches_tracked.item()
        check(nbt == steps, "BatchNorm's num_batches_tracked %d == committed training "
                                "steps %d" % (nbt, steps))
    print("STEPS %d size %d" % (steps, dist.get_world_size()), flush=True)
    print("OK %s rank %d" % (scenario, dist.get_rank()) if not failed else
          "FAILED %s: %s" % (scenario, "; ".join(failed)), flush=True)


def own_data():
    """Without the elastic sampler: each rank brings its own batch (10 and 30
    samples); the reduced gradient of a mean loss is the mean over all 40,
    as one process would compute it (DDP's plain average would weigh the
    10 samples three times as much)."""
    dist.init_process_group()
    torch.manual_seed(1)
    net = nn.Linear(10, 3)
    ref = nn.Linear(10, 3)
    ref.load_state_dict(net.state_dict())
    model = DDP(net)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    dist.track(opt)
    X, y = Points().X[:40], Points().y[:40]
    mine = slice(0, 10) if dist.get_rank() == 0 else slice(10, 40)
    F.cross_entropy(model(X[mine]), y[mine]).backward()
    F.cross_entropy(ref(X), y).backward()
    err = max(float((p.grad - q.grad).abs().max()) for p, q in zip(net.parameters(),
                                                                   ref.parameters()))
    check(err < 1e-6, "the gradient of uneven batches is the mean over all samples "
                      "(max difference %.3g)" % err)
    opt.step()
    dist.destroy_process_group()
    print("OK %s rank %d" % (scenario, dist.get_rank()) if not failed else
          "FAILED %s: %s" % (scenario, "; ".join(failed)), flush=True)


def scaler():
    """torch.amp.GradScaler: an overflow in step 5 makes scaler.step() skip
    optimizer.step(); the step ends at the next forward, committed without
    an update, on every rank alike; the scaler's state is kept."""
    dist.init_process_group()
    if dist.get_rank() == 0:
        torch.manual_seed(2)
    model = DDP(nn.Linear(10, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sc = torch.amp.GradScaler("cpu", init_scale=1024.0)
    dist.track(opt, sc)
    X, y = Points().X, Points().y
    start = dist.start_epoch()
    del start
    stepped = 0
    for i in range(12):
        before = [p.detach().clone() for p in model.parameters()]
        loss = F.cross_entropy(model(X[i * 8:(i + 1) * 8]), y[i * 8:(i + 1) * 8])
        if i == 5:
            loss = loss * float("inf")
        sc.scale(loss).backward()
        sc.step(opt)
        sc.update()
        opt.zero_grad()
        moved = any(not torch.equal(a, p) for a, p in zip(before, model.parameters()))
        stepped += moved
        check(moved == (i != 5), "step %d %s the model" % (i, "moved" if moved else "kept"))
    check(sc.get_scale() == 512.0, "the scale halved once (%s)" % sc.get_scale())
    dist.destroy_process_group()
    final_state(model, os.path.join(out, "scaler.%d.npy" % dist.get_rank()))
    print("OK %s rank %d" % (scenario, dist.get_rank()) if not failed else
          "FAILED %s: %s" % (scenario, "; ".join(failed)), flush=True)


def refusal(what):
    """A habit that would lose state or train wrong is refused on every rank,
    with a message naming it."""
    dist.init_process_group()
    model = DDP(nn.Linear(4, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, 3)
    try:
        if what == "untracked":
            dist.track(opt)  # the scheduler is forgotten
            model(torch.randn(3, 4)).sum().backward()
        elif what == "untracked_scaler":
            scaler = torch.amp.GradScaler("cpu")  # noqa: F841 (kept alive, not tracked)
            dist.track(opt, sched)
            model(torch.randn(3, 4)).sum().backward()
        elif what == "step_outside":
            dist.track(opt, sched)
            dist.start_epoch()
            model(torch.randn(3, 4)).sum().backward()
            opt.step()
            opt.step()  # a second step without forward/backward
        elif what == "late_track":
            dist.track(opt, sched)
            model(torch.randn(3, 4)).sum().backward()
            opt.step()
            dist.track(counters={})
        elif what == "dtype":
            dist.track(opt, sched)
            model(torch.randn(3, 4)).sum().backward()
            opt.step()
            model.to(torch.float64)  # after wrapping: torch's DDP trains on, ranks apart
            model(torch.randn(3, 4, dtype=torch.float64)).sum().backward()
    except RuntimeError as e:
        print("REFUSED rank %d: %s" % (dist.get_rank(), e), flush=True)
        os._exit(0)
    print("NOT REFUSED rank %d" % dist.get_rank(), flush=True)
    os._exit(1)


def main():
    if scenario.startswith("refuse_"):
        refusal(scenario[len("refuse_"):])
    elif scenario == "own_data":
        own_data()
    elif scenario == "scaler":
        scaler()
    else:
        kind = next((k for k in ("bn", "lm", "cnn") if scenario.startswith(k)), "exact")
        kill = None
        if "kill" in scenario or os.environ.get("KILL_FROM") == "1":
            kill = (int(os.environ.get("KILL_RANK", "2")), int(os.environ.get("KILL_STEP", "20")))
        train(kind, epochs=int(os.environ.get("EPOCHS", "3")), kill=kill,
              workers=int(os.environ.get("WORKERS", "2")))


# the DataLoader's workers may start by forkserver or spawn (Python >= 3.14's
# default) and import this file again
if __name__ == "__main__":
    main()
