#!/usr/bin/env python3
"""SimpleNet or the CNN on Fashion-MNIST in PyTorch: the peer for `gradlab train`.

The same model (--model mlp: 784-128-10, ReLU, or the widths of --hidden; --model cnn: gradlab's make_cnn, conv 3x3
1->32, ReLU, max-pool 2, conv 3x3 32->64, ReLU, max-pool 2, 3136-128-10), optimizer (Adam, lr 1e-3), batch size (64), input
normalisation ((x/255 - 0.2860) / 0.3530) and Kaiming-uniform weight bound as gradlab,
so its epoch time and accuracy can be set beside ours. It times the training loop of
each epoch only (not loading, not the test pass), as `gradlab train` does.

    python3 tools/peers/simplenet_torch.py --epochs 2 --threads 2 [--model cnn] [--hidden 1024,1024]
                                          [--limit N] [--json out.json]

Needs PyTorch (Debian: apt-get install python3-torch; it lives in the system
interpreter, /usr/bin/python3). Without it the script says so and exits with status 3,
so a caller can tell "no peer here" from a failure. Debian's PyTorch runs its GEMMs on
OpenBLAS, whose own threads compete with PyTorch's on a 2-core machine: run it once with
OPENBLAS_NUM_THREADS=1 and once without (tools/peers/compare_simplenet.py does both).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import struct
import sys
import time
from pathlib import Path

NO_TORCH = 3
DEFAULT_DATA = Path("/usr/share/datasets/fashion-mnist")
MEAN, STD = 0.2860, 0.3530


def parse_idx(path: Path) -> tuple[tuple[int, ...], bytes]:
    """The shape and the values of an unsigned-byte IDX file (raw or .gz); raises
    ValueError naming the file when it is not one."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0 or data[2] != 0x08:
        raise ValueError(f"{path}: not an unsigned-byte IDX file")
    dims = data[3]
    header = 4 + 4 * dims
    if len(data) < header:
        raise ValueError(f"{path}: the header is cut short")
    shape = struct.unpack(">" + "I" * dims, data[4:header])
    count = 1
    for d in shape:
        count *= d
    if len(data) - header != count:
        raise ValueError(f"{path}: header says {shape} but the file holds {len(data) - header} values")
    return shape, data[header:]


def read_idx(path: Path):
    """An IDX file as a numpy array of uint8 (numpy comes with PyTorch)."""
    import numpy as np

    shape, body = parse_idx(path)
    return np.frombuffer(body, dtype=np.uint8).reshape(shape)


def find(folder: Path, stem: str) -> Path:
    for name in (stem, stem + ".gz"):
        if (folder / name).exists():
            return folder / name
    raise FileNotFoundError(f"{folder}: no {stem}[.gz]; pass --data with an MNIST-format folder")


def make_model(torch, name: str, hidden: list[int] | None = None):
    """The model gradlab trains under --model @p name (for "mlp", hidden layers of the
    widths @p hidden: [128] is SimpleNet, [1024, 1024] gradlab's mlp-1024), with gradlab's
    initialisation: Kaiming-uniform weights (bound sqrt(6 / fan_in)), zero biases. Takes
    [N, 784] rows."""
    nn = torch.nn
    if name == "mlp":
        widths = [784] + (hidden or [128])
        layers = []
        for fan_in, fan_out in zip(widths, widths[1:]):
            layers += [nn.Linear(fan_in, fan_out), nn.ReLU()]
        model = nn.Sequential(*layers, nn.Linear(widths[-1], 10))
    else:
        model = nn.Sequential(nn.Unflatten(1, (1, 28, 28)),
                              nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Linear(128, 10))
    with torch.no_grad():
        for layer in model:
            if isinstance(layer, (nn.Linear, nn.Conv2d)):
                fan_in = layer.weight[0].numel()
                bound = (6.0 / fan_in) ** 0.5
                layer.weight.uniform_(-bound, bound)
                layer.bias.zero_()
    return model


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2, help="torch.set_num_threads")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    ap.add_argument("--json", type=Path, help="write the results here as JSON")
    ap.add_argument("--limit", type=int, default=0,
                    help="train on the first N examples only, as gradlab's --limit (0: all)")
    ap.add_argument("--hidden", default="128",
                    help="hidden layer widths, comma-separated (128: SimpleNet; 1024,1024: gradlab's mlp-1024)")
    args = ap.parse_args()
    if args.epochs < 1 or args.threads < 1 or args.batch_size < 1 or args.limit < 0:
        ap.error("--epochs, --threads and --batch-size must be at least 1, --limit at least 0")
    try:
        hidden = [int(w) for w in args.hidden.split(",")]
    except ValueError:
        hidden = []
    if not hidden or min(hidden) < 1:
        ap.error(f"--hidden: expected positive widths separated by commas (e.g. 1024,1024), got {args.hidden!r}")
    try:
        import torch
    except ImportError:
        print(f"PyTorch is not installed for {sys.executable}; on Debian: apt-get install python3-torch",
              file=sys.stderr)
        return NO_TORCH

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)

    def load(images: str, labels: str):
        x = torch.from_numpy(read_idx(find(args.data, images)).astype("float32")).reshape(-1, 784)
        y = torch.from_numpy(read_idx(find(args.data, labels)).astype("int64"))
        return (x / 255.0 - MEAN) / STD, y

    train_x, train_y = load("train-images-idx3-ubyte", "train-labels-idx1-ubyte")
    test_x, test_y = load("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")
    if args.limit > 0:  # the first N, as gradlab train --limit takes them
        train_x, train_y = train_x[:args.limit], train_y[:args.limit]

    model = make_model(torch, args.model, hidden)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    loss_fn = torch.nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(args.seed)

    epochs = []
    for epoch in range(1, args.epochs + 1):
        order = torch.randperm(train_x.shape[0], generator=generator)
        start = time.perf_counter()
        for first in range(0, train_x.shape[0], args.batch_size):
            idx = order[first:first + args.batch_size]
            optimizer.zero_grad()
            loss = loss_fn(model(train_x[idx]), train_y[idx])
            loss.backward()
            optimizer.step()
        seconds = time.perf_counter() - start
        with torch.no_grad():
            # in batches of 1000: the CNN's activations for all 10000 at once would take a GB
            correct = sum((model(test_x[i:i + 1000]).argmax(1) == test_y[i:i + 1000]).sum().item()
                          for i in range(0, test_x.shape[0], 1000))
            accuracy = correct / test_x.shape[0]
        epochs.append({"epoch": epoch, "seconds": seconds, "test_accuracy": accuracy})
        print(f"epoch {epoch}/{args.epochs}  test acc {accuracy:.4f}  {seconds:.3f} s", flush=True)

    result = {
        "peer": "pytorch",
        "model": args.model,
        "torch_version": torch.__version__,
        "threads": args.threads,
        "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", "unset"),
        "batch_size": args.batch_size,
        "epochs": epochs,
    }
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
