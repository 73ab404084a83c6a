package delve

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-delve/delve/pkg/proc"
	"github.com/go-delve/delve/pkg/proc/native"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

// run is one fixture program started for a test.
type run struct {
	exe       string
	truthPath string
	stderr    string // file the program's stderr goes to
	env       []string
}

// newRun builds fixture name and prepares its environment: the fixture's
// own (OMP_DEBUG=enabled, ...), a truth file and files for its output,
// plus extra.
func newRun(t testing.TB, name string, extra ...string) *run {
	t.Helper()
	fixtures.Runtime(t)
	return newRunOf(t, fixtures.Build(t, name), name, extra...)
}

// newRunOf is newRun for the fixture name built as exe (on another runtime
// than libomp's).
func newRunOf(t testing.TB, exe, name string, extra ...string) *run {
	t.Helper()
	fixtures.Watchdog(t, fixtures.LiveBound())
	dir := t.TempDir()
	r := &run{
		exe:       exe,
		truthPath: filepath.Join(dir, "truth.json"),
		stderr:    filepath.Join(dir, "stderr.txt"),
	}
	r.env = fixtures.Env(name, append([]string{
		"OMPD_FIXTURE_TRUTH=" + r.truthPath,
		"OMPD_FIXTURE_STDOUT=" + filepath.Join(dir, "stdout.txt"),
		"OMPD_FIXTURE_STDERR=" + r.stderr,
	}, extra...)...)
	t.Cleanup(func() {
		if t.Failed() {
			b, _ := os.ReadFile(r.stderr)
			t.Logf("program stderr:\n%s", b)
		}
	})
	return r
}

func (r *run) truth(t *testing.T) *fixtures.Truth {
	t.Helper()
	tr, err := fixtures.LoadTruth(r.truthPath)
	require.NoError(t, err)
	require.NoError(t, tr.Validate())
	stderr, err := os.ReadFile(r.stderr)
	require.NoError(t, err)
	tr.Display = fixtures.DisplayBlock(string(stderr)) // printed before the stop
	return tr
}

// unavailable reports an error that says ptrace is not allowed here as
// fixtures.Unavailable does (a skip, or a failure under CI=true).
func unavailable(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
		fixtures.Unavailable(t, "ptrace not allowed: %v", err)
	}
}

// launch starts the fixture under Delve; the process is killed at the end
// of the test.
func (r *run) launch(t *testing.T, args ...string) *Process {
	t.Helper()
	p, err := Launch(context.Background(), append([]string{r.exe}, args...), WithEnv(r.env))
	unavailable(t, err)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Kill() })
	return p
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// checkLive asserts what any stop of a fixture must show, besides
// ompdtest.CheckTruth: the target's threads are exactly the truth's, with
// the pthread ids the program recorded, and the stopper's region chain has
// the levels and team sizes of its ancestors.
func checkLive(t *testing.T, p *Process, as *ompd.AddressSpace, tr *fixtures.Truth) {
	t.Helper()
	ths, err := p.Threads()
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
	assert.Equal(t, want, got, "OS threads: lwp -> fs_base (pthread_self)")

	st := tr.Stopper()
	require.NotNil(t, st)
	th, err := as.ThreadByOSThread(ompd.LWPID, uint64(st.TID))
	require.NoError(t, err)
	var levels, sizes []int
	for par, err := th.CurrentParallel(); err == nil; par, err = par.Enclosing() {
		l, err := par.Level()
		require.NoError(t, err)
		n, err := par.NumThreads()
		require.NoError(t, err)
		levels, sizes = append(levels, l), append(sizes, n)
	}
	var wantLevels, wantSizes []int
	for i := len(st.Ancestors) - 1; i >= 0; i-- {
		wantLevels = append(wantLevels, st.Ancestors[i].Level)
		wantSizes = append(wantSizes, st.Ancestors[i].TeamSize)
	}
	assert.Equal(t, wantLevels, levels, "stopper's region levels, innermost first")
	assert.Equal(t, wantSizes, sizes, "stopper's team sizes, innermost first")
}

