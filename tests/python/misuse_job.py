# SPDX-License-Identifier: GPL-2.0-or-later
# tests/python/misuse_job.py: a PyTorch rank that misuses the binding one way (argv[1]),
# run under sbatch + elastic-run by tests/python/cluster_misuse.sh. Each rank prints
# "rank R: ERROR <type>: <text>" when the binding refuses, or "rank R: OK" when it ran.
import sys

import numpy as np
import torch
import torch.nn.functional as F

import slurm_elastic as se
from slurm_elastic.torch import ElasticDataParallel

torch.set_num_threads(1)
how = sys.argv[1]
g = torch.Generator().manual_seed(7)
X = torch.randn(64, 10, generator=g)
y = (X[:, :3].sum(1) > 0).long()
torch.manual_seed(3)
model = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2))
opt = torch.optim.Adam(model.parameters(), lr=0.01)
rank = -1
try:
    with se.Context() as ctx:
        rank = ctx.rank
        edp = ElasticDataParallel(ctx, model, opt, nsamples=len(X), global_batch=16,
                                  max_micro=8, seed=1)
        extra = np.zeros(4 if how != "mismatch" or rank == 0 else 5, dtype=np.float32)
        ctx.register("extra", extra)  # mismatch: rank 1 registers 5 floats, rank 0 4
        for step in edp.steps(epochs=2):
            if how == "set_to_none":
                opt.zero_grad(set_to_none=True)
            for idx in step.micro_batches():
                F.cross_entropy(model(X[idx]), y[idx], reduction="sum").backward()
            if not edp.reduce(step):
                continue
            if how == "inside" and step.index == 2 and rank == 0:
                extra += 1  # registered state changed inside the step, not on commit
            if how == "param_data" and step.index == 2:
                model[0].weight.data = model[0].weight.data.clone()  # leaves the storage
        print("rank %d: OK %d steps" % (rank, ctx.step), flush=True)
except Exception as e:  # noqa: BLE001: the test reads what each rank was told
    print("rank %d: ERROR %s: %s" % (rank, type(e).__name__, e), flush=True)
    sys.exit(3)
