#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# examples/pytorch/train_digits.py: an elastic PyTorch trainer: an MLP on scikit-learn's
# bundled handwritten digits (no download), data-parallel over the job's ranks with
# slurm_elastic.torch; survives a killed rank (healed in place) and a re-form (resumes
# from the last committed step). Run it under elastic-run (train.sbatch) or mpirun
# --with-ft ulfm; the lines marked "# elastic" are what differs from plain PyTorch.
"""Train an MLP on sklearn's digits, elastically.

Rank 0 prints one line per committed step (``step N epoch E size S loss L``),
the test accuracy at the end of each epoch, and at the end a check that every
committed step was applied exactly once and every sample used once per epoch.
"""
import time

_marks = [("script", time.time())]  # --timings: where a (re)launch spends its time

import argparse  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

_marks.append(("import torch", time.time()))
import slurm_elastic as se  # noqa: E402  # elastic
from slurm_elastic.torch import ElasticDataParallel  # noqa: E402  # elastic

_marks.append(("import slurm_elastic", time.time()))


def _process_start():
    """When the kernel started this process (exec of python3)."""
    with open("/proc/self/stat") as f:
        start_ticks = int(f.read().rsplit(")", 1)[1].split()[19])
    with open("/proc/uptime") as f:
        up = float(f.read().split()[0])
    return time.time() - up + start_ticks / os.sysconf("SC_CLK_TCK")


def load_digits():
    """sklearn's digits (X 1797x64 in 0..16, y), cached as .npz in TMPDIR:
    a relaunch reads 120 kB instead of importing sklearn (0.4-0.7 s)."""
    cache = os.path.join(os.environ.get("TMPDIR", "/tmp"), "digits-%d.npz" % os.getuid())
    try:
        with np.load(cache) as f:
            return f["X"], f["y"]
    except (OSError, KeyError, ValueError):
        pass
    from sklearn.datasets import load_digits as sk_load
    d = sk_load()
    tmp = "%s.%d" % (cache, os.getpid())
    try:
        with open(tmp, "wb") as f:
            np.savez(f, X=d.data, y=d.target)
        os.replace(tmp, cache)
    except OSError:
        pass
    return d.data, d.target


def _launch_timings(t_proc):
    """elastic-run's part of a (re)launch, from the times it exports (wall
    clock): the previous mpirun's end, this launch, the rank wrapper's start."""
    env = os.environ
    pts = [("previous mpirun ended", env.get("ELASTIC_RUN_T_END")),
           ("mpirun started", env.get("ELASTIC_RUN_T_LAUNCH")),
           ("rank wrapper started", env.get("ELASTIC_RUN_T_RANK"))]
    pts = [(n, float(t)) for n, t in pts if t]
    if not pts:
        return [], None
    pts.append(("process started (%s)" % ("forked by the warm zygote"
                                           if env.get("ELASTIC_WARM_FORKED") else "exec"),
                t_proc))
    return ["%s -> %s %.3f s" % (a[0], b[0], b[1] - a[1]) for a, b in zip(pts, pts[1:])], pts[0]


SPREAD_FACTOR = 10


def compare(params, path, spread_path=None):
    """Print how far the final parameters are from a static run's. Equal up
    to float32 summation order: the gradient sum of a global batch is added
    up in another order when the world size differs (rtol 1e-3, atol 1e-4,
    as tests/python/common.sh). Over thousands of Adam steps that rounding
    grows past any fixed tolerance; spread_path, a static run of the same
    training on another number of ranks, measures it: a model within
    SPREAD_FACTOR times the two static runs' largest difference matches too.
    A wrong restored state is far outside either: Adam's moments lost once
    move the largest parameter by 0.77 (40 epochs) to 2.3 (200 epochs),
    where static runs on 2 and 3 ranks differ by 1.2e-5 and 0.0018."""
    ref = np.load(path)
    same = ref.shape == params.shape
    ok = same and bool(np.allclose(params, ref, rtol=1e-3, atol=1e-4))
    dw, where, spread = (0.0 if same else float("inf")), "", ""
    if same and ref.size:
        # where the largest difference is, and the whole vector's relative
        # distance: what tells float drift from a lost or repeated step
        d = params - ref
        i = int(np.abs(d).argmax())
        dw = float(abs(d.flat[i]))
        rel = float(np.linalg.norm(d) / max(np.linalg.norm(ref), 1e-30))
        where = ", at parameter %d (reference %.3g); |dw|/|w| = %.3g over all %d" % (
            i, float(ref.flat[i]), rel, d.size)
    if same and spread_path:
        other = np.load(spread_path)
        if other.shape != ref.shape:
            sys.exit("--compare-spread %s: %s parameters, the reference %s"
                     % (spread_path, other.shape, ref.shape))
        s = float(np.abs(other - ref).max()) if ref.size else 0.0
        ok = ok or dw <= SPREAD_FACTOR * s
        spread = "; static runs on other rank counts differ by %.3g (up to %d times that " \
                 "matches)" % (s, SPREAD_FACTOR)
    print("model %s reference: max |dw| = %.3g (rtol 1e-3, atol 1e-4: float32 summation "
          "order differs between world sizes%s)%s" % ("matches" if ok else "DIFFERS from", dw,
                                                      spread, where), flush=True)


