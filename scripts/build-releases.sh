#!/usr/bin/env bash
# build-releases.sh: build LLVM's OpenMP runtime (libomp) of every LLVM
# release whose Debian source package this machine's apt can reach, with
# OMPD and OMPT support and debug info, into a cache directory. These are
# the builds internal/kmp/gen reads the layout tables of stock (stripped)
# libomp binaries from, and the builds with debug information the tests of
# releases 13-18 run on. (The tests of 19.1.7 run on scripts/build-runtime.sh's
# builds; this one's 19.1.7, built from the same source, is for the table.)
#
# Usage: scripts/build-releases.sh [--print-dir] [--list] [MAJOR...]
#
# Without MAJOR it builds every release of the list below. Each build takes
# about a minute on 2 cores, after fetching the release's source package
# (120-160 MB, checked against the SHA-256 Debian's signed index gives).
# Each release is built with its own clang (clang-MAJOR) where this
# machine's apt has it, so that the code matches what Debian ships as
# closely as possible; else with clang-19.
#
# The cache directory is $OMPD_GO_RELEASES_DIR, or else llvm-openmp-releases/
# under $OMPD_GO_RUNTIME_DIR when that is set, or else
# ${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go/llvm-openmp-releases. On success
# it holds, for each MAJOR:
#   MAJOR/lib/libomp.so      the runtime (with .symtab and DWARF)
#   MAJOR/include/omp.h      the header programs compile against
#   MAJOR/src/openmp/        the runtime's sources, for reading
#   MAJOR/stamp              "VERSION SOURCE-PACKAGE SUITE SHA256 COMPILER
#                            debian-hardening", written last
# A release whose stamp is there is not built again. Concurrent runs wait
# for each other (flock on the cache directory's .lock).
#
# With --print-dir it only prints the cache directory; with --list, the
# releases it knows ("MAJOR VERSION SUITE"), one a line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=apt-src.sh
. "$here/apt-src.sh"

# major version source-package suite orig-tarball sha256
RELEASES=(
	"13 13.0.1 llvm-toolchain-13 bookworm llvm-toolchain-13_13.0.1.orig.tar.xz 38f14321caa46e0c890ceac2faf5ba29af6f1db759214134516515596e675a80"
	"14 14.0.6 llvm-toolchain-14 bookworm llvm-toolchain-14_14.0.6.orig.tar.xz d9bce5f42381d781e273c724db1ab0acd66259bf2782b79891664dbf1953d22c"
	"15 15.0.6 llvm-toolchain-15 bookworm llvm-toolchain-15_15.0.6.orig.tar.xz 076ac9fe372b3141b4fcbee80abfae34f9574fdb959cd8d14a7fd3f39ff89399"
	"16 16.0.6 llvm-toolchain-16 bookworm llvm-toolchain-16_16.0.6.orig.tar.xz 5ab98480d3bc9f1896de1a1afafb46c318a9baa02bf21a4f6830c644d06c1cc0"
	"17 17.0.6 llvm-toolchain-17 trixie llvm-toolchain-17_17.0.6.orig.tar.xz 04c12edc1995d9bb15da30d69f0207dda43b7833eaa989176c099e465cd38aee"
	"18 18.1.8 llvm-toolchain-18 trixie llvm-toolchain-18_18.1.8.orig.tar.xz 260836e9aefe43fa0f3065c5cc5d502a52e1c4cf03396c1982ddc886f912cbc7"
	"19 19.1.7 llvm-toolchain-19 bookworm llvm-toolchain-19_19.1.7.orig.tar.xz ae498f3bc58ae2d9f64ef5f0c035c4240152bf015a5b7738b15c22e93bdc97ce"
)

# Debian builds its packages with these hardening flags (dpkg-buildflags'
# defaults): built with them too, the runtime's code is what Debian ships,
# instruction for instruction, where the compiler is the same. The stamp
# ends with FLAGS_TAG; a build without it is made again.
HARDENING="-fstack-protector-strong -D_FORTIFY_SOURCE=2"
FLAGS_TAG="debian-hardening"

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go"
if [[ -n "${OMPD_GO_RELEASES_DIR:-}" ]]; then
	dir="$OMPD_GO_RELEASES_DIR"
elif [[ -n "${OMPD_GO_RUNTIME_DIR:-}" ]]; then
	dir="$OMPD_GO_RUNTIME_DIR/llvm-openmp-releases"
else
	dir="$cache_root/llvm-openmp-releases"
fi

case "${1:-}" in
--print-dir)
	echo "$dir"
	exit 0
	;;
--list)
	for r in "${RELEASES[@]}"; do
		read -r major version _ suite _ <<<"$r"
		echo "$major $version $suite"
	done
	exit 0
	;;
esac

log() { echo "build-releases: $*" >&2; }

