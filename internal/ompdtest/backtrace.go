package ompdtest

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
)

// completeBacktrace is the backtrace of the OpenMP thread on LWP tid,
// which must reach the thread's outermost frame.
func completeBacktrace(t *testing.T, as *ompd.AddressSpace, tid int) *ompd.Backtrace {
	t.Helper()
	th, err := as.ThreadByOSThread(ompd.LWPID, uint64(tid))
	require.NoError(t, err, "thread %d", tid)
	bt, err := th.Backtrace(context.Background())
	require.NoError(t, err, "thread %d", tid)
	assert.NoError(t, bt.End, "thread %d: the walk reaches the outermost frame", tid)
	return bt
}

// CheckBacktraces checks every truth thread's backtrace against what the
// program recorded: the walk reaches the thread's outermost frame, the
// frame that recorded the thread's truth (its __builtin_frame_address(0)
// is two words below the frame's CFA) is in the fixture's own source and
// placed in the thread's current task at the recorded nesting level; on
// the tasks fixture, each task's body frame is placed in that task (by its
// depth below the thread's current task) and the tasks suspended in a
// taskwait say so; threads in a barrier show their current task waiting
// in one. The frames that forked the regions enclosing a thread (the
// level records' frames on a primary thread's stack) are each placed in
// the implicit task of their level, that many tasks outwards of the
// thread's implicit task, in the call that started the nested region. It
// returns the backtraces by thread id.
func CheckBacktraces(t *testing.T, as *ompd.AddressSpace, truth *fixtures.Truth) map[int]*ompd.Backtrace {
	t.Helper()
	ptr := uint64(as.Target().Sizes().Pointer)
	out := map[int]*ompd.Backtrace{}
	for _, tt := range truth.Threads {
		bt := completeBacktrace(t, as, tt.TID)
		out[tt.TID] = bt
		if tt.Role == fixtures.RoleIdle {
			// Idle in the thread pool: in no task.
			assert.ErrorIs(t, bt.PlaceErr, ompd.ErrUnavailable, "thread %d is idle", tt.TID)
			for _, f := range bt.Frames {
				assert.Equal(t, -1, f.TaskIndex, "thread %d: %v is placed in no task", tt.TID, f)
			}
			continue
		}
		require.NoError(t, bt.PlaceErr, "thread %d: frames placed in tasks", tt.TID)
		require.NotEmpty(t, bt.Tasks, "thread %d", tt.TID)
		if tt.Role == fixtures.RoleImplicitBarrier {
			// Its region's body, where it recorded its truth, returned:
			// its implicit task waits at the barrier ending the region.
			assert.Equal(t, tt.Level, bt.Tasks[0].Level, "thread %d: the level of its current task", tt.TID)
			continue
		}

		frame, err := fixtures.ParseHex(tt.Frame)
		require.NoError(t, err)
		f, ok := frameAt(bt, frame+2*ptr)
		if assert.True(t, ok, "thread %d (%s): a frame with CFA %#x", tt.TID, tt.Role, frame+2*ptr) {
			assert.True(t, FixtureSource(f.File), "thread %d: frame %v is in the fixture's source", tt.TID, f)
			assert.Positive(t, f.Line, "thread %d: frame %v has a line", tt.TID, f)
			assert.False(t, f.Runtime, "thread %d: frame %v is the program's", tt.TID, f)
			assert.Equal(t, 0, f.TaskIndex, "thread %d: frame %v is in the current task", tt.TID, f)
			if tk, ok := bt.Task(f); ok {
				assert.Equal(t, tt.Level, tk.Level, "thread %d: level of the frame's task", tt.TID)
			}
		}
		// A worksharing construct's end waits in its implicit barrier
		// (LLVM: __kmpc_barrier; libgomp: GOMP_barrier, GOMP_loop_end,
		// GOMP_sections_end). Planted (not committed): internal/gomp's
		// waitNames without its "loop_end" entry fails
		// TestBacktraceGomp/system/workshare here (the for_dynamic
		// waiter, in GOMP_loop_end), without "work_share_end"
		// TestBacktraceGomp/debug-*/workshare (libgomp's names show
		// gomp_work_share_end), the truth being the construct the
		// program waits at the end of.
		if tt.Role == fixtures.RoleBarrier || tt.Role == fixtures.RoleWorkshareBarrier {
			assert.Equal(t, ompd.WaitBarrier, bt.Tasks[0].Wait, "thread %d waits in a barrier: %+v", tt.TID, bt.Tasks[0])
		}
		// Frames in the program's source are never runtime frames, and
		// task indexes never decrease outwards.
		last := 0
		for _, f := range bt.Frames {
			if FixtureSource(f.File) {
				assert.False(t, f.Runtime, "thread %d: %v", tt.TID, f)
			}
			if f.TaskIndex >= 0 {
				assert.GreaterOrEqual(t, f.TaskIndex, last, "thread %d: %v", tt.TID, f)
				last = f.TaskIndex
			}
		}
	}
	// Explicit task chains (tasks fixture).
	current := currentDepths(truth)
	// The frames that forked the enclosing regions: each in the implicit
	// task at its level, the task that started the nested region.
	for _, tt := range truth.Threads {
		bt := out[tt.TID]
		for _, lf := range levelFrames(t, truth, &tt) {
			f, ok := checkOwnFrame(t, bt, lf.frame+2*ptr, "thread %d: the frame forking level %d (level record %v)", tt.TID, lf.r.Level+1, lf.r.Path)
			if !ok {
				continue
			}
			want := current[tt.TID] + tt.Level - lf.r.Level
			if slices.Contains(truth.IfFalseLevels, lf.r.Level+1) {
				// The frame that opened an if(0) region: the runtime
				// left the region's task frames pointing at a frame
				// gone from the stack, so the frames between this one
				// and the region's code may be either task's: unplaced,
				// never placed in a wrong task.
				assert.Contains(t, []int{want, -1}, f.TaskIndex, "thread %d: frame %v of level %d, which opened an if(0) region", tt.TID, f, lf.r.Level)
			} else {
				assert.Equal(t, want, f.TaskIndex, "thread %d: frame %v of level %d placed in the task %d outwards", tt.TID, f, lf.r.Level, want)
			}
			assert.False(t, f.InRuntimeCall, "thread %d: frame %v is the task's own code", tt.TID, f)
			if tk, ok := bt.Task(f); ok {
				assert.Equal(t, lf.r.Level, tk.Level, "thread %d: level of frame %v's task", tt.TID, f)
				if lf.r.Level < tt.Level {
					assert.Equal(t, ompd.WaitParallel, tk.Wait, "thread %d: frame %v's task started a region: %+v", tt.TID, f, tk)
				}
			}
		}
	}
	for _, tk := range truth.Tasks {
		bt := out[tk.TID]
		cur, ok := current[tk.TID]
		if bt == nil || !ok {
			continue
		}
		frame, err := fixtures.ParseHex(tk.Frame)
		require.NoError(t, err)
		f, ok := frameAt(bt, frame+2*ptr)
		if !assert.True(t, ok, "task %s: a frame with CFA %#x", tk.Label, frame+2*ptr) {
			continue
		}
		assert.Equal(t, cur-tk.Depth, f.TaskIndex, "task %s: frame %v placed by depth", tk.Label, f)
		if btk, ok := bt.Task(f); ok && tk.InTaskwait {
			assert.Equal(t, ompd.WaitTaskwait, btk.Wait, "task %s waits in a taskwait: %+v", tk.Label, btk)
		}
	}
	return out
}

