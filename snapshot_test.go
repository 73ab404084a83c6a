package ompd_test

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/internal/fixtures"
)

func TestFakeSnapshot(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		_, as := fakeOpenNested(t, cfg)
		snap, err := as.Snapshot(context.Background())
		require.NoError(t, err)
		assert.Empty(t, snap.Errors)
		require.Len(t, snap.Threads, 5)
		// Every thread's region nest and task chain, as the scenario
		// built them (the check ExampleAddressSpace_Snapshot's output
		// was the only one of for threads 0, 1, 3 and 4): gtid 0 and 3
		// at level 1 (regions 1, 0; their implicit task and the initial
		// one), gtid 1 at level 2, gtid 2 at level 5 with two explicit
		// tasks, gtid 4 idle in the pool (none). Each the API's walks'.
		// Planted (not committed): snapshot.go's walkRegions ending at
		// a region an earlier thread's walk met (`|| ok` after the
		// append) fails gtid 1's and 3's regions, besides gtid 2's.
		ths := fakeThreads(t, as)
		for g, want := range []struct{ regions, tasks int }{{2, 2}, {3, 3}, {6, 8}, {2, 2}, {0, 0}} {
			ts := snap.Threads[g]
			require.Equal(t, g, ts.GTID)
			assert.Len(t, ts.Parallel, want.regions, "gtid %d's regions", g)
			assert.Len(t, ts.Tasks, want.tasks, "gtid %d's tasks", g)
			regions, _ := collect(ths[g].Regions())
			tasks, _ := collect(ths[g].Tasks())
			assert.Len(t, regions, want.regions, "gtid %d's region walk", g)
			assert.Len(t, tasks, want.tasks, "gtid %d's task walk", g)
			for i, p := range regions {
				if i < len(ts.Parallel) {
					l, err := p.Level()
					require.NoError(t, err)
					assert.Equal(t, l, ts.Parallel[i].Level, "gtid %d region %d", g, i)
				}
			}
		}
		assert.Equal(t, ompd.StateWaitBarrierImplicitParallel, snap.Threads[3].State)
		assert.Equal(t, uint64(0xb0), snap.Threads[3].WaitID)
		assert.Equal(t, fakeruntime.LWPOf(3), snap.Threads[3].LWP)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = as.Snapshot(ctx)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

// A snapshot's per-thread slices share blocks of memory, but none has room
// to grow into another's: appending to one thread's list leaves the other
// threads' alone, and every string stays what it was.
func TestFakeSnapshotSlicesApart(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		_, as := fakeOpenNested(t, cfg)
		snap, err := as.Snapshot(context.Background())
		require.NoError(t, err)
		want, err := as.Snapshot(context.Background())
		require.NoError(t, err)
		for i := range snap.Threads {
			ts := &snap.Threads[i]
			ts.ICVs = append(ts.ICVs, ompd.ICVValue{ICV: ompd.ICVDynVar, Scope: ompd.ScopeTask, Value: "x"})
			ts.Parallel = append(ts.Parallel, ompd.ParallelSnapshot{ID: "x"})
			ts.Tasks = append(ts.Tasks, ompd.TaskSnapshot{ID: "x"})
		}
		for i := range snap.Threads {
			got, w := snap.Threads[i], want.Threads[i]
			assert.Equal(t, w.ID, got.ID)
			assert.Equal(t, slices.Concat(w.ICVs, []ompd.ICVValue{{ICV: ompd.ICVDynVar, Scope: ompd.ScopeTask, Value: "x"}}), got.ICVs, "thread %d", i)
			assert.Equal(t, slices.Concat(w.Parallel, []ompd.ParallelSnapshot{{ID: "x"}}), got.Parallel, "thread %d", i)
			assert.Equal(t, slices.Concat(w.Tasks, []ompd.TaskSnapshot{{ID: "x"}}), got.Tasks, "thread %d", i)
		}
	})
}

// A snapshot's ICVs (read a scope at a time) are what ICVString answers
// for each thread and its current task, also with an implicit task that
// holds ICVs of its own.
func TestFakeSnapshotICVs(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		s.Outer.Implicit[2].SetICVs(fakeruntime.ICVs{Dynamic: true, NProc: 5, ThreadLimit: 7, MaxActiveLevels: 3,
			DefaultDevice: 1, ProcBind: 4, SchedType: 35, SchedChunk: 9})
		as.Refresh()
		assert.NotZero(t, checkSnapshotICVs(t, as))
	})
}

