#!/usr/bin/env bash
# The checks that need a GPU, as one prepared run (claims GPU-1, GPU-2):
#   1. build gradlab for this machine's GPU (sm_90 on an H100/H200);
#   2. run every CUDA test, on the device as well as on the CPU runtime;
#   2b. run the NCCL backend's tests (every all-reduce algorithm and ncclAllReduce, one rank
#      per GPU) when the build has NCCL;
#   3. check the CUDA SGEMM family against a double-precision loop, then time it against
#      cublasSgemm at n = 1024, 2048, 4096, 8192, and write a Markdown table
#      (GFLOP/s, % of cuBLAS, GPU name, date) and the JSON it came from;
#   4. check the WMMA tensor-core GEMM (FP16 in, FP32 accumulation) against cublasGemmEx,
#      then time it against cublasGemmEx and cublasSgemm (hgemm_vs_cublas.md).
#
#   tools/gpu/run_gpu_checks.sh OUT_DIR [SM]
#
# OUT_DIR receives: sgemm_vs_cublas.md, sgemm_vs_cublas.json, cuda_tests.log (and .xml),
# build.log, summary.txt. SM defaults to what nvidia-smi reports (90 for Hopper).
# Without a GPU it says so and exits 0. If the full build cannot be configured there (a
# library the project needs is missing on that machine), it builds only the GPU benchmark,
# which needs nothing but nvcc and cuBLAS, and says that the device tests did not run.
set -uo pipefail

out=${1:?usage: tools/gpu/run_gpu_checks.sh OUT_DIR [SM]}
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd)
export PATH="/usr/local/cuda/bin:$PATH"
summary="$out/summary.txt"
: >"$summary"
say() { echo "$*" | tee -a "$summary"; }

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
    say "no GPU on this machine (nvidia-smi finds none): nothing to check"
    exit 0
fi
if ! command -v nvcc >/dev/null 2>&1; then
    say "a GPU is here but nvcc is not (looked in PATH and /usr/local/cuda/bin): cannot build"
    exit 1
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
sm=${2:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '.')}
say "GPU: $gpu (sm_$sm); $(nvcc --version | tail -1); $(date -u '+%Y-%m-%d %H:%M UTC')"
jobs=$(nproc 2>/dev/null || echo 4)
build="$root/build-gpu-sm$sm"
status=0

# 1. The full build, only for this GPU's architecture.
if meson setup "$build" "$root" --buildtype=release -Dwith_cuda=enabled -Dgpu_archs="$sm" \
        --reconfigure >"$out/build.log" 2>&1 ||
   meson setup "$build" "$root" --buildtype=release -Dwith_cuda=enabled -Dgpu_archs="$sm" \
        >>"$out/build.log" 2>&1; then
    if ninja -C "$build" -j"$jobs" tests/cuda_cpu_tests bench/cuda_gemm_gpu_bench bench/cuda_hgemm_gpu_bench >>"$out/build.log" 2>&1; then
        # 2. Every CUDA test. The device tests must run here: a skip means no device was found.
        "$build/tests/cuda_cpu_tests" --gtest_output="xml:$out/cuda_tests.xml" >"$out/cuda_tests.log" 2>&1
        tests_rc=$?
        say "$(grep -E '^\[  (PASSED|FAILED)  \]' "$out/cuda_tests.log" | tr '\n' ' ')"
        skipped=$(grep -c '^\[  SKIPPED \]' "$out/cuda_tests.log" || true)
        [ "$tests_rc" -eq 0 ] || { say "CUDA tests FAILED (see cuda_tests.log)"; status=1; }
        [ "$skipped" -eq 0 ] || say "$skipped tests skipped (see cuda_tests.log for why)"
        bench="$build/bench/cuda_gemm_gpu_bench"
        # 2b. The NCCL backend, when this build has it.
        if ninja -C "$build" -j"$jobs" tests/dist_nccl_tests >>"$out/build.log" 2>&1; then
            "$build/tests/dist_nccl_tests" >"$out/nccl_tests.log" 2>&1 ||
                { say "NCCL tests FAILED (see nccl_tests.log)"; status=1; }
            say "NCCL: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/nccl_tests.log" | tr '\n' ' ')"
        else
            say "NCCL tests not built (no NCCL found at configure time; see build.log)"
        fi
    else
        say "the full build failed (see build.log)"
        status=1
    fi
else
    say "the full build could not be configured here (see build.log: usually a missing library);"
    say "building only the GPU benchmark with nvcc; the device gtests did NOT run"
fi

# Fallback: the benchmark alone, which needs nothing but nvcc and cuBLAS.
if [ -z "${bench:-}" ]; then
    bench="$out/cuda_gemm_gpu_bench"
    if ! nvcc -std=c++20 -O3 --expt-relaxed-constexpr -gencode "arch=compute_$sm,code=sm_$sm" \
            -I"$root/core" -I"$root/tests" "$root/bench/cuda_gemm_gpu.cu" "$root/core/kernels/cuda/sgemm_gpu.cu" \
            "$root/core/kernels/cuda/sgemm_versions.cpp" "$root/core/cuda_cpu/host_api_gpu.cu" \
            "$root/tests/testkit/gemm_oracle.cpp" "$root/tests/testkit/timing.cpp" \
            -lcublas -o "$bench" >>"$out/build.log" 2>&1; then
        say "the nvcc-only build of the benchmark failed too (see build.log)"
        exit 1
    fi
fi

# 3. Check the family against the oracle, then time it against cuBLAS.
"$bench" --markdown_out="$out/sgemm_vs_cublas.md" --json_out="$out/sgemm_vs_cublas.json" \
    2>&1 | tee "$out/sgemm_bench.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || { say "the SGEMM check or benchmark FAILED (see sgemm_bench.log)"; status=1; }
[ -f "$out/sgemm_vs_cublas.md" ] && cat "$out/sgemm_vs_cublas.md" >>"$summary"

# 4. The tensor-core GEMM (WMMA, FP16 in, FP32 accumulation): checked against cublasGemmEx,
#    then timed against it and cublasSgemm (claims FP-5, FP-6).
hbench="$build/bench/cuda_hgemm_gpu_bench"
if [ ! -x "$hbench" ] && ! ninja -C "$build" -j"$jobs" bench/cuda_hgemm_gpu_bench >>"$out/build.log" 2>&1; then
    hbench="$out/cuda_hgemm_gpu_bench"
    nvcc -std=c++20 -O3 --expt-relaxed-constexpr -gencode "arch=compute_$sm,code=sm_$sm" -I"$root/core" -I"$root/tests" \
        "$root/bench/cuda_hgemm_gpu.cu" "$root/core/kernels/cuda/lowp_gpu.cu" "$root/core/cuda_cpu/host_api_gpu.cu" \
        "$root/tests/testkit/timing.cpp" \
        -lcublas -o "$hbench" >>"$out/build.log" 2>&1 || { say "the tensor-core GEMM benchmark did not build (see build.log)"; status=1; }
fi
if [ -x "$hbench" ]; then
    "$hbench" --markdown_out="$out/hgemm_vs_cublas.md" 2>&1 | tee "$out/hgemm_bench.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || { say "the tensor-core GEMM check or benchmark FAILED (see hgemm_bench.log)"; status=1; }
    [ -f "$out/hgemm_vs_cublas.md" ] && cat "$out/hgemm_vs_cublas.md" >>"$summary"
fi
say "done: results in $out"
exit $status
