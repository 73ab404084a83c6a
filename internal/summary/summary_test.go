package summary_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/internal/summary"
	"github.com/ompd-go/ompd/target/core"
)

// snapshotOf reads the snapshot of a fixture's core.
func snapshotOf(t *testing.T, stop *fixtures.Stop) *ompd.Snapshot {
	t.Helper()
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	return ompdtest.SnapshotOf(t, c)
}

// roleState is the state each role's thread is in at the stop (see
// internal/fixtures' package documentation).
var roleState = map[string]string{
	fixtures.RoleStopper:  "work_parallel",
	fixtures.RoleWorking:  "work_parallel",
	fixtures.RoleBarrier:  "wait_barrier_explicit",
	fixtures.RoleLock:     "wait_lock",
	fixtures.RoleCritical: "wait_lock",
}

// truthGroups is what the grouping must give, from the program's own
// answers: threads counted by state and by the team sizes of their nest
// (innermost first), with their LWPs.
func truthGroups(truth *fixtures.Truth) map[string][]int {
	out := map[string][]int{}
	for _, th := range truth.Threads {
		k := roleState[th.Role]
		for l := th.Level; l >= 0; l-- {
			k += fmt.Sprintf(" L%d/%d", l, th.Ancestors[l].TeamSize)
		}
		out[k] = append(out[k], th.TID)
	}
	return out
}

// groupsOf is truthGroups' form of a summary of one process, whose LWPs
// come from the snapshot.
func groupsOf(s *ompd.Snapshot, sum *summary.Summary) map[string][]int {
	lwp := map[int]int{}
	for _, t := range s.Threads {
		lwp[t.GTID] = int(t.LWP)
	}
	out := map[string][]int{}
	for _, g := range sum.Groups {
		k := g.State
		for _, r := range g.Regions {
			k += fmt.Sprintf(" L%d/%d", r.Level, r.NumThreads)
		}
		for _, rg := range g.GTIDs {
			for gtid := rg.First; gtid <= rg.Last; gtid++ {
				out[k] = append(out[k], lwp[gtid])
			}
		}
		sort.Ints(out[k])
	}
	return out
}

// TestOfMatchesTruth groups the threads of real cores and compares each
// group (state, team sizes of the nest, members) with what the programs
// recorded.
func TestOfMatchesTruth(t *testing.T) {
	fixtures.Runtime(t)
	for _, c := range []struct {
		name string
		args []string
	}{
		{fixtures.Nested, nil},
		{fixtures.Serialized, nil},
		{fixtures.Many, []string{"64"}},
		{fixtures.Many, []string{"16", "spin"}},
	} {
		t.Run(fmt.Sprint(c.name, c.args), func(t *testing.T) {
			stop := fixtures.Core(t, c.name, c.args...)
			s := snapshotOf(t, stop)
			sum := summary.Of(3, s, summary.Options{})
			want := truthGroups(stop.Truth)
			for _, v := range want {
				sort.Ints(v)
			}
			assert.Equal(t, want, groupsOf(s, sum))
			assert.Equal(t, len(stop.Truth.Threads), sum.Threads)
			assert.Equal(t, "3", sum.Ranks.String())
			n := 0
			for i, g := range sum.Groups {
				n += g.Threads
				assert.Equal(t, g.Threads, g.GTIDs.Len())
				assert.Equal(t, "3", g.Ranks.String())
				assert.Equal(t, 3, g.Example.Rank)
				assert.Equal(t, g.GTIDs[0].First, g.Example.GTID, "the lowest gtid")
				if i > 0 {
					assert.GreaterOrEqual(t, sum.Groups[i-1].Threads, g.Threads, "largest first")
				}
			}
			assert.Equal(t, sum.Threads, n)
		})
	}
}

