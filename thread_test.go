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
		ths, err := as.Threads()
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