def parse():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--global-batch", type=int, default=128,
                   help="samples a step, whatever the number of ranks")
    p.add_argument("--max-micro", type=int, default=32, help="most samples a rank runs at once")
    p.add_argument("--lr", type=float, default=0.01)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--step-sleep", type=float, default=0.0,
                   help="seconds of simulated extra compute a step (tests)")
    p.add_argument("--sample-sleep", type=float, default=0.0,
                   help="seconds of simulated GPU work per sample a rank processes (the demo: "
                   "steps get faster with more ranks, as on GPUs)")
    p.add_argument("--device", default="cpu",
                   help="cpu, or cuda: the model on the rank's GPU (gradients summed with NCCL)")
    p.add_argument("--accuracy", action="store_true",
                   help="rank 0 adds the test accuracy to every step line")
    p.add_argument("--compare", metavar="REF.npy",
                   help="at the end, compare the parameters with a static run's (--out)")
    p.add_argument("--compare-spread", metavar="REF2.npy",
                   help="a static run on another number of ranks: how far float32 rounding "
                   "alone takes a long run from REF.npy (with --compare)")
    p.add_argument("--out", help="write the final parameters here (.npy)")
    p.add_argument("--steps", type=int, metavar="N",
                   help="stop once N steps are committed (a resumed run counts the steps "
                   "before it), or at the end of --epochs if that comes first")
    p.add_argument("--quiet", action="store_true", help="print only epoch lines")
    p.add_argument("--timings", action="store_true",
                   help="rank 0 prints where this launch spent its time up to its first commit")
    a = p.parse_args()
    # refused before training, on every rank, rather than after it on rank 0
    if a.compare_spread and not a.compare:
        p.error("--compare-spread needs --compare")
    for opt, path in (("--compare", a.compare), ("--compare-spread", a.compare_spread)):
        if path and not os.path.isfile(path):
            p.error("%s %s: no such file (a static run's --out)" % (opt, path))
    return a


