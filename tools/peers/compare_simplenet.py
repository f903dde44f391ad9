#!/usr/bin/env python3
"""SimpleNet epoch time: gradlab beside PyTorch, in the same run.

Runs, in alternating rounds so a change in the machine's load hits every configuration:
  - `gradlab train` (Adam, batch 64, the default GEMM kernel, --threads N),
  - tools/peers/simplenet_torch.py with OPENBLAS_NUM_THREADS=1,
  - the same with OPENBLAS_NUM_THREADS unset (Debian's PyTorch then runs OpenBLAS's own
    threads beside its own, which on 2 cores fight for them),
and prints each one's epoch times (best and median over every epoch of every round) and
final test accuracy, with the ratio to ours.

    tools/peers/compare_simplenet.py [--gradlab build/tools/gradlab] [--epochs 2]
                                     [--rounds 2] [--threads 2] [--json out.json]
                                     [--model mlp|mlp-1024] [--limit N]

--model mlp-1024 runs the GEMM-bound MLP 784-1024-1024-10 instead of SimpleNet, in both.

PyTorch is looked for in this interpreter and in /usr/bin/python3 (where Debian's
python3-torch lives); without it the table says "not installed" and the script still
exits 0 after timing gradlab.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

from openblas_core import chosen_core

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
TORCH_SCRIPT = HERE / "simplenet_torch.py"
EPOCH_LINE = re.compile(r"^epoch (\d+)/\d+ .*?test loss [0-9.]+ acc ([0-9.]+)\s+([0-9.]+) s", re.M)


def torch_python() -> str | None:
    """An interpreter that can import torch, or None."""
    for exe in dict.fromkeys([sys.executable, "/usr/bin/python3"]):
        if Path(exe).exists() and subprocess.run([exe, "-c", "import torch"], capture_output=True).returncode == 0:
            return exe
    return None


# --model: gradlab's model name and the same network's hidden widths for the torch script.
MODELS = {"mlp": ("SimpleNet (784-128-10)", "128"), "mlp-1024": ("MLP 784-1024-1024-10", "1024,1024")}


def run_gradlab(gradlab: Path, epochs: int, threads: int, extra: list[str] | None = None) -> list[dict]:
    """`gradlab train` with @p extra arguments (--model cnn, --limit N): its epochs' times and accuracies."""
    cmd = [str(gradlab), "train", "--epochs", str(epochs), "--threads", str(threads)] + (extra or [])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    found = [{"seconds": float(s), "test_accuracy": float(a)} for _, a, s in EPOCH_LINE.findall(p.stdout)]
    if len(found) != epochs:
        raise RuntimeError(f"{' '.join(cmd)}: expected {epochs} epoch lines, found {len(found)}:\n{p.stdout}")
    return found


def run_torch(python: str, epochs: int, threads: int, openblas_threads: str | None, out: Path,
              extra: list[str] | None = None) -> list[dict]:
    """simplenet_torch.py with the same @p extra arguments: its epochs' times and accuracies."""
    env = dict(os.environ)
    env.pop("OPENBLAS_NUM_THREADS", None)
    if openblas_threads is not None:
        env["OPENBLAS_NUM_THREADS"] = openblas_threads
    cmd = [python, str(TORCH_SCRIPT), "--epochs", str(epochs), "--threads", str(threads), "--json", str(out)]
    cmd += extra or []
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{p.stdout}{p.stderr}")
    return json.loads(out.read_text())["epochs"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gradlab", type=Path, default=ROOT / "build" / "tools" / "gradlab")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--model", choices=sorted(MODELS), default="mlp",
                    help="mlp: SimpleNet; mlp-1024: the GEMM-bound 784-1024-1024-10")
    ap.add_argument("--limit", type=int, default=0,
                    help="train both on the first N examples only (0: all; epoch times then scale with N)")
    args = ap.parse_args()
    if not args.gradlab.exists():
        ap.error(f"{args.gradlab} does not exist: build first (./gradlab build) or pass --gradlab")
    if min(args.epochs, args.rounds, args.threads) < 1 or args.limit < 0:
        ap.error("--epochs, --rounds and --threads must be at least 1, --limit at least 0")

    limit = ["--limit", str(args.limit)] if args.limit > 0 else []
    python = torch_python()
    configs = {"gradlab": None}
    if python:
        configs["pytorch, OPENBLAS_NUM_THREADS=1"] = "1"
        configs["pytorch, OPENBLAS_NUM_THREADS unset"] = None
    epochs: dict[str, list[dict]] = {name: [] for name in configs}
    scratch = Path(os.environ.get("TMPDIR", "/tmp")) / f"gradlab-peer-{os.getpid()}.json"
    try:
        for r in range(args.rounds):
            for name, blas in configs.items():
                print(f"round {r + 1}/{args.rounds}: {name}", file=sys.stderr, flush=True)
                if name == "gradlab":
                    epochs[name] += run_gradlab(args.gradlab, args.epochs, args.threads,
                                                ["--model", args.model] + limit)
                else:
                    epochs[name] += run_torch(python, args.epochs, args.threads, blas, scratch,
                                              ["--hidden", MODELS[args.model][1]] + limit)
    finally:
        scratch.unlink(missing_ok=True)

    ours = statistics.median(e["seconds"] for e in epochs["gradlab"])
    rows = []
    print(f"{MODELS[args.model][0]}, Adam, batch 64, {args.threads} threads, "
          + (f"first {args.limit} examples, " if args.limit else "")
          + f"{args.rounds} rounds x {args.epochs} epochs")
    print(f"{'':38} {'best s':>8} {'median s':>9} {'x ours':>7} {'test acc':>9}")
    for name, runs in epochs.items():
        times = [e["seconds"] for e in runs]
        row = {"name": name, "best_seconds": min(times), "median_seconds": statistics.median(times),
               "ratio_to_ours": statistics.median(times) / ours, "test_accuracy": runs[-1]["test_accuracy"]}
        rows.append(row)
        print(f"{name:38} {row['best_seconds']:8.3f} {row['median_seconds']:9.3f} "
              f"{row['ratio_to_ours']:7.2f} {row['test_accuracy']:9.4f}")
    core = chosen_core()
    if python:
        print(f"PyTorch's matmul ran OpenBLAS's {core} kernels (tools/peers/openblas_core.py says why it matters)")
    else:
        print(f"{'pytorch':38} not installed (apt-get install python3-torch)")
    if args.json:
        args.json.write_text(json.dumps({"model": args.model, "threads": args.threads, "epochs": args.epochs, "rounds": args.rounds,
                                         "rows": rows, "pytorch": bool(python), "openblas_core": core}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
