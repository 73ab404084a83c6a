#!/usr/bin/env bash
# demo.sh: the main job on the built-in example. Builds the OMPD-enabled
# runtime (first run only), compiles the nested-regions fixture program,
# stops it at its stop point under gdb, writes a core file, and prints the
# program's OpenMP state with the inspector (cmd/ompdtool).
#
# Usage: scripts/demo.sh [-json]
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/build-runtime.sh
rt=$(bash scripts/build-runtime.sh --print-dir)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

exe="$work/nested"
clang-19 -g -O0 -fopenmp -I"$rt/include" internal/fixtures/testdata/nested.c \
	-L"$rt/lib" -Wl,-rpath,"$rt/lib" -o "$exe"

echo "demo: running $exe under gdb to its stop point and writing a core" >&2
OMP_DEBUG=enabled MALLOC_ARENA_MAX=1 OMP_STACKSIZE=256K \
	OMPD_FIXTURE_STDOUT="$work/stdout" OMPD_FIXTURE_STDERR="$work/stderr" \
	gdb -nx -batch -ex 'set pagination off' -ex 'set confirm off' \
	-ex 'break stopme' -ex run -ex "gcore $work/core" -ex kill \
	--args "$exe" >"$work/gdb.log" 2>&1 || { cat "$work/gdb.log" >&2; exit 1; }
[[ -s "$work/core" ]] || { echo "demo: gdb wrote no core" >&2; cat "$work/gdb.log" >&2; exit 1; }

go run ./cmd/ompdtool -threads "$@" core "$exe" "$work/core"
