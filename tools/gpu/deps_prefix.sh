# Sourced, not run: the private prefix that tools/gpu/pack_deps.sh's packages are
# unpacked into, and the environment that makes the build read its libraries from there.
#
#   source tools/gpu/deps_prefix.sh
#   deps_unpack DEB_DIR PREFIX     # dpkg -x every .deb of DEB_DIR into PREFIX
#   deps_use PREFIX                # export the variables below; write PREFIX/native.ini
#
# After deps_use, meson (with --native-file PREFIX/native.ini) finds pkg-config in the
# prefix, pkg-config reads only the prefix's .pc files (PKG_CONFIG_LIBDIR, and
# PKG_CONFIG_SYSROOT_DIR turns their /usr into PREFIX/usr), meson's Boost search looks
# in BOOST_ROOT, CMake configs in CMAKE_PREFIX_PATH, and the compiler and linker search
# the prefix too (CPATH, LIBRARY_PATH). LD_LIBRARY_PATH gains the prefix's run-time
# libraries (fmt, benchmark, boost_context) for the programs the build makes.

deps_libdir() { echo "$1/usr/lib/x86_64-linux-gnu"; }

# Unpacks each package. dpkg-deb where it exists; else the .deb's data archive by hand
# (a .deb is an ar archive holding data.tar.*), which needs only binutils' ar and tar.
deps_unpack() {
    local debs="$1" prefix="$2" deb
    mkdir -p "$prefix"
    for deb in "$debs"/*.deb; do
        [ -f "$deb" ] || { echo "no .deb files in $debs (run tools/gpu/pack_deps.sh first)" >&2; return 1; }
        if command -v dpkg-deb >/dev/null 2>&1; then
            dpkg-deb -x "$deb" "$prefix" || return 1
        else
            local member
            member=$(ar t "$deb" | grep '^data\.tar') || return 1
            ar p "$deb" "$member" | tar -x -a -f - -C "$prefix" 2>/dev/null ||
                ar p "$deb" "$member" | tar -x --zstd -f - -C "$prefix" || return 1
        fi
    done
    deps_fix_links "$prefix"
}

# Debian's development links may be absolute (libz.so -> /lib/x86_64-linux-gnu/libz.so.1.2.13):
# inside the prefix they must point into it or, for a run-time library the machine has
# (zlib's), at the machine's own copy, whatever its minor version.
deps_fix_links() {
    local prefix="$1" link target name candidate
    while IFS= read -r link; do
        target=$(readlink "$link")
        case "$target" in /*) ;; *) continue ;; esac
        if [ -e "$prefix$target" ]; then ln -sfn "$prefix$target" "$link"; continue; fi
        [ -e "$target" ] && continue
        name=$(basename "$target")
        for candidate in /lib/x86_64-linux-gnu/"${name%%.so*}".so.* /usr/lib/x86_64-linux-gnu/"${name%%.so*}".so.*; do
            if [ -e "$candidate" ]; then ln -sfn "$candidate" "$link"; break; fi
        done
    done < <(find "$prefix" -type l)
}

deps_use() {
    local prefix="$1" libdir
    libdir=$(deps_libdir "$prefix")
    mkdir -p "$prefix/bin"
    # pkgconf from the prefix, with its own library; the machine's pkg-config (if any) unused.
    cat >"$prefix/bin/pkg-config" <<EOF
#!/bin/sh
LD_LIBRARY_PATH="$libdir\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "$prefix/usr/bin/pkgconf" "\$@"
EOF
    chmod +x "$prefix/bin/pkg-config"
    cat >"$prefix/native.ini" <<EOF
[binaries]
pkg-config = '$prefix/bin/pkg-config'
EOF
    export PKG_CONFIG="$prefix/bin/pkg-config"
    export PKG_CONFIG_LIBDIR="$libdir/pkgconfig:$prefix/usr/share/pkgconfig"
    export PKG_CONFIG_PATH=""
    export PKG_CONFIG_SYSROOT_DIR="$prefix"
    export BOOST_ROOT="$prefix/usr" BOOST_INCLUDEDIR="$prefix/usr/include" BOOST_LIBRARYDIR="$libdir"
    export CMAKE_PREFIX_PATH="$prefix/usr"
    export CPATH="$prefix/usr/include${CPATH:+:$CPATH}"
    export LIBRARY_PATH="$libdir${LIBRARY_PATH:+:$LIBRARY_PATH}"
    export LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
