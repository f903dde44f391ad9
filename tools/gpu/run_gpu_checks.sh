#!/usr/bin/env bash
# The checks that need a GPU, as one prepared run for a machine that is lent for minutes
# (claims GPU-1, GPU-2, FP-5, FP-6). It must work the first time it meets a GPU, so every
# step below also runs in CI, in a dry run on the CUDA-on-CPU runtime.
#
#   tools/gpu/run_gpu_checks.sh [--dry-run] [--reuse-build DIR] [--budget SECONDS] OUT_DIR
#
# On a GPU machine (nvidia-smi finds one), in this order, each step a row of the table:
#   1. machine    the GPU, its compute capability (the build's only -Dgpu_archs), driver;
#   2. deps       unpacks .gpu-deps/ (tools/gpu/pack_deps.sh: the Debian -dev packages
#                 the GPU image lacks) into a private prefix and points pkg-config, meson,
#                 the compiler and the linker at it (tools/gpu/deps_prefix.sh);
#   3. cuda       finds nvcc, cudart, cuBLAS and NCCL, in a toolkit or in Python wheels
#                 (tools/gpu/cuda_locate.sh), and says where;
#   4. configure  meson from scratch in build-gpu/ (release, CUDA on), and which optional
#                 peers it found (OpenBLAS, oneDNN, MPI: not carried, so usually none);
#   5. build      the targets below with every core (if configure or build fails, the two
#                 benchmarks are built alone with nvcc, so numbers still come back, and
#                 the device tests are marked "did not run");
#   6. runtime    every program finds its libraries (ldd: nothing "not found");
#   7. device tests  every test that needs a GPU (by convention, a name with "Device" or
#                 "MatchesGpu"), FIRST, each in its own process, so a faulting kernel
#                 cannot hide the others; counts from the GoogleTest XML: a skip is a
#                 failure here, and so is no test at all;
#   8. sgemm      the CUDA SGEMM family checked, then timed against cublasSgemm (JSON
#                 with "GFLOP/s", Markdown table);
#   9. hgemm      the WMMA tensor-core GEMM checked against, then timed with, cublasGemmEx
#                 and cublasSgemm;
#   9b. igemm     the INT8 GEMMs (dp4a, INT8 WMMA) checked against (exactly), then timed
#                 with, cuBLASLt's INT8 matmul (claim Q-1);
#  10. device tensor  SimpleNet trained for one epoch on the GPU and on the CPU (epoch time
#                 and test accuracy of each; passed when the accuracies agree within a
#                 point); needs Fashion-MNIST (pack_deps.sh carries a copy);
#  11. nccl       the NCCL backend with one rank (tests/dist/test_dist_nccl.cpp);
#  12. streams claims  the claims report's ASYNC-1 (streams overlap copies and compute),
#                 DATA-3 (pinned vs pageable copies), MEM-3 (device vs host bandwidth) and
#                 CHOICE-1 (the CPU/GPU crossover size) rows, measured on the GPU (`gradlab claims --quick --only ...`); passed
#                 when every row has a computed verdict, which on a GPU must not be "needs
#                 a GPU" (in the dry run it is: the CPU-runtime halves are what it checks).
#
# OUT_DIR receives two files, rewritten after every step (a run stopped at its time limit
# still leaves them): gpu_checks.md, the table (verdict, machine, one row per step, the
# benchmark tables), and gpu_checks_logs.tar.gz, everything else (logs, test XML, JSON,
# meson's log, what was found where). Exit status: 0 only when every step passed; 1 when
# a check failed, the device tests did not run, a table is missing, or time ran out; 2 for
# a bad command line or no GPU (without --dry-run).
#
# The one command for whoever holds a GPU machine (the tool `run`, one H200, 16 cores):
#   first, here:  tools/gpu/pack_deps.sh            (once; writes .gpu-deps/, about 45 MiB)
#   then run with command: tools/gpu/run_gpu_checks.sh $OUT
#                 carry: [".gpu-deps"]   timeout_s: 420
# It takes about 5 minutes (budget 400 s, checked before each step), which leaves time for
# one rerun in 15 minutes of device time (on the still-warm machine, add --reuse-build
# build-gpu before $OUT). Copy $OUT/gpu_checks.md to
# docs/results/YYYY-MM-DD-gpu-checks-h200.md and commit it.
#
# --dry-run: the rehearsal for a CPU-only machine (tests/tools/test_gpu_checks.py runs it
#   in CI). Put a stand-in nvidia-smi first on PATH (tests/tools/fake_gpu/nvidia-smi); where a
#   GPU would be used, the CUDA-on-CPU runtime is: the device-test step runs the same
#   kernels' tests on the CPU runtime (CudaGemm.*, CudaLowp.*, CudaConv.*, CudaIgemm.*),
#   the benchmarks are the same programs built for the CPU runtime (our kernels, WMMA
#   included, run on it; host loops stand in for cuBLAS: bench/cuda_*_dryrun.cpp), and
#   NCCL, which has no CPU form, may skip.
# --reuse-build DIR: build in DIR (already configured) instead of from scratch: CI's dry
#   run reuses build/; a rerun on a GPU machine that is still warm reuses build-gpu/ and
#   the prefix .gpu-prefix/ of the first run (`--reuse-build build-gpu`: no configure, an
#   incremental build, about 3 minutes).
# Environment: GPU_CHECKS_SIZES (default 1024,2048,4096,8192; dry run 32,64),
#   GPU_CHECKS_DEVICE_TESTS (a GoogleTest filter for step 7), GPU_CHECKS_MESON_OPTIONS
#   (more options for meson setup).
set -uo pipefail

