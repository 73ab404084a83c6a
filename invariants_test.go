package ompd_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/target"
)

// The walks' invariants (levels >= 0 falling strictly by the levels each
// team stands for, active levels not rising going out, thread numbers
// within their team, no cycles), each broken on purpose in synthetic
// runtime memory: the step where it breaks gives ErrCorrupt, and Snapshot
// records the cut.

// snapshotFor takes a snapshot and returns the thread's entry and the
// errors recorded about it.
func snapshotFor(t *testing.T, as *ompd.AddressSpace, th ompd.Thread) (ompd.ThreadSnapshot, []string) {
	t.Helper()
	snap, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	var errs []string
	for _, e := range snap.Errors {
		if strings.HasPrefix(e, th.String()+" ") {
			errs = append(errs, e)
		}
	}
	for _, ts := range snap.Threads {
		if ts.ID == th.String() {
			return ts, errs
		}
	}
	t.Fatalf("%v not in the snapshot", th)
	return ompd.ThreadSnapshot{}, nil
}

// only keeps the errors about one part of a thread ("parallel chain",
// "task chain", "thread num").
func only(errs []string, part string) []string {
	var out []string
	for _, e := range errs {
		if strings.Contains(e, " "+part+": ") {
			out = append(out, e)
		}
	}
	return out
}

// assertCut checks that p's enclosing region is cut with ErrCorrupt and
// that Snapshot says so for thread th.
func assertCut(t *testing.T, as *ompd.AddressSpace, th ompd.Thread, p ompd.Parallel, wantRegions int) {
	t.Helper()
	_, err := p.Enclosing()
	assert.ErrorIs(t, err, ompd.ErrCorrupt)
	ts, errs := snapshotFor(t, as, th)
	assert.Len(t, ts.Parallel, wantRegions)
	if assert.Len(t, errs, 1) {
		assert.Contains(t, errs[0], "parallel chain")
		assert.Contains(t, errs[0], "inconsistent")
	}
}

func TestInvariantActiveTeamStandsForOneLevel(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		// Inner (2 threads) jumps from level 2 to 3 over its parent at
		// level 1: an active team stands for one level only.
		s.Inner.SetLevel(3)
		as.Refresh()
		th := fakeThreads(t, as)[1]
		p, err := th.CurrentParallel()
		require.NoError(t, err)
		lvl, err := p.Level()
		require.NoError(t, err)
		assert.Equal(t, 3, lvl)
		assertCut(t, as, th, p, 1)
	})
}

func TestInvariantActiveLevelsDoNotRiseOutwards(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		s.Inner.SetActiveLevel(0) // below Outer's 1
		as.Refresh()
		th := fakeThreads(t, as)[1]
		p, err := th.CurrentParallel()
		require.NoError(t, err)
		assertCut(t, as, th, p, 1)
	})
}

func TestInvariantNegativeLevel(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		s.Inner.SetLevel(-0x80000000)
		as.Refresh()
		th := fakeThreads(t, as)[1]
		_, err := th.CurrentParallel()
		assert.ErrorIs(t, err, ompd.ErrCorrupt)
		ts, errs := snapshotFor(t, as, th)
		assert.Empty(t, ts.Parallel)
		errs = only(errs, "parallel chain")
		require.Len(t, errs, 1)
		assert.Contains(t, errs[0], "level -2147483648")
		// The serial team below Inner cannot leave it either.
		th2 := fakeThreads(t, as)[2]
		ts, errs = snapshotFor(t, as, th2)
		for _, p := range ts.Parallel {
			assert.GreaterOrEqual(t, p.Level, 0)
		}
		assert.NotEmpty(t, errs)
	})
}

func TestInvariantThreadNumWithinTeam(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		s.Threads[3].SetTid(0x7fffffff) // in Outer, a team of 4
		as.Refresh()
		th := fakeThreads(t, as)[3]
		_, err := th.Num()
		assert.ErrorIs(t, err, ompd.ErrCorrupt)
		_, errs := snapshotFor(t, as, th)
		errs = only(errs, "thread num")
		require.Len(t, errs, 1)
	})
}

