#!/usr/bin/env python3
"""Plot for lab 12 (claim Q-1): accuracy against model size against speed, FP32 and INT8.

    build/tools/gradlab claims --only Q-1 --out /tmp/q1
    tools/plot_q1.py --claims /tmp/q1/claims.json --out docs/results/q1.png

--claims  the claims report's JSON (gradlab claims --out DIR writes DIR/claims.json)
Writes one PNG of three panels: test accuracy against the model file's size on disk for
each model (the MLP and the CNN: FP32, PTQ per tensor and per channel with each observer,
QAT), the batch inference time in FP32 and INT8, and the GEMM speeds at N = 1024 and 2048
(our INT8, oneDNN's INT8, the best FP32). The title carries the machine, the date and the
load average the report recorded, so the picture says where its numbers come from. Needs
python3-matplotlib; says so and exits 0 without it, so a missing plot never fails a run.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def load_matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        print("plot_q1.py: python3-matplotlib is not installed; no plot written")
        return None


def q1_entry(path: Path) -> tuple[dict, dict]:
    """(the report, Q-1's entry) from the claims JSON; ValueError when Q-1 is not in it."""
    report = json.loads(path.read_text())
    for claim in report.get("claims", []):
        if claim.get("id") == "Q-1":
            data = claim.get("data") or {}
            if "models" not in data or "gemm" not in data:
                raise ValueError(f"{path}: Q-1 has no 'models' or 'gemm' data (was it run by an older gradlab?)")
            return report, claim
    raise ValueError(f"{path}: no Q-1 in it; run `gradlab claims --only Q-1 --out DIR` and give DIR/claims.json")


def points(data: dict) -> dict[str, list[tuple[str, float, float]]]:
    """{model: [(variant, file bytes, accuracy)]}: FP32 at the float file's size, every INT8
    variant at the INT8 file's size (per-tensor and per-channel files differ by a few bytes)."""
    out: dict[str, list[tuple[str, float, float]]] = {}
    for model, m in data["models"].items():
        sizes = m["file_bytes"]
        rows = [("FP32", float(sizes["fp32"]), float(m["fp32_accuracy"]))]
        for variant, accuracy in m["accuracy"].items():
            rows.append((variant, float(sizes["int8_per_channel"]), float(accuracy)))
        out[model] = rows
    return out


def provenance(report: dict, claim: dict) -> str:
    """'machine, date, load before/after' as the report recorded them."""
    parts = [str(report.get("machine", "machine not recorded")), str(report.get("date", "date not recorded"))]
    load = claim.get("load_average")
    if load:
        parts.append(f"load {load['before']:.1f} before, {load['after']:.1f} after on {report.get('cores', '?')} cores")
    if report.get("quick"):
        parts.append("quick run")
    return ", ".join(parts)


def plot(plt, report: dict, claim: dict, out: Path) -> Path:
    data = claim["data"]
    fig, (acc_ax, time_ax, gemm_ax) = plt.subplots(1, 3, figsize=(16, 5.5), gridspec_kw={"width_ratios": [1.5, 1, 1]})
    colors = plt.get_cmap("tab10")
    for i, (model, rows) in enumerate(points(data).items()):
        for variant, size, accuracy in rows:
            marker = "s" if variant == "FP32" else ("*" if variant.startswith("QAT") else
                                                    ("o" if "per-channel" in variant else "x"))
            acc_ax.scatter(size / 1e3, 100 * accuracy, color=colors(i), marker=marker, s=60 if marker == "*" else 30)
        fp32 = rows[0][2]
        acc_ax.annotate(f"{model} FP32", (rows[0][1] / 1e3, 100 * fp32), textcoords="offset points", xytext=(-10, 8),
                        ha="right", fontsize=8)
        best = max(rows[1:], key=lambda r: r[2])
        acc_ax.annotate(f"{model} INT8 (best: {best[0]})", (best[1] / 1e3, 100 * best[2]), textcoords="offset points",
                        xytext=(8, 4), fontsize=8)
    acc_ax.set_xscale("log")
    acc_ax.set_xlabel("model file on disk (kB, log)")
    acc_ax.set_ylabel("test accuracy (%)")
    acc_ax.set_title("accuracy vs size\n(square FP32, x per tensor, o per channel, * QAT)", fontsize=9)
    acc_ax.grid(alpha=0.3)

    models = list(data["models"])
    fp32_ms = [1e3 * data["models"][m]["inference_seconds"]["fp32"] for m in models]
    int8_ms = [1e3 * data["models"][m]["inference_seconds"]["int8"] for m in models]
    xs = range(len(models))
    time_ax.bar([x - 0.2 for x in xs], fp32_ms, 0.4, label="FP32")
    time_ax.bar([x + 0.2 for x in xs], int8_ms, 0.4, label="INT8")
    time_ax.set_xticks(list(xs))
    time_ax.set_xticklabels([f"{m}\n(batch {data['models'][m]['inference_seconds']['batch']})" for m in models])
    for x, (f, i) in enumerate(zip(fp32_ms, int8_ms)):
        time_ax.annotate(f"{f:.1f}", (x - 0.2, f), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=7)
        time_ax.annotate(f"{i:.1f}", (x + 0.2, i), textcoords="offset points", xytext=(0, 2), ha="center", fontsize=7)
    time_ax.set_yscale("log")  # the MLP's batch takes ~1 ms, the CNN's ~100
    time_ax.set_ylabel("ms per batch (log)")
    time_ax.set_title("inference time", fontsize=9)
    time_ax.legend(fontsize=8)

    gemm = data["gemm"]
    labels = [f"N = {g['n']}" for g in gemm]
    bars = [(f"INT8 ours ({gemm[0]['int8_kernel']})", [g["int8_gops"] for g in gemm]),
            ("INT8 ours, weights packed once", [g.get("int8_prepacked_gops", 0) for g in gemm]),
            ("INT8 oneDNN", [g.get("onednn_int8_gops", 0) for g in gemm]),
            ("best FP32", [max(g["fp32_gflops"].values()) for g in gemm])]
    width = 0.2
    xs = range(len(gemm))
    for b, (label, values) in enumerate(bars):
        offset = (b - 1.5) * width
        gemm_ax.bar([x + offset for x in xs], values, width, label=label)
        if b < 2:  # the INT8 / best FP32 ratio above our bars
            for x, (v, f) in enumerate(zip(values, bars[3][1])):
                gemm_ax.annotate(f"{v / f:.2f}x", (x + offset, v), textcoords="offset points", xytext=(0, 2),
                                 ha="center", fontsize=7)
    gemm_ax.set_xticks(list(xs))
    gemm_ax.set_xticklabels(labels)
    gemm_ax.set_ylabel("GOP/s (INT8), GFLOP/s (FP32)")
    gemm_ax.set_title(f"GEMM on {gemm[0]['threads']} threads (INT8 / best FP32 above)", fontsize=9)
    gemm_ax.legend(fontsize=8)

    fig.suptitle(f"Q-1: INT8 against FP32, accuracy vs size vs speed ({claim.get('verdict', '?')})\n"
                 f"{provenance(report, claim)}", fontsize=10)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--claims", type=Path, required=True, help="claims.json from `gradlab claims --out DIR`")
    parser.add_argument("--out", type=Path, required=True, help="PNG to write")
    args = parser.parse_args(argv)
    try:
        report, claim = q1_entry(args.claims)
    except (OSError, ValueError, json.JSONDecodeError) as e:
        print(f"plot_q1.py: {e}", file=sys.stderr)
        return 2
    plt = load_matplotlib()
    if plt is None:
        return 0
    print(f"plot_q1.py: wrote {plot(plt, report, claim, args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
