#!/usr/bin/env python3
"""Plots for labs 02 and 04: GFLOP/s vs N for every GEMM kernel, and the roofline.

    tools/plot_cpu.py --gemm gemm.json --claims results/claims.json --out docs/results

--gemm    Google Benchmark JSON from build/bench/bench_gemm (--benchmark_format=json)
--claims  the claims report's JSON with MEM-1 (and CPU-1) measured in it
Writes gemm_gflops.png (one line per kernel and thread count) and roofline.png (the
measured peak and STREAM bandwidth as roofs, the element-wise kernels and GEMM as points).
Needs python3-matplotlib; says so and exits 0 without it, so a missing plot never fails
a run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path


def load_matplotlib():
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        return plt
    except ImportError:
        print("plot_cpu.py: python3-matplotlib is not installed; no plots written")
        return None


def gemm_points(path: Path) -> dict[str, list[tuple[int, float]]]:
    """{'threaded, 2 threads': [(N, GFLOP/s), ...]} for the square problems."""
    data = json.loads(path.read_text())
    lines: dict[str, list[tuple[int, float]]] = {}
    for b in data.get("benchmarks", []):
        m = re.match(r"gemm/([^/]+)/square/(\d+)x\d+x\d+/threads:(\d+)/", b.get("name", ""))
        if not m or b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        if b.get("run_type") == "iteration" and any(x.get("run_type") == "aggregate" for x in data["benchmarks"]):
            continue  # repetitions: use the medians only
        kernel, n, threads = m.group(1), int(m.group(2)), int(m.group(3))
        label = f"{kernel}, {threads} thread{'s' if threads > 1 else ''}"
        lines.setdefault(label, []).append((n, float(b["GFLOP/s"])))
    return lines


def plot_gemm(plt, path: Path, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 5))
    lines = gemm_points(path)
    kernels = list(dict.fromkeys(label.split(",")[0] for label in lines))
    colors = plt.get_cmap("tab10" if len(kernels) <= 10 else "tab20")  # a colour each
    for label, pts in sorted(lines.items()):  # one colour per kernel, dashed for 1 thread
        pts.sort()
        style = "--" if "1 thread" in label else "-"
        color = colors(kernels.index(label.split(",")[0]) % colors.N)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, color=color, marker="o", ms=3, label=label)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("N (square SGEMM, N x N x N)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("SGEMM: teaching kernels and peer libraries")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    target = out / "gemm_gflops.png"
    fig.tight_layout()
    fig.savefig(target, dpi=120)
    return target


def plot_roofline(plt, path: Path, out: Path) -> Path | None:
    claims = {c["id"]: c for c in json.loads(path.read_text()).get("claims", [])}
    mem1 = claims.get("MEM-1", {}).get("data")
    if not mem1 or "peak_gflops" not in mem1:
        print("plot_cpu.py: no MEM-1 measurements in", path, "- run `gradlab claims --only MEM-1` first")
        return None
    peak, bw = mem1["peak_gflops"], mem1.get("stream_triad_moved_gbs", mem1["stream_triad_gbs"])  # bytes moved, as the kernels count theirs
    fig, ax = plt.subplots(figsize=(7, 5))
    xs = [2 ** (e / 4) for e in range(-16, 41)]
    ax.plot(xs, [min(peak, bw * x) for x in xs], "k-", label=f"roofline: {peak:.0f} GFLOP/s, {bw:.1f} GB/s")
    for k in mem1.get("elementwise", []):
        ax.plot(k["intensity"], k["gflops"], "o", label=f"{k['name']} ({k['gbs']:.1f} GB/s)")
    g = mem1.get("gemm")
    if g:
        ax.plot(g["intensity"], g["gflops"], "s", label=f"GEMM N={g['n']} ({g['gflops']:.0f} GFLOP/s)")
    ax.axvline(peak / bw, color="grey", ls=":", label=f"ridge {peak / bw:.1f} flop/byte")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (flop / byte)")
    ax.set_ylabel("GFLOP/s")
    ax.set_title("Roofline of this machine, measured")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7)
    target = out / "roofline.png"
    fig.tight_layout()
    fig.savefig(target, dpi=120)
    return target


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gemm", type=Path, help="bench_gemm JSON output")
    parser.add_argument("--claims", type=Path, help="claims.json with MEM-1")
    parser.add_argument("--out", type=Path, required=True, help="folder for the PNG files")
    args = parser.parse_args(argv)
    if not args.gemm and not args.claims:
        parser.error("give --gemm, --claims or both")
    plt = load_matplotlib()
    if plt is None:
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    written = []
    if args.gemm:
        written.append(plot_gemm(plt, args.gemm, args.out))
    if args.claims:
        written.append(plot_roofline(plt, args.claims, args.out))
    for w in written:
        if w:
            print("written:", w)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
