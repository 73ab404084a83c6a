package ompdtest

import (
	"context"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/target"
)

// BenchThreads lists the thread counts of the "many" fixture that
// benchmarks measure: OMPD_BENCH_THREADS (comma-separated, e.g.
// "256,1024,4096"; scripts/bench.sh sets it), else 256 and 1024. The
// larger cores take a while to make the first time (4096 threads: about
// 20 s and 2 GB of disk).
func BenchThreads() []string {
	if s := strings.TrimSpace(os.Getenv("OMPD_BENCH_THREADS")); s != "" {
		return strings.Split(s, ",")
	}
	return []string{"256", "1024"}
}

// Snapshot opens an address space over t, takes one full snapshot and
// closes it, failing tb on any error, including errors inside the
// snapshot. It returns the number of OpenMP threads.
func Snapshot(tb testing.TB, t target.Target) int {
	tb.Helper()
	s := SnapshotOf(tb, t)
	return len(s.Threads)
}

// SnapshotOf is Snapshot returning the snapshot.
func SnapshotOf(tb testing.TB, t target.Target) *ompd.Snapshot {
	tb.Helper()
	as, err := ompd.Open(t)
	if err != nil {
		tb.Fatal(err)
	}
	defer as.Close()
	s, err := as.Snapshot(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	if len(s.Errors) > 0 {
		tb.Fatalf("snapshot errors: %q", s.Errors)
	}
	return s
}

// Settle collects the garbage that set-up left (Delve's attach allocates
// tens of MB, a core's first snapshot its symbol tables), so that a
// benchmark's timed loop pays the collector for its own garbage only: a
// loop that starts while a collection is owed measures more CPU, by as
// much as set-up left, which made the live benchmark's figures move from
// run to run.
func Settle() { runtime.GC() }

// BenchSnapshot measures ompd.Open + Snapshot + Close over t, a fresh
// address space per iteration (so its caches start cold each time), after
// one untimed warm-up (the target's own caches, the OS page cache). It
// reports cpu-ns/op, reads/op, read-bytes/op, threads and the Go
// allocations.
func BenchSnapshot(b *testing.B, t target.Target) { BenchSnapshotAfter(b, t, nil) }

// BenchSnapshotAfter is BenchSnapshot calling before (unless nil) at the
// start of every iteration, timed: a live target's Refresh, for instance,
// which drops what the target cached of the stop.
func BenchSnapshotAfter(b *testing.B, t target.Target, before func()) {
	b.Helper()
	Snapshot(b, t)
	ct := &CountingTarget{Target: t}
	var threads int
	b.ReportAllocs()
	Settle()
	cpu := CPUTime()
	for b.Loop() {
		if before != nil {
			before()
		}
		threads = Snapshot(b, ct.Counting())
	}
	ReportCPU(b, cpu)
	ReportReads(b, ct.Reads.Load(), ct.Bytes.Load(), threads)
}

// Read is one target memory read.
type Read struct {
	Addr uint64
	Size int
}

// RecordingTarget records the memory reads made through it, in order.
type RecordingTarget struct {
	target.Target
	mu    sync.Mutex
	reads []Read
}

// ReadMemory records the read and passes it on.
func (r *RecordingTarget) ReadMemory(buf []byte, addr uint64) error {
	r.mu.Lock()
	r.reads = append(r.reads, Read{addr, len(buf)})
	r.mu.Unlock()
	return r.Target.ReadMemory(buf, addr)
}

// SymbolAt passes the wrapped target's answer on, if it names code
// addresses.
func (r *RecordingTarget) SymbolAt(addr uint64) (string, bool) { return symbolAt(r.Target, addr) }

// BitField passes the wrapped target's answer on, if it locates bit-fields.
func (r *RecordingTarget) BitField(typeName, field string) (uint64, uint64, error) {
	return bitField(r.Target, typeName, field)
}

// Reads returns the reads recorded so far.
func (r *RecordingTarget) Reads() []Read {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Read(nil), r.reads...)
}
