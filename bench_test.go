package ompd_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

// The benchmarks of this file measure ompd-go alone, over the core files
// of the "many" fixture (one parallel region of N threads): what reading
// costs at its floor, a cold start in a new process, per-thread lookups,
// and memory. The comparison with LLVM's libompd (which needs cgo) is
// internal/compare's BenchmarkSnapshot; scripts/bench.sh runs them all and
// BENCHMARKS.md has the figures. OMPD_BENCH_THREADS picks the sizes (see
// ompdtest.BenchThreads).

// openBenchCore opens the core of the many fixture stopped with n threads.
func openBenchCore(b *testing.B, n string) (*fixtures.Stop, *core.Core) {
	b.Helper()
	stop := fixtures.Core(b, fixtures.Many, n)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	if err != nil {
		b.Fatalf("core.Open(context.Background(), %s, %s): %v", stop.Exe, stop.Core, err)
	}
	b.Cleanup(func() { c.Close() })
	return stop, c
}

// BenchmarkSnapshotFloor replays the exact target reads of one full
// snapshot (ompd.Open + Snapshot, recorded once) against the core target:
// what the snapshot would cost if ompd-go's own work were free. Compare its
// cpu-ns/op with internal/compare's BenchmarkSnapshot (target=core,
// impl=ompd-go).
func BenchmarkSnapshotFloor(b *testing.B) {
	for _, n := range ompdtest.BenchThreads() {
		b.Run("threads="+n, func(b *testing.B) {
			_, c := openBenchCore(b, n)
			ompdtest.Snapshot(b, c) // warm the core's symbol tables and the OS page cache
			rec := &ompdtest.RecordingTarget{Target: c}
			threads := ompdtest.Snapshot(b, rec)
			reads := rec.Reads()
			var bytes uint64
			biggest := 0
			for _, r := range reads {
				bytes += uint64(r.Size)
				biggest = max(biggest, r.Size)
			}
			buf := make([]byte, biggest)
			b.ReportAllocs()
			ompdtest.Settle()
			cpu := ompdtest.CPUTime()
			for b.Loop() {
				for _, r := range reads {
					if err := c.ReadMemory(buf[:r.Size], r.Addr); err != nil {
						b.Fatalf("replaying a read of %d bytes at %#x: %v", r.Size, r.Addr, err)
					}
				}
			}
			ompdtest.ReportCPU(b, cpu)
			ompdtest.ReportReads(b, uint64(len(reads))*uint64(b.N), bytes*uint64(b.N), threads)
		})
	}
}

// coldEnv names the environment variable that makes TestColdStartHelper
// do its work: "EXE CORE".
const coldEnv = "OMPD_BENCH_COLD_START"

// BenchmarkColdStart measures what a user of a new process waits for: each
// iteration starts this test binary anew (TestColdStartHelper), which
// opens the 256-thread core (core.Open), the address space (ompd.Open) and
// takes a full snapshot, nothing of it cached in the process before.
// cpu-ns/op and wall-ns/op are the child's CPU and wall time for those
// three steps (measured inside it); proc-cpu-ns/op is the whole child
// process's CPU time, the Go runtime's and the test framework's start-up
// included; ns/op is the parent's wall time per child. What stays warm is
// the operating system's page cache: the benchmark does not drop it (that
// needs root and would slow down every process on the machine), so the
// files are read from memory, not disk, as for a debugger that just
// wrote or read the core.
func BenchmarkColdStart(b *testing.B) {
	stop := fixtures.Core(b, fixtures.Many, "256")
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	run := func() (cpu, wall time.Duration, threads int, proc time.Duration) {
		cmd := exec.Command(exe, "-test.run=^TestColdStartHelper$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), coldEnv+"="+stop.Exe+" "+stop.Core)
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("cold-start child: %v\n%s", err, out)
		}
		i := strings.Index(string(out), "cold-start:")
		if i < 0 {
			b.Fatalf("cold-start child said nothing:\n%s", out)
		}
		var c, w int64
		if _, err := fmt.Sscanf(string(out[i:]), "cold-start: cpu=%d wall=%d threads=%d", &c, &w, &threads); err != nil {
			b.Fatalf("cold-start child: %v:\n%s", err, out)
		}
		st := cmd.ProcessState
		return time.Duration(c), time.Duration(w), threads, st.UserTime() + st.SystemTime()
	}
	run() // the OS page cache, and the test binary's pages
	var cpu, wall, proc time.Duration
	var threads int
	for b.Loop() {
		c, w, n, p := run()
		cpu, wall, proc, threads = cpu+c, wall+w, proc+p, n
	}
	n := float64(b.N)
	b.ReportMetric(float64(cpu)/n, "cpu-ns/op")
	b.ReportMetric(float64(wall)/n, "wall-ns/op")
	b.ReportMetric(float64(proc)/n, "proc-cpu-ns/op")
	b.ReportMetric(float64(threads), "threads")
}