usage() { echo "usage: tools/gpu/run_gpu_checks.sh [--dry-run] [--reuse-build DIR] [--budget SECONDS] OUT_DIR" >&2; exit 2; }
dry_run=0 reuse="" budget=400 out=""
while [ $# -gt 0 ]; do
    case "$1" in
        --dry-run) dry_run=1 ;;
        --reuse-build) reuse=${2:?--reuse-build needs a folder}; shift ;;
        --budget) budget=${2:?--budget needs seconds}; shift ;;
        -h|--help) sed -n '2,60p' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; usage ;;
        *) [ -z "$out" ] || usage; out=$1 ;;
    esac
    shift
done
[ -n "$out" ] || usage

root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$out" && out=$(cd "$out" && pwd)
logs=$(mktemp -d "${TMPDIR:-/tmp}/gradlab-gpu-checks.XXXX")
# What is worth keeping goes into the archive after every step (write_outputs); the
# folder itself, with the nvcc-only build in it, goes when the script ends.
trap 'rm -rf "$logs"' EXIT
# The private prefix lives beside the build, so that a rerun with --reuse-build finds both.
prefix=${GPU_CHECKS_PREFIX:-$root/.gpu-prefix}
table="$out/gpu_checks.md"
archive="$out/gpu_checks_logs.tar.gz"
rm -f "$table" "$archive"
jobs=$(nproc 2>/dev/null || echo 4)
start_time=$SECONDS
if [ "$dry_run" -eq 1 ]; then
    sizes=${GPU_CHECKS_SIZES:-32,64}
    device_filter=${GPU_CHECKS_DEVICE_TESTS:-*CudaGemm.*_in_order:CudaLowp.*:CudaConv.*:CudaIgemm.*}
else
    sizes=${GPU_CHECKS_SIZES:-1024,2048,4096,8192}
    device_filter=${GPU_CHECKS_DEVICE_TESTS:-*Device*:*MatchesGpu*-*WithoutAGpu*}
fi