// TestMergeAssociative merges the summaries of real cores (as ranks of a
// job, some cores used for several ranks) flat and in random trees, in
// random orders: every way gives the same summary, and JSON carries it
// unchanged between levels of the tree.
func TestMergeAssociative(t *testing.T) {
	fixtures.Runtime(t)
	var snaps []*ompd.Snapshot
	for _, c := range [][]string{{fixtures.Many, "8"}, {fixtures.Many, "16", "spin"}, {fixtures.Many, "4"}} {
		snaps = append(snaps, snapshotOf(t, fixtures.Core(t, c[0], c[1:]...)))
	}
	rnd := rand.New(rand.NewSource(1))
	const ranks = 40
	var leaves []*summary.Summary
	for r := 0; r < ranks; r++ {
		leaves = append(leaves, summary.Of(r, snaps[rnd.Intn(len(snaps))], summary.Options{}))
	}
	flat := summary.Merge(leaves...)
	assert.Equal(t, "0-39", flat.Ranks.String())
	total := 0
	for _, l := range leaves {
		total += l.Threads
	}
	assert.Equal(t, total, flat.Threads)
	for _, g := range flat.Groups {
		assert.Empty(t, g.GTIDs, "a group of several ranks has no gtid list")
	}

	var tree func(ls []*summary.Summary) *summary.Summary
	tree = func(ls []*summary.Summary) *summary.Summary {
		if len(ls) == 1 {
			return ls[0]
		}
		cut := 1 + rnd.Intn(len(ls)-1)
		a, b := tree(ls[:cut]), tree(ls[cut:])
		// Through JSON, as from one node's collector to the next.
		var back [2]*summary.Summary
		for i, s := range []*summary.Summary{a, b} {
			data, err := json.Marshal(s)
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(data, &back[i]))
		}
		if rnd.Intn(2) == 0 {
			return summary.Merge(back[1], back[0])
		}
		return summary.Merge(back[0], back[1])
	}
	for i := 0; i < 20; i++ {
		perm := append([]*summary.Summary(nil), leaves...)
		rnd.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		assert.Equal(t, flat, tree(perm), "tree %d", i)
	}
	// Merging one rank's summary with itself keeps its gtid lists.
	one := summary.Merge(leaves[0], leaves[0])
	for _, g := range one.Groups {
		assert.NotEmpty(t, g.GTIDs)
	}
}

func TestRanges(t *testing.T) {
	var r summary.Ranges
	for _, n := range []int{513, 3, 0, 1, 2, 511, 4, 512, 600} {
		r = r.Add(n)
	}
	assert.Equal(t, "0-4,511-513,600", r.String())
	assert.Equal(t, 9, r.Len())
	var back summary.Ranges
	require.NoError(t, back.UnmarshalText([]byte("600,511-513,0-4,2")))
	assert.Equal(t, r, back)
	require.NoError(t, back.UnmarshalText(nil))
	assert.Empty(t, back)
	for _, bad := range []string{"x", "1-", "3-1", "-2", "1,,2", "1-2-3"} {
		assert.Error(t, back.UnmarshalText([]byte(bad)), bad)
	}
}

func ExampleMerge() {
	a := &summary.Summary{Threads: 4, Ranks: summary.Ranges{{0, 0}}, Groups: []summary.Group{{
		Key:     summary.Key{State: "wait_barrier_implicit", Regions: []summary.Region{{Level: 1, NumThreads: 4, Function: "main.omp_outlined"}}},
		Threads: 4, Ranks: summary.Ranges{{0, 0}}, GTIDs: summary.Ranges{{0, 0}, {9, 11}},
	}}}
	b := &summary.Summary{Threads: 4, Ranks: summary.Ranges{{1, 1}}, Groups: []summary.Group{{
		Key:     a.Groups[0].Key,
		Threads: 4, Ranks: summary.Ranges{{1, 1}}, GTIDs: summary.Ranges{{0, 0}, {9, 11}}, Example: summary.ThreadRef{Rank: 1},
	}}}
	m := summary.Merge(a, b)
	for _, g := range m.Groups {
		fmt.Printf("%d threads %s, ranks %s\n", g.Threads, g.Describe(), g.Ranks)
	}
	// Output:
	// 8 threads wait_barrier_implicit in main.omp_outlined, level 1, team of 4, ranks 0-1
}