// TestSnapshotICVsOnCore: the same on the icvs fixture, whose last outer
// thread changed its schedule and dyn-var before its inner region. The
// snapshot takes a task's ICVs from the task before when their bytes
// match: a key that left out the bytes gives that team its neighbour's
// schedule, and fails here.
func TestSnapshotICVsOnCore(t *testing.T) {
	_, as := openCore(t, fixtures.ICVs)
	assert.NotZero(t, checkSnapshotICVs(t, as))
}

// checkSnapshotICVs asserts that the ICVs of a snapshot of as are what
// ICVString answers for each thread and its current task, and returns how
// many it compared.
func checkSnapshotICVs(t *testing.T, as *ompd.AddressSpace) int {
	t.Helper()
	snap, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	threads, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	require.Len(t, snap.Threads, len(threads))
	n := 0
	for i, th := range threads {
		task, taskErr := th.CurrentTask()
		for _, v := range snap.Threads[i].ICVs {
			id := v.ICV
			var want string
			switch v.Scope {
			case ompd.ScopeThread:
				want, err = th.ICVString(id)
			case ompd.ScopeTask:
				require.NoError(t, taskErr)
				want, err = task.ICVString(id)
			default:
				t.Fatalf("thread %d: ICV %s of scope %s", i, v.ICV, v.Scope)
			}
			if v.Incomplete {
				require.ErrorIs(t, err, ompd.ErrIncomplete, "thread %d %s", i, v.ICV)
			} else {
				require.NoError(t, err, "thread %d %s", i, v.ICV)
			}
			assert.Equal(t, want, v.Value, "thread %d %s", i, v.ICV)
			n++
		}
	}
	return n
}

// vecTarget reads many ranges at once (target.VectorReader) by reading
// them one by one, stopping at the first it cannot read.
type vecTarget struct {
	*fakeruntime.Target
	calls int
}

func (v *vecTarget) ReadMemoryVec(buf []byte, addrs []uint64, size int) (int, error) {
	v.calls++
	for i, a := range addrs {
		if err := v.ReadMemory(buf[i*size:(i+1)*size], a); err != nil {
			return i, nil
		}
	}
	return len(addrs), nil
}

// A target that reads many ranges at once gives the snapshot a target
// that reads them one by one gives: the threads' structures and their
// current tasks are read with its vectored reads.
func TestFakeSnapshotVectored(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		sc, as := fakeOpenNested(t, cfg)
		want, err := as.Snapshot(context.Background())
		require.NoError(t, err)
		vt := &vecTarget{Target: sc.T}
		vas, err := ompd.Open(vt)
		require.NoError(t, err)
		got, err := vas.Snapshot(context.Background())
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Equal(t, 2, vt.calls, "the threads, then their current tasks")
	})
}

// ---- robustness: corrupt runtime memory ----

// Eight goroutines walk everything at once, against one address space,
// and must all see what one walk alone sees.
func TestFakeConcurrent(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		_, as := fakeOpenNested(t, cfg)
		want := fakeWalkAll(as, 64)
		as.Refresh()
		var wg sync.WaitGroup
		results := make([][]string, 8)
		for g := range results {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 3; i++ {
					if g%4 == 0 {
						as.Refresh() // drop the caches under the others' feet
					}
					results[g] = fakeWalkAll(as, 64)
				}
			}(g)
		}
		wg.Wait()
		for g, got := range results {
			assert.Equal(t, want, got, "goroutine %d", g)
		}
	})
}

// TestThreadSnapshotJSONTeams: team_num is in the JSON of every thread of
// a league, team 0's included, and absent (with num_teams) outside any;
// the JSON decodes back to the same values.
func TestThreadSnapshotJSONTeams(t *testing.T) {
	for _, c := range []struct {
		ts   ompd.ThreadSnapshot
		want string // what the JSON holds of the league
	}{
		{ompd.ThreadSnapshot{ID: `a "num_teams": b`, GTID: 1, NumTeams: 2}, `"team_num":0,"num_teams":2,`},
		{ompd.ThreadSnapshot{GTID: 2, TeamNum: 1, NumTeams: 2}, `"team_num":1,"num_teams":2,`},
		{ompd.ThreadSnapshot{GTID: 3}, ""},
	} {
		b, err := json.Marshal(c.ts)
		require.NoError(t, err)
		if c.want == "" {
			assert.NotContains(t, string(b), "team")
		} else {
			assert.Equal(t, 1, strings.Count(string(b), c.want), "%s", b)
			assert.Equal(t, 1, strings.Count(string(b), `"team_num"`), "%s", b)
		}
		var back ompd.ThreadSnapshot
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, c.ts, back)
		// Inside a snapshot, indented, too.
		b, err = json.MarshalIndent(ompd.Snapshot{Threads: []ompd.ThreadSnapshot{c.ts}}, "", "  ")
		require.NoError(t, err)
		assert.Equal(t, c.want != "", strings.Contains(string(b), `"team_num": `+strconv.Itoa(c.ts.TeamNum)), "%s", b)
	}
}

