#!/usr/bin/env bash
# Proves that the packages tools/gpu/pack_deps.sh packed are all the build needs beyond
# what a GPU machine has. Inside a bubblewrap sandbox where the system's own copies of
# those packages (and of the optional peers the GPU image lacks) are hidden, their header
# folders replaced by empty ones, their files by /dev/null, pkg-config removed:
#   1. tools/gpu/run_gpu_checks.sh itself runs, as on a GPU machine but with a stand-in
#      nvidia-smi: it unpacks .gpu-deps, configures build-gpu/ from scratch and builds what
#      it checks (its device steps then say "did not run": there is no GPU);
#   2. the rest of the project is built in the same folder (everything, CUDA included);
# then every header the compiler read from outside the repository and the prefix is
# listed by the package it belongs to, and so are the libraries the link lines name.
#
#   tools/gpu/verify_deps.sh              (also: tools/gpu/pack_deps.sh --verify)
#
# Writes its logs to /tmp/gradlab-verify-deps.XXXX/ and prints the summary. Slow: a full
# build without ccache (about 15 minutes on 2 cores).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
debs="$root/.gpu-deps"
[ -f "$debs/MANIFEST" ] || { echo "no $debs/MANIFEST: run tools/gpu/pack_deps.sh first" >&2; exit 1; }
# shellcheck source=deps_prefix.sh
source "$root/tools/gpu/deps_prefix.sh"
command -v bwrap >/dev/null || { echo "needs bubblewrap (apt-get install bubblewrap)" >&2; exit 1; }

work=$(mktemp -d /tmp/gradlab-verify-deps.XXXX)

# What to hide: every file of each packed package installed here. A folder under
# /usr/include, /usr/share or a cmake folder that the package owns becomes an empty tmpfs;
# a file becomes /dev/null (a header that reads as empty, a library that links as nothing).
# The optional peers the GPU image lacks (OpenBLAS, oneDNN, OpenMPI) are hidden too, so
# the build here takes the same branches as there.
absent_there="libopenblas-dev libopenblas-pthread-dev libdnnl-dev libopenmpi-dev openmpi-bin"
hide=()
declare -A seen=() owned=()
for pkg in $(cut -d' ' -f1 "$debs/MANIFEST") $absent_there; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || continue
    while IFS= read -r path; do
        case "$path" in
            /usr/share/doc/*|/usr/share/lintian/*|/usr/share/man/*) continue ;;
            /usr/include/*/*) top=$(echo "$path" | cut -d/ -f1-4) ;;
            /usr/share/*/*) top=$(echo "$path" | cut -d/ -f1-4) ;;
            */cmake/*/*) top=${path%/*} ;;
            *) top="" ;;
        esac
        # A folder only if this package alone owns it (not /usr/include/x86_64-linux-gnu).
        if [ -n "$top" ] && [ -z "${owned[$top]:-}" ] && [ -d "$top" ]; then
            owned[$top]=$(dpkg -S "$top" 2>/dev/null | head -1 | sed 's|: /.*||; s|:[a-z0-9]*||g' | tr -d ' ')
        fi
        if [ -n "$top" ] && [ "${owned[$top]:-}" = "$pkg" ]; then
            [ -n "${seen[$top]:-}" ] || { seen[$top]=1; hide+=(--tmpfs "$top"); }
        elif [ -f "$path" ] && [ ! -L "$path" ]; then
            [ -n "${seen[$path]:-}" ] || { seen[$path]=1; hide+=(--ro-bind /dev/null "$path"); }
        fi
    done < <(dpkg -L "$pkg")
done
for tool in /usr/bin/pkg-config /usr/bin/pkgconf /usr/bin/x86_64-linux-gnu-pkg-config; do
    [ -e "$tool" ] && hide+=(--ro-bind /dev/null "$(readlink -f "$tool")")
done
echo "hiding $(( ${#hide[@]} / 2 )) folders and files of the packed packages installed here"

build="$root/build-gpu"
cat >"$work/inside.sh" <<EOF
set -uo pipefail
export CCACHE_DISABLE=1 TMPDIR="$work"
echo "inside the sandbox: the system's Boost headers: \$(ls /usr/include/boost | wc -l) files; its libfmt.so: \$(stat -L -c %s /usr/lib/x86_64-linux-gnu/libfmt.so) bytes"
PATH="$root/tests/tools/fake_gpu:\$PATH" "$root/tools/gpu/run_gpu_checks.sh" "$work/out"
echo "run_gpu_checks.sh exit code \$? (1 expected: no GPU, so its device steps did not run)"
grep "^| " "$work/out/gpu_checks.md"
source "$root/tools/gpu/deps_prefix.sh"
source "$root/tools/gpu/cuda_locate.sh"
prefix=\$(ls -d "$work"/gradlab-gpu-checks.*/prefix)
deps_use "\$prefix"
cuda_locate "\$prefix" /dev/null
ninja -C "$build" -j"\$(nproc)" >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
echo "the whole project built: \$(ninja -C "$build" -t targets all | grep -cE ': (cpp|cuda)_LINKER') programs and libraries"
EOF
time bwrap --bind / / --dev /dev --proc /proc "${hide[@]}" bash "$work/inside.sh"
prefix=$(ls -d "$work"/gradlab-gpu-checks.*/prefix)

# Every header read from outside the repository and the prefix, by owning package.
ninja -C "$build" -t deps | awk '/^    \//{print $1}' | sort -u |
    grep -v -e "^$root/" -e "^$prefix/" -e "^$build/" >"$work/outside_headers.txt" || true
echo "headers read from outside the repository and the prefix: $(wc -l <"$work/outside_headers.txt"), from:"
grep -v '^/usr/local/cuda' "$work/outside_headers.txt" | xargs -r dpkg -S 2>/dev/null |
    cut -d: -f1 | tr ',' '\n' | sed 's/^ *//' | sort | uniq -c
echo "  $(grep -c '^/usr/local/cuda' "$work/outside_headers.txt" || true) under /usr/local/cuda (the CUDA toolkit, which the GPU image has)"
echo "libraries the link lines name: $(grep -oE '[^ ]*/lib(fmt|gtest|gmock|benchmark|boost_context|z)[^ /]*\.(so|a)' \
    "$build/build.ninja" | sort -u | sed "s|$prefix|PREFIX|" | tr '\n' ' ')"
echo "logs: $work"
