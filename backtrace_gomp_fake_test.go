package ompd_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/target"
)

// locatedGomp is a fake libgomp target that places code in objects
// (target.CodeLocator), as a core or a live process does, by the
// functions' names: libgomp's (GOMP_*, gomp_*) in libgomp, the C
// library's in libc, the others in the program. libgomp's task frames are
// read from the threads' stacks, which needs to know whose code each frame
// is.
type locatedGomp struct{ *fakeruntime.Target }

func (t locatedGomp) LocateCode(pc uint64) (target.CodeLocation, error) {
	name, ok := t.SymbolAt(pc)
	if !ok {
		return target.CodeLocation{}, target.ErrNotFound
	}
	entry, err := t.LookupSymbol(name)
	if err != nil {
		return target.CodeLocation{}, err
	}
	obj := "/fake/program"
	switch {
	case strings.HasPrefix(name, "GOMP_") || strings.HasPrefix(name, "gomp_"):
		obj = fakeruntime.GompLibrary
	case name == "__libc_start_main" || name == "start_thread" || name == "clone3":
		obj = "/usr/lib/x86_64-linux-gnu/libc.so.6"
	}
	return target.CodeLocation{Object: obj, Function: name, Name: name, Entry: entry}, nil
}

// TestBacktracePlacementGompLayout places frames in tasks on libgomp's
// layout, where the task frames are no record of the runtime but read
// from the stacks (internal/gomp's taskframes.go): a task's exit frame is
// the CFA of the libgomp frame that called its code, its enter frame the
// CFA of the outermost libgomp frame of the call its code made, so that a
// region's primary thread has its implicit task's exit frame and the
// initial task's enter frame at one live frame, GOMP_parallel's (LLVM's
// runtime never has them equal but for a stale if(0) region, which
// TestBacktracePlacementBoundaries covers with frames one byte either
// side). The fake libgomp's two threads, a team of 2 at level 1, have
// hand-laid stacks: the primary waits in GOMP_barrier in the region's
// code; the worker runs a deferred task's code that the barrier it waits
// in runs. The truth is the placement rule of the OMPT specification's
// task frames (see TestBacktracePlacementBoundaries) on the stacks as
// laid out, and libgomp's own calls (GOMP_parallel calls the outlined
// function in the primary, gomp_thread_start in a worker, the barrier's
// task handling a deferred task's function).
//
// Planted (not committed), each caught here: backtrace.go's stale()
// without its `!live[...]` condition (GOMP_parallel's frame, both tasks'
// and live, taken as a stale if(0) frame: main left in no task);
// taskframes.go's addTaskFrames taking the exit frame one frame inwards
// (`fr[tk.exit-1].CFA`: each task's outermost frame of code placed in
// the task outwards) or the enter frame one frame outwards (`fr[u].CFA`:
// the task's own code taken as its runtime call); inRuntime's `cfa <= e`
// as `cfa < e` (GOMP_barrier and GOMP_parallel, the enter frames
// themselves, not in their tasks' runtime calls).
func TestBacktracePlacementGompLayout(t *testing.T) {
	tg := fakeruntime.NewTarget(fakeruntime.Config{})
	g := fakeruntime.NewGomp(tg)
	primary := g.NewThread(fakeruntime.LWPOf(0), fakeruntime.PthreadOf(tg.Sizes(), 0))
	worker := g.NewThread(fakeruntime.LWPOf(1), fakeruntime.PthreadOf(tg.Sizes(), 1))
	team := g.NewTeam([]*fakeruntime.GompThread{primary, worker}, g.Function("main._omp_fn.0"))
	g.NewTask(worker, team.Implicit[1], fakeruntime.GompTaskTied, false, g.Function("main._omp_fn.1"))

	// Each stack innermost first, with every frame's expected task (0
	// the current one, -1 none) and whether it is that task's runtime
	// call.
	type want struct {
		function string
		task     int
		inCall   bool
	}
	stacks := []struct {
		lwp    uint64
		frames []want
		// entered and wait are what each task of the chain called and
		// waits in, state the thread's state.
		entered []string
		wait    []ompd.WaitKind
		state   ompd.State
	}{
		{fakeruntime.LWPOf(0), []want{
			{"gomp_team_barrier_wait_end", 0, true},
			{"GOMP_barrier", 0, true}, // the implicit task's enter frame
			{"main._omp_fn.0", 0, false},
			{"GOMP_parallel", 1, true}, // its exit frame, the initial task's enter frame
			{"main", 1, false},
			{"__libc_start_main", 1, false},
			{"_start", 1, false},
		}, []string{"GOMP_barrier", "GOMP_parallel"}, []ompd.WaitKind{ompd.WaitBarrier, ompd.WaitParallel}, ompd.StateWaitBarrier},
		{fakeruntime.LWPOf(1), []want{
			{"main._omp_fn.1", 0, false},
			{"gomp_barrier_handle_tasks", 1, true}, // the explicit task's exit frame
			{"gomp_team_barrier_wait_end", 1, true},
			{"GOMP_barrier", 1, true}, // the implicit task's enter frame
			{"main._omp_fn.0", 1, false},
			{"gomp_thread_start", -1, false}, // its exit frame: the thread's start, no task's
			{"start_thread", -1, false},
			{"clone3", -1, false},
		}, []string{"", "GOMP_barrier"}, []ompd.WaitKind{ompd.WaitNone, ompd.WaitBarrier}, ompd.StateWorkParallel},
	}
	const base = 0x7e00_0000
	for _, s := range stacks {
		var frames []fakeruntime.StackFrame
		for k, f := range s.frames {
			frames = append(frames, fakeruntime.StackFrame{Function: f.function, CFA: base + s.lwp*0x10000 + uint64(k+1)*0x40})
		}
		require.NoError(t, tg.SetStack(s.lwp, frames))
	}
	as, err := ompd.Open(locatedGomp{tg})
	require.NoError(t, err)
	defer as.Close()
	require.Equal(t, "GNU libgomp", as.Runtime().Name)
	for _, s := range stacks {
		th, err := as.ThreadByOSThread(ompd.LWPID, s.lwp)
		require.NoError(t, err)
		st, _, err := th.State()
		require.NoError(t, err, "thread %d: its stack tells", s.lwp)
		assert.Equal(t, s.state, st, "thread %d", s.lwp)
		bt, err := th.Backtrace(context.Background())
		require.NoError(t, err)
		require.NoError(t, bt.PlaceErr)
		require.Len(t, bt.Tasks, len(s.entered), "thread %d: its task chain", s.lwp)
		// The last frame's CFA is found by nothing (no frame record
		// above it): the frames before it are checked.
		require.GreaterOrEqual(t, len(bt.Frames), len(s.frames)-1)
		for k, w := range s.frames[:len(s.frames)-1] {
			f := bt.Frames[k]
			require.Equal(t, w.function, f.Function, "thread %d frame %d", s.lwp, k)
			assert.Equal(t, w.task, f.TaskIndex, "thread %d frame %d (%s): its task", s.lwp, k, f.Function)
			assert.Equal(t, w.inCall, f.InRuntimeCall, "thread %d frame %d (%s): a runtime call of its task", s.lwp, k, f.Function)
		}
		for i := range s.entered {
			assert.Equal(t, s.entered[i], bt.Tasks[i].Entered, "thread %d: task %d's call into libgomp", s.lwp, i)
			assert.Equal(t, s.wait[i], bt.Tasks[i].Wait, "thread %d: what task %d waits in", s.lwp, i)
		}
		// The implicit task's frames are the stack's: exit at the
		// libgomp frame that called its code, enter at the outermost
		// libgomp frame of its call (CFAs, flagged runtime).
		impl := bt.Tasks[len(bt.Tasks)-1]
		if s.lwp == fakeruntime.LWPOf(0) {
			impl = bt.Tasks[0]
			assert.Equal(t, bt.Frames[3].CFA, bt.Tasks[1].Frames.Enter.Addr, "the initial task's enter frame: GOMP_parallel's")
			assert.Zero(t, bt.Tasks[1].Frames.Exit.Addr, "the initial task has no exit frame")
		}
		exit, enter := 3, 1
		if s.lwp == fakeruntime.LWPOf(1) {
			exit, enter = 5, 3
		}
		assert.Equal(t, ompd.FrameInfo{Addr: bt.Frames[exit].CFA, Flags: ompd.FrameCFA}, impl.Frames.Exit, "thread %d: the implicit task's exit frame", s.lwp)
		assert.Equal(t, ompd.FrameInfo{Addr: bt.Frames[enter].CFA, Flags: ompd.FrameCFA}, impl.Frames.Enter, "thread %d: the implicit task's enter frame", s.lwp)
	}
}