// TestLaunchNested launches the nested fixture with OMP_DEBUG=enabled,
// stops at stopme, and compares every answer with the program's truth.
func TestLaunchNested(t *testing.T) {
	r := newRun(t, fixtures.Nested)
	p := r.launch(t)
	ctx := testContext(t)

	stops, err := p.RunToFunction(ctx, "stopme")
	require.NoError(t, err)
	tr := r.truth(t)
	require.Len(t, stops, 1)
	assert.Equal(t, uint64(tr.StopTID), stops[0].TID, "thread stopped in stopme")
	assert.Equal(t, tr.PID, p.Pid())

	as, err := ompd.Open(p)
	require.NoError(t, err)
	defer as.Close()
	checkLive(t, p, as, tr)
	ompdtest.CheckTruth(t, as, tr)

	// The runtime's entry function of the stopper's innermost region is
	// named through the Symbolizer.
	th, err := as.ThreadByOSThread(ompd.LWPID, uint64(tr.StopTID))
	require.NoError(t, err)
	par, err := th.CurrentParallel()
	require.NoError(t, err)
	fn, err := par.Function()
	require.NoError(t, err)
	assert.NotEmpty(t, fn.Symbol, "symbol of the region's function %#x", fn.Addr)

	// Thread-local lookups: __kmp_gtid of the stopper is its gtid.
	addr, err := p.LookupThreadLocal(uint64(tr.StopTID), "__kmp_gtid")
	require.NoError(t, err)
	var b [4]byte
	require.NoError(t, p.ReadMemory(b[:], addr))
	assert.Equal(t, th.GTID(), int(int32(binary.LittleEndian.Uint32(b[:]))), "__kmp_gtid")

	_, err = p.LookupThreadLocal(1, "__kmp_gtid")
	assert.ErrorIs(t, err, target.ErrNoThread)
	_, err = p.LookupSymbol("no_such_symbol_in_the_fixture")
	assert.ErrorIs(t, err, target.ErrNotFound)
	err = p.ReadMemory(b[:], 8)
	assert.ErrorIs(t, err, target.ErrNoMemory)
	var re *target.ReadError
	assert.ErrorAs(t, err, &re)

	// Let it finish: stopme returns and the program exits 0.
	err = p.ContinueAndRefresh(ctx, as)
	require.ErrorIs(t, err, ErrExited)
	status, ok := p.ExitStatus()
	assert.True(t, ok)
	assert.Equal(t, 0, status)
	_, err = p.Threads()
	assert.ErrorIs(t, err, ErrExited)
	err = p.ReadMemory(b[:], addr)
	assert.ErrorIs(t, err, target.ErrNoMemory)
	assert.ErrorIs(t, err, ErrExited)
	assert.ErrorIs(t, p.Continue(ctx), ErrExited)
	assert.NoError(t, p.Detach(false), "detaching an exited process")
}

// zombie reports whether process pid has exited (and not been waited for).
func zombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

// startHeld starts fixture r with OMPD_FIXTURE_HOLD=1 (and the program
// arguments args) through os/exec and waits until it sits in stopme. The caller must not call cmd.Wait while a
// debugger is attached: a wait for a traced child consumes the ptrace
// stops the debugger waits for.
func startHeld(t testing.TB, r *run, args ...string) *exec.Cmd {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	cmd := exec.Command(r.exe, args...)
	cmd.Env = append(r.env, "OMPD_FIXTURE_HOLD=1", "OMPD_FIXTURE_READY="+ready)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(ready); err == nil {
			return cmd
		}
		if zombie(cmd.Process.Pid) {
			t.Fatalf("the program exited before it was ready: %v", cmd.Wait())
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not appear", ready)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// attachHeld starts r's program held in stopme (startHeld), calls
// before, if not nil, with its pid while it waits there, and attaches
// Delve to it. finish releases the program, detaches and expects its exit
// status 0; without finish the process is detached when the test ends.
func attachHeld(t *testing.T, r *run, before func(pid int)) (p *Process, finish func()) {
	t.Helper()
	cmd := startHeld(t, r)
	if before != nil {
		before(cmd.Process.Pid)
	}
	p, err := Attach(context.Background(), cmd.Process.Pid)
	unavailable(t, err)
	require.NoError(t, err)
	attached := true
	t.Cleanup(func() {
		if attached {
			_ = p.Detach(false)
		}
	})
	return p, func() {
		t.Helper()
		release(t, p)
		require.NoError(t, p.Detach(false))
		attached = false
		waitExit(t, cmd)
	}
}

// waitExit waits for the program after its release.
func waitExit(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "the program's exit")
		assert.Equal(t, 0, cmd.ProcessState.ExitCode())
	case <-time.After(2 * time.Minute):
		t.Fatal("the program did not exit after its release")
	}
}