# ---------------------------------------------------------------------------------------
# The table: one row per step, rewritten (with the archive) after each.
rows=() failures=0 machine_lines=() bench_tables=() finished=0
write_outputs() {
    local verdict
    if [ "$failures" -gt 0 ]; then verdict="**FAILED: $failures step(s) did not pass**"
    elif [ "$finished" -eq 1 ]; then verdict="**every step passed**"
    else verdict="**unfinished: every step so far passed; the run stopped before the end**"; fi
    {
        if [ "$dry_run" -eq 1 ]; then
            echo "# GPU checks: DRY RUN on the CUDA-on-CPU runtime (no GPU was used)"
        else
            echo "# GPU checks: ${gpu_name:-unknown GPU}"
        fi
        echo
        echo "$verdict ($(( SECONDS - start_time )) s, tools/gpu/run_gpu_checks.sh, $(date -u '+%Y-%m-%d %H:%M UTC'))"
        echo
        for line in "${machine_lines[@]}"; do echo "- $line"; done
        echo
        echo "| step | result | details |"
        echo "|---|---|---|"
        for row in "${rows[@]}"; do echo "$row"; done
        for t in "${bench_tables[@]}"; do echo; sed 's/^# /## /' "$t"; done
    } >"$table.tmp" && mv "$table.tmp" "$table"
    tar -czf "$archive.tmp" -C "$logs" --exclude=prefix --exclude=nvcc-only ./ 2>/dev/null && mv "$archive.tmp" "$archive"
}
# record STEP RESULT DETAILS: RESULT is passed, FAILED, "did not run" (a failure too),
# or a note that is not a failure ("not built yet", "skipped (dry run)", "skipped (reused build)").
record() {
    local step="$1" result="$2" details="${3//|/\\|}"
    case "$result" in FAILED*|"did not run"*) failures=$((failures + 1)) ;; esac
    rows+=("| $step | $result | ${details//$'\n'/<br>} |")
    echo "[$(( SECONDS - start_time ))s] $step: $result${details:+ ($details)}" | tee -a "$logs/summary.txt"
    write_outputs
}
# Seconds left of the budget; a step that would start with less than 10 does not run.
time_left() { echo $(( budget - (SECONDS - start_time) )); }
out_of_time() {
    if [ "$(time_left)" -lt 10 ]; then record "$1" "did not run" "out of time (budget $budget s)"; return 0; fi
    return 1
}
finish() {
    finished=1
    write_outputs
    echo "results: $table; logs: $archive"
    [ "$failures" -eq 0 ] && exit 0
    exit 1
}

# gtest_verdict STEP RC SKIP_RESULT DETAIL XML...: the row of a GoogleTest step, from its
# XML reports (tools/gpu/gtest_xml.py; a missing report counts as a failed test). A skip,
# or no test at all, is SKIP_RESULT: "did not run" (a failure) where a GPU is required.
gtest_verdict() {
    local step="$1" rc="$2" skip_result="$3" detail="$4" summary counts ran failed skipped notes
    shift 4
    summary=$(python3 "$root/tools/gpu/gtest_xml.py" "$@")
    counts=$(head -1 <<<"$summary")
    if ! [[ "$counts" =~ ^ran=([0-9]+)\ passed=[0-9]+\ failed=([0-9]+)\ skipped=([0-9]+)$ ]]; then
        record "$step" FAILED "could not read the test reports ($detail): ${summary:-no output}"
        return
    fi
    ran=${BASH_REMATCH[1]} failed=${BASH_REMATCH[2]} skipped=${BASH_REMATCH[3]}
    notes=$(sed -n 2,4p <<<"$summary" | cut -c1-160 | paste -sd ';')
    if [ "$failed" -gt 0 ] || [ "$rc" -ne 0 ]; then
        record "$step" FAILED "$counts, exit code $rc; $detail${notes:+; $notes}"
    elif [ "$ran" -eq 0 ] || [ "$skipped" -gt 0 ]; then
        record "$step" "$skip_result" "$counts; $detail${notes:+; $notes}"
    else
        record "$step" passed "$counts; $detail"
    fi
}

