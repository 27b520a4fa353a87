# SPDX-License-Identifier: GPL-2.0-or-later
# python/slurm_elastic/_sampler.py: the DDP-shaped layer's sampler: each step's global
# batch split over the current world, its position kept with the job's state, and the
# DataLoader batches prepared for an old world skipped.
"""The elastic batch sampler of :mod:`slurm_elastic.torch` (exported there)."""

import torch as _torch
from torch.utils.data import DataLoader as _DataLoader
from torch.utils.data import Sampler as _TorchSampler


class _Tag:
    """What the sampler handed out for one step on this rank."""

    __slots__ = ("gen", "epoch", "pos", "local", "total", "sampler")

    def __init__(self, gen, epoch, pos, local, total, sampler):
        self.gen, self.epoch, self.pos = gen, epoch, pos
        self.local, self.total, self.sampler = local, total, sampler


class _FreshBatches:
    """A DataLoader's iterator over an elastic sampler, without the batches
    its workers prepared for a world that changed since (a dropped step bumps
    the sampler's hand-out): the loop never sees them. Batches arrive in the
    order the sampler handed them out (the DataLoader keeps it), so this
    sampler's oldest tag is the arriving batch's.

    When the DataLoader had taken the epoch's last batch before the change
    (its workers prefetch), its pass ends with samples of the epoch still
    owed: a new pass of the same DataLoader hands them out from the
    committed positions, inside the loop's epoch."""

    def __init__(self, loader, sampler):
        self._loader, self._sampler = loader, sampler
        self._it = _loader_iter(loader)
        sampler._refills = True

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._it)

    def __getattr__(self, name):  # the DataLoader iterator's own attributes
        return getattr(self._it, name)

    def __next__(self):
        s = self._sampler
        fifo = s.job._fifo
        while True:
            try:
                batch = next(self._it)
            except StopIteration:
                if not s._owes():
                    raise
                fifo[:] = [t for t in fifo if t.sampler is not s]
                self._it = _loader_iter(self._loader)
                continue
            tag = next((t for t in fifo if t.sampler is s), None)
            if tag is None or tag.gen == s.gen:
                return batch
            fifo.remove(tag)


_loader_iter = _DataLoader.__iter__


def _elastic_loader_iter(loader):
    """DataLoader.__iter__, filtered (_FreshBatches) when its batch sampler
    is an elastic one."""
    if isinstance(getattr(loader, "batch_sampler", None), DistributedSampler):
        return _FreshBatches(loader, loader.batch_sampler)
    return _loader_iter(loader)


_DataLoader.__iter__ = _elastic_loader_iter


