# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/torch_checks.py: checks of slurm_elastic.torch run under mpirun by
# tests/python/torch.sh; one scenario per invocation (argv[1]); prints "OK <scenario>" on
# every rank that passed.
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import slurm_elastic as se
from slurm_elastic.torch import ElasticDataParallel, RegistrationError

torch.set_num_threads(1)
scenario = sys.argv[1]
failed = []


def check(cond, what):
    if not cond:
        failed.append(what)
        print("CHECK FAILED: %s" % what, flush=True)


def data():
    g = torch.Generator().manual_seed(7)
    X = torch.randn(200, 10, generator=g)
    y = (X[:, :3].sum(1) > 0).long() + (X[:, 3] > 1).long()
    return X, y


def make():
    torch.manual_seed(3)
    model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))
    return model, torch.optim.Adam(model.parameters(), lr=0.01)


def finish(ctx):
    print("OK %s rank %d" % (scenario, ctx.rank) if not failed else
          "FAILED %s: %s" % (scenario, "; ".join(failed)), flush=True)


def die_between(ctx, index):
    """After step index's update and report, the whole launch ends before the
    next step begins, as mpirun ends one after a lost node: rank 0 (the node
    snapshot's writer) first marks the flag file, the others wait for it.
    The step is reported as a program should: after ctx.updated()."""
    ctx.updated()
    print("REPORTED step %d rank %d" % (index, ctx.rank), flush=True)
    flag = os.environ["BETWEEN_FLAG"]
    if ctx.rank == 0:
        open(flag, "w").close()
    else:
        for _ in range(1000):
            if os.path.exists(flag):
                break
            time.sleep(0.01)
    os.kill(os.getpid(), 9)


def train(ctx, out, set_to_none=False, kill_at=None, die_after=None):
    X, y = data()
    model, opt = make()
    edp = ElasticDataParallel(ctx, model, opt, nsamples=len(X), global_batch=40, max_micro=8,
                              seed=11)
    losses = []
    first = True
    for step in edp.steps(epochs=4):
        if first and ctx.rank == 0:
            print("FIRST step %d resumed %d" % (step.index, int(ctx.resumed)), flush=True)
        first = False
        if set_to_none:
            opt.zero_grad()  # set_to_none=True (the default): backward allocates new grads
        for idx in step.micro_batches():
            loss = F.cross_entropy(model(X[idx]), y[idx], reduction="sum")
            loss.backward()
            step.add_loss(loss)
        if kill_at is not None and ctx.rank == ctx.size - 1 and ctx.size == 3 \
                and step.index == kill_at:
            print("KILL rank %d at step %d t=%.6f" % (ctx.rank, step.index, time.time()),
                  flush=True)
            os.kill(os.getpid(), 9)
        if not edp.reduce(step):
            continue
        if step.redo:
            print("first commit after a change t=%.6f size %d" % (time.time(), ctx.size),
                  flush=True)
        losses.append(step.loss)
        if die_after is not None and step.index == die_after:
            # after ElasticDataParallel's own on_commit (the optimizer step)
            step.on_commit(lambda i=step.index: die_between(ctx, i))
    adam_steps = int(opt.state[edp.params[0]]["step"])
    check(adam_steps == ctx.step, "optimizer stepped once per committed step (%d vs %d)"
          % (adam_steps, ctx.step))
    check(ctx.step == 20, "20 steps (4 epochs of 200 / 40): %d" % ctx.step)
    check(ctx.resumed or losses[-1] < 0.7 * losses[0],
          "loss fell: %.4f -> %.4f" % (losses[0], losses[-1]))
    if ctx.rank == 0:
        print("loss %.4f -> %.4f at size %d" % (losses[0], losses[-1], ctx.size), flush=True)
        np.save(out, edp.flat_params.numpy())


if scenario in ("train", "train_none", "kill", "between", "resume"):
    with se.Context() as ctx:
        train(ctx, sys.argv[2], set_to_none=scenario == "train_none",
              kill_at=5 if scenario == "kill" else None,
              die_after=6 if scenario == "between" else None)
        finish(ctx)