# ---------------------------------------------------------------------------------------
# 1. The machine.
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >"$logs/nvidia-smi.txt" 2>&1; then
    record machine "did not run" "nvidia-smi finds no GPU: this script needs one (or --dry-run with a stand-in nvidia-smi)"
    write_outputs
    exit 2
fi
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
sm=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d '. ')
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
nvidia-smi >>"$logs/nvidia-smi.txt" 2>&1
machine_lines+=("GPU: $gpu_name (sm_$sm), driver $driver; $jobs CPU cores; $(uname -srm)")
[ "$dry_run" -eq 1 ] && machine_lines+=("dry run: the CUDA-on-CPU runtime stands in for the GPU, host loops for cuBLAS and WMMA; sizes $sizes")
# meson and ninja: on the GPU image they come from pip, maybe only as Python modules.
if ! command -v ninja >/dev/null 2>&1; then
    ninja_dir=$(python3 -c 'import ninja; print(ninja.BIN_DIR)' 2>/dev/null) && export PATH="$PATH:$ninja_dir"
fi
if ! command -v meson >/dev/null 2>&1 && python3 -c 'import mesonbuild' 2>/dev/null; then
    meson() { python3 -m mesonbuild.mesonmain "$@"; }
fi
if ! meson --version >/dev/null 2>&1 || ! ninja --version >/dev/null 2>&1; then
    record machine FAILED "$gpu_name: meson or ninja not found (PATH, or the Python modules mesonbuild, ninja)"
    finish
fi
machine_lines+=("meson $(meson --version), ninja $(ninja --version), $(c++ --version 2>/dev/null | head -1)")
record machine passed "$gpu_name, sm_$sm"

# 2. The carried Debian packages, unpacked into a private prefix.
# shellcheck source=deps_prefix.sh
source "$root/tools/gpu/deps_prefix.sh"
if [ -n "$reuse" ] && [ -f "$prefix/native.ini" ]; then
    deps_use "$prefix"
    record deps passed "reused the prefix $prefix (--reuse-build)"
elif [ -n "$reuse" ]; then
    record deps "skipped (reused build)" "no prefix at $prefix: $reuse was configured with this machine's libraries"
elif compgen -G "$root/.gpu-deps/*.deb" >/dev/null; then
    rm -rf "$prefix"
    if deps_unpack "$root/.gpu-deps" "$prefix" >"$logs/deps.log" 2>&1; then
        deps_use "$prefix"
        record deps passed "$(ls "$root"/.gpu-deps/*.deb | wc -l) packages from .gpu-deps ($(du -sm "$root/.gpu-deps" | cut -f1) MiB) unpacked into $prefix"
    else
        record deps FAILED "dpkg -x of .gpu-deps failed (deps.log)"
        finish
    fi
else
    record deps "not carried" "no .gpu-deps/ (tools/gpu/pack_deps.sh, then carry it): using this machine's own libraries"
fi

# 3. CUDA: nvcc, cudart, cuBLAS, NCCL, wherever this machine keeps them.
# shellcheck source=cuda_locate.sh
source "$root/tools/gpu/cuda_locate.sh"
: >"$logs/cuda_found.txt"
if cuda_locate "$prefix" "$logs/cuda_found.txt"; then
    machine_lines+=("CUDA: $(paste -sd ';' "$logs/cuda_found.txt" | sed 's/;/; /g')")
    if grep -qE '^(libcudart|libcublas|cuda_runtime.h|cublas_v2.h): not found' "$logs/cuda_found.txt"; then
        record cuda FAILED "$(grep 'not found' "$logs/cuda_found.txt" | paste -sd ';')"
    else
        record cuda passed "$(head -1 "$logs/cuda_found.txt")"
    fi
elif [ -n "$reuse" ]; then
    record cuda "skipped (reused build)" "no nvcc here: the reused build is what runs"