// TestStartingGroup: threads the runtime has not finished starting form
// their own group, whatever state their structure holds.
func TestStartingGroup(t *testing.T) {
	s := &ompd.Snapshot{Threads: []ompd.ThreadSnapshot{
		{GTID: 0, State: ompd.StateWorkSerial, Parallel: []ompd.ParallelSnapshot{{Level: 0, NumThreads: 1}}},
		{GTID: 1, State: ompd.StateWorkSerial, Starting: true},
		{GTID: 2, State: ompd.StateOverhead, Starting: true},
	}}
	sum := summary.Of(0, s, summary.Options{})
	require.Len(t, sum.Groups, 2)
	assert.Equal(t, "starting", sum.Groups[0].State)
	assert.Equal(t, "1-2", sum.Groups[0].GTIDs.String())
	assert.Equal(t, "starting, serial", sum.Groups[0].Describe())
}

// TestLeagueGroups: threads doing the same in different teams of a host
// teams league are different groups (team 0 included), and the league
// survives JSON and merging.
func TestLeagueGroups(t *testing.T) {
	region := []ompd.ParallelSnapshot{{Level: 1, NumThreads: 2, Function: "f"}, {Level: 0, NumThreads: 1}}
	s := &ompd.Snapshot{Threads: []ompd.ThreadSnapshot{
		{GTID: 0, State: ompd.StateOverhead, TeamNum: 0, NumTeams: 2, Parallel: region},
		{GTID: 9, State: ompd.StateOverhead, TeamNum: 1, NumTeams: 2, Parallel: region},
		{GTID: 10, State: ompd.StateOverhead, TeamNum: 0, NumTeams: 2, Parallel: region},
		{GTID: 12, State: ompd.StateOverhead, Parallel: region},
	}}
	sum := summary.Of(0, s, summary.Options{})
	require.Len(t, sum.Groups, 3)
	byGTIDs := map[string]summary.Group{}
	for _, g := range sum.Groups {
		byGTIDs[g.GTIDs.String()] = g
	}
	require.Contains(t, byGTIDs, "0,10")
	assert.Equal(t, &summary.League{TeamNum: 0, NumTeams: 2}, byGTIDs["0,10"].League)
	assert.Equal(t, "overhead in f, level 1, team of 2; host team 0 of 2", byGTIDs["0,10"].Describe())
	require.Contains(t, byGTIDs, "9")
	assert.Equal(t, "overhead in f, level 1, team of 2; host team 1 of 2", byGTIDs["9"].Describe())
	require.Contains(t, byGTIDs, "12")
	assert.Nil(t, byGTIDs["12"].League)

	b, err := json.Marshal(sum)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"league":{"team_num":0,"num_teams":2}`)
	var back summary.Summary
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, sum, &back)
	m := summary.Merge(sum, summary.Of(1, s, summary.Options{}))
	require.Len(t, m.Groups, 3)
	assert.Equal(t, 4, m.Groups[0].Threads, "team 0's threads of both ranks")
}

// TestUnknownStateGroups: threads whose state the stack did not tell are
// grouped by why, which their line says, and the reason survives JSON and
// merging.
func TestUnknownStateGroups(t *testing.T) {
	region := []ompd.ParallelSnapshot{{Level: 1, NumThreads: 4, Function: "f"}, {Level: 0, NumThreads: 1}}
	spin := "libgomp records no thread state, and it runs an unnamed libgomp function (spinning, or not yet asleep)"
	s := &ompd.Snapshot{Threads: []ompd.ThreadSnapshot{
		{GTID: 1, NoState: true, StateUnknown: spin, Parallel: region},
		{GTID: 2, NoState: true, StateUnknown: spin, Parallel: region},
		{GTID: 3, NoState: true, StateUnknown: "libgomp records no thread state, and its stack cannot be read", Parallel: region},
		{GTID: 4, NoState: true, Parallel: region},
	}}
	sum := summary.Of(0, s, summary.Options{})
	require.Len(t, sum.Groups, 3)
	assert.Equal(t, 2, sum.Groups[0].Threads)
	assert.Equal(t, "(state unknown: "+spin+") in f, level 1, team of 4", sum.Groups[0].Describe())
	var plain []string
	for _, g := range sum.Groups[1:] {
		plain = append(plain, g.Describe())
	}
	assert.ElementsMatch(t, []string{
		"(state unknown: libgomp records no thread state, and its stack cannot be read) in f, level 1, team of 4",
		"(state unknown) in f, level 1, team of 4",
	}, plain)
	b, err := json.Marshal(sum)
	require.NoError(t, err)
	var back summary.Summary
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, sum, &back)
	assert.Len(t, summary.Merge(sum, summary.Of(1, s, summary.Options{})).Groups, 3)
}

// TestRangesSetOps: Minus and Intersect of ranges.
func TestRangesSetOps(t *testing.T) {
	parse := func(s string) summary.Ranges {
		var r summary.Ranges
		require.NoError(t, r.UnmarshalText([]byte(s)))
		return r
	}
	for _, c := range []struct{ a, b, minus, inter string }{
		{"0-9", "3-4,7", "0-2,5-6,8-9", "3-4,7"},
		{"0-9", "", "0-9", ""},
		{"", "0-9", "", ""},
		{"2-5", "0-9", "", "2-5"},
		{"0-3,10-12", "2-11", "0-1,12", "2-3,10-11"},
		{"5", "5", "", "5"},
		{"0-2147483647", "1-2147483646", "0,2147483647", "1-2147483646"},
	} {
		a, b := parse(c.a), parse(c.b)
		assert.Equal(t, c.minus, a.Minus(b).String(), "%s - %s", c.a, c.b)
		assert.Equal(t, c.inter, a.Intersect(b).String(), "%s & %s", c.a, c.b)
	}
	var r summary.Ranges
	assert.ErrorContains(t, r.UnmarshalText([]byte("0-2147483648")), "bad range")
	assert.ErrorContains(t, r.UnmarshalText([]byte("9223372036854775807")), "bad range")
}

// TestCheck: what makes a summary impossible.
func TestCheck(t *testing.T) {
	g := func(threads int, ranks string) summary.Group {
		var r summary.Ranges
		require.NoError(t, r.UnmarshalText([]byte(ranks)))
		return summary.Group{Threads: threads, Ranks: r}
	}
	for _, c := range []struct {
		s   summary.Summary
		err string
	}{
		{summary.Summary{Threads: 3, Ranks: summary.Ranges{{0, 1}}, Groups: []summary.Group{g(2, "0-1"), g(1, "1")}}, ""},
		{summary.Summary{Threads: 0, Ranks: summary.Ranges{{4, 4}}}, ""},
		{summary.Summary{Threads: -1, Ranks: summary.Ranges{{0, 0}}}, "-1 threads"},
		{summary.Summary{Threads: summary.MaxThreads + 1, Ranks: summary.Ranges{{0, 1 << 30}}}, "threads"},
		{summary.Summary{Threads: summary.MaxRankThreads + 1, Ranks: summary.Ranges{{0, 0}}, Groups: []summary.Group{g(summary.MaxRankThreads+1, "0")}}, "threads in 1 ranks"},
		{summary.Summary{Threads: 3, Ranks: summary.Ranges{{0, 1}}, Groups: []summary.Group{g(2, "0-1")}}, "hold 2 of its 3"},
		{summary.Summary{Threads: 1, Ranks: summary.Ranges{{0, 1}}, Groups: []summary.Group{g(2, "0-1")}}, "more than its 1"},
		{summary.Summary{Threads: 1, Ranks: summary.Ranges{{0, 1}}, Groups: []summary.Group{g(0, "0-1"), g(1, "0")}}, "group 0 has 0 threads"},
		{summary.Summary{Threads: 1, Ranks: summary.Ranges{{0, 1}}, Groups: []summary.Group{g(1, "2")}}, `group 0 has ranks "2"`},
		{summary.Summary{Threads: 1, Ranks: summary.Ranges{{0, 1}}, Groups: []summary.Group{{Threads: 1}}}, "group 0 has ranks"},
	} {
		err := c.s.Check()
		if c.err == "" {
			assert.NoError(t, err)
		} else {
			assert.ErrorContains(t, err, c.err)
		}
	}
}