// TestThreadSnapshotJSONNum: thread_num is in the JSON of every thread
// with a thread number, 0 included, and absent from that of a thread with
// none (NumUnknown: a worker waiting for its first region), which must not
// look like thread 0; the JSON decodes back to the same values.
func TestThreadSnapshotJSONNum(t *testing.T) {
	for _, c := range []struct {
		ts   ompd.ThreadSnapshot
		want string // what the JSON holds of the thread number, "" none
	}{
		{ompd.ThreadSnapshot{GTID: 1}, `"thread_num":0,`},
		{ompd.ThreadSnapshot{GTID: 2, Num: 3}, `"thread_num":3,`},
		{ompd.ThreadSnapshot{ID: `a "thread_num": b`, GTID: 3, NumUnknown: true}, ""},
		{ompd.ThreadSnapshot{GTID: 4, LWP: 7, NumUnknown: true, NumTeams: 2, State: ompd.StateWaitBarrierImplicitParallel}, ""},
		{ompd.ThreadSnapshot{GTID: 5, Num: 1, State: ompd.StateUndefined, NoState: true, NumUnknown: true}, ""},
	} {
		b, err := json.Marshal(c.ts)
		require.NoError(t, err)
		if c.want == "" {
			assert.NotContains(t, string(b), `"thread_num":`)
		} else {
			assert.Equal(t, 1, strings.Count(string(b), c.want), "%s", b)
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m), "%s", b)
		_, has := m["thread_num"]
		assert.Equal(t, c.want != "", has, "%s", b)
		if c.ts.NumTeams > 0 {
			assert.Equal(t, float64(0), m["team_num"], "%s", b)
		}
		// The state is there exactly when it is known, by its name.
		assert.Equal(t, !c.ts.NoState, m["state"] != nil, "%s", b)
		if !c.ts.NoState {
			assert.Equal(t, c.ts.State.String(), m["state"], "%s", b)
		}
		if c.ts.NumUnknown {
			c.ts.Num = 0 // no answer, which JSON does not keep
		}
		var back ompd.ThreadSnapshot
		require.NoError(t, json.Unmarshal(b, &back))
		assert.Equal(t, c.ts, back)
		b, err = json.MarshalIndent(ompd.Snapshot{Threads: []ompd.ThreadSnapshot{c.ts}}, "", "  ")
		require.NoError(t, err)
		assert.Equal(t, c.want != "", strings.Contains(string(b), `"thread_num": `), "%s", b)
		var snap ompd.Snapshot
		require.NoError(t, json.Unmarshal(b, &snap))
		assert.Equal(t, []ompd.ThreadSnapshot{c.ts}, snap.Threads)
	}
}

// TestTaskSnapshotJSONFrames: a task's frame flags are in its JSON, by
// name, exactly when its frames are known (runtime frames, flags 0,
// included), and decode back.
func TestTaskSnapshotJSONFrames(t *testing.T) {
	for _, ts := range []ompd.TaskSnapshot{
		{ID: "task/0x10", Kind: ompd.TaskExplicit | ompd.TaskUntied, ExitFrame: 0x7ff0, ExitFlags: ompd.FrameApplication | ompd.FrameFramePointer},
		{ID: "task/0x20/L1", Kind: ompd.TaskImplicit},
		{ID: `task "exit_flags": x`, Kind: ompd.TaskInitial | ompd.TaskImplicit, FramesUnknown: true},
	} {
		b, err := json.Marshal(ts)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m), "%s", b)
		assert.Equal(t, ts.Kind.String(), m["kind"], "%s", b)
		if ts.FramesUnknown {
			assert.NotContains(t, m, "exit_flags", "%s", b)
			assert.NotContains(t, m, "enter_flags", "%s", b)
		} else {
			assert.Equal(t, ts.ExitFlags.String(), m["exit_flags"], "%s", b)
			assert.Equal(t, ts.EnterFlags.String(), m["enter_flags"], "%s", b)
		}
		var back ompd.TaskSnapshot
		require.NoError(t, json.Unmarshal(b, &back), "%s", b)
		assert.Equal(t, ts, back)
	}
}

