package gomp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/stackstate"
	"github.com/ompd-go/ompd/internal/unwind"
)

// TestInferTransitions checks the states read from stacks a fixture cannot
// stop in on purpose (the frames as a debug build of libgomp names them,
// seen on real cores of a nested program): a primary forming its team,
// and a nested worker in gomp_barrier_wait_end, which it waits in both
// before its region's body and after it.
func TestInferTransitions(t *testing.T) {
	frame := func(w stackstate.Where, f string) stackstate.Frame { return stackstate.Frame{Where: w, Function: f} }
	sys := func(f string) stackstate.Frame { return frame(stackstate.System, f) }
	gomp := func(f string) stackstate.Frame { return frame(stackstate.Runtime, f) }
	user := func(f string) stackstate.Frame { return frame(stackstate.User, f) }
	infer := func(frames ...stackstate.Frame) (int64, error) {
		st := &stackstate.Stack{Frames: frames, Complete: true, End: unwind.ErrOutermost}
		s, _, err := (&Runtime{}).inferState(&thread{level: 2}, st)
		return s, err
	}
	s, err := infer(sys("clone3"), sys("create_thread"), sys("pthread_create"), gomp("gomp_team_start"), gomp("GOMP_parallel"), user("main._omp_fn.0"), gomp("gomp_thread_start"), sys("start_thread"), sys("clone3"))
	require.NoError(t, err)
	assert.EqualValues(t, stackstate.Overhead, s, "creating its team's threads")
	s, err = infer(gomp("gomp_barrier_wait_end"), gomp("gomp_team_start"), gomp("GOMP_parallel"), user("main._omp_fn.0"), gomp("gomp_thread_start"), sys("start_thread"))
	require.NoError(t, err)
	assert.EqualValues(t, stackstate.Overhead, s, "waiting for its team's threads to start")
	s, err = infer(gomp(""), gomp("GOMP_parallel"), user("main"))
	require.NoError(t, err)
	assert.EqualValues(t, stackstate.Overhead, s, "in GOMP_parallel, its outlined function not called yet")
	_, err = infer(gomp("gomp_barrier_wait_end"), gomp("gomp_thread_start"), sys("start_thread"), sys("clone3"))
	assert.ErrorIs(t, err, omprt.ErrUnavailable, "a nested worker at its team's start or last barrier, on no futex")
	var why *omprt.StateUnknown
	require.ErrorAs(t, err, &why)
	assert.Equal(t, "libgomp records no thread state, and libgomp's gomp_barrier_wait_end says nothing certain of it", why.Reason, "one line, naming no thread")
	_, err = infer(gomp(""), gomp(""), sys("start_thread"))
	require.ErrorAs(t, err, &why)
	assert.Contains(t, why.Reason, "it runs an unnamed libgomp function (spinning, or not yet asleep)")
	s, err = infer(gomp("gomp_team_barrier_wait_end"), gomp("gomp_team_barrier_wait_final"), gomp("gomp_thread_start"), sys("start_thread"), sys("clone3"))
	require.NoError(t, err)
	assert.EqualValues(t, stackstate.BarrierImplicitPar, s, "a worker at the barrier ending its region")
	// Code in no loaded object that the C library called (the vDSO's
	// clock_gettime) is the C library's call; code in no object called
	// from elsewhere says nothing.
	s, err = infer(stackstate.Frame{}, sys("clock_gettime"), user("main._omp_fn.0"), gomp("gomp_thread_start"), sys("start_thread"))
	require.NoError(t, err)
	assert.EqualValues(t, stackstate.WorkParallel, s, "a worker reading the clock in its region's body")
	_, err = infer(stackstate.Frame{}, user("main._omp_fn.0"), gomp("gomp_thread_start"), sys("start_thread"))
	assert.ErrorIs(t, err, omprt.ErrUnavailable, "code in no object called from the program")
	_, err = infer(stackstate.Frame{}, stackstate.Frame{}, sys("clock_gettime"), user("main"))
	assert.ErrorIs(t, err, omprt.ErrUnavailable, "code in no object called from code in no object")
}
