# Sourced, not run: finds nvcc and the CUDA libraries the build links (cudart, cuBLAS,
# NCCL) wherever this machine keeps them, and exports what meson and the programs need.
#
#   source tools/gpu/cuda_locate.sh
#   cuda_locate PREFIX REPORT     # exports CUDA_PATH, PATH, LIBRARY_PATH, LD_LIBRARY_PATH;
#                                 # writes one line per finding to REPORT; 1 if nvcc is missing
#
# A CUDA toolkit keeps them under one root (/usr/local/cuda: bin/nvcc, include/,
# lib64/ or targets/x86_64-linux/lib/). Python wheels keep them apart, one folder per
# package under site-packages/nvidia/ (nvidia/cu13/lib/libcublas.so.13 for CUDA 13's
# wheels, nvidia/nccl/lib/libnccl.so.2, each with its include/ beside), often without the
# unversioned libcublas.so a linker looks for. So every folder that may hold one is
# searched, in that order, and when nvcc's own root lacks something meson's CUDA
# dependency needs, PREFIX/cuda is made: a toolkit root of links (include/, lib64/ with
# unversioned names) over all of them, which CUDA_PATH then names.

# The folders that may hold CUDA's libraries (lib) or headers (include), best first.
cuda_candidate_dirs() {
    local kind="$1" root="$2" site
    echo "$root/$kind"
    [ "$kind" = lib ] && echo "$root/lib64"
    echo "$root/targets/x86_64-linux/$kind"
    for site in ${GPU_CHECKS_PYTHON_SITES:-$(python3 -c 'import site, sys; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null)}; do
        ls -d "$site"/nvidia/cu1[0-9]/"$kind" "$site"/nvidia/*/"$kind" 2>/dev/null
    done
    echo "/usr/local/cuda/$kind"
    [ "$kind" = lib ] && echo "/usr/local/cuda/lib64" && echo "/usr/lib/x86_64-linux-gnu"
    [ "$kind" = include ] && echo "/usr/include"
}

# The first folder holding FILE_GLOB (e.g. 'libcublas.so*'), or nothing.
cuda_find_in() {
    local pattern="$1" dir
    shift
    for dir in "$@"; do
        if compgen -G "$dir/$pattern" >/dev/null; then echo "$dir"; return 0; fi
    done
    return 1
}

cuda_locate() {
    local prefix="$1" report="$2" nvcc root d lib what found
    nvcc=$(command -v nvcc || true)
    for d in /usr/local/cuda/bin $(cuda_candidate_dirs bin /nonexistent); do
        [ -n "$nvcc" ] && break
        [ -x "$d/nvcc" ] && nvcc="$d/nvcc"
    done
    if [ -z "$nvcc" ]; then
        echo "nvcc: not found (PATH, /usr/local/cuda/bin, Python wheels)" >>"$report"
        return 1
    fi
    root=$(cd "$(dirname "$(readlink -f "$nvcc")")/.." && pwd)
    export PATH="$(dirname "$nvcc"):$PATH"
    echo "nvcc: $nvcc ($("$nvcc" --version | grep -o 'release [0-9.]*'))" >>"$report"

    local -a libdirs incdirs
    mapfile -t libdirs < <(cuda_candidate_dirs lib "$root" | awk '!seen[$0]++')
    mapfile -t incdirs < <(cuda_candidate_dirs include "$root" | awk '!seen[$0]++')
    local complete=1 runtime_dirs=""
    for what in "cudart:libcudart.so*" "cudart_static:libcudart_static.a" "cublas:libcublas.so*" \
                "cublasLt:libcublasLt.so*" "nccl:libnccl.so*"; do
        lib=${what%%:*}
        found=$(cuda_find_in "${what#*:}" "${libdirs[@]}" || true)
        echo "lib$lib: ${found:-not found}" >>"$report"
        case "$found" in "$root"/*) ;; "") [ "$lib" = nccl ] || complete=0 ;; *) complete=0 ;; esac
        [ -n "$found" ] && runtime_dirs="$runtime_dirs:$found"
    done
    for what in cuda_runtime.h cublas_v2.h nccl.h; do
        found=$(cuda_find_in "$what" "${incdirs[@]}" || true)
        echo "$what: ${found:-not found}" >>"$report"
        case "$found" in "$root"/*) ;; "") [ "$what" = nccl.h ] || complete=0 ;; *) complete=0 ;; esac
    done

    local cuda_path="$root"
    if [ "$complete" -eq 0 ]; then
        # A toolkit root of links over every folder found, first one wins.
        cuda_path="$prefix/cuda"
        rm -rf "$cuda_path"
        mkdir -p "$cuda_path/include" "$cuda_path/lib64"
        ln -s "$(dirname "$nvcc")" "$cuda_path/bin"
        for d in "${incdirs[@]}"; do
            [ -d "$d" ] && [ "$d" != /usr/include ] || continue
            for f in "$d"/*; do [ -e "$cuda_path/include/${f##*/}" ] || ln -s "$f" "$cuda_path/include/"; done
        done
        for d in "${libdirs[@]}"; do
            [ -d "$d" ] && [ "$d" != /usr/lib/x86_64-linux-gnu ] || continue
            for f in "$d"/lib*; do [ -e "$cuda_path/lib64/${f##*/}" ] || ln -s "$f" "$cuda_path/lib64/"; done
        done
        # Meson (1.12) also looks for the target folder of the toolkit's layout
        # (targets/x86_64-linux/{include,lib}) and reads the version file beside bin/.
        mkdir -p "$cuda_path/targets/x86_64-linux"
        ln -s ../../include "$cuda_path/targets/x86_64-linux/include"
        ln -s ../../lib64 "$cuda_path/targets/x86_64-linux/lib"
        for f in version.json version.txt; do if [ -e "$root/$f" ]; then ln -s "$root/$f" "$cuda_path/$f"; fi; done
        echo "CUDA root for meson: $cuda_path (links: nvcc's root $root lacks some of the above)" >>"$report"
    else
        echo "CUDA root for meson: $cuda_path" >>"$report"
    fi
    # Unversioned names (libnccl.so -> libnccl.so.2) where a wheel ships only the versioned.
    mkdir -p "$prefix/cuda-links"
    for lib in cudart cublas cublasLt nccl; do
        f=$(ls "$cuda_path"/lib64/lib$lib.so.* "$cuda_path"/targets/x86_64-linux/lib/lib$lib.so.* 2>/dev/null | head -1 || true)
        [ -z "$f" ] && f=$(for d in "${libdirs[@]}"; do ls "$d"/lib$lib.so.* 2>/dev/null; done | head -1)
        [ -n "$f" ] && ln -sfn "$f" "$prefix/cuda-links/lib$lib.so"
    done
    export CUDA_PATH="$cuda_path" CUDA_HOME="$cuda_path" CUDA_ROOT="$cuda_path"
    export LIBRARY_PATH="$prefix/cuda-links${LIBRARY_PATH:+:$LIBRARY_PATH}"
    export CPATH="${CPATH:+$CPATH:}$cuda_path/include"
    # Programs the build makes find the libraries at run time through this.
    export LD_LIBRARY_PATH="${runtime_dirs#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
