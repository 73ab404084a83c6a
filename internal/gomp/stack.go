package gomp

import (
	"context"
	"fmt"
	"strings"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/stackstate"
	"github.com/ompd-go/ompd/target"
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
	// stack is the stack read, until the stop has placed the thread's
	// tasks on it.
	stack *stackstate.Stack
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
		// gcc calls GOMP_barrier for an explicit barrier and for the
		// implicit barrier of a worksharing construct (single, a
		// static loop) alike: which one, nothing in the process tells.
		"GOMP_barrier": stackstate.Barrier, "GOMP_barrier_cancel": stackstate.Barrier,
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
// they return straight into user code: when the call the program made
// cannot be decoded, the state follows from them.
var tailWaits = map[string]int64{
	// GOMP_barrier, GOMP_barrier_cancel.
	"gomp_team_barrier_wait_end":        stackstate.Barrier,
	"gomp_team_barrier_wait_cancel_end": stackstate.Barrier,
	// GOMP_critical_start, GOMP_critical_name_start, GOMP_atomic_start,
	// omp_set_lock: the lock's address tells them apart.
	"gomp_mutex_lock_slow": stackstate.Mutex,
	"gomp_sem_wait_slow":   stackstate.Taskwait,
	// GOMP_ordered_start.
	"gomp_ordered_sync": stackstate.Ordered,
}

// readStack unwinds a thread and reads its stack.
func (r *Runtime) readStack(th *thread) stackInfo {
	var si stackInfo
	st, why, err := stackstate.ReadWhy(context.Background(), r.t, th.os.ID, tables, maxFrames)
	if err != nil {
		si.stateErr = unknown(th, why, err)
		return si
	}
	si.entries, si.stack = st.Entries(tables), st
	si.state, si.waitID, si.stateErr = r.inferState(th, st)
	return si
}

// unknown is the error of a state the stack does not tell, why saying
// why (see omprt.StateUnknown); cause, if not nil, is kept too.
func unknown(th *thread, why string, cause error) error {
	var err error = &omprt.StateUnknown{Reason: "libgomp records no thread state, and " + why}
	if cause != nil {
		err = fmt.Errorf("%w: %w", err, cause)
	}
	return omprt.Wrap(omprt.ErrUnavailable, err, "gomp: thread %d", th.os.ID)
}

// keepsWaitID reports the states whose wait id is the address waited on
// (the lock); other states have none.
func keepsWaitID(state int64) bool {
	return state == stackstate.Lock || state == stackstate.Critical || state == stackstate.Atomic
}

// inferState says what a thread is doing from its stack.
func (r *Runtime) inferState(th *thread, st *stackstate.Stack) (int64, uint64, error) {
	k, ok := st.Own()
	if !ok {
		return 0, 0, unknown(th, "its stack does not tell (its innermost code is in no known object)", nil)
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
	result := func(s int64) (int64, uint64, error) {
		if !keepsWaitID(s) {
			return s, 0, nil
		}
		return s, waitID, nil
	}
	if s, _, ok := tables.Wait(run); ok {
		return result(s)
	}
	// The exported function the program called, which tail-called the
	// (unnamed, without debug information) function the thread waits in:
	// the program's frame returns right after its call.
	toUser := end < len(frames) && frames[end].Where == stackstate.User
	called := ""
	if toUser {
		if loc, ok := r.t.(target.CodeLocator); ok {
			if cl, ok := stackstate.CallTarget(r.mem, loc, &frames[end]); ok {
				called = tables.Name(cl.Function)
			}
		}
		if s, ok := tables.Waits[called]; ok {
			return result(s)
		}
	}
	// A primary thread in a region starter (GOMP_parallel and the like)
	// with no frame of the program above it forms its team: the starter
	// calls the outlined function only once the team stands. When the
	// program called a starter that is no frame any more, the starter
	// returned from the outlined function and tail-called
	// GOMP_parallel_end, which ends the team at its barrier.
	if hasStarter(run) {
		return stackstate.Overhead, 0, nil
	}
	if primaryStarter(called) {
		return stackstate.BarrierImplicitPar, 0, nil
	}
	if st.ReachesStart(end) {
		if s, ok := r.workerBarrier(th, run, waitID); ok {
			return s, 0, nil
		}
	}
	if toUser {
		if s, ok := tailWaits[run[len(run)-1].Function]; ok {
			if s == stackstate.Mutex {
				return r.mutexState(waitID), waitID, nil
			}
			return result(s)
		}
	}
	// Without libgomp's internal names, a futex wait on the lock of a
	// named critical section (a symbol of the program) still says what
	// it is.
	if toUser && waitID != 0 {
		if obj, ok, err := r.objectAt(waitID); err == nil && ok && !isLibgomp(obj) {
			if critical, _ := r.namedCritical(obj, waitID); critical {
				return stackstate.Critical, waitID, nil
			}
		}
	}
	return 0, 0, unknown(th, r.whyUnknown(run, called, waitID), nil)
}

// whyUnknown says in one line why a thread in libgomp (the run of its
// frames), which the program entered through called ("" if unknown),
// waiting on waitID (0 if in no futex wait), has no state.
func (r *Runtime) whyUnknown(run []stackstate.Frame, called string, waitID uint64) string {
	if name := run[0].Function; name != "" {
		return "libgomp's " + name + " says nothing certain of it"
	}
	where := "an unnamed libgomp function"
	if called != "" {
		where += " that " + called + " reached"
	}
	if waitID == 0 {
		return "it runs " + where + " (spinning, or not yet asleep); which wait needs libgomp's debug information (its internal names)"
	}
	return "it sleeps in " + where + " on a futex that is no barrier, lock or pool of its own; which wait needs libgomp's debug information (its internal names)"
}

// primaryStarter reports whether fn starts regions in the primary thread
// (gomp_thread_start, the worker's start, is no such function).
func primaryStarter(fn string) bool {
	return tables.Starters[fn] && fn != "gomp_thread_start"
}

// hasStarter reports whether a run of libgomp frames holds a function
// that starts regions in the primary thread.
func hasStarter(run []stackstate.Frame) bool {
	for _, f := range run {
		if primaryStarter(f.Function) {
			return true
		}
	}
	return false
}

// workerBarrier tells the state of a worker whose libgomp frames reach
// its thread's start (gomp_thread_start): with libgomp's internal names,
// gomp_team_barrier_wait_end there is the barrier that ends its region
// (gomp_thread_start calls gomp_team_barrier_wait_final after the
// outlined function); without them, the futex it sleeps on says so when
// it is its team's barrier. A nested team's worker (not a pool thread)
// also waits on that barrier before its region's body, which the
// barrier's generation tells apart: the team is new, and its start
// barrier completes first of all, so the generation is 0 until then.
// Idle workers were told apart before (by the pool).
func (r *Runtime) workerBarrier(th *thread, run []stackstate.Frame, waitID uint64) (int64, bool) {
	for _, f := range run {
		if f.Function == "gomp_team_barrier_wait_end" {
			return stackstate.BarrierImplicitPar, true
		}
	}
	if th.team == 0 || waitID != th.team+r.lay.f(teamBarrierGeneration).Off {
		return 0, false
	}
	gen, err := r.mem.Uint(waitID, r.lay.f(teamBarrierGeneration).Size, "gomp_team.barrier.generation")
	if err != nil {
		return 0, false
	}
	if th.level > 1 && gen&^barFlags == 0 {
		return stackstate.Overhead, true
	}
	return stackstate.BarrierImplicitPar, true
}

// barFlags are the flag bits of a barrier's generation (BAR_INCR - 1 in
// config/linux/bar.h: BAR_TASK_PENDING or BAR_WAS_LAST,
// BAR_WAITING_FOR_TASK, BAR_CANCELLED); the count is above them.
const barFlags = 7
