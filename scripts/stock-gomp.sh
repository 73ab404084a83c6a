#!/usr/bin/env bash
# stock-gomp.sh: unpack the distribution's own GCC OpenMP runtime, the
# libgomp1 binary package (stripped, no debug information, as users have
# it), of every Debian suite this machine's apt can reach, into a cache
# directory, for the tests that read programs on them. The packages
# conflict with each other and with the installed one, so they are
# unpacked (apt-get download, dpkg -x), never installed.
#
# Usage: scripts/stock-gomp.sh [--print-dir] [--list] [SUITE...]
#
# A suite's libgomp1 built against a newer C library than this machine's
# (it needs GLIBC_ symbol versions the machine's libc lacks) cannot load
# with the machine's: that suite's libc6 is unpacked too, and programs run
# on it with its dynamic linker (linked with --dynamic-linker).
#
# The cache directory is $OMPD_GO_STOCK_GOMP_DIR, or else stock-libgomp/
# under $OMPD_GO_RUNTIME_DIR when that is set, or else
# ${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go/stock-libgomp. On success it
# holds, for each SUITE:
#   SUITE/lib/libgomp.so.1       the stock runtime (and libgomp.so, for -L)
#   SUITE/lib/ld-linux-x86-64.so.2, libc.so.6
#                                that suite's C library, where needed
#   SUITE/stamp                  "PACKAGE-VERSION SUITE DEB-SHA256 INTERP",
#                                INTERP "-" for the machine's own; last
# A suite whose stamp is there is not unpacked again; the .debs are about
# 100-150 KB (libc6: 3 MB). Concurrent runs wait for each other (flock on
# the cache directory's .lock). A suite whose libgomp1 cannot be had is
# said so on stderr and left out; the run fails only when none can.
#
# With --print-dir it only prints the cache directory; with --list, the
# suites it unpacks, one a line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=apt-src.sh
. "$here/apt-src.sh"

# The suites, oldest first: their libgomp1 is GCC 10 (bullseye), 12
# (bookworm), 14 (trixie) and the newest (sid).
SUITES=(bullseye bookworm trixie sid)

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go"
if [[ -n "${OMPD_GO_STOCK_GOMP_DIR:-}" ]]; then
	dir="$OMPD_GO_STOCK_GOMP_DIR"
elif [[ -n "${OMPD_GO_RUNTIME_DIR:-}" ]]; then
	dir="$OMPD_GO_RUNTIME_DIR/stock-libgomp"
else
	dir="$cache_root/stock-libgomp"
fi

case "${1:-}" in
--print-dir)
	echo "$dir"
	exit 0
	;;
--list)
	printf '%s\n' "${SUITES[@]}"
	exit 0
	;;
esac
if (($#)); then
	SUITES=("$@")
fi

log() { echo "stock-gomp: $*" >&2; }

apt_install_missing dpkg-dev binutils

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

# newest_glibc FILE: the newest GLIBC_ version FILE needs.
newest_glibc() {
	objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1
}
own_glibc=$(newest_glibc "$(ldconfig -p | awk '/libc\.so\.6 .*x86-64/ {print $NF; exit}')")

unpacked=0
for suite in "${SUITES[@]}"; do
	out="$dir/$suite"
	if [[ -f "$out/stamp" && -f "$out/lib/libgomp.so.1" ]]; then
		unpacked=$((unpacked + 1))
		continue
	fi
	work="$dir/work-$suite"
	rm -rf "$work" "$out"
	mkdir -p "$work/debs" "$out/lib"
	apt_src_config "$work/apt" "$suite" deb
	apt_src_opts "$work/apt"
	opts=("${APT_SRC_OPTS[@]}" -o "Dir::State::Status=/var/lib/dpkg/status" -o "APT::Sandbox::User=root")
	if ! apt-get "${opts[@]}" update -qq ||
		! (cd "$work/debs" && apt-get "${opts[@]}" download "libgomp1/$suite" >/dev/null 2>&1); then
		log "$suite: no libgomp1 reachable; left out"
		rm -rf "$work" "$out"
		continue
	fi
	deb=$(ls "$work"/debs/libgomp1_*.deb)
	dpkg -x "$deb" "$work/x"
	lib=$(find "$work/x" -name 'libgomp.so.1.*' -type f | head -1)
	[[ -n "$lib" ]] || { log "$suite: no libgomp.so.1 in ${deb##*/}"; exit 1; }
	cp "$lib" "$out/lib/libgomp.so.1"
	ln -sf libgomp.so.1 "$out/lib/libgomp.so"
	interp=-
	need=$(newest_glibc "$out/lib/libgomp.so.1")
	if [[ "$(printf '%s\n%s\n' "$own_glibc" "$need" | sort -V | tail -1)" != "$own_glibc" ]]; then
		# Its libgomp needs a newer C library than the machine's.
		(cd "$work/debs" && apt-get "${opts[@]}" download "libc6/$suite" >/dev/null 2>&1) ||
			{ log "$suite: libgomp1 needs GLIBC_$need and its libc6 cannot be had; left out"; rm -rf "$work" "$out"; continue; }
		dpkg -x "$(ls "$work"/debs/libc6_*.deb)" "$work/libc"
		for f in ld-linux-x86-64.so.2 libc.so.6 libm.so.6; do
			src=$(find "$work/libc" -name "$f" | head -1)
			[[ -n "$src" ]] || { log "$suite: no $f in its libc6"; exit 1; }
			cp -L "$src" "$out/lib/$f"
		done
		interp="$out/lib/ld-linux-x86-64.so.2"
	fi
	version=$(dpkg-deb -f "$deb" Version)
	echo "libgomp1-$version $suite $(sha256sum "$deb" | cut -d' ' -f1) $interp" >"$out/stamp"
	rm -rf "$work"
	log "$suite: libgomp1 $version in $out"
	unpacked=$((unpacked + 1))
done
((unpacked > 0)) || { log "no suite's libgomp1 could be had"; exit 1; }
log "done: $dir"
