#!/usr/bin/env bash
# stock-libomp.sh: unpack the LLVM OpenMP runtimes Debian ships, as users
# have them (stripped, no debug package), into a cache directory: the
# binary packages libomp5-MAJOR (the runtime) and libomp-MAJOR-dev (its
# omp.h) of every release this machine's apt reaches, fetched with
# `apt-get download` (whose hashes come from Debian's signed index) and
# unpacked with `dpkg -x`, never installed: the releases' packages conflict
# with each other. Programs load them through an rpath (or LD_LIBRARY_PATH).
#
# Usage: scripts/stock-libomp.sh [--print-dir] [--list]
#
# The cache directory is $OMPD_GO_STOCK_DIR, or else stock-libomp/ under
# $OMPD_GO_RUNTIME_DIR when that is set, or else
# ${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go/stock-libomp. On success it holds,
# for each SUITE-MAJOR (bookworm-13 ... bookworm-19):
#   SUITE-MAJOR/root/      the two packages unpacked
#   SUITE-MAJOR/info       lines "key=value": package (libomp5-MAJOR),
#                          version (the package's), lib (the directory of
#                          libomp.so.5 and libomp.so, under root/), include
#                          (the directory of omp.h), buildid (the runtime's
#                          GNU build-id); for a suite other than the
#                          machine's own, libc (the directory of its C
#                          library) and interp (its dynamic linker), both
#                          under root/, from its libc6; written last
# An entry whose info is there is not fetched again. It takes a few seconds
# (about 1 MB per package). Concurrent runs wait for each other (flock on
# the cache directory's .lock).
#
# With --print-dir it only prints the cache directory; with --list, the
# entries it makes ("SUITE MAJOR"), one a line.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=apt-src.sh
. "$here/apt-src.sh"

# suite major: the releases bookworm and trixie ship libomp5 for. trixie's
# need glibc 2.38: with them comes trixie's libc6, unpacked too, which the
# programs built against them run on (their dynamic linker and C library).
STOCK=(
	"bookworm 13"
	"bookworm 14"
	"bookworm 15"
	"bookworm 16"
	"bookworm 19"
	"trixie 18"
	"trixie 19"
)

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/ompd-go"
if [[ -n "${OMPD_GO_STOCK_DIR:-}" ]]; then
	dir="$OMPD_GO_STOCK_DIR"
elif [[ -n "${OMPD_GO_RUNTIME_DIR:-}" ]]; then
	dir="$OMPD_GO_RUNTIME_DIR/stock-libomp"
else
	dir="$cache_root/stock-libomp"
fi

case "${1:-}" in
--print-dir)
	echo "$dir"
	exit 0
	;;
--list)
	printf '%s\n' "${STOCK[@]}"
	exit 0
	;;
esac

log() { echo "stock-libomp: $*" >&2; }

all_ok() {
	local s suite major
	for s in "${STOCK[@]}"; do
		read -r suite major <<<"$s"
		[[ -f "$dir/$suite-$major/info" ]] || return 1
	done
}
if all_ok; then
	log "cached in $dir"
	exit 0
fi

apt_install_missing dpkg-dev binutils
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

work="$dir/work"
mkdir -p "$work"
conf_ok=""
for s in "${STOCK[@]}"; do
	read -r suite major <<<"$s"
	out="$dir/$suite-$major"
	[[ -f "$out/info" ]] && continue
	conf="$work/apt-$suite"
	if [[ " $conf_ok " != *" $suite "* ]]; then
		own=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
		if [[ "$suite" == "$own" ]]; then
			apt_bin_config "$conf"
		else
			apt_bin_config "$conf" "$suite"
		fi
		apt_src_opts "$conf"
		apt-get "${APT_SRC_OPTS[@]}" -o Dir::State::status=/dev/null update -qq
		conf_ok="$conf_ok $suite"
	fi
	apt_src_opts "$conf"
	dl="$work/$suite-$major"
	rm -rf "$dl" "$out"
	mkdir -p "$dl"
	log "fetching libomp5-$major and libomp-$major-dev ($suite)"
	pkgs=("libomp5-$major" "libomp-$major-dev")
	own=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[[ "$suite" == "$own" ]] || pkgs+=(libc6)
	(cd "$dl" && apt-get "${APT_SRC_OPTS[@]}" -o Dir::State::status=/dev/null \
		download "${pkgs[@]}" >/dev/null 2>"$dl/download.log") ||
		{ cat "$dl/download.log" >&2; exit 1; }
	mkdir -p "$out/root"
	for deb in "$dl"/*.deb; do dpkg -x "$deb" "$out/root"; done
	version=$(dpkg-deb -f "$dl"/libomp5-"$major"_*.deb Version)
	so=$(find "$out/root" -name libomp.so.5 -type f | head -1)
	hdr=$(find "$out/root" -name omp.h -type f | head -1)
	[[ -n "$so" && -n "$hdr" ]] || { log "libomp.so.5 or omp.h missing from the packages of $major"; exit 1; }
	libdir=$(dirname "$so")
	[[ -e "$libdir/libomp.so" ]] || ln -s libomp.so.5 "$libdir/libomp.so"
	id=$(readelf -n "$so" | sed -n 's/.*Build ID: *//p' | head -1)
	[[ -n "$id" ]] || { log "$so has no build-id"; exit 1; }
	libc="" interp=""
	if [[ "$suite" != "$own" ]]; then
		libc=$(find "$out/root" -name libc.so.6 | head -1)
		interp=$(find "$out/root" -name 'ld-linux-x86-64.so.2' -type f | head -1)
		[[ -n "$libc" && -n "$interp" ]] || { log "no C library or dynamic linker in $suite's libc6"; exit 1; }
	fi
	rm -rf "$dl"
	{
		echo "package=libomp5-$major"
		echo "version=$version"
		echo "lib=${libdir#"$out/"}"
		echo "include=$(dirname "${hdr#"$out/"}")"
		echo "buildid=$id"
		if [[ -n "$libc" ]]; then
			echo "libc=$(dirname "${libc#"$out/"}")"
			echo "interp=${interp#"$out/"}"
		fi
	} >"$out/info.tmp"
	mv "$out/info.tmp" "$out/info"
	log "unpacked libomp5-$major $version ($id)"
done
rm -rf "$work"
log "done: $dir"
