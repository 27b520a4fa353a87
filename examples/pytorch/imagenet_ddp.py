# SPDX-License-Identifier: GPL-2.0-or-later
# examples/pytorch/imagenet_ddp.py: a plain torchrun DDP script (no slurm-elastic) in the
# shape of torchelastic's ImageNet example: an image folder (one directory per class),
# a resnet18, no seed, SGD with a per-epoch learning rate, metrics averaged over the
# ranks with all_reduce, a checkpoint written by rank 0 after each epoch and broadcast
# from rank 0 at start. imagenet_elastic.py is the same script made elastic; diff them.
"""Train a resnet18 on an image folder with torch DDP (torchrun, gloo)."""
import argparse
import os
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class ImageFolder(Dataset):
    """ROOT/CLASS/NAME.npy images (float32, 3 x H x W), classes in sorted order."""

    def __init__(self, root):
        self.classes = sorted(os.listdir(root))
        self.samples = [(os.path.join(root, c, f), i) for i, c in enumerate(self.classes)
                        for f in sorted(os.listdir(os.path.join(root, c)))]

    def __len__(self):
        return len(self.samples)

    def __getitem__(self, i):
        path, label = self.samples[i]
        return torch.from_numpy(np.load(path)), label


def make_data(root, per_class, classes=10, size=32):
    """A small image folder whose classes differ in color and texture."""
    g = np.random.default_rng(0)
    for split, n in (("train", per_class), ("val", max(1, per_class // 4))):
        for c in range(classes):
            d = os.path.join(root, split, "class%02d" % c)
            os.makedirs(d, exist_ok=True)
            for k in range(n):
                img = g.normal(0, 1, (3, size, size)).astype(np.float32)
                img[c % 3] += 1.5 * np.sin(np.arange(size) * (c + 1) / 4.0).astype(np.float32)
                np.save(os.path.join(d, "img%04d.npy" % k), img)


def resnet18(classes):
    """torchvision's resnet18 layout: BasicBlocks [2, 2, 2, 2], 64 to 512 channels."""
    def block(cin, cout, stride):
        body = nn.Sequential(nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout),
                             nn.ReLU(), nn.Conv2d(cout, cout, 3, 1, 1, bias=False),
                             nn.BatchNorm2d(cout))
        skip = nn.Identity() if stride == 1 and cin == cout else nn.Sequential(
            nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
        return Residual(body, skip)
    layers, cin = [nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()], 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [block(cin, cout, stride), block(cout, cout, 1)]
        cin = cout
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, classes))


class Residual(nn.Module):
    def __init__(self, body, skip):
        super().__init__()
        self.body, self.skip = body, skip

    def forward(self, x):
        return F.relu(self.body(x) + self.skip(x))


def averaged(values):
    """values (floats) summed over the ranks, divided by the world size."""
    t = torch.tensor(values, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    return (t / dist.get_world_size()).tolist()


def load_checkpoint(path, model, optimizer, group):
    """Rank 0 reads the checkpoint, if any, and broadcasts it: the epoch to start from."""
    state = [torch.load(path) if dist.get_rank() == 0 and os.path.exists(path) else None]
    dist.broadcast_object_list(state, src=0, group=group)
    if state[0] is None:
        return 0
    model.module.load_state_dict(state[0]["model"])
    optimizer.load_state_dict(state[0]["optimizer"])
    if dist.get_rank() == 0:
        print("=> loaded checkpoint %s (epoch %d)" % (path, state[0]["epoch"]), flush=True)
    return state[0]["epoch"]


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("data", help="a directory with train/ and val/ image folders")
    p.add_argument("--make-data", type=int, metavar="N", help="write N images per class first")
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch", type=int, default=32, help="global batch")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--checkpoint", default="checkpoint.pt")
    a = p.parse_args()
    if a.make_data:
        make_data(a.data, a.make_data)
        return
    local_rank = int(os.environ["LOCAL_RANK"])
    # on GPUs: torch.device("cuda", local_rank % torch.cuda.device_count()), backend "nccl"
    device = torch.device("cpu")
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    train, val = ImageFolder(os.path.join(a.data, "train")), ImageFolder(os.path.join(a.data, "val"))
    sampler = DistributedSampler(train)
    loader = DataLoader(train, batch_size=a.batch // dist.get_world_size(), sampler=sampler,
                        num_workers=2, persistent_workers=True)
    model = DDP(resnet18(len(train.classes)).to(device))
    optimizer = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9, weight_decay=1e-4)
    start = load_checkpoint(a.checkpoint, model, optimizer, dist.new_group(backend="gloo"))
    for epoch in range(start, a.epochs):
        for g in optimizer.param_groups:  # the learning rate drops tenfold every 3 epochs
            g["lr"] = a.lr * 0.1 ** (epoch // 3)
        sampler.set_epoch(epoch)
        model.train()
        t0, seen, loss_sum, correct = time.time(), 0, 0.0, 0
        for images, target in loader:
            images, target = images.to(device), target.to(device)
            out = model(images)
            loss = F.cross_entropy(out, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            seen += len(target)
            loss_sum += loss.item() * len(target)
            correct += (out.argmax(1) == target).sum().item()
        loss_avg, acc = averaged([loss_sum / max(seen, 1), correct / max(seen, 1)])
        model.eval()
        with torch.no_grad():
            part = range(dist.get_rank(), len(val), dist.get_world_size())
            hits = sum(int(model(val[i][0][None]).argmax(1).item() == val[i][1]) for i in part)
        hits = torch.tensor([hits])
        dist.all_reduce(hits)
        if dist.get_rank() == 0:
            print("epoch %d loss %.4f train accuracy %.3f val accuracy %.3f (%.1f s, rank %d of %d)"
                  % (epoch, loss_avg, acc, hits.item() / len(val), time.time() - t0, local_rank,
                     dist.get_world_size()), flush=True)
            torch.save({"epoch": epoch + 1, "model": model.module.state_dict(),
                        "optimizer": optimizer.state_dict()}, a.checkpoint)
        dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