func TestInvariantThreeTaskCycle(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		// B -> A -> C -> B: each pair looks fine, the chain loops.
		c := s.RT.NewTask(s.TaskB, s.Serial, fakeruntime.Explicit|fakeruntime.Started, s.FnTaskA)
		s.TaskA.SetParentAddr(c.Addr)
		as.Refresh()
		th := fakeThreads(t, as)[2]
		// Every task on the cycle says so: a loop over Generating ends.
		tk, err := th.CurrentTask()
		require.NoError(t, err)
		_, err = tk.Generating()
		assert.ErrorIs(t, err, ompd.ErrCorrupt)
		assert.ErrorContains(t, err, "cycle of 3")
		ts, errs := snapshotFor(t, as, th)
		assert.Len(t, ts.Tasks, 1)
		errs = only(errs, "task chain")
		require.Len(t, errs, 1)
		assert.Contains(t, errs[0], "cycle")
		// A task leading into the cycle still has its parent.
		d := s.RT.NewTask(s.TaskB, s.Serial, fakeruntime.Explicit|fakeruntime.Started, s.FnTaskA)
		s.Threads[2].SetCurrentTaskAddr(d.Addr)
		as.Refresh()
		tk, err = th.CurrentTask()
		require.NoError(t, err)
		tk, err = tk.Generating()
		require.NoError(t, err)
		assert.Equal(t, s.TaskB.Addr, tk.Addr())
		_, err = tk.Generating()
		assert.ErrorIs(t, err, ompd.ErrCorrupt)
	})
}

func TestInvariantChainLimitReported(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		th := fakeThreads(t, as)[2]
		ts, _ := snapshotFor(t, as, th)
		normal := len(ts.Parallel) // Serial's levels 5, 4, 3, then the rest
		// Serial now stands for levels 3..4096: past the walk's bound.
		s.Serial.SetLevel(4096)
		as.Refresh()
		ts, errs := snapshotFor(t, as, th)
		errs = only(errs, "parallel chain")
		if total := 4096 - 3 + 1 + normal - 3; total > 4096 {
			assert.Len(t, ts.Parallel, 4096)
			require.Len(t, errs, 1)
			assert.Contains(t, errs[0], "more than 4096 regions")
		} else {
			assert.Len(t, ts.Parallel, total)
		}
		for i, p := range ts.Parallel {
			if i > 0 {
				require.Less(t, p.Level, ts.Parallel[i-1].Level)
			}
		}
		// Beyond the level bound the team itself is corrupt.
		s.Serial.SetLevel(1 << 13)
		as.Refresh()
		_, err := th.CurrentParallel()
		assert.ErrorIs(t, err, ompd.ErrCorrupt)
	})
}

// Layout tables whose offsets plus sizes overrun their structure are
// refused, even well within the global bound on structure sizes.
func TestInvariantLayoutWithinStructures(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		for _, c := range []struct{ table, typ string }{
			{"ompd_access__kmp_base_team_t__t_level", "kmp_base_team_t"},
			{"ompd_access__ompt_frame_t__enter_frame", "ompt_frame_t"},
			{"ompd_access__kmp_base_info_t__th_team", "kmp_base_info_t"},
		} {
			s := fakeruntime.Nested(cfg)
			s.T.PutUint(s.RT.TableAddr(c.table), 8, s.RT.L.Size(c.typ))
			_, err := ompd.Open(s.T)
			assert.ErrorIs(t, err, ompd.ErrIncompatible, c.table)
		}
	})
}

// threadListCounter counts the target's OS thread listings.
type threadListCounter struct {
	*fakeruntime.Target
	lists atomic.Int64
}

func (c *threadListCounter) Threads() ([]target.Thread, error) {
	c.lists.Add(1)
	return c.Target.Threads()
}

// Per-thread lookups are map lookups after the first of a stop: looking
// every thread up by LWP, and every thread's LWP, lists the target's OS
// threads once per stop, not once per lookup.
func TestThreadLookupsOncePerStop(t *testing.T) {
	s := fakeruntime.Nested(fakeruntime.Config{})
	c := &threadListCounter{Target: s.T}
	as, err := ompd.Open(c)
	require.NoError(t, err)
	ths, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	for round := 0; round < 2; round++ {
		for _, th := range ths {
			lwp, err := th.OSThread(ompd.LWPID)
			require.NoError(t, err)
			back, err := as.ThreadByOSThread(ompd.LWPID, lwp)
			require.NoError(t, err)
			assert.Equal(t, th, back)
			assert.Equal(t, fakeruntime.LWPOf(th.GTID()), lwp)
		}
		assert.Equal(t, int64(1), c.lists.Load(), "one listing per stop")
	}
	as.Refresh()
	_, err = as.ThreadByOSThread(ompd.LWPID, fakeruntime.LWPOf(1))
	require.NoError(t, err)
	assert.Equal(t, int64(2), c.lists.Load(), "a new stop lists again")
}