// release lets a held fixture return from stopme.
func release(t *testing.T, p *Process) {
	t.Helper()
	addr, err := p.LookupSymbol("ompd_fixture_release")
	require.NoError(t, err)
	require.NoError(t, p.WriteMemory(addr, []byte{1, 0, 0, 0}))
	var b [4]byte
	require.NoError(t, p.ReadMemory(b[:], addr))
	require.Equal(t, []byte{1, 0, 0, 0}, b[:], "ompd_fixture_release after the write")
}

// TestAttachHeld starts the nested fixture with os/exec in hold mode,
// attaches while it waits in stopme, compares with the truth, releases it
// by writing ompd_fixture_release, detaches, and expects exit status 0.
func TestAttachHeld(t *testing.T) {
	r := newRun(t, fixtures.Nested)
	p, finish := attachHeld(t, r, nil)
	tr := r.truth(t)
	as, err := ompd.Open(p)
	require.NoError(t, err)
	checkLive(t, p, as, tr)
	ompdtest.CheckTruth(t, as, tr)

	finish()
	assert.ErrorIs(t, p.Continue(context.Background()), ErrDetached)
}

// TestWatchEventsSerialized counts the parallel begin and end events of the
// serialized fixture from the runtime's initialization to the program's
// exit.
func TestWatchEventsSerialized(t *testing.T) {
	r := newRun(t, fixtures.Serialized)
	p := r.launch(t)
	ctx := testContext(t)
	as, err := p.OpenRuntime(ctx)
	require.NoError(t, err)
	defer as.Close()

	type count struct{ begin, end int }
	per := map[uint64]*count{}
	var total count
	var eventErrs []error
	notCurrent := 0 // active regions begun, their team not the primary's yet
	err = p.WatchEvents(ctx, as, func(ev Event) bool {
		c := per[ev.TID]
		if c == nil {
			c = &count{}
			per[ev.TID] = c
		}
		switch ev.Kind {
		case ParallelBegin:
			c.begin++
			total.begin++
		case ParallelEnd:
			c.end++
			total.end++
		default:
			return true
		}
		if ev.Kind == ParallelBegin && errors.Is(ev.Err, ompd.ErrUnavailable) && ev.Thread.AddressSpace() != nil {
			notCurrent++
			return true
		}
		if ev.Err != nil {
			eventErrs = append(eventErrs, ev.Err)
			return true
		}
		// The thread is known, and so is its current region.
		assert.Equal(t, ev.Parallel.AddressSpace(), as)
		if l, err := ev.Parallel.Level(); assert.NoError(t, err) {
			assert.True(t, l >= 1 && l <= 5, "level %d", l)
		}
		return true
	})
	require.NoError(t, err)
	assert.Empty(t, eventErrs)
	status, ok := p.ExitStatus()
	require.True(t, ok, "WatchEvents ran to the program's end")
	assert.Equal(t, 0, status)

	// serialized.c nests five regions: levels 1 and 3 are active teams of 2,
	// levels 2, 4 and 5 serialized. The runtime calls
	// ompd_bp_parallel_begin (and _end) once per region in the thread that
	// encounters it: the primary of an active team, the thread itself for
	// a serialized one. So a thread begins level L when it is thread 0 at
	// every level from L down to 5: the stopper (thread 0 everywhere) 5
	// times, the other level-1 thread (levels 2-5) 4 times, each of the
	// two level-3 workers (levels 4-5) twice: 5+4+2+2 = 13 regions, each
	// begun and ended once.
	assert.Equal(t, count{13, 13}, total, "parallel begin/end events of the run")
	// At the begin of an active region (levels 1 and 3, 3 of them) the
	// primary's team is the new team only when the runtime reinitialized
	// it into a hot team that grew (level 1's, the first): the others'
	// regions are unavailable there.
	assert.LessOrEqual(t, notCurrent, 2, "active regions begun before their team is current")
	tr := r.truth(t)
	require.Len(t, tr.Threads, 4)
	for _, tt := range tr.Threads {
		want := 0
		for L := 1; L <= tt.Level; L++ {
			primary := true
			for _, a := range tt.Ancestors {
				if a.Level >= L && a.ThreadNum != 0 {
					primary = false
				}
			}
			if primary {
				want++
			}
		}
		c := per[uint64(tt.TID)]
		require.NotNil(t, c, "events of thread %d", tt.TID)
		assert.Equal(t, count{want, want}, *c, "events of thread %d (path %v)", tt.TID, tt.Path())
	}
}

