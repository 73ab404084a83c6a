package delverpc_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-delve/delve/service/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/dlvtest"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/kmp"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
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
	// The user's breakpoints as they are before ompd-go reads anything.
	bps, err := s.User.ListBreakpoints(false)
	require.NoError(t, err)

	tgt, err := delverpc.Dial(ctx, s.Srv.Addr)
	require.NoError(t, err)
	defer tgt.Close()
	tr := s.Truth(t)
	assert.Equal(t, tr.PID, tgt.Pid())
	assert.Equal(t, uint64(tr.StopTID), tgt.CurrentThread())

	// Threads: exactly the truth's, with their pthread_self as fs_base.
	ths, err := tgt.Threads()
	require.NoError(t, err)
	ompdtest.CheckOSThreads(t, ths, tr)

	imgs, err := tgt.Objects()
	require.NoError(t, err)
	require.NotEmpty(t, imgs)
	require.NoError(t, imgs[0].Err, "executable")
	assert.NotEmpty(t, imgs[0].Path)

	as, err := ompd.Open(tgt)
	require.NoError(t, err)
	defer as.Close()
	ompdtest.CheckTruth(t, as, tr)

	// Concurrent readers share the connection and the caches.
	tgt.Refresh()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 4; i++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			_, err := tgt.Threads()
			errs <- err
		}()
		go func() {
			defer wg.Done()
			a, err := tgt.LookupSymbol("__kmp_threads")
			if err == nil {
				err = tgt.ReadMemory(make([]byte, 8), a)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}

	// Writes are refused: the Target never changes the process.
	err = tgt.WriteMemory(0x1000, []byte{1})
	assert.ErrorIs(t, err, target.ErrReadOnly)

	// The user's session is as it was: same stop, same thread and PC,
	// breakpoints as listed before the reads, with the same hit counts.
	s.Unchanged(t, st, bps)
	userBPs := func() []*api.Breakpoint {
		var out []*api.Breakpoint
		all, err := s.User.ListBreakpoints(false)
		require.NoError(t, err)
		for _, b := range all {
			if b.ID > 0 { // not Delve's internal ones (unrecovered panic...)
				out = append(out, b)
			}
		}
		return out
	}
	now := userBPs()
	require.Len(t, now, 1)
	assert.Equal(t, bp.ID, now[0].ID)
	assert.Equal(t, uint64(1), now[0].TotalHitCount)

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
	changed, err = tgt.Update(ctx)
	require.NoError(t, err)
	assert.False(t, changed, "a breakpoint added is not a new stop")
	// WaitStop follows the user: it returns once the program stopped again.
	waited := make(chan error, 1)
	go func() { waited <- tgt.WaitStop(ctx, 20*time.Millisecond) }()
	st3 := s.Continue(t)
	require.NotNil(t, st3.CurrentThread)
	require.NoError(t, <-waited)
	bps3, err := s.User.ListBreakpoints(false)
	require.NoError(t, err)
	// The truth of this stop: dlv's own thread list and a core dlv dumps.
	dump := s.Dump(t)
	changed, err = tgt.Update(ctx)
	require.NoError(t, err)
	assert.False(t, changed, "WaitStop saw the stop already")
	as.Refresh()
	assert.Equal(t, uint64(st3.CurrentThread.ID), tgt.CurrentThread())
	name, ok := tgt.SymbolAt(st3.CurrentThread.PC)
	assert.True(t, ok)
	assert.Equal(t, "ompd_bp_parallel_end", name)
	// The thread there is in a region that is ending; the runtime still
	// answers for it: it is that region's primary, thread 0, although
	// the runtime has already set its ds_tid back to its number in the
	// enclosing team (2 for outer thread 2 in an inner team of 2 read as
	// corrupt memory once).
	th, err := as.ThreadByOSThread(ompd.LWPID, uint64(st3.CurrentThread.ID))
	require.NoError(t, err)
	_, _, err = th.State()
	assert.NoError(t, err)
	num, err := th.Num()
	require.NoError(t, err)
	assert.Zero(t, num, "the primary of the ending region")
	snap, err := as.Snapshot(ctx)
	require.NoError(t, err)
	assert.NotEmpty(t, snap.Threads)
	assert.Empty(t, snap.Errors, "nothing at the end of a region reads as inconsistent")

	// The threads are dlv's, and every answer is the one the core dlv
	// dumped at this stop gives.
	ths, err = tgt.Threads()
	require.NoError(t, err)
	var lwps []uint64
	for _, th := range ths {
		lwps = append(lwps, th.ID)
	}
	slices.Sort(lwps)
	assert.Equal(t, s.ThreadIDs(t), lwps, "threads as dlv lists them")
	c, err := core.Open(context.Background(), s.Exe, dump)
	require.NoError(t, err)
	defer c.Close()
	cths, err := c.Threads()
	require.NoError(t, err)
	assert.ElementsMatch(t, cths, ths, "threads and thread pointers as in dlv's dump")
	cas, err := ompd.Open(c)
	require.NoError(t, err)
	defer cas.Close()
	csnap, err := cas.Snapshot(ctx)
	require.NoError(t, err)
	assert.Equal(t, csnap, snap, "the snapshot of dlv's dump of this stop")
	assert.Len(t, snap.Threads, 6)

	// The session is unchanged by the reads at this stop too: the
	// breakpoints as listed before them, stopme's still hit once (the
	// region end's at least once: threads may reach it together).
	s.Unchanged(t, st3, bps3)
	now = userBPs()
	require.Len(t, now, 2)
	for _, b := range now {
		if b.ID == bp.ID {
			assert.Equal(t, uint64(1), b.TotalHitCount, "stopme")
		} else {
			assert.Equal(t, pe, b.Addr)
			assert.GreaterOrEqual(t, b.TotalHitCount, uint64(1), "ompd_bp_parallel_end")
		}
	}

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
// while the program runs); once the user halts it, the Target reads the
// new stop.
func TestRunning(t *testing.T) {
	// With OMPD_FIXTURE_HOLD=1 the program waits in stopme (up to 120
	// s) once its threads are in place, running.
	s := dlvtest.StartEnv(t, fixtures.Nested, []string{"OMPD_FIXTURE_HOLD=1"})
	ctx := testContext(t)
	ch := s.User.Continue()
	tgt, err := delverpc.Dial(ctx, s.Srv.Addr, delverpc.WithTimeout(5*time.Second))
	require.NoError(t, err)
	defer tgt.Close()
	start := time.Now()
	_, err = tgt.Update(ctx)
	require.ErrorIs(t, err, delverpc.ErrRunning)
	_, err = tgt.Threads()
	assert.ErrorIs(t, err, delverpc.ErrRunning)
	err = tgt.ReadMemory(make([]byte, 8), 0x1000)
	assert.ErrorIs(t, err, delverpc.ErrRunning)
	assert.Less(t, time.Since(start), 5*time.Second, "no waiting for the server")

	// Halt once the program holds in stopme (its truth is written just
	// before), as a user would with Ctrl-C.
	for {
		if _, err := os.Stat(s.TruthPath); err == nil {
			break
		}
		require.NoError(t, ctx.Err(), "the program never reached stopme")
		time.Sleep(50 * time.Millisecond)
	}
	_, err = s.User.Halt()
	require.NoError(t, err)
	for st := range ch {
		require.NoError(t, st.Err)
	}
	changed, err := tgt.Update(ctx)
	require.NoError(t, err)
	assert.True(t, changed)
	as, err := ompd.Open(tgt)
	require.NoError(t, err)
	defer as.Close()
	tr := s.Truth(t)
	ths, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	assert.Len(t, ths, len(tr.Threads), "OpenMP threads at the halt")
}

// TestPathMap reads the session as from another machine: its files found
// through WithFileMap and WithSysroot (copies here), and a local file of
// another build refused because its build-id is not the one in the
// process's memory.
func TestPathMap(t *testing.T) {
	s := dlvtest.Start(t, fixtures.Nested)
	ctx := testContext(t)
	s.BreakAt(t, "stopme")
	s.Continue(t)
	tr := s.Truth(t)
	rt := fixtures.Runtime(t)

	// The executable and libomp copied elsewhere, named one by one.
	dir := t.TempDir()
	exe := filepath.Join(dir, "prog")
	lib := filepath.Join(dir, "libomp.so")
	copyFile(t, s.Exe, exe)
	copyFile(t, rt.LibOMP, lib)
	tgt, err := delverpc.Dial(ctx, s.Srv.Addr, delverpc.WithExecutable(exe),
		delverpc.WithFileMap(map[string]string{rt.LibOMP: lib}))
	require.NoError(t, err)
	defer tgt.Close()
	imgs, err := tgt.Objects()
	require.NoError(t, err)
	paths := map[string]string{}
	for _, im := range imgs {
		require.NoError(t, im.Err, im.Name)
		paths[im.Name] = im.Path
	}
	assert.Equal(t, exe, imgs[0].Path)
	assert.Equal(t, lib, paths[rt.LibOMP])
	as, err := ompd.Open(tgt)
	require.NoError(t, err)
	ompdtest.CheckTruth(t, as, tr)
	as.Close()

	// A sysroot: libomp under the same path below it.
	root := t.TempDir()
	copyFile(t, rt.LibOMP, filepath.Join(root, rt.LibOMP))
	tgt2, err := delverpc.Dial(ctx, s.Srv.Addr, delverpc.WithSysroot(root))
	require.NoError(t, err)
	defer tgt2.Close()
	imgs, err = tgt2.Objects()
	require.NoError(t, err)
	for _, im := range imgs {
		if im.Name == rt.LibOMP {
			assert.Equal(t, filepath.Join(root, rt.LibOMP), im.Path)
		}
	}
	_, err = tgt2.LookupSymbol("__kmp_threads")
	assert.NoError(t, err)

	// The program's path names no file here: a server on this machine
	// still has its process's /proc/PID/exe.
	tgt4, err := delverpc.Dial(ctx, s.Srv.Addr, delverpc.WithFileMap(map[string]string{s.Exe: filepath.Join(dir, "absent")}))
	require.NoError(t, err)
	defer tgt4.Close()
	imgs, err = tgt4.Objects()
	require.NoError(t, err)
	require.NoError(t, imgs[0].Err)
	assert.Equal(t, fmt.Sprintf("/proc/%d/exe", tr.PID), imgs[0].Path)

	// Another build in libomp's place: refused, and said so.
	tgt3, err := delverpc.Dial(ctx, s.Srv.Addr, delverpc.WithFileMap(map[string]string{rt.LibOMP: s.Exe}))
	require.NoError(t, err)
	defer tgt3.Close()
	imgs, err = tgt3.Objects()
	require.NoError(t, err)
	var refused bool
	for _, im := range imgs {
		if im.Name == rt.LibOMP {
			refused = errors.Is(im.Err, delverpc.ErrMismatch)
			assert.Empty(t, im.Path)
		}
	}
	assert.True(t, refused, "another build refused: %+v", imgs)
	_, err = tgt3.LookupSymbol("__kmp_threads")
	assert.ErrorIs(t, err, target.ErrNotFound)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
	require.NoError(t, os.WriteFile(to, b, 0o755))
}

// TestCoreServer reads a "dlv core" server (Delve's core backend, on a
// core dlv dumped) as a live one.
func TestCoreServer(t *testing.T) {
	stop := fixtures.DlvDump(t, fixtures.Nested)
	srv := fixtures.StartDlvCore(t, stop.Exe, stop.Core)
	ctx := testContext(t)
	// The server names no executable for a core: the user does.
	tgt, err := delverpc.Dial(ctx, srv.Addr, delverpc.WithExecutable(stop.Exe))
	require.NoError(t, err)
	defer tgt.Close()
	ths, err := tgt.Threads()
	require.NoError(t, err)
	ompdtest.CheckOSThreads(t, ths, stop.Truth)
	imgs, err := tgt.Objects()
	require.NoError(t, err)
	require.NoError(t, imgs[0].Err, "executable")
	var libomp bool
	for _, im := range imgs {
		libomp = libomp || im.Path == stop.Runtime.LibOMP
	}
	assert.True(t, libomp, "libomp found through the dynamic linker's list: %+v", imgs)
	as, err := ompd.Open(tgt)
	require.NoError(t, err)
	defer as.Close()
	ompdtest.CheckTruth(t, as, stop.Truth)
}

// stockCheck is a session whose symbol lookups also find the indirect
// locks' table the checks need of a stripped runtime, as package kmp finds
// hidden names (see the root package's stock tests).
type stockCheck struct {
	*delverpc.Target
	rt *kmp.Runtime
}

func (s stockCheck) LookupSymbol(name string) (uint64, error) {
	a, err := s.Target.LookupSymbol(name)
	if err != nil && name == "__kmp_i_lock_table" && errors.Is(err, target.ErrNotFound) {
		return s.rt.LookupHidden(name)
	}
	return a, err
}

// TestStrippedRuntime reads a session whose program runs a copy of the
// runtime stripped as distributions ship it: without its debug file the
// runtime is read through the table of its known release; with the debug
// directory that holds
// it, every answer matches the truth.
func TestStrippedRuntime(t *testing.T) {
	st := fixtures.StripRuntime(t, fixtures.RuntimeVariant(t, fixtures.VariantOMPD))
	s := dlvtest.StartWith(t, st.RuntimeInfo, fixtures.Nested)
	ctx := testContext(t)
	s.BreakAt(t, "stopme")
	s.Continue(t)

	tgt, err := delverpc.Dial(ctx, s.Srv.Addr, delverpc.WithDebugDirs())
	require.NoError(t, err)
	defer tgt.Close()
	rt, err := kmp.Open(tgt)
	require.NoError(t, err)
	as0, err := ompd.Open(stockCheck{tgt, rt.(*kmp.Runtime)})
	require.NoError(t, err)
	assert.Equal(t, ompd.LayoutKnownTable, as0.Runtime().Layout, "read as the known release it is a build of")
	ompdtest.CheckTruth(t, as0, s.Truth(t))
	as0.Close()

	dir := t.TempDir()
	link := st.BuildIDPath(dir)
	require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
	require.NoError(t, os.Symlink(st.DebugFile, link))
	tgt2, err := delverpc.Dial(ctx, s.Srv.Addr, delverpc.WithDebugDirs(dir))
	require.NoError(t, err)
	defer tgt2.Close()
	as, err := ompd.Open(tgt2)
	require.NoError(t, err)
	defer as.Close()
	ompdtest.CheckTruth(t, as, s.Truth(t))
}

// TestGomp reads a session of a gcc-compiled program on GCC's libgomp:
// the runtime is found the same way, and its threads are the program's.
func TestGomp(t *testing.T) {
	s := dlvtest.StartWith(t, fixtures.GompRuntime(t, fixtures.GompVersions[0]), fixtures.Nested)
	ctx := testContext(t)
	s.BreakAt(t, "stopme")
	s.Continue(t)
	tr := s.Truth(t)
	tgt, err := delverpc.Dial(ctx, s.Srv.Addr)
	require.NoError(t, err)
	defer tgt.Close()
	as, err := ompd.Open(tgt)
	require.NoError(t, err)
	defer as.Close()
	ths, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	assert.Len(t, ths, len(tr.Threads))
	for _, tt := range tr.Threads {
		th, err := as.ThreadByOSThread(ompd.LWPID, uint64(tt.TID))
		if assert.NoError(t, err, "thread %d (%s)", tt.TID, tt.Role) {
			n, err := th.Num()
			require.NoError(t, err)
			assert.Equal(t, tt.ThreadNum, n, "thread %d", tt.TID)
		}
	}
}

// TestUpdateWhileDumping: a client that follows the session keeps asking
// for the server's state while the user has dlv dump cores of the stop.
// Delve 1.27's server wedges for good if a State that does not wait comes
// in while a dump is under way (dumpstate.md); whenever the dump starts,
// every dump must end, the Target must see the same stop after each, and
// the user's session must stay as it was.
func TestUpdateWhileDumping(t *testing.T) {
	s := dlvtest.Start(t, fixtures.Nested)
	ctx := testContext(t)
	s.BreakAt(t, "stopme")
	st := s.Continue(t)
	bps, err := s.User.ListBreakpoints(false)
	require.NoError(t, err)
	tgt, err := delverpc.Dial(ctx, s.Srv.Addr)
	require.NoError(t, err)
	defer tgt.Close()

	stop := make(chan struct{})
	polled := make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				polled <- nil
				return
			default:
			}
			if _, err := tgt.Update(ctx); err != nil && !errors.Is(err, delverpc.ErrRunning) {
				polled <- err
				return
			}
		}
	}()
	for range 3 {
		s.Dump(t) // fails the test if the dump does not end
	}
	close(stop)
	require.NoError(t, <-polled)
	changed, err := tgt.Update(ctx)
	require.NoError(t, err)
	assert.False(t, changed, "the dumps are not stops")
	s.Unchanged(t, st, bps)
}
