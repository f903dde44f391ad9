#!/usr/bin/env python3
"""Data-loading throughput: gradlab's loader beside PyTorch's DataLoader, in the same run.

    tools/peers/compare_dataloader.py [--gradlab build/tools/gradlab] [--dir /tmp/fmnist-jpeg]
                                      [--workers 0 1 2] [--batches 100] [--rounds 2]

Exports Fashion-MNIST as JPEG files into --dir if it does not exist, then times, in
alternating rounds, `gradlab data throughput` and tools/peers/dataloader_torch.py (the
same transforms, batch and folder) at each worker count, and prints the best
batches/s of each with the ratios the issue's acceptance asks for: gradlab's 2 workers
against its 1 worker (>= 1.8x) and against PyTorch's 2 workers (>= 1x). PyTorch is
looked for in /usr/bin/python3 (Debian's python3-torch); without it the table says so.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def run_json(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode == 3:
        return None
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{p.stderr}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gradlab", default=str(HERE.parents[1] / "build" / "tools" / "gradlab"))
    ap.add_argument("--dir", default="/tmp/gradlab-fmnist-jpeg")
    ap.add_argument("--workers", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--batches", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    if not Path(a.dir).exists():
        subprocess.run([a.gradlab, "data", "export-images", a.dir, "--format", "jpeg"], check=True)
    python = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    best = {}
    for _ in range(a.rounds):
        for w in a.workers:
            ours = run_json([a.gradlab, "data", "throughput", a.dir, "--workers", str(w), "--batches", str(a.batches)])
            best[("gradlab", w)] = max(best.get(("gradlab", w), 0), ours["batches_per_second"])
            theirs = run_json([python, str(HERE / "dataloader_torch.py"), a.dir, "--workers", str(w),
                               "--batches", str(a.batches)])
            if theirs is not None:
                best[("pytorch", w)] = max(best.get(("pytorch", w), 0), theirs["batches_per_second"])
    print(f"{'workers':>8} {'gradlab b/s':>12} {'PyTorch b/s':>12} {'gradlab/PyTorch':>16}")
    for w in a.workers:
        g, t = best[("gradlab", w)], best.get(("pytorch", w))
        print(f"{w:>8} {g:>12.1f} {t if t is not None else 'not installed':>12} "
              f"{(g / t if t else float('nan')):>16.2f}")
    if 1 in a.workers and 2 in a.workers:
        print(f"gradlab 2 workers / 1 worker: {best[('gradlab', 2)] / best[('gradlab', 1)]:.2f}x (acceptance: >= 1.8x)")
        if ("pytorch", 2) in best:
            print(f"gradlab / PyTorch at 2 workers: {best[('gradlab', 2)] / best[('pytorch', 2)]:.2f}x (acceptance: >= 1x)")


if __name__ == "__main__":
    main()