else
    record cuda FAILED "nvcc not found (cuda_found.txt)"
    finish
fi

# 4. Configure from scratch (or reuse, in CI's dry run).
if [ "$dry_run" -eq 1 ]; then
    sgemm_bin=bench/cuda_gemm_dryrun_bench hgemm_bin=bench/cuda_hgemm_dryrun_bench
    igemm_bin=bench/cuda_igemm_dryrun_bench
else
    sgemm_bin=bench/cuda_gemm_gpu_bench hgemm_bin=bench/cuda_hgemm_gpu_bench
    igemm_bin=bench/cuda_igemm_gpu_bench
fi
configured=0
if [ -n "$reuse" ]; then
    build=$(cd "$reuse" && pwd)
    configured=1
    record configure "skipped (reused build)" "$build, configured earlier"
else
    build="$root/build-gpu"
    rm -rf "$build"
    native=()
    [ -f "$prefix/native.ini" ] && native=(--native-file "$prefix/native.ini")
    # shellcheck disable=SC2086 # GPU_CHECKS_MESON_OPTIONS is a list of options
    if meson setup "$build" "$root" "${native[@]}" --buildtype=release -Dwith_cuda=enabled \
            -Dgpu_archs="$sm" ${GPU_CHECKS_MESON_OPTIONS:-} >"$logs/configure.log" 2>&1; then
        configured=1
        peers=$(grep -E '^(Run-time dependency (openblas|MPI)|Library (dnnl|nccl)) ' "$logs/configure.log" |
                sed -E 's/^(Run-time dependency|Library) //; s/ found: /: /; s/ \(.*//' | paste -sd ';' | sed 's/;/; /g')
        record configure passed "optional peers: $peers"
    else
        record configure FAILED "meson setup failed (configure.log): $(grep -m1 -E 'ERROR' "$logs/configure.log" | cut -c1-200)"
        cp "$build/meson-logs/meson-log.txt" "$logs/" 2>/dev/null
    fi
fi

# 5. Build what the checks run. Should the full build fail here, the two benchmarks are
# built alone with nvcc (they need nothing but CUDA and cuBLAS), so the run still brings
# back numbers; the device tests then did not run, and the verdict says so.
all_targets=""
[ "$configured" -eq 1 ] && all_targets=$(ninja -C "$build" -t targets all 2>/dev/null | cut -d: -f1)
targets=(tests/cuda_cpu_tests "$sgemm_bin" "$hgemm_bin" "$igemm_bin")
for optional in tests/dist_nccl_tests tools/gradlab; do
    grep -qx "$optional" <<<"$all_targets" && targets+=("$optional")
done
build_benchmarks_alone() {
    build="$logs/nvcc-only"
    targets=("$sgemm_bin" "$hgemm_bin" "$igemm_bin")
    mkdir -p "$build/bench"
    local nv=(nvcc -std=c++20 -O3 --expt-relaxed-constexpr -gencode "arch=compute_$sm,code=sm_$sm" -I"$root/core"
              -I"$root/tests")
    # The testkit files the benchmarks use (the oracle, the median) need nothing from the core.
    (cd "$root" && "${nv[@]}" bench/cuda_gemm_gpu.cu core/kernels/cuda/sgemm_gpu.cu core/kernels/cuda/sgemm_versions.cpp \
        core/cuda_cpu/host_api_gpu.cu tests/testkit/gemm_oracle.cpp tests/testkit/timing.cpp -lcublas \
        -o "$build/$sgemm_bin" &&
     "${nv[@]}" bench/cuda_hgemm_gpu.cu core/kernels/cuda/lowp_gpu.cu core/cuda_cpu/host_api_gpu.cu \
        tests/testkit/timing.cpp -lcublas -o "$build/$hgemm_bin" &&
     "${nv[@]}" bench/cuda_igemm_gpu.cu core/kernels/cuda/igemm_gpu.cu core/cuda_cpu/host_api_gpu.cu \
        tests/testkit/timing.cpp -lcublasLt -lcublas -o "$build/$igemm_bin") >"$logs/nvcc-only.log" 2>&1
}
full_build=0
if out_of_time build; then
    finish
