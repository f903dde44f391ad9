#!/usr/bin/env bash
# Proves that the packages tools/gpu/pack_deps.sh packed are all the build needs beyond
# what a GPU machine has: builds the whole project (CUDA included, sm_90 only) from
# scratch with them unpacked into a private prefix, inside a bubblewrap sandbox where the
# system's own copies of those packages are hidden (their header folders replaced by
# empty ones, their files by /dev/null, pkg-config removed), then lists every header the
# compiler read from outside the repository and the prefix, with the package it belongs to.
#
#   tools/gpu/verify_deps.sh [DEB_DIR]      (default .gpu-deps; also pack_deps.sh --verify)
#
# Writes its logs to /tmp/gradlab-verify-deps.XXXX/ and prints the summary. Slow: a full
# build without ccache (about 15 minutes on 2 cores).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
debs=$(cd "${1:-$root/.gpu-deps}" && pwd)
# shellcheck source=deps_prefix.sh
source "$root/tools/gpu/deps_prefix.sh"
command -v bwrap >/dev/null || { echo "needs bubblewrap (apt-get install bubblewrap)" >&2; exit 1; }

work=$(mktemp -d /tmp/gradlab-verify-deps.XXXX)
prefix="$work/prefix"
deps_unpack "$debs" "$prefix"

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

build="$work/build"
cat >"$work/inside.sh" <<EOF
set -euo pipefail
source "$root/tools/gpu/deps_prefix.sh"
deps_use "$prefix"
export CCACHE_DISABLE=1
echo "inside the sandbox: the system's Boost headers: \$(ls /usr/include/boost | wc -l) files; its libfmt.so: \$(stat -L -c %s /usr/lib/x86_64-linux-gnu/libfmt.so) bytes"
meson setup "$build" "$root" --native-file "$prefix/native.ini" --buildtype=release \
    -Dwith_cuda=enabled -Dgpu_archs=90 >"$work/configure.log" 2>&1 || { tail -30 "$work/configure.log"; exit 1; }
grep -E '^(Run-time dependency|Library|Found pkg-config|Program mpirun|Message: distribution)' "$work/configure.log"
ninja -C "$build" -j"\$(nproc)" >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
echo "built \$(grep -c '' <(ninja -C "$build" -t targets all | grep -E ': (cpp|cuda)_LINKER')) programs and libraries"
EOF
time bwrap --bind / / --dev /dev --proc /proc "${hide[@]}" bash "$work/inside.sh"

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
