#!/usr/bin/env python3
"""Draw how the all-reduce algorithms scale to 1024 workers (claim DP-2), from a claims report.

    tools/plot_allreduce_scaling.py results/claims.json docs/results/allreduce_scaling.png

Reads DP-2's data from claims.json (written by `gradlab claims`): the alpha-beta cost model
fitted to all-reduce times measured at 2..4 workers in that run, the times it was fitted to,
and the modelled time of a 100 MB all-reduce for each algorithm from 2 to 1024 workers.
Left: modelled time vs workers (log-log). Right: measured vs modelled at 2..4 workers.
Needs python3-matplotlib.
"""

import json
import sys


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_allreduce_scaling.py: needs matplotlib (apt-get install python3-matplotlib)", file=sys.stderr)
        return 1
    with open(sys.argv[1], encoding="utf-8") as f:
        report = json.load(f)
    dp2 = next((c for c in report["claims"] if c["id"] == "DP-2"), None)
    if dp2 is None or "model_curve" not in dp2["data"]:
        print(f"{sys.argv[1]}: no DP-2 result with a model curve; run `gradlab claims --only DP-2`", file=sys.stderr)
        return 1
    data = dp2["data"]
    names = {"ring": "ring", "recursive_doubling": "recursive doubling", "reduce_broadcast": "master (reduce + broadcast)"}
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for algo, label in names.items():
        pts = [p for p in data["model_curve"] if p["algo"] == algo]
        left.plot([p["workers"] for p in pts], [p["seconds"] for p in pts], marker="o", label=label)
    m = data["model"]
    left.set(xscale="log", yscale="log", xlabel="workers N", ylabel="seconds per 100 MB all-reduce",
             title=f"cost model (alpha {m['alpha_s']:.1e} s, fitted here)")
    left.legend()
    left.grid(True, which="both", alpha=0.3)
    for algo, label in names.items():
        pts = [p for p in data["model_check"] if p["algo"] == algo]
        right.scatter([p["measured_s"] for p in pts], [p["predicted_s"] for p in pts], label=label, s=18)
    lo = min(p["measured_s"] for p in data["model_check"])
    hi = max(p["measured_s"] for p in data["model_check"])
    right.plot([lo, hi], [lo, hi], color="gray", linewidth=1)
    right.set(xscale="log", yscale="log", xlabel="measured seconds (threads, 2-4 workers)", ylabel="modelled seconds",
              title=f"check at small scale (median error {m['median_relative_error'] * 100:.0f}%)")
    right.legend()
    fig.suptitle(report.get("machine", ""), fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    print(f"written: {sys.argv[2]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
