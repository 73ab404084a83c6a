package gomp_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/gomp"
	"github.com/ompd-go/ompd/target/core"
)

// countingCore counts the target reads of a core.
type countingCore struct {
	*core.Core
	reads atomic.Int64
}

func (c *countingCore) ReadMemory(buf []byte, addr uint64) error {
	c.reads.Add(1)
	return c.Core.ReadMemory(buf, addr)
}

// BenchmarkStop measures one stop's full decode of a core of 64 threads
// (every thread's record, its stack included, and every region and task
// it names), with the target reads it costs, on libgomp with its debug
// information and on the stock library.
func BenchmarkStop(b *testing.B) {
	for _, c := range []struct {
		name string
		info func(tb testing.TB) fixtures.RuntimeInfo
	}{
		{"debug", func(tb testing.TB) fixtures.RuntimeInfo { return fixtures.GompRuntime(tb, fixtures.GompVersions[0]) }},
		{"system", func(tb testing.TB) fixtures.RuntimeInfo { return fixtures.SystemGomp(tb) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			stop := fixtures.CoreWith(b, c.info(b), fixtures.Many, "64")
			cr, err := core.Open(context.Background(), stop.Exe, stop.Core, core.WithDebugDirs())
			require.NoError(b, err)
			defer cr.Close()
			ct := &countingCore{Core: cr}
			r, err := gomp.Open(ct)
			require.NoError(b, err)
			ct.reads.Store(0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r.Refresh()
				refs, err := r.Threads()
				if err != nil || len(refs) != 64 {
					b.Fatalf("%d threads, %v", len(refs), err)
				}
				for _, ref := range refs {
					d, err := r.Thread(ref)
					if err != nil {
						b.Fatal(err)
					}
					if d.RegionErr == nil {
						_, _ = r.Region(d.Region)
					}
					if d.TaskErr == nil {
						_, _ = r.Task(d.Task)
					}
				}
			}
			b.ReportMetric(float64(ct.reads.Load())/float64(b.N), "reads/op")
		})
	}
}