want=("$@")
wanted() {
	local m
	((${#want[@]} == 0)) && return 0
	for m in "${want[@]}"; do [[ "$m" == "$1" ]] && return 0; done
	return 1
}
for m in "${want[@]}"; do
	found=false
	for r in "${RELEASES[@]}"; do [[ "${r%% *}" == "$m" ]] && found=true; done
	$found || { log "unknown release $m (see --list)"; exit 2; }
done

built() {
	[[ -f "$dir/$1/stamp" && -f "$dir/$1/lib/libomp.so" && -f "$dir/$1/include/omp.h" ]] &&
		[[ "$(cat "$dir/$1/stamp")" == *" $FLAGS_TAG" ]]
}
all_ok() {
	local r
	for r in "${RELEASES[@]}"; do
		wanted "${r%% *}" || continue
		built "${r%% *}" || return 1
	done
}
if all_ok; then
	log "cached in $dir"
	exit 0
fi

apt_install_missing cmake ninja-build clang-19 xz-utils dpkg-dev python3
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

work="$dir/work"
mkdir -p "$work"
conf_ok=""

# fetch_source SUITE PACKAGE ORIG SHA256 DIR: downloads the source
# package's upstream tarball ORIG into DIR and checks it.
fetch_source() {
	local suite="$1" pkg="$2" orig="$3" sum="$4" bw="$5" uri
	if [[ " $conf_ok " != *" $suite "* ]]; then
		if [[ "$suite" == bookworm ]]; then
			apt_src_config "$work/apt-$suite"
		else
			apt_src_config "$work/apt-$suite" "$suite"
		fi
		conf_ok="$conf_ok $suite"
	fi
	log "fetching the $pkg source package ($suite)"
	if ! apt_src_fetch "$work/apt-$suite" "$bw" "$pkg/$suite" 2>"$bw/fetch.log"; then
		# The archive may have dropped the package's .dsc while keeping
		# its upstream tarball (trixie's 17 and 18 here): fetch only that,
		# with apt's own downloader, from the URI the signed index gives.
		apt_src_opts "$work/apt-$suite"
		uri=$(apt-get "${APT_SRC_OPTS[@]}" source --print-uris "$pkg/$suite" 2>/dev/null |
			awk -v f="$orig" '$2 == f { gsub("\047", "", $1); print $1 }')
		[[ -n "$uri" ]] || { cat "$bw/fetch.log" >&2; return 1; }
		log "only the upstream tarball is there: fetching $orig"
		/usr/lib/apt/apt-helper download-file "$uri" "$bw/$orig" "SHA256:$sum" >/dev/null
	fi
	apt_src_verify "$bw/$orig" "$sum"
}

for r in "${RELEASES[@]}"; do
	read -r major version pkg suite orig sum <<<"$r"
	wanted "$major" || continue
	built "$major" && continue
	out="$dir/$major"
	rm -rf "$out"
	bw="$work/$major"
	rm -rf "$bw"
	mkdir -p "$bw"
	src="$bw/src"
	# LLVM 19.1.7's source may be in scripts/build-runtime.sh's cache
	# already: no need to fetch it again.
	rsrc="$(bash "$here/build-runtime.sh" --print-dir)/work/src"
	if [[ "$major" == 19 && -d "$rsrc/openmp" && -d "$rsrc/cmake" ]]; then
		log "taking the source of $version from scripts/build-runtime.sh's cache"
		mkdir -p "$src"
		cp -a "$rsrc/openmp" "$rsrc/cmake" "$src/"
	else
		fetch_source "$suite" "$pkg" "$orig" "$sum" "$bw"
		# Only the runtime and the cmake modules it includes.
		log "extracting openmp/ and cmake/ of $version"
		mkdir -p "$bw/extract"
		tar -xJf "$bw/$orig" -C "$bw/extract" --wildcards '*/openmp/*' '*/cmake/*'
		rm -f "$bw/$orig" "$bw"/*.dsc "$bw"/*.debian.tar.xz
		mv "$bw/extract"/* "$src"
	fi

	cc=clang-19 cxx=clang++-19
	policy=$(apt-cache policy "clang-$major" 2>/dev/null || true)
	if [[ "$policy" == *"Candidate: "[0-9]* ]]; then
		apt_install_missing "clang-$major"
		cc="clang-$major" cxx="clang++-$major"
	fi
	log "building libomp $version with $cc (about a minute on 2 cores)"
	build="$bw/build"
	cmake -S "$src/openmp" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
		-DCMAKE_C_FLAGS="$HARDENING" -DCMAKE_CXX_FLAGS="$HARDENING" \
		-DCMAKE_SHARED_LINKER_FLAGS="-Wl,-z,relro" \
		-DLIBOMP_OMPD_SUPPORT=ON -DLIBOMP_OMPT_SUPPORT=ON \
		-DOPENMP_ENABLE_LIBOMPTARGET=OFF -DLIBOMP_USE_HWLOC=OFF \
		-DOPENMP_ENABLE_TESTING=OFF >"$bw/cmake.log" 2>&1 || { tail -30 "$bw/cmake.log"; exit 1; }
	ninja -C "$build" omp >"$bw/ninja.log" 2>&1 || { tail -30 "$bw/ninja.log"; exit 1; }

	mkdir -p "$out/lib" "$out/include" "$out/src"
	cp -L "$build/runtime/src/libomp.so" "$out/lib/libomp.so"
	cp "$build/runtime/src/omp.h" "$out/include/omp.h"
	if [[ -f "$build/runtime/src/omp-tools.h" ]]; then cp "$build/runtime/src/omp-tools.h" "$out/include/"; fi
	mv "$src/openmp" "$out/src/openmp"
	rm -rf "$bw"
	echo "$version $pkg $suite $sum $cc $FLAGS_TAG" >"$out/stamp"
	log "built $out/lib/libomp.so"
done
# The apt lists are only needed to fetch: keep the cache small.
rm -rf "$work"
log "done: $dir"
