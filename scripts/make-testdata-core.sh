#!/usr/bin/env bash
# make-testdata-core.sh: make testdata/nested-core, the small real core that
# the root package's tests read without clang, gdb or the runtime build
# (TestShippedCore).
#
# It builds the nested fixture against the OMPD-enabled runtime that
# scripts/build-runtime.sh builds, in a neutral directory with a clean
# environment (no paths or variables of this machine end up in the core),
# stops it under gdb and writes its core, then keeps what the test needs:
#   nested.gz     the program, with its debug information
#   libomp.so.gz  the runtime without its debug information and with its
#                 code (.text) zeroed: the library reads symbols, headers and
#                 data, never code, and the core must match the file's
#                 headers
#   core.gz       gdb's core, as written
#   truth.json    what the program recorded at the stop
#   display.txt   its omp_display_env(1) block
# Run it again after changing the fixtures or the runtime build.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
out=$root/testdata/nested-core
rt=$(bash scripts/build-runtime.sh --print-dir)
work=/tmp/ompd-go-testdata
rm -rf "$work"
mkdir -p "$work/lib" "$work/src"
strip --strip-debug -o "$work/lib/libomp.so" "$rt/lib/libomp.so"
cp internal/fixtures/testdata/nested.c internal/fixtures/testdata/fixture.h "$rt/include/omp.h" "$work/src/"
(cd "$work/src" && clang-19 -g -O0 -fopenmp -Wall -I. nested.c \
	-L"$work/lib" -Wl,-rpath,"$work/lib" -o "$work/nested")
(cd "$work" && env -i PATH=/usr/bin:/bin \
	OMP_DEBUG=enabled OMP_DISPLAY_ENV=verbose MALLOC_ARENA_MAX=1 OMP_STACKSIZE=256K \
	OMPD_FIXTURE_TRUTH="$work/truth.json" OMPD_FIXTURE_STDERR="$work/stderr.txt" \
	gdb -nx -batch -ex "set pagination off" -ex "set confirm off" \
	-ex "set startup-with-shell off" -ex "break stopme" -ex run \
	-ex "gcore $work/core" -ex kill ./nested >"$work/gdb.txt" 2>&1) || { cat "$work/gdb.txt"; exit 1; }
mkdir -p "$out"
cp "$work/lib/libomp.so" "$work/libomp.sym"
read -r off size < <(readelf -SW "$work/libomp.sym" | awk '$2 == ".text" { print $5, $6 }')
dd if=/dev/zero of="$work/libomp.sym" bs=4096 count=$((16#$size / 4096)) seek=$((16#$off)) oflag=seek_bytes conv=notrunc status=none
gzip -9 -n -c "$work/nested" >"$out/nested.gz"
gzip -9 -n -c "$work/libomp.sym" >"$out/libomp.so.gz"
gzip -9 -n -c "$work/core" >"$out/core.gz"
cp "$work/truth.json" "$out/truth.json"
sed -n '/OPENMP DISPLAY ENVIRONMENT BEGIN/,/OPENMP DISPLAY ENVIRONMENT END/p' "$work/stderr.txt" >"$out/display.txt"
du -b "$out"/*
