#!/usr/bin/env bash
# test.sh: run every test of ompd-go, as CI does.
#
# Builds (or reuses) the OMPD-enabled LLVM OpenMP runtime and its variant
# without OMPD support, GCC's libgomp 12 and 14 with debug info
# (scripts/build-gomp.sh) and the other Debian releases' stock libgomp1
# (scripts/stock-gomp.sh), then runs go vet, the whole test suite with the race
# detector (real processes and real core files of the fixture programs, also
# against stripped copies of the runtime with their debug files apart, LLVM's
# libompd for comparison, synthetic runtime memory, cores of aarch64, ppc64le
# and s390x programs made under qemu-user by scripts/make-arch-cores.sh and
# cached), and each fuzz target
# briefly. Then the suite runs once more with the lowest Go the go.mod
# names (fetched through the module proxy as a toolchain module), without
# the race detector and fuzzing: the first run has them, and this one checks
# only that the module builds and behaves with the oldest Go it accepts. It
# reuses the fixtures' cached cores.
#
# Environment:
#   FUZZTIME  how long each fuzz target runs (default 20s; 0 skips fuzzing)
#   CI=true   tests that need the runtime, gdb or ptrace fail instead of skipping
#   LOWEST_GO=0  skips the run with the lowest Go
#   OMPD_GO_GOMP_ALL=1  also builds libgomp of every GCC release and checks
#             that internal/gomp/known_layouts.go is what go generate writes
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/build-runtime.sh
bash scripts/build-gomp.sh
# The stock libgomp1 of every Debian suite apt reaches (GCC 10, 12, 14,
# 16: small .debs, unpacked once into the cache).
bash scripts/stock-gomp.sh
# LLVM 13 and 16 built with symbols (about two minutes each the first
# time): the first and last releases whose breakpoint functions have C++
# names (cmd/ompdtool's TestReleaseBreakpoints).
bash scripts/build-releases.sh 13 16
# Debian's own stripped libomp5-13 ... libomp5-19 (a few MB, seconds): read
# through the table of known releases (stock_test.go).
bash scripts/stock-libomp.sh
# Slurm, munge and Open MPI for the whole-job test (ompdtool job on a
# 4-node cluster on this machine: scripts/slurm-cluster.sh).
bash scripts/slurm-cluster.sh install

go vet ./...
# Everything but internal/libompd's harness and internal/compare builds
# (tests included) without cgo.
CGO_ENABLED=0 go vet ./...
unformatted=$(gofmt -l . | grep -v '^testdata/' || true)
if [[ -n "$unformatted" ]]; then
	echo "gofmt needed on:"; echo "$unformatted"; exit 1
fi
# libgomp's layout table is generated from builds of every GCC release
# (scripts/build-gomp.sh --all: about 15 minutes and 650 MB of sources the
# first time), so it is regenerated and compared only with
# OMPD_GO_GOMP_ALL=1; internal/gomp's TestKnownLayoutsMatchDWARF checks the
# table's entries of the releases built above on every run.
if [[ "${OMPD_GO_GOMP_ALL:-0}" == 1 ]]; then
	gen=$(mktemp)
	(cd internal/gomp && go run ./gen -o "$gen")
	# (Build-ids depend on where the libraries were built: not compared.)
	if ! diff -q <(grep -v 'BuildID:' "$gen") <(grep -v 'BuildID:' internal/gomp/known_layouts.go) >/dev/null; then
		echo "internal/gomp/known_layouts.go is stale: run go generate ./internal/gomp"; rm -f "$gen"; exit 1
	fi
	rm -f "$gen"
fi
# The table of known LLVM releases (internal/kmp/known_releases.go) is
# generated from builds of every release (scripts/build-releases.sh, about
# two minutes each): checked only with OMPD_GO_CHECK_RELEASES=1, not on
# every run. It must be what go generate writes now.
if [[ "${OMPD_GO_CHECK_RELEASES:-0}" == 1 ]]; then
	gen=$(mktemp)
	(cd internal/kmp && go run ./gen -o "$gen")
	if ! diff -q "$gen" internal/kmp/known_releases.go >/dev/null; then
		echo "internal/kmp/known_releases.go is stale: run go generate ./internal/kmp"; rm -f "$gen"; exit 1
	fi
	rm -f "$gen"
