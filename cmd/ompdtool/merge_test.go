package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/summary"
)

// writeRecords writes records as collect does, one JSON line each.
func writeRecords(t *testing.T, path string, recs ...summary.Record) {
	t.Helper()
	f, err := os.Create(path)
	require.NoError(t, err)
	enc := json.NewEncoder(f)
	for _, r := range recs {
		require.NoError(t, enc.Encode(r))
	}
	require.NoError(t, f.Close())
}

func hungRank(rank int, working bool) summary.Record {
	region := []summary.Region{{Level: 1, NumThreads: 2, Function: "main._omp_fn.0"}, {Level: 0, NumThreads: 1}}
	r := summary.Record{Rank: rank, Host: "n1", PID: 100 + rank}
	for gtid := 0; gtid < 2; gtid++ {
		k := summary.Key{State: "wait_barrier_implicit", Regions: region, Stack: []string{"gomp_team_barrier_wait_end", "main._omp_fn.0", "GOMP_parallel", "main"}}
		if !working && gtid == 0 {
			k = summary.Key{State: "work_serial", Regions: region[1:], Stack: []string{"MPI_Barrier", "main"}}
		}
		if working && gtid == 0 {
			k.State, k.Stack = "work_parallel", []string{"spin", "main._omp_fn.0", "GOMP_parallel", "main"}
		}
		r.Threads = append(r.Threads, summary.RecordThread{GTID: gtid, Key: k})
	}
	return r
}

// TestMergeRecords merges records and already-merged classes: the outlier
// rank comes first; merging the merged JSON again changes nothing; DOT
// draws the stacks as a tree from main.
func TestMergeRecords(t *testing.T) {
	dir := t.TempDir()
	writeRecords(t, filepath.Join(dir, "n1.jsonl"), hungRank(0, false), hungRank(1, false), hungRank(2, true))
	writeRecords(t, filepath.Join(dir, "n2.jsonl"), hungRank(3, false), summary.Record{Rank: 4, Error: "process 9 is gone"})
	text := runTool(t, "merge", dir)
	want := "8 threads of 5 ranks (0-4) in 3 classes, outliers first:\n" +
		"rank 2: 1 thread work_parallel in main._omp_fn.0, level 1, team of 2; stack spin < main._omp_fn.0 < GOMP_parallel < main\n" +
		"ranks 0-1,3: 3 threads work_serial, serial; stack MPI_Barrier < main\n" +
		"ranks 0-3: 4 threads wait_barrier_implicit in main._omp_fn.0, level 1, team of 2; stack gomp_team_barrier_wait_end < main._omp_fn.0 < GOMP_parallel < main\n" +
		"\nErrors (1):\n  rank 4: process 9 is gone\n"
	assert.Equal(t, want, text)

	merged := runTool(t, "merge", "-json", filepath.Join(dir, "n1.jsonl"))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "n1.merged"), []byte(merged), 0o644))
	require.NoError(t, os.Remove(filepath.Join(dir, "n1.jsonl")))
	assert.Equal(t, want, runTool(t, "merge", dir))

	// Compared by their outermost frame only, stacks that differ inside
	// (the MPI library's progress loop, say) are one class.
	other := filepath.Join(t.TempDir(), "poll.jsonl")
	r5 := hungRank(5, false)
	r5.Threads[0].Stack = []string{"poll", "opal_progress", "MPI_Barrier", "main"}
	writeRecords(t, other, r5)
	assert.Contains(t, runTool(t, "merge", dir, other), "rank 5: 1 thread work_serial, serial; stack poll < ")
	assert.Contains(t, runTool(t, "merge", "-depth", "2", dir, other), "ranks 0-1,3,5: 4 threads work_serial, serial; stack MPI_Barrier < main\n")

	dot := runTool(t, "merge", "-dot", dir)
	assert.True(t, strings.HasPrefix(dot, "digraph ompd {"), dot)
	assert.Contains(t, dot, `[label="main"]`)
	assert.Contains(t, dot, `[label="4:[0-3]\n8 threads"]`) // job -> main
	assert.Contains(t, dot, `[label="1:[2]\n1 thread"]`)    // -> spin
	assert.Contains(t, dot, `[label="[work_parallel]"]`)
}

// TestRankFromName takes the rank from a core's file name.
func TestRankFromName(t *testing.T) {
	assert.Equal(t, 12, rankFromName("/x/core.rank12", 3))
	assert.Equal(t, 5, rankFromName("rank-5.core", 3))
	assert.Equal(t, 3, rankFromName("core.4711", 3))
}

// TestMergeCoreRank takes a core's rank from the environment in it
// (gcore of a rank with PMIX_RANK=9, its file name naming no rank).
func TestMergeCoreRank(t *testing.T) {
	fixtures.RequireTool(t, "gcore")
	cmd := holdNested(t, "PMIX_RANK=9")
	exe := fixtures.Build(t, fixtures.Nested)
	dir := t.TempDir()
	out, err := exec.Command("gcore", "-o", filepath.Join(dir, "core"), strconv.Itoa(cmd.Process.Pid)).CombinedOutput()
	ptraceUnavailable(t, err)
	require.NoError(t, err, "%s", out)
	text := runTool(t, "merge", "-q", "-exe", exe, dir)
	assert.Contains(t, text, "6 threads of 1 rank (9) in ")
}
