#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
# tests/device/shadows.py: the registered copies of ElasticDataParallel on one rank
# (run under mpirun -np 1 with ELASTIC_JOB_ID and ELASTIC_SHM_DIR set). On CUDA they
# are pinned host shadows of the model and optimizer state on the GPU; on the CPU
# they are the state itself. Phase "train": after each commit the shadows equal the
# device state (and are pinned); a failed step whose device state was spoiled is
# redone from the shadows of the last commit; at step STOP the process ends without
# completing (as a lost node), leaving the node snapshot, and writes the committed
# state to --state. Phase "resume": a new process resumes from the node snapshot and
# its device state equals that committed state before it trains on.
# Prints "OK part ...", "BAD part ..." or "SKIP reason".
import argparse
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

import slurm_elastic as se
from slurm_elastic.torch import ElasticDataParallel

REDO_AT, STOP = 3, 6


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cpu")
    p.add_argument("--phase", choices=("train", "resume"), required=True)
    p.add_argument("--state", required=True, help="the committed state at STOP (.npz)")
    return p.parse_args()


def setup(dev, seed):
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10)).to(dev)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    g = torch.Generator().manual_seed(7)
    X = torch.randn(512, 64, generator=g).to(dev)
    y = torch.randint(0, 10, (512,), generator=g).to(dev)
    return model, opt, X, y


def flat(edp):
    """The device state and its registered copies, on the host."""
    return (edp.flat_params.detach().cpu().clone(), edp.flat_optim.detach().cpu().clone())


def body(edp, step, model, X, y):
    loss = F.cross_entropy(model(X), y, reduction="sum")
    loss.backward()
    step.add_loss(loss)
    return edp.reduce(step, divide_by=len(X))


def train(a, dev):
    bad = []
    with se.Context() as ctx:
        model, opt, X, y = setup(dev, 1)
        edp = ElasticDataParallel(ctx, model, opt)
        host = getattr(edp, "_host", None)
        if host is None or not hasattr(edp, "flat_optim"):
            print("SKIP ElasticDataParallel has no registered copies where this check looks "
                  "(_host, flat_params, flat_optim): update tests/device/shadows.py", flush=True)
            os._exit(0)
        cuda = dev.type == "cuda"
        last = [None]  # the state of the last commit, as the shadows held it
        commits = redo_ok = 0

        def after_commit(index):
            nonlocal commits
            p, o = flat(edp)
            if not (torch.equal(host[0], p) and torch.equal(host[1], o)):
                bad.append("after commit %d the shadows differ from the device state" % index)
            if cuda and not (host[0].is_pinned() and host[1].is_pinned()):
                bad.append("the shadows are not pinned")
            last[0] = (host[0].clone(), host[1].clone())
            commits += 1
            if index == STOP:
                ctx.updated()  # the node snapshot of this step, now
                np.savez(a.state, params=last[0][0].numpy(), optim=last[0][1].numpy())
                print("OK after_commit: %d commits, shadows == %s state after each (%s, %d+%d "
                      "floats)%s" % (commits, dev.type, "pinned" if cuda else "the state itself",
                                     host[0].numel(), host[1].numel(), "; " + "; ".join(bad)
                                     if bad else ""), flush=True)
                print("%s redo: step %d failed%s, redone from the last commit's state: %s"
                      % ("OK" if redo_ok else "BAD", REDO_AT,
                         " with its GPU state spoiled" if cuda else "",
                         "equal" if redo_ok else "NOT equal"), flush=True)
                sys.stdout.flush()
                os._exit(3)  # a lost node: no completion, the snapshot stays

        for step in edp.steps(total=STOP + 1):
            if step.redo:
                p, o = flat(edp)
                redo_ok = int(torch.equal(p, last[0][0]) and torch.equal(o, last[0][1]))
            body(edp, step, model, X, y)
            if step.index == REDO_AT and not step.redo:
                if cuda:
                    with torch.no_grad():  # spoil the GPU copy: the redo must restore it
                        edp.flat_params.add_(1.0)
                        edp.flat_optim.add_(1.0)
                step.fail()
                continue
            step.on_commit(lambda i=step.index: after_commit(i))
    print("BAD train: reached the end without stopping at step %d" % STOP, flush=True)


def resume(a, dev):
    ref = np.load(a.state)
    with se.Context() as ctx:
        model, opt, X, y = setup(dev, 2)  # another start: the resume must overwrite it
        edp = ElasticDataParallel(ctx, model, opt)
        for step in edp.steps(total=STOP + 3):
            if step.index == STOP + 1 and not step.redo:
                p, o = flat(edp)
                same = (np.array_equal(p.numpy(), ref["params"])
                        and np.array_equal(o.numpy(), ref["optim"]))
                print("%s resume: resumed=%s at committed step %d, %s state %s the committed "
                      "one" % ("OK" if same and ctx.resumed else "BAD", ctx.resumed, ctx.step,
                               dev.type, "equals" if same else "DIFFERS from"), flush=True)
            body(edp, step, model, X, y)
        if ctx.step <= STOP:
            print("BAD resume: did not resume (committed %d steps)" % ctx.step, flush=True)


def main():
    a = parse()
    dev = torch.device(a.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print("SKIP torch.cuda.is_available() is False", flush=True)
        return
    (train if a.phase == "train" else resume)(a, dev)


if __name__ == "__main__":
    main()
