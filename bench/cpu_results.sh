#!/usr/bin/env bash
# Measures everything docs/results/cpu-gemm-roofline.md reports, into one folder:
#   bench/cpu_results.sh [OUT_DIR]      (default: results/cpu; takes about 3 minutes)
# gemm.json (every GEMM kernel, N = 64..2048 and the SimpleNet shapes, 1 and 2 threads),
# acceptance.json (ours, threaded and balanced, vs OpenBLAS and oneDNN at N = 1024, 2048,
# 2 threads, 5 interleaved repetitions), calls.{txt,json} (the same four kernels timed call by
# call, alternating in blocks: every call's time), ceiling.{txt,json} (N = 2048: the FMA
# peak, the micro-kernel on a hot block, the loops without and with packing, balanced and
# oneDNN), claims.{md,json} (GEMM-1, CPU-1/2, MEM-1/2/3, full size), train.txt (SimpleNet,
# Adam, batch 64, 2 threads, 5 epochs, threaded vs eigen), peers.txt/json (SimpleNet epoch
# time beside PyTorch's, when python3-torch is installed), the plots.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${GRADLAB_BUILD:-$ROOT/build}"
OUT="${1:-$ROOT/results/cpu}"
mkdir -p "$OUT"
ninja -C "$BUILD" bench/bench_gemm bench/gemm_calls bench/gemm_ceiling tools/gradlab >/dev/null
{ date -u +%Y-%m-%dT%H:%MZ; uptime; "$BUILD/tools/gradlab" info; } > "$OUT/machine.txt"
"$BUILD/bench/bench_gemm" --benchmark_min_time=0.2 --benchmark_format=json --benchmark_out="$OUT/gemm.json" \
  --benchmark_out_format=json >/dev/null
"$BUILD/bench/bench_gemm" --benchmark_filter='(threaded|balanced|openblas|onednn)/square/(1024|2048)x.*threads:2' \
  --benchmark_repetitions=5 --benchmark_enable_random_interleaving=true --benchmark_min_time=0.3 \
  --benchmark_out="$OUT/acceptance.json" --benchmark_out_format=json >/dev/null
"$BUILD/bench/gemm_calls" --n 1024 2048 --kernels balanced threaded onednn openblas --rounds 12 \
  --json "$OUT/calls.json" > "$OUT/calls.txt"
"$BUILD/bench/gemm_ceiling" --n 2048 --kernels balanced onednn --rounds 8 --json "$OUT/ceiling.json" \
  > "$OUT/ceiling.txt"
"$BUILD/tools/gradlab" claims --only GEMM-1 CPU-1 CPU-2 MEM-1 MEM-2 MEM-3 --out "$OUT" > "$OUT/claims.txt"
{ for gemm in threaded eigen; do "$BUILD/tools/gradlab" train --epochs 5 --threads 2 --gemm "$gemm"; done; } \
  > "$OUT/train.txt" 2>&1
python3 "$ROOT/tools/peers/compare_simplenet.py" --gradlab "$BUILD/tools/gradlab" --epochs 2 --rounds 3 \
  --json "$OUT/peers.json" > "$OUT/peers.txt"
/usr/bin/python3 "$ROOT/tools/plot_cpu.py" --gemm "$OUT/gemm.json" --claims "$OUT/claims.json" --out "$OUT"