// TestEnable turns the runtime's breakpoint calls off and on through
// ompd.AddressSpace.Enable (a write into the live process) and checks the
// effect: with them off, the rest of the run reports no event.
func TestEnable(t *testing.T) {
	r := newRun(t, fixtures.Nested)
	p := r.launch(t)
	ctx := testContext(t)
	_, err := p.RunToFunction(ctx, "stopme")
	require.NoError(t, err)
	as, err := ompd.Open(p)
	require.NoError(t, err)
	defer as.Close()

	state := func() uint64 {
		addr, err := p.LookupSymbol("ompd_state")
		require.NoError(t, err)
		var b [8]byte
		require.NoError(t, p.ReadMemory(b[:], addr))
		return binary.LittleEndian.Uint64(b[:])
	}
	on, err := as.Enabled()
	require.NoError(t, err)
	require.True(t, on)
	before := state()
	require.NotZero(t, before)

	require.NoError(t, as.Enable(false))
	on, err = as.Enabled()
	require.NoError(t, err)
	assert.False(t, on)
	assert.NotEqual(t, before, state(), "ompd_state in the process after Enable(false)")

	require.NoError(t, as.Enable(true))
	on, err = as.Enabled()
	require.NoError(t, err)
	assert.True(t, on)
	assert.Equal(t, before, state(), "ompd_state in the process after Enable(true)")

	// Off again, and run to the end: the regions end, the threads finish,
	// but the runtime calls none of its breakpoint functions.
	require.NoError(t, as.Enable(false))
	var events []Event
	err = p.WatchEvents(ctx, as, func(ev Event) bool {
		events = append(events, ev)
		return true
	})
	require.NoError(t, err)
	assert.Empty(t, events)
	status, ok := p.ExitStatus()
	require.True(t, ok)
	assert.Equal(t, 0, status)
}

// TestEventsEnabled is TestEnable's control: the same stretch of the run
// with the breakpoint calls on reports the regions ending.
func TestEventsEnabled(t *testing.T) {
	r := newRun(t, fixtures.Nested)
	p := r.launch(t)
	ctx := testContext(t)
	_, err := p.RunToFunction(ctx, "stopme")
	require.NoError(t, err)
	as, err := ompd.Open(p)
	require.NoError(t, err)
	defer as.Close()
	kinds := map[EventKind]int{}
	err = p.WatchEvents(ctx, as, func(ev Event) bool {
		kinds[ev.Kind]++
		return true
	})
	require.NoError(t, err)
	// nested.c: 3 outer threads each the primary of an inner team of 2,
	// inside one outer region: 4 regions end, and its 6 threads end.
	assert.Equal(t, 4, kinds[ParallelEnd], "parallel-end events: %v", kinds)
	assert.Equal(t, 6, kinds[ThreadEnd], "thread-end events: %v", kinds)
}

