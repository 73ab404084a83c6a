package ompd_test

import (
	"context"
	"testing"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target/core"
)

// BenchmarkBacktrace measures what unwinding costs: one operation is the
// backtrace of every OpenMP thread of the many fixture's core (registers
// from NT_PRSTATUS, call-frame information of each object, symbols, line
// tables and task placement), the address space and the objects' parsed
// call-frame information and line tables already warm, as in a debugger
// asked for the stacks a second time. ns/thread and cpu-ns/thread are the
// wall and CPU time per thread; frames/thread the frames each walk found. The first walk, which parses
// the call-frame information and line tables, is BenchmarkBacktraceCold.
func BenchmarkBacktrace(b *testing.B) {
	for _, n := range ompdtest.BenchThreads() {
		b.Run("threads="+n, func(b *testing.B) {
			_, c := openBenchCore(b, n)
			as, err := ompd.Open(c)
			if err != nil {
				b.Fatal(err)
			}
			threads, err := ompd.Collect(as.Threads())
			if err != nil {
				b.Fatal(err)
			}
			frames := backtraceAll(b, threads)
			b.ReportAllocs()
			ompdtest.Settle()
			cpu := ompdtest.CPUTime()
			for b.Loop() {
				backtraceAll(b, threads)
			}
			used := ompdtest.CPUTime() - cpu
			ompdtest.ReportCPU(b, cpu)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(threads)), "ns/thread")
			b.ReportMetric(float64(used.Nanoseconds())/float64(b.N)/float64(len(threads)), "cpu-ns/thread")
			b.ReportMetric(float64(frames)/float64(len(threads)), "frames/thread")
			b.ReportMetric(float64(len(threads)), "threads")
		})
	}
}

// BenchmarkBacktraceCold is BenchmarkBacktrace with everything opened
// anew in each operation (core.Open, ompd.Open, then every thread's
// backtrace): what a user of ompdtool -bt waits for.
func BenchmarkBacktraceCold(b *testing.B) {
	for _, n := range ompdtest.BenchThreads() {
		b.Run("threads="+n, func(b *testing.B) {
			stop, c := openBenchCore(b, n)
			c.Close()
			nthreads := 0
			b.ReportAllocs()
			for b.Loop() {
				c := openCoreB(b, stop.Exe, stop.Core)
				as, err := ompd.Open(c)
				if err != nil {
					b.Fatal(err)
				}
				threads, err := ompd.Collect(as.Threads())
				if err != nil {
					b.Fatal(err)
				}
				backtraceAll(b, threads)
				nthreads = len(threads)
				c.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(nthreads), "ns/thread")
		})
	}
}

// backtraceAll unwinds every thread, failing b on an error or an
// incomplete walk, and returns the number of frames.
func backtraceAll(b *testing.B, threads []ompd.Thread) int {
	n := 0
	for _, th := range threads {
		bt, err := th.Backtrace(context.Background())
		if err != nil {
			b.Fatalf("%v: %v", th, err)
		}
		if bt.End != nil || bt.PlaceErr != nil {
			b.Fatalf("%v: walk ended: %v; placement: %v", th, bt.End, bt.PlaceErr)
		}
		n += len(bt.Frames)
	}
	return n
}

func openCoreB(b *testing.B, exe, path string) *core.Core {
	c, err := core.Open(context.Background(), exe, path)
	if err != nil {
		b.Fatal(err)
	}
	return c
}
