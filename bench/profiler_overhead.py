#!/usr/bin/env python3
"""The profiler's overhead (claim PROF-1): a SimpleNet training step with no profiler,
with the profiler off, and with it on, measured in one run.

    python3 bench/profiler_overhead.py --with build/bench/bench_profiler \\
        --without build-noprof/bench/bench_profiler [--rounds 11] [--min-time 0.5]

The two binaries are bench/bench_profiler.cpp built twice: --with from the default build
(scopes compiled in: "off" and "on"), --without from a build configured with
-Dprofiler=false (scopes compiled to nothing: "no profiler"). Each round runs the three
variants, each in a fresh process (so none profits from another's warm caches or thread
pool), in an order that rotates from round to round, so that a change in the machine's
load falls on all three. Each ratio is computed within a round (neighbours in time) and
the median over the rounds is reported, beside the median step times:

    off / no profiler   should be ~1.00 (indistinguishable: within the rounds' spread)
    on / off            should be <= 1.05
"""
import argparse
import json
import statistics
import subprocess
import sys

VARIANTS = {  # name -> (which binary, which benchmark)
    "no profiler": ("without", "BM_StepProfilerOff"),
    "off": ("with", "BM_StepProfilerOff"),
    "on": ("with", "BM_StepProfilerOn"),
}


def step_time_us(binary, benchmark, min_time):
    """The real time per iteration (us) of @benchmark, run alone in a fresh @binary."""
    out = subprocess.run(
        [binary, f"--benchmark_filter=^{benchmark}$", f"--benchmark_min_time={min_time}", "--benchmark_format=json"],
        check=True, capture_output=True, text=True).stdout
    [b] = json.loads(out)["benchmarks"]
    if b.get("error_occurred"):
        sys.exit(f"{binary}: {benchmark}: {b.get('error_message')}")
    return b["real_time"] * {"ns": 1e-3, "us": 1.0, "ms": 1e3}[b.get("time_unit", "ns")]


def compiled_out(binary):
    """True when @binary's profiler is compiled out (its "on" benchmarks report an error)."""
    out = subprocess.run([binary, "--benchmark_filter=^BM_ScopeOn$", "--benchmark_min_time=0.01",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    return bool(json.loads(out)["benchmarks"][0].get("error_occurred"))


def spread(values):
    """(min, max) relative to the median, in percent: how noisy the rounds were."""
    m = statistics.median(values)
    return 100 * (min(values) / m - 1), 100 * (max(values) / m - 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--with", dest="with_bin", required=True, help="bench_profiler of the default build")
    ap.add_argument("--without", dest="without_bin", required=True,
                    help="bench_profiler of a build configured with -Dprofiler=false")
    ap.add_argument("--rounds", type=int, default=11, help="rounds (default 11)")
    ap.add_argument("--min-time", type=float, default=0.5, help="seconds per variant per round")
    args = ap.parse_args()
    if args.rounds < 1:
        sys.exit("--rounds must be at least 1")
    binaries = {"with": args.with_bin, "without": args.without_bin}
    if not compiled_out(args.without_bin):
        sys.exit(f"{args.without_bin} has the profiler compiled in: build it with meson -Dprofiler=false")

    names = list(VARIANTS)
    times = {n: [] for n in names}
    off_none, on_off = [], []
    for r in range(args.rounds):
        for n in names[r % 3:] + names[:r % 3]:
            which, benchmark = VARIANTS[n]
            times[n].append(step_time_us(binaries[which], benchmark, args.min_time))
        t = {n: times[n][-1] for n in names}
        off_none.append(t["off"] / t["no profiler"])
        on_off.append(t["on"] / t["off"])
        print(f"round {r + 1}: no profiler {t['no profiler']:.1f} us, off {t['off']:.1f} us, on {t['on']:.1f} us;"
              f" off/none {off_none[-1]:.3f}, on/off {on_off[-1]:.3f}", flush=True)

    print(f"\nSimpleNet step, {args.rounds} rounds (medians):")
    for n in names:
        lo, hi = spread(times[n])
        print(f"  {n:12s} {statistics.median(times[n]):8.1f} us   (rounds {lo:+.1f}% .. {hi:+.1f}% of the median)")
    for label, ratios, goal in (("off / no profiler", off_none, "~1.00"), ("on / off", on_off, "<= 1.05")):
        lo, hi = min(ratios), max(ratios)
        print(f"  {label:17s} = {statistics.median(ratios):.3f}  (per round {lo:.3f} .. {hi:.3f}; acceptance {goal})")


if __name__ == "__main__":
    main()