// TestLiveMatchesCore compares the snapshot of a live process with the
// snapshot of a core file of the same process at the same stop: the
// nested fixture held in stopme is read through Delve, released from
// Delve, dumped by gdb's gcore, and read through target/core.
func TestLiveMatchesCore(t *testing.T) {
	if _, err := exec.LookPath("gdb"); err != nil {
		fixtures.Unavailable(t, "gdb not found: %v", err)
	}
	r := newRun(t, fixtures.Nested)
	cmd := startHeld(t, r)
	ctx := testContext(t)

	p, err := Attach(context.Background(), cmd.Process.Pid)
	unavailable(t, err)
	require.NoError(t, err)
	// Detached before the program is killed, should a check fail (a
	// traced program killed is never collected by a wait).
	t.Cleanup(func() { _ = p.Detach(false) })
	as, err := ompd.Open(p)
	require.NoError(t, err)
	live, err := as.Snapshot(ctx)
	require.NoError(t, err)
	require.NoError(t, p.Detach(false))

	corePath := filepath.Join(t.TempDir(), "core")
	out, err := exec.Command("gdb", "-nx", "-batch", "-p", itoa(cmd.Process.Pid),
		"-ex", "gcore "+corePath).CombinedOutput()
	require.NoError(t, err, "gcore: %s", out)

	c, err := core.Open(context.Background(), r.exe, corePath)
	require.NoError(t, err)
	defer c.Close()
	cas, err := ompd.Open(c)
	require.NoError(t, err)
	dumped, err := cas.Snapshot(ctx)
	require.NoError(t, err)

	// Everything is deterministic here: same process, same stop.
	lj, _ := json.MarshalIndent(live, "", " ")
	cj, _ := json.MarshalIndent(dumped, "", " ")
	assert.JSONEq(t, string(cj), string(lj), "live snapshot vs core snapshot")
	assert.Empty(t, live.Errors)
	assert.Len(t, live.Threads, len(r.truth(t).Threads))

	// Release the program and let it finish.
	p2, err := Attach(context.Background(), cmd.Process.Pid)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p2.Detach(false) })
	release(t, p2)
	require.NoError(t, p2.Detach(false))
	waitExit(t, cmd)
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// TestConcurrentReads reads a stopped many-threads fixture from several
// goroutines at once (run with -race).
func TestConcurrentReads(t *testing.T) {
	r := newRun(t, fixtures.Many)
	p := r.launch(t, "12")
	ctx := testContext(t)
	_, err := p.RunToFunction(ctx, "stopme")
	require.NoError(t, err)
	tr := r.truth(t)

	var wg sync.WaitGroup
	snaps := make([]*ompd.Snapshot, 6)
	errs := make([]error, len(snaps))
	for i := range snaps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each goroutine its own address space: all caching and
			// locking of the Target is shared.
			as, err := ompd.Open(p)
			if err != nil {
				errs[i] = err
				return
			}
			snaps[i], errs[i] = as.Snapshot(ctx)
		}()
	}
	wg.Wait()
	for i := range snaps {
		require.NoError(t, errs[i])
		assert.Len(t, snaps[i].Threads, len(tr.Threads))
		assert.Equal(t, snaps[0], snaps[i])
	}
}

// TestContinueCancel stops a running process when the context is done.
func TestContinueCancel(t *testing.T) {
	r := newRun(t, fixtures.Nested)
	// Held in stopme, the program never ends by itself.
	p, err := Launch(context.Background(), []string{r.exe}, WithEnv(r.env), WithExtraEnv("OMPD_FIXTURE_HOLD=1"))
	unavailable(t, err)
	require.NoError(t, err)
	defer p.Kill()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = p.Continue(ctx)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	// Stopped again: the truth is written by now, the threads are there.
	ths, err := p.Threads()
	require.NoError(t, err)
	assert.Len(t, ths, len(r.truth(t).Threads))

	// Kill while running.
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = p.Kill()
	}()
	err = p.Continue(context.Background())
	require.ErrorIs(t, err, ErrExited)
	var ee *ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, -int(syscall.SIGKILL), ee.Status)
}

