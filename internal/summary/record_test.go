package summary

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syntheticRecord is rank rank of a hung hybrid job: threads-1 threads
// waiting in a barrier of a region and the primary in MPI_Barrier, except
// every 1000th rank, whose thread 5 still works.
func syntheticRecord(rank, threads int) Record {
	region := []Region{{Level: 1, NumThreads: threads, Function: "solve._omp_fn.2", Source: "solver.c:88"}, {Level: 0, NumThreads: 1}}
	r := Record{Rank: rank, Host: fmt.Sprintf("n%d", rank/64), PID: 1000 + rank, Runtime: "GNU libgomp"}
	for i := 0; i < threads; i++ {
		k := Key{State: "wait_barrier_implicit", Regions: region, Stack: []string{"gomp_team_barrier_wait_end", "solve._omp_fn.2", "GOMP_parallel", "solve", "main"}}
		if i == 0 {
			k = Key{State: "work_serial", Regions: region[1:], Stack: []string{"MPI_Barrier", "main"}}
		}
		if i == 5 && rank%1000 == 999 {
			k.State, k.Stack = "work_parallel", []string{"kernel", "solve._omp_fn.2", "GOMP_parallel", "solve", "main"}
		}
		r.Threads = append(r.Threads, RecordThread{GTID: i, LWP: uint64(2000 + i), Key: k})
	}
	return r
}

// TestRecordMerge: records of ranks merged in a tree (per node, then the
// nodes' results) equal all of them merged at once, survive JSON, and keep
// the outlier's rank apart.
func TestRecordMerge(t *testing.T) {
	const ranks, threads, perNode = 2000, 8, 64
	var all []*Summary
	var nodes []*Summary
	for n := 0; n < ranks; n += perNode {
		var node []*Summary
		for r := n; r < n+perNode && r < ranks; r++ {
			b, err := json.Marshal(syntheticRecord(r, threads))
			require.NoError(t, err)
			var rec Record
			require.NoError(t, json.Unmarshal(b, &rec))
			s := rec.Summary()
			node = append(node, s)
			all = append(all, s)
		}
		b, err := json.Marshal(Merge(node...))
		require.NoError(t, err)
		var sent Summary
		require.NoError(t, json.Unmarshal(b, &sent))
		nodes = append(nodes, &sent)
	}
	flat, tree := Merge(all...), Merge(nodes...)
	assert.Equal(t, flat, tree)
	require.Len(t, tree.Groups, 3)
	assert.Equal(t, ranks*threads, tree.Threads)
	assert.Equal(t, "0-1999", tree.Ranks.String())
	g := tree.Groups[2]
	assert.Equal(t, "work_parallel", g.State)
	assert.Equal(t, "999,1999", g.Ranks.String())
	assert.Equal(t, 2, g.Threads)
	assert.Equal(t, ThreadRef{Rank: 999, GTID: 5, LWP: 2005}, g.Example)
	assert.Equal(t, ranks*(threads-1)-2, tree.Groups[0].Threads)
}

// TestRecordError: a rank that could not be read counts as a rank with no
// threads.
func TestRecordError(t *testing.T) {
	s := Merge(Record{Rank: 4, Error: "gone"}.Summary(), syntheticRecord(3, 2).Summary())
	assert.Equal(t, "3-4", s.Ranks.String())
	assert.Equal(t, 2, s.Threads)
}

// BenchmarkMergeRanks merges synthetic records of OMPD_BENCH_RANKS ranks
// (default 100000) of 64 threads as a job's front end would: each node
// (64 ranks) groups its records and merges them, the front end merges the
// nodes' results in a tree of fan-in 32. It reports the cost per rank.
func BenchmarkMergeRanks(b *testing.B) {
	ranks := 100000
	if s := os.Getenv("OMPD_BENCH_RANKS"); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(b, err)
		ranks = n
	}
	const threads, perNode, fanIn = 64, 64, 32
	recs := make([]Record, perNode)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var level []*Summary
		for n := 0; n < ranks; n += perNode {
			b.StopTimer()
			for r := range recs {
				recs[r] = syntheticRecord(n+r, threads)
			}
			b.StartTimer()
			node := make([]*Summary, 0, perNode)
			for r := n; r < n+perNode && r < ranks; r++ {
				node = append(node, recs[r-n].Summary())
			}
			level = append(level, Merge(node...))
		}
		for len(level) > 1 {
			var next []*Summary
			for j := 0; j < len(level); j += fanIn {
				next = append(next, Merge(level[j:min(j+fanIn, len(level))]...))
			}
			level = next
		}
		if got := level[0].Threads; got != ranks*threads {
			b.Fatalf("merged %d threads, want %d", got, ranks*threads)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(ranks), "ns/rank")
}
