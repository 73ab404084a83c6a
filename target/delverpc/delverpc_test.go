package delverpc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-delve/delve/service/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/dlvtest"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/delverpc"
)

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestSession follows a user's dlv session: the user stops the nested
// fixture at stopme, ompd-go reads it over JSON-RPC and must agree with the
// program's truth; the user's session must be as it was; then the user
// continues to another stop, which the Target must notice.
func TestSession(t *testing.T) {
	s := dlvtest.Start(t, fixtures.Nested)
	ctx := testContext(t)
	bp := s.BreakAt(t, "stopme")
	st := s.Continue(t)
	require.NotNil(t, st.CurrentThread)
	require.NotNil(t, st.CurrentThread.Breakpoint, "stopped at a breakpoint")
	require.Equal(t, bp.ID, st.CurrentThread.Breakpoint.ID)

	tgt, err := delverpc.Dial(ctx, s.Srv.Addr)
	require.NoError(t, err)
	defer tgt.Close()
	tr := s.Truth(t)
	assert.Equal(t, tr.PID, tgt.Pid())
	assert.Equal(t, uint64(tr.StopTID), tgt.CurrentThread())

	// Threads: exactly the truth's, with their pthread_self as fs_base.
	ths, err := tgt.Threads()
	require.NoError(t, err)
	got := map[uint64]uint64{}
	for _, th := range ths {
		got[th.ID] = th.Pointer
	}
	want := map[uint64]uint64{}
	for _, tt := range tr.Threads {
		pt, err := fixtures.ParseHex(tt.Pthread)
		require.NoError(t, err)
		want[uint64(tt.TID)] = pt
	}
	assert.Equal(t, want, got, "lwp -> fs_base")

	imgs, err := tgt.Images()
	require.NoError(t, err)
	require.NotEmpty(t, imgs)
	require.NoError(t, imgs[0].Err, "executable")
	assert.NotEmpty(t, imgs[0].Path)

	as, err := ompd.Open(tgt)
	require.NoError(t, err)
	defer as.Close()
	ompdtest.CheckTruth(t, as, tr)

	// Writes are refused: the Target never changes the process.
	err = tgt.WriteMemory(0x1000, []byte{1})
	assert.ErrorIs(t, err, target.ErrReadOnly)

	// The user's session is as it was: same stop, same thread and PC,
	// breakpoint intact with the same hit count.
	bps, err := s.User.ListBreakpoints(false)
	require.NoError(t, err)
	s.Unchanged(t, st, bps)
	require.Len(t, bps, 1)
	assert.Equal(t, bp.ID, bps[0].ID)
	assert.Equal(t, uint64(1), bps[0].TotalHitCount)

	// Nothing changed, so Update sees the same stop.
	changed, err := tgt.Update(ctx)
	require.NoError(t, err)
	assert.False(t, changed, "same stop")

	// The user continues to the end of the stopper's innermost region.
	// Delve does not list libomp's functions; break at the address of
	// its symbol, as a user would with "break *ADDR".
	pe, err := tgt.LookupSymbol("ompd_bp_parallel_end")
	require.NoError(t, err)
	_, err = s.User.CreateBreakpoint(&api.Breakpoint{Addr: pe})
	require.NoError(t, err)
	st3 := s.Continue(t)
	require.NotNil(t, st3.CurrentThread)
	changed, err = tgt.Update(ctx)
	require.NoError(t, err)
	assert.True(t, changed, "a new stop")
	as.Refresh()
	assert.Equal(t, uint64(st3.CurrentThread.ID), tgt.CurrentThread())
	name, ok := tgt.SymbolAt(st3.CurrentThread.PC)
	assert.True(t, ok)
	assert.Equal(t, "ompd_bp_parallel_end", name)
	// The thread there is in a region that is ending; the runtime still
	// answers for it.
	th, err := as.ThreadByOSThread(ompd.LWPID, uint64(st3.CurrentThread.ID))
	require.NoError(t, err)
	_, _, err = th.State()
	assert.NoError(t, err)
	snap, err := as.Snapshot(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, snap.Threads)

	// And the user's client still drives the program: on to its end.
	all, err := s.User.ListBreakpoints(false)
	require.NoError(t, err)
	for _, b := range all {
		if b.ID > 0 {
			_, err := s.User.ClearBreakpoint(b.ID)
			require.NoError(t, err)
		}
	}
	var last *api.DebuggerState
	for last = range s.User.Continue() {
	}
	require.NotNil(t, last)
	assert.True(t, last.Exited, "program ran to its end: %v", last.Err)
	_, err = tgt.Update(ctx)
	assert.ErrorIs(t, err, delverpc.ErrExited)
	err = tgt.ReadMemory(make([]byte, 8), 0x1000)
	assert.ErrorIs(t, err, delverpc.ErrExited)
}

// TestServerDies kills the server while a Target reads through it: every
// call then fails at once with ErrDisconnected.
func TestServerDies(t *testing.T) {
	s := dlvtest.Start(t, fixtures.Nested)
	ctx := testContext(t)
	s.BreakAt(t, "stopme")
	s.Continue(t)
	tgt, err := delverpc.Dial(ctx, s.Srv.Addr, delverpc.WithTimeout(5*time.Second))
	require.NoError(t, err)
	defer tgt.Close()
	as, err := ompd.Open(tgt)
	require.NoError(t, err)
	defer as.Close()

	s.Srv.Kill()
	tgt.Refresh()
	as.Refresh()
	start := time.Now()
	_, err = as.Snapshot(ctx)
	require.Error(t, err)
	assert.True(t, errors.Is(err, delverpc.ErrDisconnected) || errors.Is(err, delverpc.ErrTimeout), "%v", err)
	_, err = tgt.Update(ctx)
	assert.ErrorIs(t, err, delverpc.ErrDisconnected)
	assert.Less(t, time.Since(start), time.Minute, "no hang")
}

// TestRunning: while the user's program runs, reads fail with ErrRunning
// at once instead of waiting for the server (which holds its process lock
// while the program runs).
func TestRunning(t *testing.T) {
	s := dlvtest.Start(t, fixtures.Nested)
	ctx := testContext(t)
	// No breakpoint: the program runs to stopme and, without a
	// debugger stop, on to its end; hold it there instead.
	ch := s.User.Continue()
	tgt, err := delverpc.Dial(ctx, s.Srv.Addr)
	require.NoError(t, err)
	defer tgt.Close()
	_, err = tgt.Update(ctx)
	if errors.Is(err, delverpc.ErrExited) {
		t.Skip("the program ended before it could be seen running")
	}
	require.ErrorIs(t, err, delverpc.ErrRunning)
	_, err = tgt.Threads()
	assert.ErrorIs(t, err, delverpc.ErrRunning)
	_, err = s.User.Halt()
	require.NoError(t, err)
	for range ch {
	}
	changed, err := tgt.Update(ctx)
	if errors.Is(err, delverpc.ErrExited) {
		return
	}
	require.NoError(t, err)
	assert.True(t, changed)
	ths, err := tgt.Threads()
	require.NoError(t, err)
	assert.NotEmpty(t, ths)
}