func frameAt(bt *ompd.Backtrace, cfa uint64) (ompd.Frame, bool) {
	if i, ok := frameIndex(bt, cfa); ok {
		return bt.Frames[i], true
	}
	return ompd.Frame{}, false
}

// FixtureSource reports whether file is one of the fixtures' sources (C,
// C++ or Fortran).
func FixtureSource(file string) bool {
	dir := filepath.Base(filepath.Dir(file))
	switch filepath.Ext(file) {
	case ".c", ".h", ".cc", ".f90":
		return dir == "testdata"
	}
	return false
}

// currentDepths maps thread ids to the depth of their current task below
// their implicit task, as the tasks the program recorded say (none: 0).
func currentDepths(truth *fixtures.Truth) map[int]int {
	current := map[int]int{}
	for _, tk := range truth.Tasks {
		if tk.Current {
			current[tk.TID] = tk.Depth
		}
	}
	return current
}

// levelFrame is a frame that forked a region, on a thread's stack.
type levelFrame struct {
	r     *fixtures.Level
	frame uint64
}

// levelFrames returns the frames of the program's level records that are
// on thread th's stack: those recorded by th's ancestor at the record's
// level on th's branch of the team tree when th is the primary thread of
// every team nested below that level (the thread that forked a region
// runs as its primary). A truth with level records must give each its
// frame.
func levelFrames(t *testing.T, truth *fixtures.Truth, th *fixtures.Thread) []levelFrame {
	t.Helper()
	path := th.Path()
	var out []levelFrame
	for i := range truth.Levels {
		r := &truth.Levels[i]
		if r.Level > th.Level || r.Level > len(path) || !slices.Equal(r.Path, path[:r.Level]) {
			continue
		}
		if slices.ContainsFunc(path[r.Level:], func(n int) bool { return n != 0 }) {
			continue
		}
		require.NotEmpty(t, r.Frame, "level record %d %v: its frame", r.Level, r.Path)
		f, err := fixtures.ParseHex(r.Frame)
		require.NoError(t, err)
		out = append(out, levelFrame{r, f})
	}
	return out
}

// checkOwnFrame asserts that bt has a frame with the given CFA in the
// program's own code, with a line.
func checkOwnFrame(t *testing.T, bt *ompd.Backtrace, cfa uint64, what string, args ...any) (ompd.Frame, bool) {
	t.Helper()
	who := fmt.Sprintf(what, args...)
	f, ok := frameAt(bt, cfa)
	if !assert.True(t, ok, "%s: a frame with CFA %#x", who, cfa) {
		return f, false
	}
	assert.True(t, FixtureSource(f.File), "%s: frame %v is in the fixture's source", who, f)
	assert.Positive(t, f.Line, "%s: frame %v has a line", who, f)
	assert.False(t, f.Runtime, "%s: frame %v is the program's", who, f)
	return f, true
}