// TestColdStartHelper is the child process of BenchmarkColdStart, and does
// nothing (it skips) unless that benchmark started it.
func TestColdStartHelper(t *testing.T) {
	spec := os.Getenv(coldEnv)
	if spec == "" {
		t.Skip("the child process of BenchmarkColdStart; runs only when the benchmark starts it")
	}
	exe, corePath, ok := strings.Cut(spec, " ")
	if !ok {
		t.Fatalf("%s=%q: want \"EXE CORE\"", coldEnv, spec)
	}
	cpu, start := ompdtest.CPUTime(), time.Now()
	c, err := core.Open(context.Background(), exe, corePath)
	if err != nil {
		t.Fatal(err)
	}
	s := ompdtest.SnapshotOf(t, c)
	wall, used := time.Since(start), ompdtest.CPUTime()-cpu
	c.Close()
	fmt.Printf("cold-start: cpu=%d wall=%d threads=%d\n", used.Nanoseconds(), wall.Nanoseconds(), len(s.Threads))
}

// BenchmarkThreadLookups looks every OS thread of the core up
// (AddressSpace.ThreadByOSThread by LWP id) and asks the thread found for
// its LWP and pthread ids (Thread.OSThread), on a fresh address space per
// iteration (opened untimed). ns/thread is the time per OS thread: for
// per-thread lookups that cost O(1) after the first, it stays flat as the
// thread count grows.
func BenchmarkThreadLookups(b *testing.B) {
	for _, n := range ompdtest.BenchThreads() {
		b.Run("threads="+n, func(b *testing.B) {
			_, c := openBenchCore(b, n)
			osThreads, err := c.Threads()
			if err != nil {
				b.Fatal(err)
			}
			ompdtest.Snapshot(b, c) // warm caches below the address space
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				as, err := ompd.Open(c)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				lookupAll(b, as, osThreads)
				b.StopTimer()
				as.Close()
				b.StartTimer()
			}
			per := float64(b.Elapsed()) / float64(b.N) / float64(len(osThreads))
			b.ReportMetric(per, "ns/thread")
			b.ReportMetric(float64(len(osThreads)), "threads")
		})
	}
}

func lookupAll(b *testing.B, as *ompd.AddressSpace, osThreads []target.Thread) {
	for _, ot := range osThreads {
		th, err := as.ThreadByOSThread(ompd.LWPID, ot.ID)
		if err != nil {
			b.Fatalf("ThreadByOSThread(LWP %d): %v", ot.ID, err)
		}
		lwp, err := th.OSThread(ompd.LWPID)
		if err != nil || lwp != ot.ID {
			b.Fatalf("OSThread(LWPID) of LWP %d's thread: %d, %v", ot.ID, lwp, err)
		}
		pt, err := th.OSThread(ompd.PthreadID)
		if err != nil || pt != ot.Pointer {
			b.Fatalf("OSThread(PthreadID) of LWP %d's thread: %#x, %v; want %#x", ot.ID, pt, err, ot.Pointer)
		}
	}
}

// BenchmarkSnapshotMemory reports the heap a full snapshot needs at the
// largest size measured: peak-heap-B is the high-water mark of the heap
// (HeapAlloc: reachable objects and garbage not yet collected) above what
// was reachable before, sampled every 100 µs during ompd.Open + Snapshot,
// so a lower bound of the true peak; retained-B is what stays reachable
// afterwards (the snapshot and the address space with its caches, after a
// GC); growth-B is how much the reachable heap grows from the 2nd to the
// 6th snapshot of the same address space (after Refresh), which should be
// nothing.
func BenchmarkSnapshotMemory(b *testing.B) {
	ths := ompdtest.BenchThreads()
	n := ths[len(ths)-1]
	b.Run("threads="+n, func(b *testing.B) {
		_, c := openBenchCore(b, n)
		ompdtest.Snapshot(b, c)
		ctx := context.Background()
		var peak, retained, growth float64
		for b.Loop() {
			before := heapAfterGC()
			stop := sampleHeap()
			as, err := ompd.Open(c)
			if err != nil {
				b.Fatal(err)
			}
			s, err := as.Snapshot(ctx)
			if err != nil {
				b.Fatal(err)
			}
			peak += float64(stop() - before)
			retained += float64(heapAfterGC() - before)
			var after [6]uint64
			for i := range after {
				as.Refresh()
				if s, err = as.Snapshot(ctx); err != nil {
					b.Fatal(err)
				}
				after[i] = heapAfterGC()
			}
			growth += float64(int64(after[5]) - int64(after[1]))
			runtime.KeepAlive(s)
			as.Close()
		}
		nf := float64(b.N)
		b.ReportMetric(peak/nf, "peak-heap-B")
		b.ReportMetric(retained/nf, "retained-B")
		b.ReportMetric(growth/nf, "growth-B")
	})
}

// heapAfterGC is the reachable heap after a full collection.
func heapAfterGC() uint64 {
	runtime.GC()
	return heapAlloc()
}

func heapAlloc() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// sampleHeap samples HeapAlloc every 100 µs until the returned function is
// called, which returns the highest value seen.
func sampleHeap() func() uint64 {
	var (
		mu   sync.Mutex
		high = heapAlloc()
		done = make(chan struct{})
		wg   sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(100 * time.Microsecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				h := heapAlloc()
				mu.Lock()
				high = max(high, h)
				mu.Unlock()
			}
		}
	}()
	return func() uint64 {
		h := heapAlloc()
		close(done)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return max(high, h)
	}
}