def main():
    a = parse()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    data, target = load_digits()
    X = torch.tensor(data / 16.0, dtype=torch.float32)
    y = torch.tensor(target, dtype=torch.int64)
    perm = np.random.RandomState(0).permutation(len(X))
    train, test = perm[:1500], perm[1500:]
    dev = torch.device(a.device)
    Xtr, ytr, Xte, yte = X[train].to(dev), y[train].to(dev), X[test].to(dev), y[test].to(dev)
    _marks.append(("load data", time.time()))

    torch.manual_seed(a.seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(),
                                torch.nn.Linear(128, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=a.lr)
    _marks.append(("model + optimizer", time.time()))

    with se.Context() as ctx:  # elastic
        _marks.append(("MPI init + elastic_init", time.time()))
        edp = ElasticDataParallel(ctx, model, opt, nsamples=len(Xtr),  # elastic
                                  global_batch=a.global_batch, max_micro=a.max_micro,
                                  seed=a.seed)
        _marks.append(("wrap (optimizer state made)", time.time()))
        # bookkeeping for the checks (registered: it rolls back and resumes too)
        steps_per_epoch = -(-len(Xtr) // a.global_batch)
        applied = np.zeros(a.epochs * steps_per_epoch, dtype=np.int32)
        uses = np.zeros(len(Xtr), dtype=np.int32)
        ctx.register("applied", applied)
        ctx.register("uses", uses)
        bad_epochs = []
        say = print if ctx.rank == 0 else (lambda *x, **k: None)
        first = [True]
        if ctx.rank == 0:
            say("train_digits: %d ranks, %d training samples, global batch %d"
                % (ctx.size, len(Xtr), a.global_batch), flush=True)

        def account(step, gathered):
            index, epoch = step.index, step.epoch
            applied[index] += 1
            uses[gathered] += 1
            ctx.updated()  # elastic: the step's state is final: on the node before it is reported
            changed = step.redo or (first[0] and ctx.resumed)
            if first[0] and a.timings and ctx.rank == 0:
                _marks.append(("first step committed", time.time()))
                t0 = _process_start()
                launch, t_first = _launch_timings(t0)
                parts = ["process start -> %s %.3f s" % (_marks[0][0], _marks[0][1] - t0)]
                parts += ["%s %.3f s" % (m[0], m[1] - p[1]) for p, m in zip(_marks, _marks[1:])]
                since = ("; since the %s at %.6f: %.3f s" % (t_first[0], t_first[1],
                                                              _marks[-1][1] - t_first[1])
                         if t_first else "")
                print("timings (%s, step %d, %s): %s; total %.3f s%s" % (
                    "resumed" if ctx.resumed else "fresh", index,
                    "warm" if os.environ.get("ELASTIC_WARM_FORKED") else "cold",
                    ", ".join(launch + parts), _marks[-1][1] - t0, since), flush=True)
            first[0] = False
            if ctx.rank == 0 and changed and not step.redo:  # first commit after a resume
                print("resumed at committed step %d" % index, flush=True)
            if ctx.rank == 0 and step.redo:
                print("redo step %d: size now %d, recovery %.1f ms t=%.6f"
                      % (index, ctx.size, 1e3 * ctx.stats()["last_recovery_s"], time.time()),
                      flush=True)
            if ctx.rank == 0 and (not a.quiet or changed):
                acc = ""
                if a.accuracy:
                    with torch.no_grad():
                        acc = " acc %.4f" % (model(Xte).argmax(1) == yte).float().mean().item()
                print("step %d epoch %d size %d micro %d x %d loss %.6f%s t=%.6f%s"
                      % (index, epoch, ctx.size, step.plan.micro, step.plan.accum, step.loss,
                         acc, time.time(), " (first commit after a change)" if changed else ""),
                      flush=True)
            if edp.sampler.consumed == 0:  # (runs after the sampler's advance)
                if not np.all(uses == epoch + 1):
                    bad_epochs.append(epoch)
                with torch.no_grad():
                    acc = (model(Xte).argmax(1) == yte).float().mean().item()
                say("epoch %d done at step %d size %d: loss %.4f, test accuracy %.4f, every "
                    "sample used exactly once: %s" % (epoch, index, ctx.size, step.loss, acc,
                                                      "no" if bad_epochs else "yes"),
                    flush=True)

        for step in edp.steps(epochs=a.epochs, total=a.steps):  # elastic
            for idx in step.micro_batches():
                loss = F.cross_entropy(model(Xtr[idx]), ytr[idx], reduction="sum")
                loss.backward()
                step.add_loss(loss)  # elastic
            if a.step_sleep or a.sample_sleep:
                time.sleep(a.step_sleep + a.sample_sleep * len(step.indices))
            if not edp.reduce(step):  # elastic: gradients, loss and count, one allreduce
                continue  # a rank failed: this step is redone at the new size
            gathered = ctx.allgather(step.indices, a.global_batch)
            if gathered is None:
                continue
            step.on_commit(lambda st=step, g=gathered: account(st, g))

        ok = bool(np.all(applied[:ctx.step] == 1)) and not bad_epochs
        say("done: %d steps, %d epochs, size %d, each committed step applied once: %s, "
            "samples once per epoch: %s" % (ctx.step, edp.sampler.epoch, ctx.size,
                                            "yes" if np.all(applied[:ctx.step] == 1) else "NO",
                                            "NO" if bad_epochs else "yes"), flush=True)
        if ctx.rank == 0 and a.out:
            np.save(a.out, edp.flat_params.cpu().numpy())
        if ctx.rank == 0 and a.compare:
            compare(edp.flat_params.cpu().numpy(), a.compare, a.compare_spread)
        if not ok:
            sys.exit(4)


if __name__ == "__main__":
    main()
