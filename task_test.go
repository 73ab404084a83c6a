package ompd_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
)

// task is what a Task handle should report.
type fakeTaskWant struct {
	addr       uint64
	level      int // -1 explicit
	kind       ompd.TaskKind
	final      bool
	fn         uint64
	fnName     string
	frames     ompd.Frames
	id         uint64
	parallel   uint64 // team
	parLevel   int
	scheduling *fakeTaskWant // nil: ErrUnavailable
}

func fakeFrame(addr uint64, flags ompd.FrameFlags) ompd.FrameInfo {
	if addr == 0 {
		return ompd.FrameInfo{}
	}
	return ompd.FrameInfo{Addr: addr, Flags: flags}
}

// fakeTaskChain returns thread 2's task chain, current task first, each
// with its generating task next.
func fakeTaskChain(s *fakeruntime.Scenario) []*fakeTaskWant {
	fa := fakeruntime.FrameAddr
	rfp := ompd.FrameRuntime | ompd.FrameFramePointer
	afp := ompd.FrameApplication | ompd.FrameFramePointer
	initial := &fakeTaskWant{addr: s.Initial.Addr, level: 0, kind: ompd.TaskImplicit | ompd.TaskInitial,
		frames: ompd.Frames{Enter: fakeFrame(fa(1), rfp)}, id: 0x7500, parallel: s.Root.Addr, parLevel: 0}
	outer1 := &fakeTaskWant{addr: s.Outer.Implicit[1].Addr, level: 1, kind: ompd.TaskImplicit, fn: s.FnOuter, fnName: "main._omp_fn.0",
		frames: ompd.Frames{Exit: fakeFrame(fa(11), rfp)}, id: 0x7511, parallel: s.Outer.Addr, parLevel: 1}
	inner1 := &fakeTaskWant{addr: s.Inner.Implicit[1].Addr, level: 2, kind: ompd.TaskImplicit, fn: s.FnInner, fnName: "main._omp_fn.1",
		frames: ompd.Frames{Exit: fakeFrame(fa(21), rfp)}, id: 0x7521, parallel: s.Inner.Addr, parLevel: 2}
	var serial []*fakeTaskWant
	for level := 5; level >= 3; level-- {
		st := &fakeTaskWant{addr: s.Serial.Implicit[0].Addr, level: level, kind: ompd.TaskImplicit,
			frames: ompd.Frames{Exit: fakeFrame(fa(30+level), rfp), Enter: fakeFrame(fa(40+level), afp)},
			id:     0x7500 + uint64(level)*0x10, parallel: s.Serial.Addr, parLevel: level}
		// No function: see fakeNestedRegions.
		serial = append(serial, st)
	}
	a := &fakeTaskWant{addr: s.TaskA.Addr, level: -1, kind: ompd.TaskExplicit | ompd.TaskUntied, fn: s.FnTaskA, fnName: "task_a._omp_fn",
		frames: ompd.Frames{Exit: fakeFrame(fa(50), afp), Enter: fakeFrame(fa(51), rfp)}, id: 0xa, parallel: s.Serial.Addr, parLevel: 5}
	b := &fakeTaskWant{addr: s.TaskB.Addr, level: -1, kind: ompd.TaskExplicit | ompd.TaskIncluded | ompd.TaskFinal, final: true,
		fn: s.FnTaskB, fnName: "task_b._omp_fn", frames: ompd.Frames{Exit: fakeFrame(fa(60), afp)}, id: 0xb,
		parallel: s.Serial.Addr, parLevel: 5}
	// Scheduling ancestors: the task each interrupted.
	b.scheduling = a
	a.scheduling = serial[0]
	serial[0].scheduling = serial[1]
	serial[1].scheduling = serial[2]
	serial[2].scheduling = inner1 // the primary of a serialized region interrupts its encountering task
	inner1.scheduling = nil       // a worker's implicit task interrupts nothing
	return append(append([]*fakeTaskWant{b, a}, serial...), inner1, outer1, initial)
}

