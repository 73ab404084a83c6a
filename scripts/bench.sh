#!/usr/bin/env bash
# bench.sh: run every benchmark behind BENCHMARKS.md in one go, profile
# the snapshot before and after, and write BENCHMARKS.md from that run.
#
#   bash scripts/bench.sh [OUTDIR]
#
# Builds (or reuses) the runtime, makes the fixture cores it needs (the
# 4096-thread one takes about 20 s and 2 GB of disk the first time), then
# runs, in this order (each into OUTDIR/NAME.txt):
#   compare   internal/compare BenchmarkSnapshot: ompd-go and LLVM's libompd
#             side by side, over the core target and a warm page cache
#   root      . BenchmarkSnapshotFloor (the snapshot's reads replayed),
#             BenchmarkColdStart (a new process per snapshot),
#             BenchmarkThreadLookups, BenchmarkSnapshotMemory,
#             BenchmarkBacktrace*
#   live-1..3 target/delve BenchmarkLiveVsCore (a live stop through Delve
#             against a core of the same stop), three runs in a row
#   delverpc  target/delverpc BenchmarkSnapshot over a real dlv server
#   gomp      internal/gomp BenchmarkStop (GCC's libgomp, 64 threads)
#   merge     internal/summary BenchmarkMergeRanks (a whole job's merge:
#             OMPD_BENCH_RANKS synthetic ranks of 64 threads)
# then CPU and allocation profiles of the 256-thread snapshot over the
# cached target (the library alone, no system calls), of this checkout
# ("after") and of OMPD_BENCH_BASE ("before"), their top entries in
# OUTDIR/profile-{after,before}-{cpu,alloc}.txt.
#
# Outputs: the conditions (machine, load, Go, commit) in
# OUTDIR/conditions.txt, all raw output in OUTDIR/bench.txt, a table of
# medians in OUTDIR/summary.txt, and OUTDIR/BENCHMARKS.md, the document
# filled from this run by internal/benchdoc (template
# internal/benchdoc/benchmarks.md.tmpl): copy it over BENCHMARKS.md to
# publish the run.
#
# Environment:
#   OMPD_BENCH_THREADS  thread counts of the many fixture (default
#                       256,1024,4096; the document needs all three)
#   OMPD_BENCH_RANKS    ranks of BenchmarkMergeRanks (default 100000)
#   OMPD_BENCH_BASE     the commit profiled as "before" (default e14c07b,
#                       the code of the figures before issue 28)
#   BENCHTIME           -benchtime of each run (default 1s: a snapshot
#                       of 256 threads takes about a millisecond and
#                       the collector runs every few of them, so a run
#                       of 5 iterations held one collection or none, and
#                       its figure moved with that; a second of them
#                       averages the collector's share)
#   COUNT               runs of each benchmark (default 5)
#
# Times on a shared machine vary; cpu-ns/op (the process's user+system CPU
# per operation) varies less than ns/op, and read counts not at all. Take
# the figures when the load average is low: conditions.txt says what it
# was, and the document quotes it.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-$(mktemp -d)}
mkdir -p "$out"
out=$(cd "$out" && pwd)
export OMPD_BENCH_THREADS=${OMPD_BENCH_THREADS:-256,1024,4096}
export OMPD_BENCH_RANKS=${OMPD_BENCH_RANKS:-100000}
base=${OMPD_BENCH_BASE:-e14c07b}
benchtime=${BENCHTIME:-1s}
count=${COUNT:-5}
start=$(date +%s)

bash scripts/build-runtime.sh >&2

{
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (modified)')"
	echo "base: $(git rev-parse --short "$base")"
	echo "go: $(go version | cut -d' ' -f3-)"
	echo "kernel: $(uname -sr)"
	echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "cpus: $(nproc) CPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//'))"
	echo "memory: $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
	echo "threads: $OMPD_BENCH_THREADS"
	echo "ranks: $OMPD_BENCH_RANKS"
	echo "benchtime: $benchtime"
	echo "count: $count"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/conditions.txt"
cat "$out/conditions.txt" >&2

# bench NAME PKG PATTERN: the benchmarks PATTERN of PKG into OUTDIR/NAME.txt.
bench() {
	echo "== $1: $2 $3" >&2
	go test -run '^$' -bench "$3" -benchtime "$benchtime" -count "$count" -timeout 60m "$2" |
		tee "$out/$1.txt" >&2
}
bench compare ./internal/compare .
bench root . .
for i in 1 2 3; do
	bench "live-$i" ./target/delve BenchmarkLiveVsCore
done
bench delverpc ./target/delverpc .
bench gomp ./internal/gomp .
bench merge ./internal/summary .
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/conditions.txt"

# profile NAME DIR: CPU and allocation profiles of the 256-thread snapshot
# over the cached target, of the checkout in DIR.
profile() {
	echo "== profile $1" >&2
	(cd "$2" && go test -run '^$' -bench 'BenchmarkSnapshot$/^threads=256$/^target=cached$/^impl=ompd-go$' \
		-benchtime 1000x -count 1 -benchmem -timeout 30m -o "$out/$1.test" \
		-cpuprofile "$out/$1-cpu.pprof" -memprofile "$out/$1-mem.pprof" ./internal/compare) >"$out/profile-$1-bench.log"
	cat "$out/profile-$1-bench.log" >&2
	go tool pprof -top -nodecount 25 "$out/$1.test" "$out/$1-cpu.pprof" >"$out/profile-$1-cpu.txt" 2>/dev/null
	go tool pprof -top -nodecount 25 -sample_index alloc_space "$out/$1.test" "$out/$1-mem.pprof" >"$out/profile-$1-alloc.txt" 2>/dev/null
}
profile after .
rm -rf "$out/base"
mkdir -p "$out/base"
git archive "$base" | tar -x -C "$out/base"
OMPD_BENCH_THREADS=256 profile before "$out/base"
rm -rf "$out/base"

cat "$out"/{compare,root,live-1,live-2,live-3,delverpc,gomp,merge}.txt >"$out/bench.txt"
echo "elapsed: $(( $(date +%s) - start )) s" >>"$out/conditions.txt"

# Medians (and the range) of every metric of every benchmark over the runs.
awk '
/^Benchmark/ {
	stem = FILENAME; sub(/.*\//, "", stem); sub(/\.txt$/, "", stem)
	name = $1; sub(/-[0-9]+$/, "", name); name = stem ":" name
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
}' "$out"/{compare,root,live-1,live-2,live-3,delverpc,gomp,merge}.txt | tee "$out/summary.txt"
cat "$out/conditions.txt"

go run ./internal/benchdoc -run "$out" -template internal/benchdoc/benchmarks.md.tmpl -current BENCHMARKS.md >"$out/BENCHMARKS.md"
echo "raw output: $out/bench.txt; the document of this run: $out/BENCHMARKS.md (cp it over BENCHMARKS.md)" >&2
