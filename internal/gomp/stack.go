package gomp

import (
	"context"
	"strings"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/stackstate"
)

// libgomp records neither thread states nor the outlined function of a
// running region. Both are read from the threads' stacks with
// internal/stackstate, which this file parameterises with libgomp's
// functions (its exported names, and with its debug information its
// internal ones too): the functions the frames are in and, at a futex
// system call, the address waited on.

// maxFrames bounds each unwind.
const maxFrames = 256

// stackInfo is what one thread's stack tells.
type stackInfo struct {
	state    int64
	waitID   uint64
	stateErr error
	// entries are the outlined functions of the regions the thread is
	// in, innermost first: each a frame called by a libgomp function that
	// starts regions (GOMP_parallel and friends in the primary thread,
	// gomp_thread_start in a worker).
	entries []uint64
}

// tables are libgomp's for internal/stackstate.
var tables = &stackstate.Tables{
	IsRuntime: isLibgomp,
	// libgomp's internal aliases of its exported functions (ialias) and
	// versioned names say the same.
	Name: func(sym string) string {
		sym, _, _ = strings.Cut(strings.TrimPrefix(sym, "gomp_ialias_"), "@")
		return sym
	},
	// The functions that call a region's outlined function in the
	// primary thread, and the one a worker starts in.
	Starters: map[string]bool{
		"GOMP_parallel": true, "GOMP_parallel_sections": true,
		"GOMP_parallel_loop_static": true, "GOMP_parallel_loop_dynamic": true,
		"GOMP_parallel_loop_guided": true, "GOMP_parallel_loop_runtime": true,
		"GOMP_parallel_loop_nonmonotonic_dynamic": true, "GOMP_parallel_loop_nonmonotonic_guided": true,
		"GOMP_parallel_loop_nonmonotonic_runtime": true, "GOMP_parallel_loop_maybe_nonmonotonic_runtime": true,
		"GOMP_parallel_reductions": true, "gomp_thread_start": true,
	},
	// The functions a waiting thread is in (exported ones first;
	// internal ones need the debug information), with its state.
	Waits: map[string]int64{
		"GOMP_barrier": stackstate.BarrierExplicit, "GOMP_barrier_cancel": stackstate.BarrierExplicit,
		"GOMP_taskwait": stackstate.Taskwait, "GOMP_taskwait_depend": stackstate.Taskwait, "GOMP_taskwait_depend_nowait": stackstate.Taskwait,
		"GOMP_taskgroup_end": stackstate.Taskgroup, "GOMP_taskgroup_reduction_unregister": stackstate.Taskgroup,
		"GOMP_critical_start": stackstate.Critical, "GOMP_critical_name_start": stackstate.Critical,
		"GOMP_atomic_start": stackstate.Atomic,
		"omp_set_lock":      stackstate.Lock, "omp_set_nest_lock": stackstate.Lock, "omp_set_lock_": stackstate.Lock, "omp_set_nest_lock_": stackstate.Lock,
		"gomp_set_lock_30": stackstate.Lock, "gomp_set_nest_lock_30": stackstate.Lock, "gomp_set_lock_25": stackstate.Lock, "gomp_set_nest_lock_25": stackstate.Lock,
		"GOMP_ordered_start": stackstate.Ordered, "GOMP_doacross_wait": stackstate.Ordered, "GOMP_doacross_ull_wait": stackstate.Ordered,
		"GOMP_loop_end": stackstate.BarrierImplicitWork, "GOMP_loop_end_cancel": stackstate.BarrierImplicitWork,
		"GOMP_sections_end": stackstate.BarrierImplicitWork, "GOMP_sections_end_cancel": stackstate.BarrierImplicitWork,
		"GOMP_single_copy_start": stackstate.BarrierImplicitWork, "GOMP_single_copy_end": stackstate.BarrierImplicitWork,
		"GOMP_parallel_end": stackstate.BarrierImplicitPar, "gomp_team_end": stackstate.BarrierImplicitPar,
		"gomp_team_barrier_wait_final": stackstate.BarrierImplicitPar,
		// A primary thread forming a team: allocating it, creating its
		// threads, waiting for them at the team's start.
		"gomp_team_start": stackstate.Overhead,
	},
}

