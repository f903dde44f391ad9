#!/usr/bin/env python3
"""Plot for lab 06 (claims DATA-1, DATA-2): step time and throughput against loader workers.

    build/tools/gradlab claims --only DATA-1 DATA-2 --out results
    tools/plot_data_loading.py results/claims.json docs/results/data_loading.png

Reads DATA-1's step times (the JPEG pipeline feeding an MLP trained on one thread) and,
if the report has it, DATA-2's throughput (the pipeline alone). Left: the measured step
time per worker count beside the model's prediction, max(L / w, C) (L + C without
workers), and the same bounded by the cores, (L + C) / cores; the loop's wait for data is
written at each point. Right: batches per second against workers, with the cores marked.
Under the title, the machine, date and the load average the report recorded, so the
picture says where its numbers come from. Needs python3-matplotlib; says so and exits 0
without it, so a missing plot never fails a run.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path


def claim(report: dict, claim_id: str) -> dict | None:
    """The claim @claim_id of a claims report, or None when the report does not have it."""
    return next((c for c in report.get("claims", []) if c.get("id") == claim_id), None)


def steps(report: dict) -> dict:
    """DATA-1's readings: {"workers": [...], "step_ms": [...], "ideal_ms": [...],
    "predicted_ms": [...], "wait": [...], "load_ms": L, "compute_ms": C}."""
    data1 = claim(report, "DATA-1")
    if data1 is None or not data1.get("data", {}).get("steps"):
        raise ValueError("no DATA-1 result with step times; run `gradlab claims --only DATA-1 DATA-2 --out DIR` "
                         "and give DIR/claims.json")
    d = data1["data"]
    rows = sorted(d["steps"], key=lambda s: s["workers"])
    load, compute = d["load_seconds"], d["compute_seconds"]

    def ideal(s):  # reports before "ideal_seconds" was recorded: the same formula
        w = s["workers"]
        return s.get("ideal_seconds", load + compute if w == 0 else max(load / w, compute))

    return {
        "workers": [s["workers"] for s in rows],
        "step_ms": [1e3 * s["step_seconds"] for s in rows],
        "ideal_ms": [1e3 * ideal(s) for s in rows],
        "predicted_ms": [1e3 * s["predicted_seconds"] for s in rows],
        "wait": [s["wait_fraction"] for s in rows],
        "load_ms": 1e3 * load,
        "compute_ms": 1e3 * compute,
        "cores": d.get("cores", report.get("cores")),
        "verdict": data1.get("verdict", ""),
    }


def throughput(report: dict) -> dict | None:
    """DATA-2's {"workers": [...], "batches_per_second": [...], "cores": n}, or None."""
    data2 = claim(report, "DATA-2")
    if data2 is None or not data2.get("data", {}).get("throughput"):
        return None
    rows = sorted(data2["data"]["throughput"], key=lambda t: t["workers"])
    return {"workers": [t["workers"] for t in rows], "batches_per_second": [t["batches_per_second"] for t in rows],
            "cores": data2["data"].get("cores", report.get("cores")), "verdict": data2.get("verdict", "")}


def provenance(report: dict) -> str:
    """'machine, date, load average before/after' from the report (what it has of it)."""
    parts = [str(report[k]) for k in ("machine", "date") if report.get(k)]
    loads = []
    for claim_id in ("DATA-1", "DATA-2"):
        c = claim(report, claim_id)
        load = c.get("load_average") if c else None
        if load:
            loads.append(f"{claim_id} load {load['before']:.2f} before, {load['after']:.2f} after")
    parts += loads
    if report.get("quick"):
        parts.append("quick run")
    return ", ".join(parts) if parts else "machine, date and load not recorded in the report"


def plot(plt, report: dict, out: Path) -> Path:
    s = steps(report)
    t = throughput(report)
    fig, axes = plt.subplots(1, 2 if t else 1, figsize=(12 if t else 6.5, 4.8), squeeze=False)
    ax = axes[0][0]
    ax.plot(s["workers"], s["step_ms"], "o-", color="tab:blue", label="measured step")
    ax.plot(s["workers"], s["ideal_ms"], "--", color="tab:gray", label="model max(L / w, C)  (L + C at 0)")
    if any(p > i * 1.001 for p, i in zip(s["predicted_ms"], s["ideal_ms"])):
        ax.plot(s["workers"], s["predicted_ms"], ":", color="tab:red", label=f"bounded by (L + C) / {s['cores']} cores")
    for w, ms, wait in zip(s["workers"], s["step_ms"], s["wait"]):
        ax.annotate(f"wait {100 * wait:.0f}%", (w, ms), textcoords="offset points", xytext=(4, 6), fontsize=8)
    ax.set_xlabel("loader worker threads")
    ax.set_ylabel("ms per training step")
    ax.set_xticks(s["workers"])
    ax.set_ylim(0, 1.2 * max(s["step_ms"] + s["predicted_ms"]))
    ax.set_title(f"DATA-1: L = {s['load_ms']:.2f} ms/batch, C = {s['compute_ms']:.2f} ms/step ({s['verdict']})",
                 fontsize=10)
    ax.legend(fontsize=8, loc="upper right")
    if t:
        ax = axes[0][1]
        ax.plot(t["workers"], t["batches_per_second"], "o-", color="tab:green", label="measured")
        if t["cores"]:
            ax.axvline(t["cores"], color="tab:gray", linestyle="--", label=f"{t['cores']} cores")
        ax.set_xlabel("loader worker threads")
        ax.set_ylabel("batches per second (no training)")
        ax.set_xticks(t["workers"])
        ax.set_ylim(0, 1.15 * max(t["batches_per_second"]))
        ax.set_title(f"DATA-2: throughput against workers ({t['verdict']})", fontsize=10)
        ax.legend(fontsize=8)
    fig.suptitle("Lab 06: the JPEG pipeline with worker threads\n" + textwrap.fill(provenance(report), 130), fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        report = json.loads(Path(sys.argv[1]).read_text())
        steps(report)  # refuse a report without DATA-1 before loading matplotlib
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"plot_data_loading.py: {sys.argv[1]}: {e}", file=sys.stderr)
        return 1
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot_data_loading.py: python3-matplotlib is not installed; no plot written")
        return 0
    print(f"wrote {plot(plt, report, Path(sys.argv[2]))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
