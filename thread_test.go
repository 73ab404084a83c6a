package ompd_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/target"
)

func TestFakeThreads(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		ths, err := ompd.Collect(as.Threads())
		require.NoError(t, err)
		require.Len(t, ths, len(s.Threads))
		for i, th := range ths {
			assert.Equal(t, i, th.GTID(), "gtid order")
			assert.Equal(t, s.Threads[i].Addr, th.Addr())
			assert.Same(t, as, th.AddressSpace())
		}
		for _, ft := range s.Threads {
			th := ths[ft.GTID]
			byP, err := as.ThreadByOSThread(ompd.PthreadID, ft.Pthread)
			require.NoError(t, err)
			assert.Equal(t, th, byP)
			byL, err := as.ThreadByOSThread(ompd.LWPID, ft.LWP)
			require.NoError(t, err)
			assert.Equal(t, th, byL)
			p, err := th.OSThread(ompd.PthreadID)
			require.NoError(t, err)
			assert.Equal(t, ft.Pthread, p)
			l, err := th.OSThread(ompd.LWPID)
			require.NoError(t, err)
			assert.Equal(t, ft.LWP, l)
			_, err = th.OSThread(ompd.WinThreadID)
			assert.ErrorIs(t, err, ompd.ErrUnsupported)
		}
		// An OS thread that is no OpenMP thread.
		_, err = as.ThreadByOSThread(ompd.PthreadID, s.Foreign.Pointer)
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		_, err = as.ThreadByOSThread(ompd.LWPID, s.Foreign.ID)
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		// An LWP the target does not have, and an unsupported kind.
		_, err = as.ThreadByOSThread(ompd.LWPID, 123456)
		assert.ErrorIs(t, err, ompd.ErrBadInput)
		_, err = as.ThreadByOSThread(ompd.WinThreadID, 1)
		assert.ErrorIs(t, err, ompd.ErrUnsupported)
		for k, want := range map[ompd.ThreadIDKind]string{ompd.PthreadID: "pthread", ompd.LWPID: "lwp", ompd.WinThreadID: "winthread"} {
			assert.Equal(t, want, k.String())
		}
	})
}

// Without a thread pointer in the OS thread list, an LWP is matched
// through the thread's __kmp_gtid.
func TestFakeThreadByLWPThroughTLS(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		ths := fakeThreads(t, as)
		s.T.AddThread(target.Thread{ID: fakeruntime.LWPOf(3)}) // no thread pointer
		th, err := as.ThreadByOSThread(ompd.LWPID, fakeruntime.LWPOf(3))
		require.NoError(t, err)
		assert.Equal(t, ths[3], th)
		// The way back needs the thread pointer.
		_, err = th.OSThread(ompd.LWPID)
		assert.ErrorIs(t, err, ompd.ErrUnavailable)

		// __kmp_gtid -1: registered with the OS, not (or no more) with the runtime.
		s.T.PutUint(s.Threads[3].GTIDVar, 4, 0xffffffff)
		as.Refresh()
		_, err = as.ThreadByOSThread(ompd.LWPID, fakeruntime.LWPOf(3))
		assert.ErrorIs(t, err, ompd.ErrUnavailable)

		// A thread whose __kmp_gtid storage is not allocated. A new OS
		// thread means the program ran: refresh.
		s.T.AddThread(target.Thread{ID: 4998})
		as.Refresh()
		_, err = as.ThreadByOSThread(ompd.LWPID, 4998)
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		assert.ErrorIs(t, err, target.ErrNoMemory)
	})
}