func fakeCheckTask(t *testing.T, tk ompd.Task, want *fakeTaskWant) {
	t.Helper()
	what := tk.String()
	assert.Equal(t, want.addr, tk.Addr(), what)
	if want.level < 0 {
		assert.Equal(t, fmt.Sprintf("task/%#x", want.addr), what)
	} else {
		assert.Equal(t, fmt.Sprintf("task/%#x/L%d", want.addr, want.level), what)
	}
	k, err := tk.Kind()
	require.NoError(t, err, what)
	assert.Equal(t, want.kind, k, "%s kind %v", what, k)
	fin, err := tk.InFinal()
	require.NoError(t, err, what)
	assert.Equal(t, want.final, fin, what)
	f, err := tk.Function()
	if want.fn == 0 {
		assert.ErrorIs(t, err, ompd.ErrUnavailable, what)
	} else {
		require.NoError(t, err, what)
		assert.Equal(t, ompd.Function{Addr: want.fn, Symbol: want.fnName}, f, what)
	}
	fr, err := tk.Frames()
	require.NoError(t, err, what)
	assert.Equal(t, want.frames, fr, what)
	id, err := tk.ID()
	require.NoError(t, err, what)
	assert.Equal(t, want.id, id, what)
	p, err := tk.Parallel()
	require.NoError(t, err, what)
	assert.Equal(t, want.parallel, p.Addr(), what)
	lvl, err := p.Level()
	require.NoError(t, err, what)
	assert.Equal(t, want.parLevel, lvl, what)
	sched, err := tk.Scheduling()
	if want.scheduling == nil {
		assert.ErrorIs(t, err, ompd.ErrUnavailable, "%s scheduling", what)
	} else {
		require.NoError(t, err, "%s scheduling", what)
		assert.Equal(t, want.scheduling.addr, sched.Addr(), "%s scheduling", what)
		if want.scheduling.level >= 0 {
			assert.Equal(t, fmt.Sprintf("task/%#x/L%d", want.scheduling.addr, want.scheduling.level), sched.String())
		}
	}
	assert.Equal(t, ompd.ScopeTask, tk.ScopeKind())
}

func TestFakeTaskChain(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		ths := fakeThreads(t, as)
		chain := fakeTaskChain(s)
		tk, err := ths[2].CurrentTask()
		require.NoError(t, err)
		for i, want := range chain {
			fakeCheckTask(t, tk, want)
			g, err := tk.Generating()
			if i == len(chain)-1 {
				assert.ErrorIs(t, err, ompd.ErrUnavailable, "the initial task has no generating task")
				break
			}
			require.NoError(t, err)
			tk = g
		}
		// Other threads' current tasks.
		for g, want := range map[int]uint64{0: s.Outer.Implicit[0].Addr, 1: s.Inner.Implicit[0].Addr, 3: s.Outer.Implicit[3].Addr} {
			tk, err := ths[g].CurrentTask()
			require.NoError(t, err)
			assert.Equal(t, want, tk.Addr(), "thread %d", g)
		}
		_, err = ths[4].CurrentTask()
		assert.ErrorIs(t, err, ompd.ErrUnavailable, "a pool thread has no current task")
		// Inner's primary interrupts its implicit task in Outer.
		tk, err = ths[1].CurrentTask()
		require.NoError(t, err)
		sched, err := tk.Scheduling()
		require.NoError(t, err)
		assert.Equal(t, s.Outer.Implicit[1].Addr, sched.Addr())

		// Frame flags the runtime did not set normalize to runtime|framepointer.
		s.TaskA.SetFrames(fakeruntime.Frames{Exit: fakeruntime.FrameAddr(50), ExitFlags: 0xdead, Enter: fakeruntime.FrameAddr(51)})
		as.Refresh()
		tk, err = ths[2].CurrentTask()
		require.NoError(t, err)
		a, err := tk.Generating()
		require.NoError(t, err)
		fr, err := a.Frames()
		require.NoError(t, err)
		assert.Equal(t, ompd.FrameRuntime|ompd.FrameFramePointer, fr.Exit.Flags)
		assert.Equal(t, ompd.FrameRuntime|ompd.FrameFramePointer, fr.Enter.Flags)
		assert.Equal(t, "runtime|framepointer", fr.Exit.Flags.String())

		// Explicit tasks without a recorded scheduling parent.
		s.TaskA.SetSchedulingParentAddr(0)
		as.Refresh()
		_, err = a.Scheduling()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)

		// Without state tracking: no frames, no scheduling parent.
		s.RT.SetOMPDState(0)
		as.Refresh()
		_, err = a.Frames()
		assert.ErrorIs(t, err, ompd.ErrNeedsStateTracking)
		_, err = a.Scheduling()
		assert.ErrorIs(t, err, ompd.ErrNeedsStateTracking)
	})
}