// TestEnumText: every enumeration of a snapshot encodes as its String and
// decodes back, unknown values too; a name that is none is an error.
func TestEnumText(t *testing.T) {
	type textual interface {
		MarshalText() ([]byte, error)
		String() string
	}
	check := func(v textual, back func([]byte) (any, error)) {
		t.Helper()
		b, err := v.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, v.String(), string(b))
		got, err := back(b)
		require.NoError(t, err, "%s", b)
		assert.Equal(t, v, got)
	}
	for _, s := range append(slices.Collect(ompd.States()), ompd.State(7)) {
		check(s, func(b []byte) (any, error) { var v ompd.State; err := v.UnmarshalText(b); return v, err })
	}
	for _, k := range []ompd.ScopeKind{ompd.ScopeGlobal, ompd.ScopeAddressSpace, ompd.ScopeThread, ompd.ScopeParallel, ompd.ScopeImplicitTask, ompd.ScopeTask, 9} {
		check(k, func(b []byte) (any, error) { var v ompd.ScopeKind; err := v.UnmarshalText(b); return v, err })
	}
	for _, l := range []ompd.LayoutSource{ompd.LayoutOMPDTables, ompd.LayoutDWARF, ompd.LayoutKnownTable} {
		check(l, func(b []byte) (any, error) { var v ompd.LayoutSource; err := v.UnmarshalText(b); return v, err })
	}
	for _, w := range []ompd.WaitKind{ompd.WaitNone, ompd.WaitTaskwait, ompd.WaitTaskgroup, ompd.WaitBarrier, ompd.WaitParallel} {
		check(w, func(b []byte) (any, error) { var v ompd.WaitKind; err := v.UnmarshalText(b); return v, err })
	}
	for _, i := range append(slices.Collect(ompd.AllICVs()), 99) {
		check(i, func(b []byte) (any, error) { var v ompd.ICV; err := v.UnmarshalText(b); return v, err })
	}
	for _, k := range []ompd.TaskKind{0, ompd.TaskInitial | ompd.TaskImplicit, ompd.TaskExplicit | ompd.TaskUntied | ompd.TaskFinal | 0x40} {
		check(k, func(b []byte) (any, error) { var v ompd.TaskKind; err := v.UnmarshalText(b); return v, err })
	}
	for _, f := range []ompd.FrameFlags{ompd.FrameRuntime, ompd.FrameApplication, ompd.FrameApplication | ompd.FrameCFA, ompd.FrameRuntime | ompd.FrameFramePointer, ompd.FrameStackAddress} {
		check(f, func(b []byte) (any, error) { var v ompd.FrameFlags; err := v.UnmarshalText(b); return v, err })
	}
	var s ompd.State
	assert.ErrorIs(t, s.UnmarshalText([]byte("running")), ompd.ErrBadInput)
	var k ompd.TaskKind
	assert.ErrorIs(t, k.UnmarshalText([]byte("explicit|weird")), ompd.ErrBadInput)
	var f ompd.FrameFlags
	assert.ErrorIs(t, f.UnmarshalText([]byte("runtime|sideways")), ompd.ErrBadInput)
}

// A snapshot after Refresh shows the runtime as it is now, however much
// of the stop before was decoded and kept: the stop's records, the pages
// and records read lately, the team moments, and the region and task
// entries a snapshot makes once for the threads that share them.
func TestFakeSnapshotAfterRefresh(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		ctx := context.Background()
		before, err := as.Snapshot(ctx)
		require.NoError(t, err)
		_, err = as.Snapshot(ctx) // everything of this stop decoded and cached
		require.NoError(t, err)

		s.Threads[3].SetState(fakeruntime.StateWaitTaskwait, 0x42)
		icvs := s.TaskBICVs
		icvs.NProc += 7
		s.TaskB.SetICVs(icvs)
		s.Outer.SetPkfn(s.FnInner)
		as.Refresh()
		after, err := as.Snapshot(ctx)
		require.NoError(t, err)

		fresh, err := ompd.Open(s.T)
		require.NoError(t, err)
		want, err := fresh.Snapshot(ctx)
		require.NoError(t, err)
		assert.Equal(t, want.Threads, after.Threads, "after Refresh as from a new address space")
		assert.Equal(t, want.Errors, after.Errors)
		assert.NotEqual(t, before.Threads, after.Threads)
		assert.Equal(t, ompd.StateWaitTaskwait, after.Threads[3].State)
		assert.Equal(t, uint64(0x42), after.Threads[3].WaitID)
	})
}
