#!/usr/bin/env bash
# build-gomp.sh: build GCC's OpenMP runtime, libgomp, with debug info, from
# Debian's gcc-N source packages, into a cache directory: by default the
# releases the tests run on (12.2.0, bookworm's own, and 14.2.0, the GCC
# 13+ layout); with --all every release whose source the Debian suites this
# machine's apt reaches carry (GCC 9 to 16), from which internal/gomp/gen
# writes the known-layout tables of stripped libgomp builds.
#
# Usage: scripts/build-gomp.sh [--print-dir] [--list] [--all | VERSION...]
#
# libgomp is configured on its own (libgomp/configure with the system gcc):
# no GCC build, gfortran, makeinfo or autotools are needed, and only
# libgomp/, include/, config/ and the top-level autoconf helpers are taken
# from the source tarball. Each build takes about a minute on 2 cores, after
# fetching the source package's upstream tarball (85-110 MB).
#
# The cache directory is $OMPD_GO_GOMP_DIR; or else libgomp/ under
# $OMPD_GO_RUNTIME_DIR when that is set (the LLVM runtime's cache); or else
# ${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go/libgomp. On success it holds, for
# each VERSION built (the Debian package's upstream version):
#   VERSION/lib/libgomp.so.1   the runtime (with .symtab, DWARF and .comment)
#   VERSION/lib/libgomp.so     a link to it, for -L
#   VERSION/include/omp.h      the header programs compile against
#   VERSION/src/libgomp/       the runtime's sources, for reading
#   VERSION/stamp              written last
# A run with every stamp present is a no-op. Concurrent runs wait for each
# other (flock on the cache directory's .lock).
#
# It installs what it needs with apt-get (gcc, make, xz-utils, dpkg-dev,
# gdb, and gfortran for the Fortran fixture) and fetches the sources with
# `apt-get source` from the deb-src counterparts of this machine's own apt
# sources (no mirror is named here; another suite's source is found by
# renaming the machine's own suite). The upstream tarballs are checked
# against pinned SHA-256 sums: only the tarball is needed, so a source
# package whose other files have left the suite still builds.
#
# With --print-dir it only prints the cache directory; with --list, the
# releases it knows ("VERSION SUITE test|table"), one a line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=apt-src.sh
. "$here/apt-src.sh"

# version upstream-version source-package suite orig-tarball sha256 use
# (source-package is what apt-get source is asked for: PACKAGE, the
# suite's, or PACKAGE=VERSION where the suite moves on, as sid does; use:
# test, built by default for the tests; table, built with --all for the
# known-layout tables only)
BUILDS=(
	"9.3.0 9.3.0 gcc-9 bullseye gcc-9_9.3.0.orig.tar.gz 824044ffa96eb337bb1c1d4cf6a82691d0290d6f42e1d13362eea855458de060 table"
	"10.2.1 10.2.0 gcc-10 bullseye gcc-10_10.2.1.orig.tar.xz ea3c05faa381486e6b859c047dc14977418bf1ccda4567064e016493fd6fffec table"
	"11.3.0 11.3.0 gcc-11 bookworm gcc-11_11.3.0.orig.tar.gz 6190e4bdef10a2a1832dde8e96b3ae2bc38fbd5a3dcf4659f37d64823a45c4a6 table"
	"12.2.0 12.2.0 gcc-12 bookworm gcc-12_12.2.0.orig.tar.gz b8298be16aeeb96a889c6afed0a8e2241b47452e89cc81fe65ea849d5c740fcb test"
	"13.3.0 13.3.0 gcc-13 trixie gcc-13_13.3.0.orig.tar.gz 2fde6610c97427ca320113b8ed99d75439c15b7d75d0a5410256a9cf4a8e5402 table"
	"14.2.0 14.2.0 gcc-14 trixie gcc-14_14.2.0.orig.tar.gz e162a5ef3f0077ecae598c6556908d2ab80841532df3398072a96a6df6e6aa29 test"
	"15.2.0 15.2.0 gcc-15=15.2.0-17 sid gcc-15_15.2.0.orig.tar.gz 3121d3e2821fe21088deb77f11ee786d80969a1c55255386a43ecca1e06b47c0 table"
	"16.2.0 16.2.0 gcc-16=16.2.0-4 sid gcc-16_16.2.0.orig.tar.gz 1f12db4797c619339c7285ce109b35888cafad2487a388430e62f03b65e9ed64 table"
)

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go"
if [[ -n "${OMPD_GO_GOMP_DIR:-}" ]]; then
	dir="$OMPD_GO_GOMP_DIR"
elif [[ -n "${OMPD_GO_RUNTIME_DIR:-}" ]]; then
	dir="$OMPD_GO_RUNTIME_DIR/libgomp"
