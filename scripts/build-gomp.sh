#!/usr/bin/env bash
# build-gomp.sh: build GCC's OpenMP runtime, libgomp, with debug info, from
# Debian's gcc-12 source package (bookworm: the version bookworm installs)
# and from trixie's gcc-14 (the GCC 13+ layout), into a cache directory.
#
# Usage: scripts/build-gomp.sh [--print-dir]
#
# libgomp is configured on its own (libgomp/configure with the system gcc):
# no GCC build, gfortran, makeinfo or autotools are needed, and only
# libgomp/, include/, config/ and the top-level autoconf helpers are taken
# from the source tarball. Each build takes about a minute on 2 cores.
#
# The cache directory is $OMPD_GO_GOMP_DIR; or else libgomp/ under
# $OMPD_GO_RUNTIME_DIR when that is set (the LLVM runtime's cache); or else
# ${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go/libgomp. On success it holds, for
# each VERSION (12.2.0, 14.2.0):
#   VERSION/lib/libgomp.so.1   the runtime (with .symtab, DWARF and .comment)
#   VERSION/lib/libgomp.so     a link to it, for -L
#   VERSION/include/omp.h      the header programs compile against
#   VERSION/stamp              written last
# A run with every stamp present is a no-op. Concurrent runs wait for each
# other (flock on the cache directory's .lock).
#
# It installs what it needs with apt-get (gcc, make, xz-utils, dpkg-dev,
# gdb, and gfortran for the Fortran fixture) and fetches the sources with
# `apt-get source` from the deb-src counterparts of this machine's own apt
# sources (no mirror is named here; trixie's source is found by renaming the
# machine's bookworm suite). The upstream tarballs are checked against
# pinned SHA-256 sums.
#
# With --print-dir it only prints the cache directory and exits.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=apt-src.sh
. "$here/apt-src.sh"

# version source-package suite orig-tarball sha256
BUILDS=(
	"12.2.0 gcc-12 bookworm gcc-12_12.2.0.orig.tar.gz b8298be16aeeb96a889c6afed0a8e2241b47452e89cc81fe65ea849d5c740fcb"
	"14.2.0 gcc-14 trixie gcc-14_14.2.0.orig.tar.gz e162a5ef3f0077ecae598c6556908d2ab80841532df3398072a96a6df6e6aa29"
)

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go"
if [[ -n "${OMPD_GO_GOMP_DIR:-}" ]]; then
	dir="$OMPD_GO_GOMP_DIR"
elif [[ -n "${OMPD_GO_RUNTIME_DIR:-}" ]]; then
	dir="$OMPD_GO_RUNTIME_DIR/libgomp"
else
	dir="$cache_root/libgomp"
fi

if [[ "${1:-}" == "--print-dir" ]]; then
	echo "$dir"
	exit 0
fi

log() { echo "build-gomp: $*" >&2; }

apt_install_missing gcc make xz-utils dpkg-dev gdb binutils gfortran

all_ok() {
	local b v
	for b in "${BUILDS[@]}"; do
		read -r v _ <<<"$b"
		[[ -f "$dir/$v/stamp" && -f "$dir/$v/lib/libgomp.so.1" ]] || return 1
	done
}
if all_ok; then
	log "cached in $dir"
	exit 0
fi

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
if all_ok; then
	log "cached in $dir"
	exit 0
fi

work="$dir/work"
mkdir -p "$work"

# Two private apt configurations: the machine's own suites as deb-src, and
# the same with the bookworm suite renamed trixie.
apt_src_config "$work/apt-own"
apt_src_config "$work/apt-trixie" trixie

# Files of the GCC tree that a standalone libgomp configure and build use.
helpers=(config.guess config.sub ltmain.sh libtool.m4 ltoptions.m4 ltsugar.m4
	ltversion.m4 lt~obsolete.m4 config-ml.in install-sh missing depcomp
	mkinstalldirs compile libtool-ldflags multilib.am config.rpath test-driver
	ar-lib gcc/BASE-VER gcc/DATESTAMP gcc/DEV-PHASE)