elif [ "$configured" -eq 1 ] && timeout "$(time_left)" ninja -C "$build" -j"$jobs" "${targets[@]}" >"$logs/build.log" 2>&1; then
    full_build=1
    record build passed "${targets[*]} in $(( SECONDS - start_time )) s since the start, on $jobs cores"
    cp "$build/meson-logs/meson-log.txt" "$logs/" 2>/dev/null
else
    rc=$?
    if [ "$configured" -eq 1 ] && [ "$rc" -eq 124 ]; then
        record build FAILED "stopped: out of time (budget $budget s; build.log: $(tail -1 "$logs/build.log" | cut -c1-100))"
    elif [ "$configured" -eq 1 ]; then
        record build FAILED "ninja failed (build.log): $(grep -m1 -E 'error|FAILED' "$logs/build.log" | cut -c1-200)"
    fi
    if [ "$dry_run" -eq 0 ] && build_benchmarks_alone; then
        record "nvcc-only build" passed "the two benchmarks alone, with nvcc and cuBLAS (nvcc-only.log); no tests"
    else
        [ "$dry_run" -eq 0 ] && record "nvcc-only build" FAILED "nvcc-only.log: $(grep -m1 error "$logs/nvcc-only.log" | cut -c1-200)"
        finish
    fi
fi

# 6. Every program finds its libraries (libcudart, libcublas, NCCL, fmt ...) at run time.
missing=""
for t in "${targets[@]}"; do
    if [ ! -x "$build/$t" ]; then missing="$missing $t: not built;"; continue; fi
    m=$(ldd "$build/$t" 2>&1 | grep 'not found' | awk '{print $1}' | paste -sd ' ')
    [ -n "$m" ] && missing="$missing $t: $m;"
done
ldd "$build/$sgemm_bin" >"$logs/ldd.txt" 2>&1
if [ -z "$missing" ]; then
    record runtime passed "$(grep -oE 'lib(cudart|cublas|nccl)[^ ]* => [^ ]*' "$logs/ldd.txt" | paste -sd ';' | sed 's/;/; /g')"
else
    record runtime FAILED "$missing (LD_LIBRARY_PATH=$LD_LIBRARY_PATH)"
fi

# 7. The device tests, first, each in its own process.
if [ ! -x "$build/tests/cuda_cpu_tests" ]; then
    record "device tests" "did not run" "the test program was not built"
elif ! out_of_time "device tests"; then
    mkdir -p "$logs/device_tests"
    names=$("$build/tests/cuda_cpu_tests" --gtest_list_tests --gtest_filter="$device_filter" |
        awk '/^[^ ]/{suite=$1} /^  /{print suite $1}')
    reports=() worst=0 i=0
    for name in $names; do
        i=$((i + 1))
        if [ "$(time_left)" -lt 10 ]; then
            echo "out of time before $name" >>"$logs/device_tests/run.log"
            worst=124
            break
        fi
        # GRADLAB_TEST_DEVICE: the device-tensor tests (test_device_tensor.cpp) run on the GPU here.
        GRADLAB_TEST_DEVICE=cuda timeout 120 "$build/tests/cuda_cpu_tests" --gtest_filter="$name" \
            --gtest_output="xml:$logs/device_tests/$i.xml" >"$logs/device_tests/$i.log" 2>&1
        rc=$?
        [ "$rc" -eq 0 ] || { echo "$name: exit code $rc ($i.log)" >>"$logs/device_tests/run.log"; worst=$rc; }
        reports+=("$logs/device_tests/$i.xml")
    done
    if [ "$i" -eq 0 ]; then
        record "device tests" "did not run" "no test matches the filter '$device_filter'"
    else
        gtest_verdict "device tests" "$worst" "did not run" "$i processes, filter '$device_filter'" "${reports[@]}"
    fi