else
	dir="$cache_root/libgomp"
fi

case "${1:-}" in
--print-dir)
	echo "$dir"
	exit 0
	;;
--list)
	for b in "${BUILDS[@]}"; do
		read -r v _ _ suite _ _ use <<<"$b"
		echo "$v $suite $use"
	done
	exit 0
	;;
--all) ;;
"")
	# The tests' releases.
	sel=()
	for b in "${BUILDS[@]}"; do
		[[ "${b##* }" == test ]] && sel+=("$b")
	done
	BUILDS=("${sel[@]}")
	;;
*)
	sel=()
	for want in "$@"; do
		found=""
		for b in "${BUILDS[@]}"; do
			[[ "${b%% *}" == "$want" ]] && found="$b"
		done
		[[ -n "$found" ]] || { echo "build-gomp: unknown release $want (see --list)" >&2; exit 2; }
		sel+=("$found")
	done
	BUILDS=("${sel[@]}")
	;;
esac

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

# Private apt configurations: the machine's own suites as deb-src, and, for
# each other suite a release comes from, the machine's own suite renamed.
own_suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
apt_src_config "$work/apt-own"

# Files of the GCC tree that a standalone libgomp configure and build use.
helpers=(config.guess config.sub ltmain.sh libtool.m4 ltoptions.m4 ltsugar.m4
	ltversion.m4 lt~obsolete.m4 config-ml.in install-sh missing depcomp
	mkinstalldirs compile libtool-ldflags multilib.am config.rpath test-driver
	ar-lib gcc/BASE-VER gcc/DATESTAMP gcc/DEV-PHASE)

for b in "${BUILDS[@]}"; do
	read -r version upstream pkg suite orig sum _ <<<"$b"
	out="$dir/$version"
	if [[ -f "$out/stamp" && -f "$out/lib/libgomp.so.1" ]]; then
		continue
	fi
	rm -rf "$out"
	bw="$work/$version"
	rm -rf "$bw"
	mkdir -p "$bw"
	if [[ "$suite" == "$own_suite" ]]; then
		conf="$work/apt-own"
	else
		conf="$work/apt-$suite"
		[[ -d "$conf" ]] || apt_src_config "$conf" "$suite"
	fi
	log "fetching the ${pkg%%=*} source package ($suite)"
	# Only the upstream tarball is needed: a package whose other files
	# are gone (a superseded revision) still gives it.
	target="$pkg/$suite"
	[[ "$pkg" == *=* ]] && target="$pkg"
	apt_src_fetch "$conf" "$bw" "$target" || true
	apt_src_verify "$bw/$orig" "$sum" || exit 1

	# The orig tarball wraps gcc-VERSION-dfsg.tar.xz; take only what
	# libgomp needs out of it.
	inner="gcc-${upstream}-dfsg.tar.xz"
	tar -xf "$bw/$orig" -C "$bw" --wildcards "*/$inner"
	rm -f "$bw/$orig"
	innerpath=$(find "$bw" -name "$inner" | head -1)
	[[ -n "$innerpath" ]] || { log "$inner not in $orig"; exit 1; }
	src="$bw/src"
	mkdir -p "$src"
	# A helper missing from one GCC release makes tar complain; what the
	# build needs is checked right after.
	tar -xJf "$innerpath" -C "$src" --strip-components=1 "gcc-$upstream/libgomp" \
		"gcc-$upstream/include" "gcc-$upstream/config" "${helpers[@]/#/gcc-$upstream/}" 2>"$bw/tar.log" || true
	rm -f "$innerpath"
	for f in libgomp/configure config.sub config.guess ltmain.sh config-ml.in install-sh gcc/BASE-VER; do
		[[ -e "$src/$f" ]] || { log "no $f in $inner"; cat "$bw/tar.log" >&2; exit 1; }
	done
	[[ -x "$src/libgomp/configure" ]] || { log "no libgomp/configure in $inner"; exit 1; }

	log "building libgomp $version (about a minute on 2 cores)"
	build="$bw/build"
	mkdir -p "$build"
	# libgomp builds with -Werror; a release older than this machine's
	# gcc meets warnings its own compiler did not give.
	cflags="-g -O2"
	if ((${version%%.*} < $(gcc -dumpversion | cut -d. -f1))); then
		cflags="$cflags -Wno-error"
	fi
	(cd "$build" && CC=gcc CFLAGS="$cflags" "$src/libgomp/configure" \
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
	echo "$version ${pkg%%=*} $suite $sum" >"$out/stamp"
	log "built $out/lib/libgomp.so.1"
done
# The apt lists are only needed to fetch: keep the cache small.
rm -rf "$work"
log "done: $dir"
