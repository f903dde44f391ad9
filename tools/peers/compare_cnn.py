#!/usr/bin/env python3
"""The CNN's epoch time: gradlab beside PyTorch, in the same run.

The model of `gradlab train --model cnn` (conv 3x3 1->32, ReLU, max-pool, conv 3x3
32->64, ReLU, max-pool, 3136-128-10), Adam, batch 64, the same threads, on Fashion-MNIST.
Runs, in alternating rounds so a change in the machine's load hits both:
  - `gradlab train --model cnn` (the autotuner picks each layer's convolution),
  - tools/peers/simplenet_torch.py --model cnn (PyTorch's convolutions are oneDNN's),
and prints each one's epoch times (best and median over every epoch of every round), the
test accuracy, and our best epoch time as a fraction of PyTorch's (the issue's target
is <= 0.5).

    tools/peers/compare_cnn.py [--gradlab build/tools/gradlab] [--epochs 1] [--rounds 2]
                               [--threads 2] [--limit N] [--json out.json]
                               [--allocator direct|caching] [--baseline OTHER_GRADLAB]

--allocator is passed to our side (`train --allocator`: the caching allocator that reuses
freed blocks, train's default and this script's, or malloc per tensor). --baseline times a second gradlab binary (e.g. the
main branch's build) in the same alternating rounds, so a change is measured before and
after under the same load; its ratio to PyTorch is printed too.

--limit N trains on the first N examples only (both sides), so an "epoch" here is N
examples; the test accuracy then means little. Without PyTorch (python3-torch) the table
says "not installed" and the script still exits 0 after timing gradlab.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_simplenet import ROOT, run_gradlab, run_torch, torch_python  # noqa: E402
from openblas_core import chosen_core  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gradlab", type=Path, default=ROOT / "build" / "tools" / "gradlab")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--limit", type=int, help="train on the first N examples only (both sides)")
    ap.add_argument("--json", type=Path)
    ap.add_argument("--allocator", choices=["direct", "caching"], default="caching")
    ap.add_argument("--baseline", type=Path, help="another gradlab binary, timed in the same rounds")
    args = ap.parse_args()
    if not args.gradlab.exists():
        ap.error(f"{args.gradlab} does not exist: build first (./gradlab build) or pass --gradlab")
    if min(args.epochs, args.rounds, args.threads) < 1 or (args.limit is not None and args.limit < 1):
        ap.error("--epochs, --rounds, --threads and --limit must be at least 1")
    if args.baseline and not args.baseline.exists():
        ap.error(f"{args.baseline} does not exist")

    extra = ["--model", "cnn"] + (["--limit", str(args.limit)] if args.limit else [])
    ours = extra + ["--allocator", args.allocator]
    python = torch_python()
    epochs: dict[str, list[dict]] = {"gradlab": []}
    if args.baseline:
        epochs["baseline"] = []
    if python:
        epochs["pytorch"] = []
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"gradlab-cnn-peer-{os.getpid()}.json"
    try:
        for r in range(args.rounds):
            for name in epochs:
                print(f"round {r + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
                if name in ("gradlab", "baseline"):
                    binary = args.gradlab if name == "gradlab" else args.baseline
                    epochs[name] += run_gradlab(binary, args.epochs, args.threads, ours)
                else:  # OpenBLAS's own threads would fight PyTorch's on the same cores
                    epochs[name] += run_torch(python, args.epochs, args.threads, "1", scratch, extra)
    finally:
        scratch.unlink(missing_ok=True)

    medians = {name: statistics.median(e["seconds"] for e in runs) for name, runs in epochs.items()}
    examples = f"{args.limit} examples" if args.limit else "60000 examples"
    print(f"CNN (conv32-conv64-128-10), Adam, batch 64, {args.threads} threads, "
          f"{args.rounds} rounds x {args.epochs} epochs of {examples}, our allocator {args.allocator}")
    print(f"{'':10} {'best s':>8} {'median s':>9} {'test acc':>9}")
    rows = []
    for name, runs in epochs.items():
        times = [e["seconds"] for e in runs]
        rows.append({"name": name, "best_seconds": min(times), "median_seconds": medians[name],
                     "test_accuracy": runs[-1]["test_accuracy"]})
        print(f"{name:10} {min(times):8.2f} {medians[name]:9.2f} {runs[-1]['test_accuracy']:9.4f}")
    ratio = None
    core = chosen_core()
    if python:
        # best epochs: the first gradlab epoch also times every algorithm once (the autotuner)
        ratio = min(e["seconds"] for e in epochs["gradlab"]) / min(e["seconds"] for e in epochs["pytorch"])
        print(f"ours / PyTorch, best epoch time: {ratio:.2f} (target <= 0.5: {'met' if ratio <= 0.5 else 'not met'})")
        if args.baseline:
            base = min(e["seconds"] for e in epochs["baseline"]) / min(e["seconds"] for e in epochs["pytorch"])
            print(f"baseline / PyTorch, best epoch time: {base:.2f}")
        print(f"PyTorch's matmul ran OpenBLAS's {core} kernels (tools/peers/openblas_core.py says why it matters)")
    else:
        print(f"{'pytorch':10} not installed (apt-get install python3-torch)")
    if args.json:
        args.json.write_text(json.dumps({"threads": args.threads, "epochs": args.epochs, "rounds": args.rounds,
                                         "limit": args.limit, "allocator": args.allocator, "rows": rows,
                                         "ours_over_pytorch": ratio, "openblas_core": core},
                                        indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