func TestFakeTaskKinds(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		parent := s.TaskA
		cases := []struct {
			flags fakeruntime.TaskFlags
			kind  ompd.TaskKind
			final bool
		}{
			{fakeruntime.Explicit, ompd.TaskExplicit, false},
			{fakeruntime.Explicit | fakeruntime.Untied, ompd.TaskExplicit | ompd.TaskUntied, false},
			{fakeruntime.Explicit | fakeruntime.Final, ompd.TaskExplicit | ompd.TaskFinal, true},
			{fakeruntime.Explicit | fakeruntime.Included, ompd.TaskExplicit | ompd.TaskIncluded, false},
			{fakeruntime.Explicit | fakeruntime.Final | fakeruntime.Included | fakeruntime.Untied | fakeruntime.Native | fakeruntime.Complete,
				ompd.TaskExplicit | ompd.TaskFinal | ompd.TaskIncluded | ompd.TaskUntied, true},
			{fakeruntime.Final, ompd.TaskImplicit | ompd.TaskFinal, true},
		}
		for _, c := range cases {
			tk := s.RT.NewTask(parent, s.Serial, c.flags, s.FnTaskA)
			s.Threads[2].SetCurrentTask(tk)
			as.Refresh()
			h, err := fakeThreads(t, as)[2].CurrentTask()
			require.NoError(t, err)
			k, err := h.Kind()
			require.NoError(t, err, "%v", c.flags)
			assert.Equal(t, c.kind, k, "%v", c.flags)
			fin, err := h.InFinal()
			require.NoError(t, err)
			assert.Equal(t, c.final, fin, "%v", c.flags)
		}
		assert.Equal(t, "explicit|untied", (ompd.TaskExplicit | ompd.TaskUntied).String())
		assert.True(t, (ompd.TaskExplicit | ompd.TaskFinal).Has(ompd.TaskFinal))
	})
}

// fakeMaxSteps bounds the walks of the robustness tests: far more than any
// sane runtime state needs, far less than a runaway walk makes.
const fakeMaxSteps = 10000

// fakeFollow follows next from h up to limit steps, decoding each handle
// with check; it returns the number of handles seen and the error that
// ended the walk (nil if the limit was reached).
func fakeFollow[H any](h H, check func(H) error, next func(H) (H, error), limit int) (int, error) {
	for n := 1; n <= limit; n++ {
		if err := check(h); err != nil {
			return n, err
		}
		var err error
		if h, err = next(h); err != nil {
			return n, err
		}
	}
	return limit, nil
}

// fakeWalkTasks follows next (Generating or Scheduling) from tk, reading
// each task's kind (see fakeFollow).
func fakeWalkTasks(tk ompd.Task, next func(ompd.Task) (ompd.Task, error), limit int) (int, error) {
	return fakeFollow(tk, func(tk ompd.Task) error { _, err := tk.Kind(); return err }, next, limit)
}

func TestFakeTaskParentCycle(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		t.Run("self", func(t *testing.T) {
			s, as := fakeOpenNested(t, cfg)
			s.TaskA.SetParentAddr(s.TaskA.Addr)
			s.TaskA.SetSchedulingParentAddr(s.TaskA.Addr)
			as.Refresh()
			b, err := fakeThreads(t, as)[2].CurrentTask()
			require.NoError(t, err)
			a, err := b.Generating()
			require.NoError(t, err)
			_, err = a.Generating()
			assert.ErrorIs(t, err, ompd.ErrCorrupt)
			_, err = a.Scheduling()
			assert.ErrorIs(t, err, ompd.ErrCorrupt)
		})
		t.Run("two tasks", func(t *testing.T) {
			s, as := fakeOpenNested(t, cfg)
			s.TaskA.SetParentAddr(s.TaskB.Addr)
			as.Refresh()
			b, err := fakeThreads(t, as)[2].CurrentTask()
			require.NoError(t, err)
			var n int
			fakeBounded(t, 20*time.Second, "Generating walk", func() { n, err = fakeWalkTasks(b, ompd.Task.Generating, fakeMaxSteps) })
			fakeKnownBug(t, err == nil,
				"task.go Task.Generating: a cycle of td_parent links between explicit tasks %#x and %#x is never "+
					"detected (%d steps without an error; only a task that is its own parent is). Fix: also reject a "+
					"parent whose td_parent is the task itself, and bound longer chains, e.g. by carrying a depth or by "+
					"documenting that callers must bound the walk as Snapshot does", s.TaskA.Addr, s.TaskB.Addr, n)
			assert.ErrorIs(t, err, ompd.ErrCorrupt)
		})
		t.Run("scheduling two tasks", func(t *testing.T) {
			s, as := fakeOpenNested(t, cfg)
			s.TaskA.SetSchedulingParentAddr(s.TaskB.Addr)
			as.Refresh()
			b, err := fakeThreads(t, as)[2].CurrentTask()
			require.NoError(t, err)
			var n int
			fakeBounded(t, 20*time.Second, "Scheduling walk", func() { n, err = fakeWalkTasks(b, ompd.Task.Scheduling, fakeMaxSteps) })
			fakeKnownBug(t, err == nil,
				"task.go Task.Scheduling: a cycle of scheduling_parent links between tasks %#x and %#x is never "+
					"detected (%d steps without an error)", s.TaskA.Addr, s.TaskB.Addr, n)
			assert.ErrorIs(t, err, ompd.ErrCorrupt)
		})
	})
}
