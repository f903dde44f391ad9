#!/usr/bin/env python3
"""The data-loading pipeline in PyTorch, for the peer comparison with gradlab's loader.

    dataloader_torch.py DIR [--workers 2] [--batches 100] [--batch-size 64]

torchvision's ImageFolder over DIR (grey images), RandomResizedCrop(28, scale 0.5..1),
RandomHorizontalFlip, ColorJitter(0.4, 0.4), ToTensor, Normalize(0.286, 0.353): the same
pipeline as `gradlab data throughput`. Prints one JSON line like gradlab's. Exit status
3 when torch or torchvision cannot be imported.
"""

import argparse
import json
import sys
import time

try:
    import torch
    from torch.utils.data import DataLoader
    from torchvision import datasets, transforms
except ImportError as e:
    print(f"PyTorch/torchvision not installed here ({e}); install Debian's python3-torchvision", file=sys.stderr)
    sys.exit(3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--batch-size", type=int, default=64)
    a = ap.parse_args()
    torch.set_num_threads(1)  # each worker process decodes on one thread, like ours
    pipeline = transforms.Compose([
        transforms.Grayscale(),
        transforms.RandomResizedCrop(28, scale=(0.5, 1.0)),
        transforms.RandomHorizontalFlip(),
        transforms.ColorJitter(0.4, 0.4),
        transforms.ToTensor(),
        transforms.Normalize([0.286], [0.353]),
    ])
    data = datasets.ImageFolder(a.dir, transform=pipeline)
    loader = DataLoader(data, batch_size=a.batch_size, shuffle=True, num_workers=a.workers,
                        persistent_workers=a.workers > 0)
    next(iter(loader))  # start the worker processes outside the timing
    start = time.perf_counter()
    made = 0
    while made < a.batches:
        for _ in loader:
            made += 1
            if made == a.batches:
                break
    seconds = time.perf_counter() - start
    print(json.dumps({"workers": a.workers, "batches": made, "batch_size": a.batch_size, "seconds": round(seconds, 4),
                      "batches_per_second": round(made / seconds, 2)}))


if __name__ == "__main__":
    main()
