#!/usr/bin/env bash
# Packs the Debian packages gradlab's build needs into one folder that travels with the
# working tree to a GPU machine that has no Debian development packages and no registry.
#
#   tools/gpu/pack_deps.sh [DIR]          (default DIR: .gpu-deps, ignored by git)
#
# Run it here, on a machine with apt (no root needed). It downloads, with `apt-get
# download` (no install, nothing else changes), the -dev packages meson asks for and the
# run-time libraries of those the GPU image lacks, writes DIR/MANIFEST (package, version,
# bytes), copies Debian's Fashion-MNIST into DIR/fashion-mnist (the GPU check trains on
# it), and fails if DIR grows past 48 MiB, the share of the 64 MiB a device call may send
# that we allow it. On the GPU machine tools/gpu/run_gpu_checks.sh unpacks DIR with
# `dpkg -x` into a private prefix (tools/gpu/deps_prefix.sh) and points pkg-config, meson's
# Boost search, the compiler's include path and the linker at it: nothing goes into /usr.
#
# Left out on purpose: OpenBLAS, oneDNN and OpenMPI (too large to carry; the build treats
# them as optional peers and the GPU script says that they did not run), and what the
# GPU image has (g++, python3, meson and ninja from pip, CUDA and its libraries, zlib's
# run-time library).
#
# `tools/gpu/pack_deps.sh --verify [DIR]` then proves the folder is enough: it builds the
# whole project (CUDA included) in a sandbox (bubblewrap) where the system's copies of
# these packages are hidden, with pkg-config reading only the prefix, and lists every
# system header the compiler read, with the package it belongs to.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
limit_mib=48  # 13 MiB of packages and 30 MiB of Fashion-MNIST; `run` carries 64 MiB in all

# What meson.build asks for, by dependency name, and the Debian package that provides it.
PACKAGES=(
  libeigen3-dev                        # eigen3
  zlib1g-dev                           # zlib (its run-time library is on every machine)
  libfmt-dev libfmt9                   # fmt
  nlohmann-json3-dev                   # nlohmann_json
  libcli11-dev                         # CLI11
  libgtest-dev libgmock-dev            # gtest, gmock (static libraries)
  libbenchmark-dev libbenchmark1debian # benchmark
  libboost1.74-dev libboost-context1.74-dev libboost-context1.74.0  # boost, module context
  pkgconf-bin libpkgconf3              # pkg-config itself: the GPU image may have none
  libturbojpeg0-dev libturbojpeg0      # libturbojpeg (image folders, core/data/image_codec.cpp)
  libpng-dev libpng16-16               # libpng
  libprotobuf-dev libprotobuf32 libprotobuf-lite32  # protobuf (ONNX export and import)
  libonnx-dev libonnx1 libonnxifi      # onnx_proto, ONNX's compiled schema
)

verify=0
if [ "${1:-}" = "--verify" ]; then verify=1; shift; fi
dir=${1:-$root/.gpu-deps}

if [ "$verify" -eq 1 ]; then
    exec "$root/tools/gpu/verify_deps.sh" "$dir"
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
rm -f "$dir"/*.deb "$dir/MANIFEST"
# apt-get download writes into the current folder; it needs the package lists, which a
# fresh machine may lack: then update them once (needs root) and try again.
if ! (cd "$dir" && apt-get download -q "${PACKAGES[@]}" >/dev/null); then
    echo "apt-get download failed; updating the package lists and trying once more" >&2
    apt-get update -qq
    (cd "$dir" && apt-get download -q "${PACKAGES[@]}" >/dev/null)
fi
# Fashion-MNIST, for the GPU check's SimpleNet epoch (step 10): the GPU image has no
# Debian packages, so no /usr/share/datasets. Copied from Debian's dataset-fashion-mnist.
data=/usr/share/datasets/fashion-mnist
rm -rf "$dir/fashion-mnist"
if [ -d "$data" ]; then
    cp -r "$data" "$dir/fashion-mnist"
else
    echo "no $data (apt-get install dataset-fashion-mnist): the GPU check's SimpleNet epoch will not run" >&2
fi
for deb in "$dir"/*.deb; do
    printf '%s %s %s\n' "$(dpkg-deb -f "$deb" Package)" "$(dpkg-deb -f "$deb" Version)" \
        "$(stat -c %s "$deb")"
done >"$dir/MANIFEST"
bytes=$(du -sb "$dir" | cut -f1)
mib=$(( (bytes + 1048575) / 1048576 ))
echo "packed $(wc -l <"$dir/MANIFEST") packages into ${dir#$root/}: $mib MiB (limit $limit_mib MiB)"
if [ "$mib" -gt "$limit_mib" ]; then
    echo "too large to carry: $mib MiB > $limit_mib MiB; drop a package or raise the limit" >&2
    exit 1
fi