elif scenario == "habits":
    # each habit that would silently break the registration is refused with a
    # RegistrationError at the next step (the same on every rank)
    X, y = data()

    def run_one(ctx, edp, model, opt):
        for step in edp.steps(total=ctx.step + 1):
            for idx in step.micro_batches():
                F.cross_entropy(model(X[idx]), y[idx], reduction="sum").backward()
            edp.reduce(step)

    with se.Context() as ctx:
        model, opt = make()
        # an optimizer that already has state cannot be wrapped
        m2, o2 = make()
        F.cross_entropy(m2(X[:4]), y[:4]).backward()
        o2.step()
        try:
            ElasticDataParallel(ctx, m2, o2)
            check(False, "an optimizer with state was wrapped")
        except RegistrationError as e:
            check("already has state" in str(e), "text: %s" % e)
        m3 = torch.nn.Linear(2, 2).double()
        try:
            ElasticDataParallel(ctx, m3, torch.optim.SGD(m3.parameters(), 0.1))
            check(False, "float64 parameters were wrapped")
        except ValueError as e:
            check("float32" in str(e), "text: %s" % e)
        edp = ElasticDataParallel(ctx, model, opt, nsamples=len(X), global_batch=40,
                                  max_micro=8, seed=1)
        # lazily created optimizer state exists now, in registered storage
        st = opt.state[edp.params[0]]
        check(set(st) == {"step", "exp_avg", "exp_avg_sq"}, "Adam state made at wrap: %r"
              % sorted(st))
        check(float(st["step"]) == 0 and float(st["exp_avg"].abs().sum()) == 0,
              "made state is the initial state")
        run_one(ctx, edp, model, opt)
        check(float(st["step"]) == 1, "the state view is what Adam updates")
        sd = edp.state_dict()

        def refused(what, text):
            try:
                run_one(ctx, edp, model, opt)
                check(False, "%s: not refused" % what)
            except RegistrationError as e:
                check(text in str(e), "%s: text %s" % (what, e))

        saved = model[0].weight.data
        model[0].weight.data = model[0].weight.data.clone()
        refused("param.data = ...", "param.data")
        model[0].weight.data = saved
        model.double()
        refused("model.double()", "model.to()")
        model.float()
        for p, v in zip(edp.params, edp._pviews):
            p.data = v
        opt.load_state_dict(sd["optimizer"])
        refused("optimizer.load_state_dict", "ElasticDataParallel.load_state_dict")
        edp.load_state_dict(sd)
        run_one(ctx, edp, model, opt)
        check(float(opt.state[edp.params[0]]["step"]) == 2,
              "after edp.load_state_dict the registered state trains on")
        finish(ctx)
elif scenario == "sampler":
    # the torch Sampler: a DataLoader over it yields this rank's share of each
    # step in micro-batches; over an epoch the ranks see every sample once
    from torch.utils.data import DataLoader, TensorDataset
    X, y = data()
    ds = TensorDataset(torch.arange(len(X)), X, y)
    with se.Context() as ctx:
        model, opt = make()
        edp = ElasticDataParallel(ctx, model, opt, nsamples=len(X), global_batch=40,
                                  max_micro=8, seed=5)
        seen = []
        for step in edp.steps(epochs=1):
            check(list(edp.sampler) == step.indices and len(edp.sampler) == len(step.indices),
                  "Sampler yields the step's indices")
            loader = DataLoader(ds, batch_size=step.plan.micro, sampler=edp.sampler)
            got = []
            for ids, xb, yb in loader:
                F.cross_entropy(model(xb), yb, reduction="sum").backward()
                got += ids.tolist()
            check(got == step.indices, "DataLoader batches cover the step's share")
            if edp.reduce(step):
                everyone = ctx.allgather(got, 40)
                step.on_commit(lambda e=everyone: seen.extend(e))
        check(sorted(seen) == list(range(len(X))), "every sample once in the epoch (%d seen)"
              % len(seen))
        finish(ctx)
else:
    sys.exit("unknown scenario " + scenario)
sys.exit(1 if failed else 0)
