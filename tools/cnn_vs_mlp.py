#!/usr/bin/env python3
"""Lab 11's acceptance line: the CNN reaches 0.91 test accuracy within 10 epochs, with the
MLP's accuracy after the same number of epochs beside it (claim CONV-2 at full size).

    tools/cnn_vs_mlp.py [--gradlab build/tools/gradlab] [--target 0.91] [--epochs 10]
                        [--threads 2] [-- extra arguments for both `gradlab train` runs]

Trains `gradlab train --model cnn` on all of Fashion-MNIST for up to --epochs epochs and
stops at the first epoch whose test accuracy reaches --target; then trains the MLP
(SimpleNet) for that many epochs (or all of them when the CNN never got there) with the
same seed, batch and threads, and prints one line:

    CNN 0.9124 >= 0.91 at epoch 4 of 10; MLP after 4 epochs: 0.8724

Exit status 0 when the CNN reached the target, 1 when it did not, 2 on bad arguments or a
failed run.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "peers"))
from compare_simplenet import EPOCH_LINE, ROOT  # noqa: E402


def train(gradlab: Path, model: str, epochs: int, threads: int, extra: list[str], stop_at: float | None):
    """Runs `gradlab train`, echoing its epoch lines; returns [(epoch, test accuracy)], ending
    early at the first epoch whose accuracy is >= @p stop_at."""
    cmd = [str(gradlab), "train", "--model", model, "--epochs", str(epochs), "--threads", str(threads)] + extra
    print("$ " + " ".join(cmd), flush=True)
    found: list[tuple[int, float]] = []
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as p:
        assert p.stdout is not None
        lines = []
        for line in p.stdout:
            lines.append(line)
            m = EPOCH_LINE.match(line)
            if not m:
                continue
            print("  " + line.rstrip(), flush=True)
            found.append((int(m.group(1)), float(m.group(2))))
            if stop_at is not None and found[-1][1] >= stop_at:
                p.terminate()  # reached: the remaining epochs would not change the answer
                break
        p.wait()
        if not found or (p.returncode != 0 and not (stop_at is not None and found[-1][1] >= stop_at)):
            raise RuntimeError(f"{' '.join(cmd)} failed ({p.returncode}):\n{''.join(lines)}")
    return found


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gradlab", type=Path, default=ROOT / "build" / "tools" / "gradlab")
    ap.add_argument("--target", type=float, default=0.91)
    ap.add_argument("--epochs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("extra", nargs="*", help="more `gradlab train` arguments for both runs (after --)")
    args = ap.parse_args()
    if not args.gradlab.exists():
        ap.error(f"{args.gradlab} does not exist: build first (./gradlab build) or pass --gradlab")
    if args.epochs < 1 or args.threads < 1 or not 0 < args.target < 1:
        ap.error("--epochs and --threads must be at least 1, and --target between 0 and 1")
    try:
        cnn = train(args.gradlab, "cnn", args.epochs, args.threads, args.extra, args.target)
        reached = cnn[-1][1] >= args.target
        mlp_epochs = cnn[-1][0] if reached else args.epochs
        mlp = train(args.gradlab, "mlp", mlp_epochs, args.threads, args.extra, None)
    except RuntimeError as e:
        print(f"cnn_vs_mlp.py: {e}", file=sys.stderr)
        return 2
    best_epoch, best = max(cnn, key=lambda e: e[1])
    if reached:
        print(f"CNN {cnn[-1][1]:.4f} >= {args.target} at epoch {cnn[-1][0]} of {args.epochs}; "
              f"MLP after {mlp_epochs} epochs: {mlp[-1][1]:.4f}")
    else:
        print(f"CNN did NOT reach {args.target} within {args.epochs} epochs (best {best:.4f} at epoch {best_epoch}); "
              f"MLP after {mlp_epochs} epochs: {mlp[-1][1]:.4f}")
    return 0 if reached else 1


if __name__ == "__main__":
    sys.exit(main())
