package delverpc_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/dlvtest"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target/delverpc"
)

// BenchmarkSnapshot reads the whole OpenMP state of the nested fixture at
// a stop of a user's dlv session, from a cold cache each time (as after a
// new stop), and reports the target reads and the requests to the server
// (round trips) per snapshot.
func BenchmarkSnapshot(b *testing.B) {
	s := dlvtest.Start(b, fixtures.Nested)
	ctx := context.Background()
	s.BreakAt(b, "stopme")
	s.Continue(b)
	tgt, err := delverpc.Dial(ctx, s.Srv.Addr)
	require.NoError(b, err)
	defer tgt.Close()
	ct := &ompdtest.CountingTarget{Target: tgt}
	as, err := ompd.Open(ct)
	require.NoError(b, err)
	defer as.Close()
	req0 := delverpc.Requests(tgt)
	ct.Reads.Store(0)
	for b.Loop() {
		as.Refresh()
		tgt.Refresh()
		if _, err := as.Snapshot(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(ct.Reads.Load())/float64(b.N), "reads/op")
	b.ReportMetric(float64(delverpc.Requests(tgt)-req0)/float64(b.N), "requests/op")
}