fi

# 8-9. The benchmarks: the check inside each must pass, and the table and the JSON (with
# GFLOP/s for every entry) must be there.
run_benchmark() { # STEP BINARY NAME
    local step="$1" bin="$2" name="$3" rc
    out_of_time "$step" && return
    timeout "$(time_left)" "$build/$bin" --sizes="$sizes" --markdown_out="$logs/$name.md" \
        --json_out="$logs/$name.json" >"$logs/$name.log" 2>&1
    rc=$?
    if [ "$rc" -ne 0 ]; then
        record "$step" FAILED "exit code $rc ($name.log): $(grep -m1 -E 'FAILED|failed|error|unknown|not a' "$logs/$name.log" | cut -c1-200)"
    elif grep -q '^needs a CUDA device' "$logs/$name.log"; then
        record "$step" "did not run" "$(head -1 "$logs/$name.log")"
    elif [ ! -s "$logs/$name.md" ] || [ ! -s "$logs/$name.json" ]; then
        record "$step" FAILED "the program succeeded but its table or JSON is missing"
    elif ! python3 - "$logs/$name.json" <<'EOF'
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
sys.exit(0 if runs and all(r.get("GFLOP/s", 0) > 0 for r in runs) else 1)
EOF
    then
        record "$step" FAILED "$name.json lacks a positive \"GFLOP/s\" for some entry"
    else
        bench_tables+=("$logs/$name.md")
        record "$step" passed "sizes $sizes; checked first ($(grep -c '^check.*: ok\|^check:' "$logs/$name.log") checks passed)"
    fi
}
run_benchmark sgemm "$sgemm_bin" sgemm_vs_cublas
run_benchmark hgemm "$hgemm_bin" hgemm_vs_cublas
run_benchmark igemm "$igemm_bin" igemm_vs_cublaslt

# 10. SimpleNet trained for one epoch on the device and on the CPU, same seed: the epoch
# time and test accuracy of each, and passed when the accuracies agree within one point (the
# same losses to float tolerance; tests/cli/test_train_device.py holds it to 2e-3 on the CPU
# runtime). The dry run trains on the CPU runtime, 2000 examples. Needs Fashion-MNIST:
# Debian's dataset-fashion-mnist, or the copy tools/gpu/pack_deps.sh puts in .gpu-deps/.
data_dir=""
for d in "${GPU_CHECKS_DATA:-}" /usr/share/datasets/fashion-mnist "$root/.gpu-deps/fashion-mnist"; do
    [ -n "$d" ] && [ -d "$d" ] && { data_dir=$d; break; }
done
epoch_row() { # epoch_row LOG: "epoch T s, test acc A" from train's epoch line
    sed -nE 's/.*test loss [^ ]+ acc ([0-9.]+) +([0-9.]+) s.*/epoch \2 s, test acc \1/p' "$1" | tail -1
}
if [ "$full_build" -eq 0 ]; then
    record "device tensor" "did not run" "the full build failed"
elif ! grep -qx tools/gradlab <<<"$all_targets"; then
    record "device tensor" "did not run" "no tools/gradlab in this build"
elif [ -z "$data_dir" ]; then
    record "device tensor" "did not run" "no Fashion-MNIST (set GPU_CHECKS_DATA, or carry .gpu-deps with its fashion-mnist folder)"