// TestLaunchOptions checks the environment, working directory and output
// options, and an error for a missing program.
func TestLaunchOptions(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		fixtures.Unavailable(t, "no sh: %v", err)
	}
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "out"))
	require.NoError(t, err)
	defer out.Close()
	p, err := Launch(context.Background(), []string{sh, "-c", `echo "$OMPD_GO_A $OMPD_GO_B $(pwd)"`},
		WithEnv([]string{"OMPD_GO_A=1", "OMPD_GO_B=2", "PATH=" + os.Getenv("PATH")}),
		WithExtraEnv("OMPD_GO_B=3"), WithDir(dir), WithStdio(nil, out, nil))
	unavailable(t, err)
	require.NoError(t, err)
	defer p.Kill()
	require.ErrorIs(t, p.Continue(context.Background()), ErrExited)
	b, err := os.ReadFile(filepath.Join(dir, "out"))
	require.NoError(t, err)
	real, _ := filepath.EvalSymlinks(dir)
	assert.Equal(t, "1 3 "+real, strings.TrimSpace(string(b)))

	_, err = Launch(context.Background(), []string{filepath.Join(dir, "no-such-program")})
	assert.ErrorIs(t, err, os.ErrNotExist)

	assert.Equal(t, []string{"B=1", "A=2", "C=3"}, mergeEnv([]string{"A=1", "B=1"}, []string{"A=2", "C=3"}))
}

// TestNewSession wraps a target of a plain Delve session (native.Launch,
// which passes the debugger's environment on: t.Setenv supplies the
// fixture's), stopped at C.stopme found through Delve's DWARF lookup.
func TestNewSession(t *testing.T) {
	r := newRun(t, fixtures.Nested)
	for _, kv := range r.env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	grp, err := native.Launch([]string{r.exe}, "", 0, nil, "", "", proc.OutputRedirect{}, proc.OutputRedirect{})
	unavailable(t, err)
	require.NoError(t, err)
	defer grp.Detach(true)
	dt := grp.Selected
	addrs, err := proc.FindFunctionLocation(dt, "C.stopme", 0)
	require.NoError(t, err)
	require.NotEmpty(t, addrs)
	_, err = dt.SetBreakpoint(1, addrs[0], proc.UserBreakpoint, nil)
	require.NoError(t, err)
	require.NoError(t, grp.Continue())

	tg, err := New(dt)
	require.NoError(t, err)
	defer tg.Close()
	// Delve's location is past stopme's prologue.
	stop, err := tg.LookupSymbol("stopme")
	require.NoError(t, err)
	assert.LessOrEqual(t, stop, addrs[0])
	name, ok := tg.SymbolAt(addrs[0])
	assert.True(t, ok)
	assert.Equal(t, "stopme", name, "symbol at Delve's stopme location")
	as, err := ompd.Open(tg)
	require.NoError(t, err)
	defer as.Close()
	tr := r.truth(t)
	ompdtest.CheckTruth(t, as, tr)

	// The session resumes the process; after Refresh the Target sees the
	// new state (here: the end).
	require.NoError(t, dt.ClearBreakpoint(addrs[0]))
	err = grp.Continue()
	var pe proc.ErrProcessExited
	require.ErrorAs(t, err, &pe)
	tg.Refresh()
	as.Refresh()
	_, err = tg.Threads()
	assert.ErrorIs(t, err, ErrExited)
	_, err = ompd.Collect(as.Threads())
	assert.Error(t, err)
}