func TestFakeStates(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		ths := fakeThreads(t, as)
		want := []struct {
			state ompd.State
			wait  ompd.WaitID
		}{
			{ompd.StateWorkParallel, 0}, {ompd.StateWaitTaskwait, 0}, {ompd.StateWorkParallel, 0},
			{ompd.StateWaitBarrierImplicitParallel, 0xb0}, {ompd.StateIdle, 0},
		}
		for g, w := range want {
			st, wait, err := ths[g].State()
			require.NoError(t, err)
			assert.Equal(t, w.state, st, "thread %d", g)
			assert.Equal(t, w.wait, wait, "thread %d", g)
		}
		assert.True(t, ompd.StateWaitBarrierImplicitParallel.IsWait())
		assert.Equal(t, "wait_barrier_implicit_parallel", ompd.StateWaitBarrierImplicitParallel.String())

		// A state the specification does not know still reads.
		s.Threads[0].SetState(0x7777, 0x42)
		as.Refresh()
		st, wait, err := ths[0].State()
		require.NoError(t, err)
		assert.Equal(t, ompd.State(0x7777), st)
		assert.Equal(t, ompd.WaitID(0x42), wait)

		on, err := as.Enabled()
		require.NoError(t, err)
		assert.True(t, on)
		s.RT.SetOMPDState(0)
		as.Refresh()
		_, _, err = ths[0].State()
		assert.ErrorIs(t, err, ompd.ErrNeedsStateTracking)
		on, err = as.Enabled()
		require.NoError(t, err)
		assert.False(t, on)
	})
}

func TestFakeNum(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		_, as := fakeOpenNested(t, cfg)
		ths := fakeThreads(t, as)
		// 0: Outer tid 0; 1: Inner tid 0; 2: its serial team; 3: Outer tid 3.
		for g, want := range []int{0, 0, 0, 3} {
			n, err := ths[g].Num()
			require.NoError(t, err)
			assert.Equal(t, want, n, "thread %d", g)
		}
		// 4: never in a team: it has no number (its ds_tid is stale).
		_, err := ths[4].Num()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		assert.ErrorContains(t, err, "in no team")
	})
}

// TestFakeNumMidFork: the moments a thread's ds_tid is not its number in
// its team (th_team) are not corrupt memory. The primary of a region at its
// join (__kmp_join_call: ompd_bp_parallel_end is there) has ds_tid set back
// to its number in the enclosing team while still in the ending team,
// which names it its primary: thread 0. A thread the team keeps beyond the
// size of its current region (a hot team that shrank under
// KMP_HOT_TEAMS_MODE=1, a teams construct's team running a smaller
// parallel region, a team being grown) is in none of the team's regions:
// ErrUnavailable. Only a number no team can have is corrupt. The same on a
// real runtime: target/delve TestRegionStops.
func TestFakeNumMidFork(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		ths := fakeThreads(t, as)
		// Thread 1, Inner's primary, at Inner's join: its number in
		// Outer is Inner's t_master_tid, 1; with 3 it is beyond
		// Inner's 2 threads.
		for _, tid := range []int{1, 3} {
			s.Inner.SetMasterTid(tid)
			s.Threads[1].SetTid(tid)
			as.Refresh()
			n, err := ths[1].Num()
			require.NoError(t, err, "ds_tid %d", tid)
			assert.Zero(t, n, "ds_tid %d: the primary of the ending region", tid)
			p, err := ths[1].CurrentParallel()
			require.NoError(t, err)
			assert.Equal(t, s.Inner.Addr, p.Addr(), "the current region is the ending one")
			pt, err := p.Thread(0)
			require.NoError(t, err)
			assert.True(t, pt.Equal(ths[1]))
			snap, err := as.Snapshot(context.Background())
			require.NoError(t, err)
			assert.Empty(t, snap.Errors, "ds_tid %d", tid)
		}

		// Outer's current region has 3 of its 4 threads: thread 3 is
		// kept in the team outside it.
		s, as = fakeOpenNested(t, cfg)
		s.Outer.SetNProc(3)
		as.Refresh()
		ths = fakeThreads(t, as)
		_, err := ths[3].Num()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		assert.ErrorContains(t, err, "beyond the 3 threads")
		_, err = ths[3].CurrentTask()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		p, err := ths[3].CurrentParallel()
		require.NoError(t, err)
		assert.Equal(t, s.Root.Addr, p.Addr(), "the region enclosing the team's")
		n, err := ths[0].Num()
		require.NoError(t, err)
		assert.Zero(t, n, "the team's primary")
		snap, err := as.Snapshot(context.Background())
		require.NoError(t, err)
		assert.Empty(t, snap.Errors)

		// A number no team can have (the thread table holds fewer
		// threads) is corrupt, for the primary too.
		for _, g := range []int{1, 3} {
			s, as = fakeOpenNested(t, cfg)
			s.Threads[g].SetTid(1 << 24)
			as.Refresh()
			_, err = fakeThreads(t, as)[g].Num()
			assert.ErrorIs(t, err, ompd.ErrCorrupt, "thread %d", g)
		}
	})
}