elif ! out_of_time "device tensor"; then
    device=cuda train_args=(--epochs 1 --seed 1 --data "$data_dir")
    [ "$dry_run" -eq 1 ] && device=cuda_cpu train_args+=(--limit 2000)
    timeout "$(time_left)" "$build/tools/gradlab" train --device "$device" "${train_args[@]}" >"$logs/train_device.log" 2>&1
    rc_device=$?
    timeout "$(time_left)" "$build/tools/gradlab" train --device cpu "${train_args[@]}" >"$logs/train_cpu.log" 2>&1
    rc_cpu=$?
    on_device=$(epoch_row "$logs/train_device.log") on_cpu=$(epoch_row "$logs/train_cpu.log")
    details="SimpleNet, one epoch: $device $on_device; cpu $on_cpu"
    if [ "$rc_device" -ne 0 ] || [ "$rc_cpu" -ne 0 ] || [ -z "$on_device" ] || [ -z "$on_cpu" ]; then
        record "device tensor" FAILED "exit codes $device $rc_device, cpu $rc_cpu (train_device.log, train_cpu.log): $details"
    elif python3 -c 'import sys; a, b = (float(x.split()[-1]) for x in sys.argv[1:]); sys.exit(abs(a - b) > 0.01)' \
            "$on_device" "$on_cpu"; then
        record "device tensor" passed "$details"
    else
        record "device tensor" FAILED "the accuracies differ by more than one point: $details"
    fi
fi

# 11. NCCL with one rank.
if [ "$full_build" -eq 0 ]; then
    record nccl "did not run" "the full build failed"
elif ! grep -qx tests/dist_nccl_tests <<<"$all_targets"; then
    if [ "$dry_run" -eq 1 ]; then record nccl "skipped (dry run)" "this build has no NCCL"
    else record nccl FAILED "no NCCL in this build (configure found none; see the cuda line above)"; fi
elif ! out_of_time nccl; then
    # One GPU runs the one-rank test alone; the group of one rank per GPU needs two or more.
    gpu_count=$(grep -c '^GPU ' "$logs/nvidia-smi.txt" 2>/dev/null)
    nccl_filter='*'
    [ "${gpu_count:-0}" -lt 2 ] && nccl_filter='Nccl.OneRankEveryAlgorithm*'
    timeout "$(time_left)" "$build/tests/dist_nccl_tests" --gtest_filter="$nccl_filter" --gtest_output="xml:$logs/nccl.xml" >"$logs/nccl.log" 2>&1
    rc=$?
    skip_result="did not run"
    [ "$dry_run" -eq 1 ] && skip_result="skipped (dry run)"
    gtest_verdict nccl "$rc" "$skip_result" "one rank (nccl.log)" "$logs/nccl.xml"
fi

# 12. The streams and bandwidth claims, measured where the GPU is.
if [ "$full_build" -eq 0 ]; then
    record "streams claims" "did not run" "the full build failed"
elif ! grep -qx tools/gradlab <<<"$all_targets"; then
    record "streams claims" "did not run" "no tools/gradlab in this build"
elif ! out_of_time "streams claims"; then
    timeout "$(time_left)" "$build/tools/gradlab" claims --quick --only ASYNC-1 DATA-3 MEM-3 CHOICE-1 \
        --out "$logs/claims" >"$logs/claims.log" 2>&1
    rc=$?
    verdicts=$(python3 - "$logs/claims/claims.json" "$dry_run" <<'EOF'
import json, sys
claims = json.load(open(sys.argv[1]))["claims"]
dry = sys.argv[2] == "1"
bad = [c["id"] for c in claims if c["verdict"] in ("not run", "not built yet") or (not dry and c["verdict"] == "needs a GPU")]
print("; ".join(f'{c["id"]}: {c["verdict"]}' for c in claims))
sys.exit(1 if bad or len(claims) != 4 else 0)
EOF
)
    verdict_rc=$?
    if [ "$rc" -ne 0 ] || [ "$verdict_rc" -ne 0 ]; then
        record "streams claims" FAILED "exit code $rc (claims.log); ${verdicts:-no claims.json}"
    else
        [ -s "$logs/claims/claims.md" ] && bench_tables+=("$logs/claims/claims.md")
        record "streams claims" passed "$verdicts"
    fi
fi

finish