// TestLiveDeaths kills the process from outside while it is stopped and
// while it runs, and detaches from it: every later answer, after the
// address space's Refresh, is an error matching ErrExited (or
// ErrDetached), never what the caches still hold.
func TestLiveDeaths(t *testing.T) {
	r := newRun(t, fixtures.Nested)
	ctx := testContext(t)
	stopped := func(t *testing.T) (*Process, *ompd.AddressSpace) {
		p := r.launch(t)
		_, err := p.RunToFunction(ctx, "stopme")
		require.NoError(t, err)
		as, err := ompd.Open(p)
		require.NoError(t, err)
		t.Cleanup(func() { as.Close() })
		snap, err := as.Snapshot(ctx)
		require.NoError(t, err)
		require.NotEmpty(t, snap.Threads)
		return p, as
	}
	// after checks every way of reading the process after it is gone.
	after := func(t *testing.T, p *Process, as *ompd.AddressSpace, want error) {
		t.Helper()
		as.Refresh()
		snap, err := as.Snapshot(ctx)
		if err == nil {
			assert.Empty(t, snap.Threads, "a snapshot of a gone process: %+v", snap)
		}
		assert.ErrorIs(t, err, want)
		_, err = ompd.Collect(as.Threads())
		assert.ErrorIs(t, err, want)
		_, err = p.Threads()
		assert.ErrorIs(t, err, want)
		err = p.ReadMemory(make([]byte, 8), 0x1000)
		assert.ErrorIs(t, err, want)
		assert.NotContains(t, err.Error(), "\n")
		_, err = ompd.Open(p)
		assert.ErrorIs(t, err, want)
		assert.NotErrorIs(t, err, ompd.ErrIncompatible)
	}

	t.Run("SIGKILL while stopped", func(t *testing.T) {
		p, as := stopped(t)
		require.NoError(t, syscall.Kill(p.Pid(), syscall.SIGKILL))
		require.Eventually(t, func() bool { return zombie(p.Pid()) }, 10*time.Second, 10*time.Millisecond)
		after(t, p, as, ErrExited)
		assert.NoError(t, p.Kill())
		assert.ErrorIs(t, p.Continue(ctx), ErrExited)
	})
	t.Run("SIGKILL while running", func(t *testing.T) {
		// Held in stopme, the program runs until killed.
		p, err := Launch(context.Background(), []string{r.exe}, WithEnv(r.env), WithExtraEnv("OMPD_FIXTURE_HOLD=1"))
		unavailable(t, err)
		require.NoError(t, err)
		t.Cleanup(func() { _ = p.Kill() })
		go func() {
			time.Sleep(500 * time.Millisecond)
			_ = syscall.Kill(p.Pid(), syscall.SIGKILL)
		}()
		err = p.Continue(ctx)
		require.ErrorIs(t, err, ErrExited)
		_, err = p.OpenRuntime(ctx)
		assert.ErrorIs(t, err, ErrExited)
		assert.NotErrorIs(t, err, ompd.ErrIncompatible)
		_, err = ompd.Open(p)
		assert.ErrorIs(t, err, ErrExited)
	})
	t.Run("Detach", func(t *testing.T) {
		p, as := stopped(t)
		pid := p.Pid()
		require.NoError(t, p.Detach(false))
		t.Cleanup(func() {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_, _ = p.Wait()
		})
		after(t, p, as, ErrDetached)
	})
}

// TestThreadPointersAcrossStops checks the thread pointers Threads reports
// (from glibc's thread lists: walked when the threads changed, confirmed
// with one read when they did not) against every thread's registers, at
// each thread start of the many fixture (the thread set grows from stop to
// stop) and at its final stop, each time twice: after the resume, and
// after a Refresh with the same threads.
func TestThreadPointersAcrossStops(t *testing.T) {
	r := newRun(t, fixtures.Many)
	p := r.launch(t, "5")
	ctx := testContext(t)
	check := func(where string) {
		t.Helper()
		for pass := range 2 {
			ths, err := p.Threads()
			require.NoError(t, err)
			for _, th := range ths {
				dth, ok := p.dt.FindThread(int(th.ID))
				require.True(t, ok, "%s: thread %d", where, th.ID)
				regs, err := dth.Registers()
				require.NoError(t, err)
				assert.Equal(t, regs.TLS(), th.Pointer, "%s, pass %d: fs_base of thread %d", where, pass, th.ID)
			}
			p.mu.Lock()
			assert.NotNil(t, p.glibc, "%s, pass %d: pointers from glibc's lists", where, pass)
			p.mu.Unlock()
			p.Refresh()
		}
	}
	addr, err := p.LookupSymbol("ompd_bp_thread_begin")
	require.NoError(t, err)
	// Four workers start; several may reach the breakpoint in one stop.
	for started := 0; started < 4; {
		stops, err := p.RunTo(ctx, addr)
		require.NoError(t, err)
		started += len(stops)
		check(fmt.Sprintf("%d threads started", started))
	}
	_, err = p.RunToFunction(ctx, "stopme")
	require.NoError(t, err)
	check("stopme")
	ths, err := p.Threads()
	require.NoError(t, err)
	assert.Len(t, ths, len(r.truth(t).Threads))
}