fi
# Only target/delve and target/delverpc may pull Delve's process and service
# code in; its standalone DWARF packages (pkg/dwarf/...) may be used anywhere.
delve_deps=$(go list -deps . ./target ./target/core | grep go-delve | grep -v '^github.com/go-delve/delve/pkg/dwarf' || true)
if [[ -n "$delve_deps" ]]; then
	echo "the root package, target or target/core depends on Delve's process or service code:"
	echo "$delve_deps"; exit 1
fi
# The API package makes no network request: fetching debug files is the
# targets' business, when asked (target/debuginfod).
net_deps=$(go list -deps . | grep -E '^(net/http|crypto/tls)$|/target/debuginfod$' || true)
if [[ -n "$net_deps" ]]; then
	echo "the root package depends on network code:"
	echo "$net_deps"; exit 1
fi
# The root package reads runtimes through the runtime boundary only.
api_imports=$(go list -f '{{join .Imports "\n"}}' . | grep '\.' | grep -vxE 'github.com/ompd-go/ompd/(target|internal/omprt|internal/runtimes)' || true)
if [[ -n "$api_imports" ]]; then
	echo "the root package imports more than target and the runtime boundary:"
	echo "$api_imports"; exit 1
fi

go test -race -count=1 -timeout 45m ./...
# Every benchmark once, at 256 threads (the merge at 2048 ranks), so that
# they keep working (about 30 s); the published figures come from
# scripts/bench.sh.
OMPD_BENCH_THREADS=256 OMPD_BENCH_RANKS=2048 go test -run '^$' -bench . -benchtime 1x -timeout 10m . ./internal/compare ./target/delve ./target/delverpc ./internal/summary

# Each fuzz target runs for $FUZZTIME; a new input is minimized for 2 s at
# most (the default minute would take the whole run). The rate each reached
# is printed at the end. The fuzzers run on Go 1.27 (FUZZ_GO), fetched by
# the go command from the module proxy: before it, Go's fuzzing coordinator
# could end a -fuzztime run with a bare "context deadline exceeded"
# failure and no failing input (go.dev/issue/75804), as it did here on a
# loaded machine.
fuzztime=${FUZZTIME:-20s}
fuzzgo=${FUZZ_GO:-go1.27.3}
fuzz() { # package target
	local log
	log=$(mktemp)
	GOTOOLCHAIN="$fuzzgo" go test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" -fuzzminimizetime 2s "$1" 2>&1 | tee "$log"
	awk -v t="$2" '/execs: [0-9]+/ { for (i = 1; i <= NF; i++) if ($i == "execs:") n = $(i+1); el = $3 }
		END { sub(",", "", el); s = el + 0; if (el ~ /m/) { split(el, a, "m"); s = a[1] * 60 + a[2] }
			printf "%s: %d execs in %s (%.0f/s)\n", t, n, el, n / (s > 0 ? s : 1) }' "$log" >>"$rates"
	rm -f "$log"
}
if [[ "$fuzztime" != "0" ]]; then
	rates=$(mktemp)
	fuzz ./target/core FuzzOpen
	fuzz . FuzzWalk
	fuzz ./internal/unwind FuzzWalk
	fuzz ./internal/cfi FuzzParse
	fuzz . FuzzBacktraceRegisters
	echo "fuzz exec rates:"; cat "$rates"; rm -f "$rates"
fi

if [[ "${LOWEST_GO:-1}" != "0" ]]; then
	lowest=$(go mod edit -json | sed -n 's/^\t"Go": "\(.*\)",\{0,1\}$/\1/p')
	[[ -n "$lowest" ]] || { echo "no go version in go.mod"; exit 1; }
	echo "== the suite with go$lowest, the lowest Go the go.mod names"
	GOTOOLCHAIN="go$lowest" go test -count=1 -timeout 45m ./...
fi