// tailWaits are internal functions that exported ones tail-call, so that
// they return straight into user code: the state then follows from them.
var tailWaits = map[string]int64{
	"gomp_team_barrier_wait_end":        stackstate.BarrierExplicit,
	"gomp_team_barrier_wait_cancel_end": stackstate.BarrierExplicit,
	"gomp_mutex_lock_slow":              stackstate.Mutex,
	"gomp_sem_wait_slow":                stackstate.Taskwait,
}

// readStack unwinds a thread and reads its stack.
func (r *Runtime) readStack(th *thread) stackInfo {
	var si stackInfo
	st, err := stackstate.Read(context.Background(), r.t, th.os.ID, tables, maxFrames)
	if err != nil {
		si.stateErr = omprt.Wrap(omprt.ErrUnavailable, err, "gomp: libgomp records no thread state, and thread %d's stack cannot be read", th.os.ID)
		return si
	}
	if len(st.Frames) == 0 {
		si.stateErr = omprt.Wrap(omprt.ErrUnavailable, st.End, "gomp: libgomp records no thread state, and thread %d's stack cannot be read", th.os.ID)
		return si
	}
	si.entries = st.Entries(tables)
	si.state, si.waitID, si.stateErr = r.inferState(th, st)
	return si
}

// inferState says what a thread is doing from its stack.
func (r *Runtime) inferState(th *thread, st *stackstate.Stack) (int64, uint64, error) {
	k, ok := st.Own()
	if !ok {
		return 0, 0, omprt.Errorf(omprt.ErrUnavailable, "gomp: libgomp records no thread state, and thread %d's stack does not tell", th.os.ID)
	}
	frames := st.Frames
	if frames[k].Where == stackstate.User {
		if th.level > 0 {
			return stackstate.WorkParallel, 0, nil
		}
		return stackstate.WorkSerial, 0, nil
	}
	// The run of libgomp frames the thread is in, innermost first.
	end := st.RunEnd(k)
	run := frames[k:end]
	waitID := stackstate.FutexAddr(r.mem, &frames[0].Frame)
	if s, _, ok := tables.Wait(run); ok {
		if s != stackstate.Lock && s != stackstate.Critical && s != stackstate.Atomic {
			waitID = 0
		}
		return s, waitID, nil
	}
	// A worker whose libgomp frames reach its thread's start, waiting in
	// its team's barrier: the region's body returned, this is the barrier
	// that ends it (gomp_thread_start calls gomp_team_barrier_wait_final
	// after the outlined function). Idle workers were told apart before.
	// gomp_barrier_wait_end there is no such certainty: a nested team's
	// worker waits in it both before its body (the team's start) and
	// after (gomp_barrier_wait_last), so it stays unknown below.
	if st.ReachesStart(end) {
		for _, f := range run {
			if f.Function == "gomp_team_barrier_wait_end" {
				return stackstate.BarrierImplicitPar, 0, nil
			}
		}
	}
	toUser := end < len(frames) && frames[end].Where == stackstate.User
	if toUser {
		if s, ok := tailWaits[run[len(run)-1].Function]; ok {
			if s == stackstate.Mutex {
				// GOMP_critical_start, GOMP_critical_name_start,
				// GOMP_atomic_start and omp_set_lock all tail-call
				// the lock's slow path: the address tells them apart.
				return r.mutexState(waitID), waitID, nil
			}
			return s, 0, nil
		}
	}
	name := run[0].Function
	if name == "" {
		// Without libgomp's internal names, a futex wait on the lock
		// of a named critical section (a symbol of the program) still
		// says what it is.
		if toUser && waitID != 0 {
			if obj, ok, err := r.objectAt(waitID); err == nil && ok && !isLibgomp(obj) {
				if critical, _ := r.namedCritical(obj, waitID); critical {
					return stackstate.Critical, waitID, nil
				}
			}
		}
		return 0, 0, omprt.Errorf(omprt.ErrUnavailable, "gomp: thread %d waits in libgomp; telling where needs the library's debug information (its internal function names)", th.os.ID)
	}
	return 0, 0, omprt.Errorf(omprt.ErrUnavailable, "gomp: thread %d is in libgomp's %s, which says nothing certain of its state", th.os.ID, name)
}
