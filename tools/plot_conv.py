#!/usr/bin/env python3
"""Plot for lab 11 (claim CONV-1): time per convolution algorithm on each layer shape.

    GRADLAB_THREADS=2 build/bench/bench_conv --benchmark_out=conv.json --benchmark_out_format=json
    tools/plot_conv.py --bench conv.json --out docs/results

--bench  Google Benchmark JSON from build/bench/bench_conv
Writes conv_times.png: one group of bars per layer of the CNN and the ResNet, one bar per
algorithm (ours, and oneDNN's two settings), milliseconds per forward pass on a log scale,
so which algorithm wins where can be read off; under the title, the machine, date and
load average the benchmark's JSON recorded (its "context"), so the picture says where its
numbers come from. Needs python3-matplotlib; says so and exits 0 without it, so a missing
plot never fails a run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

NAME = re.compile(r"Conv/([^/]+)/([^/]+)/")


def load_matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        print("plot_conv.py: python3-matplotlib is not installed; no plots written")
        return None


def times(path: Path) -> dict[str, dict[str, float]]:
    """{layer: {algorithm: ms}} from the benchmark's JSON (medians when it has repetitions)."""
    runs = json.loads(path.read_text()).get("benchmarks", [])
    has_aggregates = any(b.get("run_type") == "aggregate" for b in runs)
    table: dict[str, dict[str, float]] = {}
    for b in runs:
        m = NAME.match(b.get("name", ""))
        if not m or b.get("error_occurred"):
            continue
        if has_aggregates and b.get("aggregate_name") != "median":
            continue
        if b.get("time_unit") != "ms":
            raise ValueError(f"{path}: {b['name']} is in {b.get('time_unit')}, expected ms")
        table.setdefault(m.group(1), {})[m.group(2)] = float(b["real_time"])
    if not table:
        raise ValueError(f"{path}: no Conv/<layer>/<algorithm> benchmarks in it; is it bench_conv's JSON?")
    return table


def provenance(path: Path) -> str:
    """'host, N CPUs, date, load a b c' from the benchmark JSON's context (what it has of it)."""
    context = json.loads(path.read_text()).get("context", {})
    parts = []
    if context.get("host_name"):
        parts.append(str(context["host_name"]))
    if context.get("num_cpus"):
        mhz = f" at {context['mhz_per_cpu']} MHz" if context.get("mhz_per_cpu") else ""
        parts.append(f"{context['num_cpus']} CPUs{mhz}")
    if context.get("date"):
        parts.append(str(context["date"]))
    if context.get("load_avg"):
        parts.append("load average " + " ".join(f"{x:.2f}" for x in context["load_avg"]))
    return ", ".join(parts) if parts else "machine, date and load not recorded in the JSON"


# The registry's order (kernels/cpu/conv/conv.hpp), then the peers; names not listed
# (a newer algorithm) follow in the order the JSON has them.
ALGORITHM_ORDER = ["direct", "im2col", "winograd_f2", "winograd_f4", "fft", "fft_fftw", "implicit_gemm",
                   "onednn", "onednn_blocked"]


def ordered(names, order: list[str]) -> list[str]:
    """@p names in @p order's order, the ones @p order lacks after them in their own order
    (with --benchmark_enable_random_interleaving the JSON's order is random)."""
    names = list(dict.fromkeys(names))
    return sorted(names, key=lambda n: (order.index(n) if n in order else len(order), names.index(n)))


def plot(plt, table: dict[str, dict[str, float]], out: Path, subtitle: str = "") -> Path:
    layers = sorted(table, key=lambda layer: (not layer.startswith("cnn."), layer))  # the CNN's, then the ResNet's
    algorithms = ordered((a for per_layer in table.values() for a in per_layer), ALGORITHM_ORDER)
    width = 0.8 / len(algorithms)
    fig, ax = plt.subplots(figsize=(11, 5))
    colors = plt.get_cmap("tab10")
    for i, algo in enumerate(algorithms):
        xs = [j + (i - len(algorithms) / 2 + 0.5) * width for j, layer in enumerate(layers) if algo in table[layer]]
        ys = [table[layer][algo] for layer in layers if algo in table[layer]]
        ax.bar(xs, ys, width, label=algo, color=colors(i % 10))
    ax.set_xticks(range(len(layers)))
    ax.set_xticklabels(layers, rotation=30, ha="right")
    ax.set_yscale("log")
    ax.set_ylabel("ms per forward pass (batch 64)")
    title = "Convolution algorithms per layer shape (no bar: the algorithm cannot run it, or direct with C > 16, not timed)"
    ax.set_title(title + ("\n" + subtitle if subtitle else ""), fontsize="medium")
    ax.legend(ncol=4, fontsize="small")
    ax.grid(axis="y", which="both", alpha=0.3)
    fig.tight_layout()
    out.mkdir(parents=True, exist_ok=True)
    path = out / "conv_times.png"
    fig.savefig(path, dpi=120)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", type=Path, required=True)
    ap.add_argument("--out", type=Path, default=Path("."))
    args = ap.parse_args()
    try:
        table = times(args.bench)
        subtitle = provenance(args.bench)
    except (OSError, ValueError) as e:
        print(f"plot_conv.py: {e}", file=sys.stderr)
        return 2
    plt = load_matplotlib()
    if plt is None:
        return 0
    print(f"wrote {plot(plt, table, args.out, subtitle)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