for b in "${BUILDS[@]}"; do
	read -r version pkg suite orig sum <<<"$b"
	out="$dir/$version"
	if [[ -f "$out/stamp" && -f "$out/lib/libgomp.so.1" ]]; then
		continue
	fi
	rm -rf "$out"
	bw="$work/$version"
	rm -rf "$bw"
	mkdir -p "$bw"
	if [[ "$suite" == bookworm ]]; then
		conf="$work/apt-own"
	else
		conf="$work/apt-$suite"
	fi
	log "fetching the $pkg source package ($suite)"
	apt_src_fetch "$conf" "$bw" "$pkg/$suite"
	apt_src_verify "$bw/$orig" "$sum" || exit 1

	# The orig tarball wraps gcc-VERSION-dfsg.tar.xz; take only what
	# libgomp needs out of it.
	inner="gcc-${version}-dfsg.tar.xz"
	tar -xzf "$bw/$orig" -C "$bw" --wildcards "*/$inner"
	rm -f "$bw/$orig"
	innerpath=$(find "$bw" -name "$inner" | head -1)
	[[ -n "$innerpath" ]] || { log "$inner not in $orig"; exit 1; }
	src="$bw/src"
	mkdir -p "$src"
	# A helper missing from one GCC release makes tar complain; what the
	# build needs is checked right after.
	tar -xJf "$innerpath" -C "$src" --strip-components=1 "gcc-$version/libgomp" \
		"gcc-$version/include" "gcc-$version/config" "${helpers[@]/#/gcc-$version/}" 2>"$bw/tar.log" || true
	rm -f "$innerpath"
	for f in libgomp/configure config.sub config.guess ltmain.sh config-ml.in install-sh gcc/BASE-VER; do
		[[ -e "$src/$f" ]] || { log "no $f in $inner"; cat "$bw/tar.log" >&2; exit 1; }
	done
	[[ -x "$src/libgomp/configure" ]] || { log "no libgomp/configure in $inner"; exit 1; }

	log "building libgomp $version (about a minute on 2 cores)"
	build="$bw/build"
	mkdir -p "$build"
	(cd "$build" && CC=gcc CFLAGS="-g -O2" "$src/libgomp/configure" \
		--build=x86_64-pc-linux-gnu --host=x86_64-pc-linux-gnu --target=x86_64-pc-linux-gnu \
		--disable-multilib --enable-shared --disable-static --prefix="$out" \
		>"$bw/configure.log" 2>&1) || { tail -30 "$bw/configure.log"; exit 1; }
	make -C "$build" -j2 >"$bw/make.log" 2>&1 || { tail -30 "$bw/make.log"; exit 1; }
	make -C "$build" install >"$bw/install.log" 2>&1 || { tail -30 "$bw/install.log"; exit 1; }

	# Keep the layout the fixtures expect: lib/ and include/ whatever
	# libdir and the tool include directory were.
	mkdir -p "$out/lib.tmp" "$out/include"
	lib=$(find "$out" -name 'libgomp.so.1.*' -type f | head -1)
	[[ -n "$lib" ]] || { log "no libgomp.so.1.* installed under $out"; exit 1; }
	cp "$lib" "$out/lib.tmp/libgomp.so.1"
	hdr=$(find "$out" "$build" -name omp.h -type f | head -1)
	[[ -n "$hdr" ]] || { log "no omp.h under $out"; exit 1; }
	cp "$hdr" "$out/include/omp.h.tmp"
	rm -rf "$out/lib" "$out/lib64" "$out/share"
	mv "$out/lib.tmp" "$out/lib"
	mv "$out/include/omp.h.tmp" "$out/include/omp.h"
	ln -sf libgomp.so.1 "$out/lib/libgomp.so"
	# The sources stay for reading (libgomp.h, team.c, ...).
	rm -rf "$build"
	mv "$src" "$out/src"
	rm -rf "$bw"
	echo "$version $pkg $suite $sum" >"$out/stamp"
	log "built $out/lib/libgomp.so.1"
done
# The apt lists are only needed to fetch: keep the cache small.
rm -rf "$work"
log "done: $dir"