// TestFakeIdleNestedHotTeam: a nested hot team (KMP_HOT_TEAMS_MAX_LEVEL
// above 1) kept by its primary after its region ended keeps the parent and
// levels of that region, and the runtime may since have reused the parent
// team at another level, and taken the primary into another team as a
// worker. The team's workers are idle, in no region of it: their region
// is unavailable, not corrupt. The same on a real runtime: target/delve
// TestRegionStops.
func TestFakeIdleNestedHotTeam(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		// Inner's primary (thread 1) is back in Outer, its worker
		// (thread 2, out of its serial team) waits in Inner.
		s.Threads[1].SetTeam(s.Outer)
		s.Threads[1].SetTid(1)
		s.Threads[2].SetTeam(s.Inner)
		s.Threads[2].SetTid(1)
		as.Refresh()
		ths := fakeThreads(t, as)
		_, err := ths[2].Num()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		assert.ErrorContains(t, err, "idle in the hot team")
		p, err := ths[2].CurrentParallel()
		require.NoError(t, err)
		assert.Equal(t, s.Outer.Addr, p.Addr(), "the region enclosing the team's")

		// Inner's parent, reused since for a region at a deeper level
		// (here: the serial team, at levels 3 to 5): Inner's link to it
		// is from Inner's last region.
		s.Inner.SetParentAddr(s.Serial.Addr)
		as.Refresh()
		_, err = ths[2].CurrentParallel()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		assert.ErrorContains(t, err, "has changed since")
		snap, err := as.Snapshot(context.Background())
		require.NoError(t, err)
		for _, e := range snap.Errors {
			assert.NotContains(t, e, ths[2].String()+" ", "the idle worker")
		}

		// The primary, freed to the pool since, taken as a worker into
		// a team whose links are stale too (Outer, now at level 3): it
		// is not in Inner's region whatever Outer's parent is.
		s.Inner.SetParentAddr(s.Outer.Addr)
		s.Outer.SetLevel(3)
		as.Refresh()
		_, err = ths[2].Num()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		assert.ErrorContains(t, err, "idle in the hot team")
		_, err = ths[2].CurrentParallel()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		assert.ErrorContains(t, err, "has changed since")
	})
}

// TestFakeNotFullyStarted: a thread the runtime registered but has not
// finished starting (no pthread id yet) and a runtime that has not counted
// the processors yet answer ErrUnavailable saying why, not zeros. The
// starting thread on a real runtime: target/delve TestThreadStarting.
func TestFakeNotFullyStarted(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		var starting *fakeruntime.Thread
		for _, th := range s.Threads {
			if th.GTID == 4 {
				starting = th
			}
		}
		require.NotNil(t, starting)
		starting.SetPthread(0)
		s.RT.SetGlobal("__kmp_avail_proc", 0)
		as.Refresh()
		ths := fakeThreads(t, as)
		_, err := ths[4].OSThread(ompd.PthreadID)
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		assert.ErrorContains(t, err, "starting")
		_, err = ths[4].Num()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		_, err = as.NumProcs()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		_, err = as.ICV(ompd.ICVNumProcsVar)
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		snap, err := as.Snapshot(context.Background())
		require.NoError(t, err)
		n := 0
		for _, ts := range snap.Threads {
			if ts.Starting {
				n++
				assert.Equal(t, 4, ts.GTID)
				assert.True(t, ts.NumUnknown, "no thread number yet")
			}
		}
		assert.Equal(t, 1, n, "one thread starting")
	})
}
