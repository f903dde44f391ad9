#!/usr/bin/env python3
"""Plot CKPT-2 (gradient checkpointing): peak saved activations vs step time per segment count.

Reads the claims report's JSON (written by `gradlab claims`) and writes a PNG:

    tools/plot_ckpt2.py results/claims.json results/ckpt2.png

Needs matplotlib (Debian: python3-matplotlib); without it, says so and exits 0, since
the plot is an extra to the report, not part of it.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_ckpt2: matplotlib is not installed (apt-get install python3-matplotlib); no plot written")
        return 0
    with open(argv[1], encoding="utf-8") as f:
        report = json.load(f)
    ckpt2 = next((c for c in report["claims"] if c["id"] == "CKPT-2"), None)
    if ckpt2 is None or "variants" not in ckpt2.get("data", {}):
        print(f"plot_ckpt2: {argv[1]} has no CKPT-2 measurements; run `gradlab claims --only CKPT-2` first",
              file=sys.stderr)
        return 1
    rows = ckpt2["data"]["variants"]
    memory = [r["peak_saved_bytes"] / 2**20 for r in rows]
    time = [r["step_cpu_seconds_median"] * 1e3 for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.scatter(time, memory, color="tab:blue")
    for r, t, m in zip(rows, time, memory):
        ax.annotate(f"segments: {r['segments']}", (t, m), textcoords="offset points", xytext=(6, 4), fontsize=8)
    ax.set_xlabel("training step, CPU ms (median)")
    ax.set_ylabel("peak saved activations, MiB (exact)")
    ax.set_title("CKPT-2: deep MLP 32x256, batch 64")
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    fig.text(0.01, 0.01, report.get("machine", ""), fontsize=6, color="gray")
    fig.tight_layout()
    fig.savefig(argv[2], dpi=120)
    print(f"written: {argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
