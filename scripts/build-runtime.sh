#!/usr/bin/env bash
# build-runtime.sh: build LLVM's OpenMP runtime 19.1.7 with OMPD and OMPT
# support and debug info, plus LLVM's libompd.so (the reference OMPD library),
# from Debian's source package, into a cache directory; and a second variant
# of the runtime built without OMPD support (OMPT on, debug info on), as some
# distributions ship it.
#
# Usage: scripts/build-runtime.sh [--print-dir]
#
# The cache directory is $OMPD_GO_RUNTIME_DIR, or else
# ${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go/llvm-openmp-19.1.7.
# On success it holds:
#   lib/libomp.so     the runtime (with .symtab and DWARF)
#   lib/libompd.so    LLVM's OMPD library
#   include/omp.h     the header programs compile against
#   build/            the cmake build tree (libompd's gdb plugin is under it)
#   stamp             written last for this variant
#   noompd/lib/libomp.so, noompd/include/omp.h, noompd/build/, noompd/stamp
#                     the same for the variant built with
#                     -DLIBOMP_OMPD_SUPPORT=OFF (no libompd.so)
# A run with both stamps present is a no-op; a cache that has only the first
# variant (made before the second existed) gets the second built from the
# source tree kept in work/src, without rebuilding the first.
#
# It installs what it needs with apt-get (cmake, clang-19, ninja-build, gdb, zstd,
# xz-utils) and fetches the source with `apt-get source` from the deb-src
# counterparts of this machine's own apt sources (no mirror is named here).
# The upstream tarball is checked against a pinned SHA-256.
#
# With --print-dir it only prints the cache directory and exits.
set -euo pipefail
# shellcheck source=apt-src.sh
. "$(cd "$(dirname "$0")" && pwd)/apt-src.sh"

LLVM_VERSION=19.1.7
SRC_PKG=llvm-toolchain-19
ORIG_TARBALL="${SRC_PKG}_${LLVM_VERSION}.orig.tar.xz"
ORIG_SHA256=ae498f3bc58ae2d9f64ef5f0c035c4240152bf015a5b7738b15c22e93bdc97ce

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go"
dir="${OMPD_GO_RUNTIME_DIR:-$cache_root/llvm-openmp-$LLVM_VERSION}"

if [[ "${1:-}" == "--print-dir" ]]; then
	echo "$dir"
	exit 0
fi

log() { echo "build-runtime: $*" >&2; }

apt_install_missing cmake ninja-build clang-19 gdb xz-utils dpkg-dev zstd

main_ok=false
noompd_ok=false
[[ -f "$dir/stamp" && -f "$dir/lib/libomp.so" && -f "$dir/lib/libompd.so" ]] && main_ok=true
[[ -f "$dir/noompd/stamp" && -f "$dir/noompd/lib/libomp.so" && -f "$dir/noompd/include/omp.h" ]] && noompd_ok=true
if $main_ok && $noompd_ok; then
	log "cached in $dir"
	exit 0
fi

mkdir -p "$dir"
work="$dir/work"
mkdir -p "$work"

# 1. A private apt configuration with deb-src entries derived from this
#    machine's own deb entries (one-line and deb822 formats).
aptdir="$work/apt"
apt_src_config "$aptdir"

tarball="$work/$ORIG_TARBALL"
src="$work/src"
if [[ ! -d "$src/openmp" ]]; then
	if [[ ! -f "$tarball" ]]; then
		log "fetching the $SRC_PKG source package"
		apt_src_fetch "$aptdir" "$work" "$SRC_PKG"
	fi
	apt_src_verify "$tarball" "$ORIG_SHA256" || exit 1

	# 2. Extract only the OpenMP runtime and the shared cmake modules.
	log "extracting openmp/ and cmake/"
	rm -rf "$work/extract"
	mkdir -p "$work/extract"
	tar -xJf "$tarball" -C "$work/extract" --wildcards '*/openmp/*' '*/cmake/*'
	mv "$work/extract"/* "$src"
	rmdir "$work/extract"
fi

# 3. Configure and build.
cmake_common=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
	-DCMAKE_C_COMPILER=clang-19 -DCMAKE_CXX_COMPILER=clang++-19
	-DLIBOMP_OMPT_SUPPORT=ON
	-DOPENMP_ENABLE_LIBOMPTARGET=OFF -DLIBOMP_USE_HWLOC=OFF
	-DOPENMP_ENABLE_TESTING=OFF)

if ! $main_ok; then
	build="$dir/build"
	log "building (about a minute on 2 cores)"
	cmake -S "$src/openmp" -B "$build" "${cmake_common[@]}" \
		-DLIBOMP_OMPD_SUPPORT=ON >"$work/cmake.log" 2>&1 || { tail -30 "$work/cmake.log"; exit 1; }
	ninja -C "$build" >"$work/ninja.log" 2>&1 || { tail -30 "$work/ninja.log"; exit 1; }

	mkdir -p "$dir/lib" "$dir/include"
	cp -L "$build/runtime/src/libomp.so" "$dir/lib/libomp.so"
	cp -L "$build/libompd/src/libompd.so" "$dir/lib/libompd.so"
	cp "$build/runtime/src/omp.h" "$dir/include/omp.h"
	if [[ -f "$build/runtime/src/omp-tools.h" ]]; then cp "$build/runtime/src/omp-tools.h" "$dir/include/"; fi
	echo "$LLVM_VERSION $ORIG_SHA256" >"$dir/stamp"
	log "built $dir/lib/libomp.so"
fi

# 4. The variant without OMPD support: only the runtime library itself.
if ! $noompd_ok; then
	nodir="$dir/noompd"
	build="$nodir/build"
	rm -f "$nodir/stamp"
	log "building the runtime without OMPD support (about a minute on 2 cores)"
	cmake -S "$src/openmp" -B "$build" "${cmake_common[@]}" \
		-DLIBOMP_OMPD_SUPPORT=OFF >"$work/cmake-noompd.log" 2>&1 || { tail -30 "$work/cmake-noompd.log"; exit 1; }
	ninja -C "$build" omp >"$work/ninja-noompd.log" 2>&1 || { tail -30 "$work/ninja-noompd.log"; exit 1; }
	mkdir -p "$nodir/lib" "$nodir/include"
	cp -L "$build/runtime/src/libomp.so" "$nodir/lib/libomp.so"
	cp "$build/runtime/src/omp.h" "$nodir/include/omp.h"
	if [[ -f "$build/runtime/src/omp-tools.h" ]]; then cp "$build/runtime/src/omp-tools.h" "$nodir/include/"; fi
	echo "$LLVM_VERSION $ORIG_SHA256 LIBOMP_OMPD_SUPPORT=OFF" >"$nodir/stamp"
	log "built $nodir/lib/libomp.so"
fi

# Keep the source tarball out of the cache once built; the tree stays for
# reading and for building a missing variant later.
rm -f "$tarball" "$work"/*.dsc "$work"/*.debian.tar.xz
log "done: $dir"