class DistributedSampler(_TorchSampler):
    """An elastic batch sampler: give it to ``DataLoader(batch_sampler=...)``.

    Each step takes the next ``batch_size`` samples of the epoch (the
    *global* batch, constant whatever the number of ranks) and gives this
    rank its share of them (sizes differ by at most one). Shuffled per
    epoch from ``seed + epoch`` (``set_epoch``) as torch's
    DistributedSampler is. The position is part of the kept state: a
    re-form resumes it, and the samples of a step that was dropped are
    handed out again, so that every sample is trained once per epoch.

    ``dataset`` is a dataset (its ``len``) or a number of samples;
    ``drop_last`` drops the epoch's last, smaller batch. After a change of
    the world the batches the DataLoader's workers had already prepared
    are skipped before the loop sees them (at most ``num_workers *
    prefetch_factor`` batches of loading work); when they were the epoch's
    last, a new pass of the DataLoader hands out the rest of the epoch
    within the same loop (its workers start again unless persistent).
    """

    def __init__(self, dataset, batch_size, shuffle=True, seed=0, drop_last=False, job=None):
        self.job = job or _current()
        if self.job._started:
            raise RuntimeError("slurm_elastic: create the sampler before the first step "
                               "begins (the first training forward, start_epoch() or a "
                               "collective)")
        self.n = dataset if isinstance(dataset, int) else len(dataset)
        if batch_size < 1 or self.n < 1:
            raise ValueError("DistributedSampler: batch_size and the number of samples "
                             "must be >= 1")
        self.batch_size, self.shuffle, self.seed = int(batch_size), shuffle, int(seed)
        self.drop_last = drop_last
        self.epoch, self.pos, self.gen = 0, 0, 0
        self.tails = []  # [epoch, pos] of earlier epochs not finished
        self._perms = {}
        # the DataLoader took this epoch's last batch: it asks no more
        self._spent = False
        self._spent_gen = 0  # the hand-out that was spent
        self._refills = False  # a DataLoader's pass over it starts anew (_FreshBatches)
        self.job.kept.samplers.append(self)

    def _end(self):
        return self.n - self.n % self.batch_size if self.drop_last else self.n

    def set_epoch(self, epoch):
        """Start epoch ``epoch`` (call it before iterating, as with torch's)."""
        epoch = int(epoch)
        if epoch == self.epoch:
            return
        if self.pos < self._end() and epoch > self.epoch and self.pos > 0:
            self.tails.append([self.epoch, self.pos])
        self.epoch, self.pos = epoch, 0
        self.job._epoch_marks += 1

    def _perm(self, epoch):
        p = self._perms.get(epoch)
        if p is None:
            if self.shuffle:
                g = _torch.Generator()
                g.manual_seed(self.seed + epoch)
                p = _torch.randperm(self.n, generator=g).tolist()
            else:
                p = list(range(self.n))
            self._perms = {epoch: p}  # one epoch at a time (tails are rare)
        return p

    def _share(self, total):
        """(offset, count) of this rank's share of a batch of total samples."""
        size, rank = self.job.size, self.job.rank
        base, extra = divmod(total, size)
        count = base + (1 if rank < extra else 0)
        return rank * base + min(rank, extra), count

    def __iter__(self):
        self._spent = False
        gen = self.gen
        # the tails of earlier epochs first, then this epoch
        queue = [list(t) for t in self.tails] + [[self.epoch, self.pos]]
        while queue:
            if self.gen != gen:  # a dropped step: from the committed positions again
                gen = self.gen
                queue = [list(t) for t in self.tails] + [[self.epoch, self.pos]]
            ep, pos = queue[0]
            end = self._end()
            if pos >= end:
                queue.pop(0)
                continue
            total = min(self.batch_size, end - pos)
            perm = self._perm(ep)
            off, count = self._share(total)
            idx = perm[pos + off:pos + off + count]
            tag = _Tag(gen, ep, pos, count, total, self)
            if not idx:  # a rank without samples in this step keeps in step
                idx, tag.local = perm[pos:pos + 1], 0
            self.job._fifo.append(tag)
            queue[0][1] = pos + total
            yield idx
        self._spent, self._spent_gen = True, gen

    def _owes(self):
        """The hand-out was spent before a change of the world or a dropped
        step made some of its batches stale: samples of the loop's epoch
        (or an earlier one's tail) are not trained and will not come from
        this pass."""
        return self._spent and self.gen != self._spent_gen and (
            self.pos < self._end() or bool(self.tails))

    def __len__(self):
        return -(-(self._end() - self.pos) // self.batch_size) + sum(
            -(-(self._end() - p) // self.batch_size) for _, p in self.tails)

    def _bump(self):
        # the batches already handed out keep their tags: they arrive, and
        # are dropped, in order
        self.gen += 1

    def _advance(self, tag):
        if tag.gen != self.gen:
            return
        if tag.epoch == self.epoch and tag.pos == self.pos:
            self.pos += tag.total
            return
        for t in self.tails:
            if t[0] == tag.epoch and t[1] == tag.pos:
                t[1] += tag.total
                if t[1] >= self._end():
                    self.tails.remove(t)
                return

    def _untrained(self):
        return (self._end() - self.pos if 0 < self.pos < self._end() else 0) + sum(
            self._end() - p for _, p in self.tails)

    def state_dict(self):
        return {"epoch": self.epoch, "pos": self.pos, "gen": self.gen,
                "tails": [list(t) for t in self.tails]}

    def load_state_dict(self, sd):
        self.epoch, self.pos = sd["epoch"], sd["pos"]
        self.tails = [list(t) for t in sd["tails"]]
        self.gen = max(self.gen, sd["gen"]) + 1


def _current():
    from slurm_elastic.ddp import current
    return current()
