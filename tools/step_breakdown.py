#!/usr/bin/env python3
"""The step-breakdown table: one SimpleNet training step by phase, from the JSON of
build/bench/bench_step_breakdown (Google Benchmark).

    python3 tools/step_breakdown.py step.json [--title TEXT] [--out table.md]

Each benchmark carries a "calls" counter: how often one step runs it. Rows with calls > 0
are phases of the step (time per call x calls = time per step); their sum is subtracted
from the whole step (step/whole) to give "the rest": the framework overhead that no row
itemizes (allocation, graph recording, dispatch, the backward engine, thread hand-offs).
Rows with calls = 0 (overhead/...) are unit costs that explain the rest.
"""
import argparse
import json
import sys


def load(path):
    with open(path) as f:
        doc = json.load(f)
    rows = []
    # With --benchmark_repetitions, each benchmark's median stands for it.
    repeated = any(b.get("run_type") == "aggregate" for b in doc["benchmarks"])
    for b in doc["benchmarks"]:
        if repeated and b.get("aggregate_name") != "median":
            continue
        if b.get("error_occurred"):
            continue
        name = b["name"].replace("/real_time", "").replace("_median", "")
        scale = {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b.get("time_unit", "ns")]
        rows.append({"name": name, "us": b["real_time"] * scale, "calls": b.get("calls", 0),
                     "gflops": b.get("GFLOP/s")})
    rows.sort(key=lambda r: r["name"])  # a stable order, whatever order the runs took
    return doc.get("context", {}), rows


def table(context, rows, title):
    step = next((r for r in rows if r["name"] == "step/whole"), None)
    if step is None:
        sys.exit("step_breakdown: the JSON has no step/whole benchmark; run bench_step_breakdown unfiltered")
    phases = [r for r in rows if r["calls"] > 0 and r["name"] != "step/whole"]
    units = [r for r in rows if r["calls"] == 0]
    whole = step["us"]
    out = [f"### {title}", ""]
    out.append(f"Machine: {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs at "
               f"{context.get('mhz_per_cpu', '?')} MHz; date {context.get('date', '?')}; load average "
               f"{', '.join(f'{x:.2f}' for x in context.get('load_avg', []))}; GEMM kernel "
               f"`{context.get('gemm', '?')}`, {context.get('threads', '?')} threads.")
    out += ["", "| phase | us per call | calls per step | us per step | % of step | GFLOP/s |",
            "|---|---:|---:|---:|---:|---:|"]
    total = 0.0
    for r in phases:
        per_step = r["us"] * r["calls"]
        total += per_step
        gf = f"{r['gflops']:.1f}" if r["gflops"] else ""
        out.append(f"| {r['name']} | {r['us']:.2f} | {r['calls']:g} | {per_step:.1f} | "
                   f"{100 * per_step / whole:.1f} | {gf} |")
    rest = whole - total
    out.append(f"| **the rest (framework overhead)** | | | {rest:.1f} | {100 * rest / whole:.1f} | |")
    out.append(f"| **whole step** | | 1 | {whole:.1f} | 100.0 | |")
    out += ["", "Unit costs of the framework (what the rest is made of):", "",
            "| cost | us per call |", "|---|---:|"]
    out += [f"| {r['name']} | {r['us']:.3f} |" for r in units]
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", help="bench_step_breakdown --benchmark_out=... --benchmark_out_format=json")
    ap.add_argument("--title", default="SimpleNet training step (batch 64, Adam) by phase")
    ap.add_argument("--out", help="write the table here (default: standard output)")
    args = ap.parse_args()
    try:
        context, rows = load(args.json)
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"step_breakdown: cannot read {args.json}: {e}")
    text = table(context, rows, args.title)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