// TestThreadPointersKeptWhileSameThreads checks when Threads keeps the
// thread pointers of the previous stop without reading them: while Delve
// holds the same thread objects (a Refresh, a stop where no thread started
// or ended) it keeps them as they are, and once one object differs (as when
// a thread ended and another started with its id) it checks them all
// again and replaces what no longer holds.
func TestThreadPointersKeptWhileSameThreads(t *testing.T) {
	r := newRun(t, fixtures.Many)
	p := r.launch(t, "3")
	_, err := p.RunToFunction(testContext(t), "stopme")
	require.NoError(t, err)
	ths, err := p.Threads()
	require.NoError(t, err)
	require.Greater(t, len(ths), 2)
	a, b := ths[1], ths[2]

	// Swap two threads' pointers where they are kept: while the thread
	// objects are the same, a Refresh keeps them.
	p.mu.Lock()
	require.NotNil(t, p.glibc)
	p.glibc.Threads[a.ID], p.glibc.Threads[b.ID] = b.Pointer, a.Pointer
	p.mu.Unlock()
	p.Refresh()
	got, err := p.Threads()
	require.NoError(t, err)
	assert.Equal(t, b.Pointer, got[1].Pointer, "kept without a read while Delve's threads are the same")

	// Another object for one of the ids: every pointer is checked again.
	p.mu.Lock()
	p.glibcOf[int(a.ID)] = p.glibcOf[int(b.ID)]
	p.mu.Unlock()
	p.Refresh()
	got, err = p.Threads()
	require.NoError(t, err)
	assert.Equal(t, ths, got, "the pointers read again from glibc's lists once a thread changed")
	for _, th := range got {
		dth, ok := p.dt.FindThread(int(th.ID))
		require.True(t, ok)
		regs, err := dth.Registers()
		require.NoError(t, err)
		assert.Equal(t, regs.TLS(), th.Pointer, "fs_base of thread %d", th.ID)
	}
}

// ReadMemoryVec reads what ReadMemory reads at each range, with one
// process_vm_readv, and stops at the first range that is not mapped.
func TestReadMemoryVec(t *testing.T) {
	r := newRun(t, fixtures.Many)
	p := r.launch(t, "12")
	ctx := testContext(t)
	_, err := p.RunToFunction(ctx, "stopme")
	require.NoError(t, err)
	tab, err := p.LookupSymbol("__kmp_threads")
	require.NoError(t, err)
	ptr := make([]byte, 8)
	require.NoError(t, p.ReadMemory(ptr, tab))
	arr := binary.LittleEndian.Uint64(ptr)
	var addrs []uint64
	for i := uint64(0); len(addrs) < 12; i++ {
		require.NoError(t, p.ReadMemory(ptr, arr+8*i))
		if a := binary.LittleEndian.Uint64(ptr); a != 0 {
			addrs = append(addrs, a)
		}
	}
	const size = 584
	buf := make([]byte, (len(addrs)+1)*size)
	n, err := p.ReadMemoryVec(buf, addrs, size)
	require.NoError(t, err)
	require.Equal(t, len(addrs), n)
	for i, a := range addrs {
		want := make([]byte, size)
		require.NoError(t, p.ReadMemory(want, a))
		assert.Equal(t, want, buf[i*size:(i+1)*size], "kmp_info_t at %#x", a)
	}
	// Unmapped (the zero page) after the second range.
	n, err = p.ReadMemoryVec(buf, []uint64{addrs[0], addrs[1], 16, addrs[2]}, size)
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	_, err = p.ReadMemoryVec(buf, []uint64{16}, size)
	assert.ErrorIs(t, err, target.ErrNoMemory)
}
