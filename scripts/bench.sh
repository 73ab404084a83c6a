#!/usr/bin/env bash
# bench.sh: run every benchmark behind BENCHMARKS.md in one go and print
# the medians.
#
#   bash scripts/bench.sh [OUTDIR]
#
# Builds (or reuses) the runtime, makes the fixture cores it needs (the
# 4096-thread one takes about 20 s and 2 GB of disk the first time), then
# runs, in this order:
#   internal/compare  BenchmarkSnapshot: ompd-go and LLVM's libompd side by
#                     side, over the core target and a warm page cache
#   .                 BenchmarkSnapshotFloor (the snapshot's reads replayed),
#                     BenchmarkColdStart (a new process per snapshot),
#                     BenchmarkThreadLookups, BenchmarkSnapshotMemory,
#                     BenchmarkBacktrace*
#   target/delve      BenchmarkLiveVsCore (a live stop through Delve against
#                     a core of the same stop)
#   target/delverpc   BenchmarkSnapshot over a real dlv server (round trips)
#   internal/gomp     BenchmarkStop (GCC's libgomp, 64 threads)
#   internal/summary  BenchmarkMergeRanks (a whole job's merge: OMPD_BENCH_RANKS
#                     synthetic ranks of 64 threads, per node then a tree)
# The raw `go test -bench` output goes to OUTDIR/bench.txt (default: a new
# temporary directory), the conditions (machine, load, Go, commit) to
# OUTDIR/conditions.txt, and a table of medians over the runs to stdout
# and OUTDIR/summary.txt.
#
# Environment:
#   OMPD_BENCH_THREADS  thread counts of the many fixture (default 256,1024,4096)
#   OMPD_BENCH_RANKS    ranks of BenchmarkMergeRanks (default 100000)
#   BENCHTIME           iterations per run (default 5x)
#   COUNT               runs of each benchmark (default 5)
#   BENCH               -bench pattern (default .)
#
# Times on a shared machine vary; cpu-ns/op (the process's user+system CPU
# per operation) varies less than ns/op, and read counts not at all. Take
# the figures when the load average is low, and say what it was.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-$(mktemp -d)}
mkdir -p "$out"
export OMPD_BENCH_THREADS=${OMPD_BENCH_THREADS:-256,1024,4096}
export OMPD_BENCH_RANKS=${OMPD_BENCH_RANKS:-100000}
benchtime=${BENCHTIME:-5x}
count=${COUNT:-5}
pattern=${BENCH:-.}

bash scripts/build-runtime.sh >&2

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (modified)')"
	echo "go: $(go version)"
	echo "kernel: $(uname -sr)"
	echo "cpus: $(nproc) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
	echo "memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
	echo "threads: $OMPD_BENCH_THREADS; ranks: $OMPD_BENCH_RANKS; -benchtime $benchtime -count $count -bench '$pattern'"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/conditions.txt"
cat "$out/conditions.txt" >&2

: >"$out/bench.txt"
for pkg in ./internal/compare . ./target/delve ./target/delverpc ./internal/gomp ./internal/summary; do
	echo "== $pkg" >&2
	go test -run '^$' -bench "$pattern" -benchtime "$benchtime" -count "$count" -timeout 60m "$pkg" |
		tee -a "$out/bench.txt" >&2
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/conditions.txt"

# Medians (and the range) of every metric of every benchmark over the runs.
awk '
/^Benchmark/ {
	name = $1; sub(/-[0-9]+$/, "", name)
	if (!(name in seen)) { seen[name] = 1; order[++nb] = name }
	for (i = 3; i < NF; i += 2) {
		key = name SUBSEP $(i+1)
		if (!(key in nv)) { units[name] = units[name] " " $(i+1) }
		vals[key, ++nv[key]] = $i
	}
}
function median(key, n,    i, j, t, a) {
	for (i = 1; i <= n; i++) a[i] = vals[key, i] + 0
	for (i = 2; i <= n; i++) for (j = i; j > 1 && a[j-1] > a[j]; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	lo = a[1]; hi = a[n]
	return (n % 2) ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}
END {
	printf "%-70s %-16s %14s %14s %14s %3s\n", "benchmark", "unit", "median", "min", "max", "n"
	for (b = 1; b <= nb; b++) {
		name = order[b]; nu = split(units[name], us, " ")
		for (u = 1; u <= nu; u++) {
			key = name SUBSEP us[u]
			m = median(key, nv[key])
			printf "%-70s %-16s %14.6g %14.6g %14.6g %3d\n", name, us[u], m, lo, hi, nv[key]
		}
	}
}' "$out/bench.txt" | tee "$out/summary.txt"
cat "$out/conditions.txt"
echo "raw output: $out/bench.txt" >&2
