package gomp

import (
	"context"
	"path"
	"strings"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/unwind"
	"github.com/ompd-go/ompd/target"
)

// libgomp records neither thread states nor the outlined function of a
// running region. Both are read from the threads' stacks: the functions
// the frames are in (the library's exported names, and with its debug
// information its internal ones too) and, at a futex system call, the
// address waited on.

// ompt_state_t values inferred.
const (
	stateWorkSerial         = 0x000
	stateWorkParallel       = 0x001
	stateBarrierImplicitPar = 0x011
	stateBarrierWorkshare   = 0x012
	stateBarrierExplicit    = 0x014
	stateTaskwait           = 0x020
	stateTaskgroup          = 0x021
	stateMutex              = 0x040
	stateLock               = 0x041
	stateCritical           = 0x042
	stateAtomic             = 0x043
	stateOrdered            = 0x044
	stateOverhead           = 0x101
)

// maxFrames bounds each unwind.
const maxFrames = 256

// frameInfo is one frame placed in its object and function.
type frameInfo struct {
	pc       uint64
	entry    uint64 // the function's entry, 0 if unknown
	function string
	where    int // inLibgomp, inSystem, inUser, inUnknown
}

const (
	inUnknown = iota
	inLibgomp
	inSystem // libc, the dynamic linker, the vDSO
	inUser
)

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

// regionStarters are libgomp's functions that call a region's outlined
// function in the primary thread.
var regionStarters = map[string]bool{
	"GOMP_parallel": true, "GOMP_parallel_sections": true,
	"GOMP_parallel_loop_static": true, "GOMP_parallel_loop_dynamic": true,
	"GOMP_parallel_loop_guided": true, "GOMP_parallel_loop_runtime": true,
	"GOMP_parallel_loop_nonmonotonic_dynamic": true, "GOMP_parallel_loop_nonmonotonic_guided": true,
	"GOMP_parallel_loop_nonmonotonic_runtime": true, "GOMP_parallel_loop_maybe_nonmonotonic_runtime": true,
	"GOMP_parallel_reductions": true, "gomp_thread_start": true,
}

// waits maps libgomp functions (exported ones first; internal ones need
// the debug information) to the state of a thread that waits in them.
var waits = map[string]int64{
	"GOMP_barrier": stateBarrierExplicit, "GOMP_barrier_cancel": stateBarrierExplicit,
	"GOMP_taskwait": stateTaskwait, "GOMP_taskwait_depend": stateTaskwait, "GOMP_taskwait_depend_nowait": stateTaskwait,
	"GOMP_taskgroup_end": stateTaskgroup, "GOMP_taskgroup_reduction_unregister": stateTaskgroup,
	"GOMP_critical_start": stateCritical, "GOMP_critical_name_start": stateCritical,
	"GOMP_atomic_start": stateAtomic,
	"omp_set_lock":      stateLock, "omp_set_nest_lock": stateLock, "omp_set_lock_": stateLock, "omp_set_nest_lock_": stateLock,
	"gomp_set_lock_30": stateLock, "gomp_set_nest_lock_30": stateLock, "gomp_set_lock_25": stateLock, "gomp_set_nest_lock_25": stateLock,
	"GOMP_ordered_start": stateOrdered, "GOMP_doacross_wait": stateOrdered, "GOMP_doacross_ull_wait": stateOrdered,
	"GOMP_loop_end": stateBarrierWorkshare, "GOMP_loop_end_cancel": stateBarrierWorkshare,
	"GOMP_sections_end": stateBarrierWorkshare, "GOMP_sections_end_cancel": stateBarrierWorkshare,
	"GOMP_single_copy_start": stateBarrierWorkshare, "GOMP_single_copy_end": stateBarrierWorkshare,
	"GOMP_parallel_end": stateBarrierImplicitPar, "gomp_team_end": stateBarrierImplicitPar,
	"gomp_team_barrier_wait_final": stateBarrierImplicitPar,
	// A primary thread forming a team: allocating it, creating its
	// threads, waiting for them at the team's start.
	"gomp_team_start": stateOverhead,
}

// tailWaits are internal functions that exported ones tail-call, so that
// they return straight into user code: the state then follows from them.
var tailWaits = map[string]int64{
	"gomp_team_barrier_wait_end":        stateBarrierExplicit,
	"gomp_team_barrier_wait_cancel_end": stateBarrierExplicit,
	"gomp_mutex_lock_slow":              stateMutex,
	"gomp_sem_wait_slow":                stateTaskwait,
}

// readStack unwinds a thread and reads its stack.
func (r *Runtime) readStack(th *thread) stackInfo {
	var si stackInfo
	loc, ok := r.t.(target.CodeLocator)
	if !ok {
		si.stateErr = omprt.Errorf(omprt.ErrUnavailable, "gomp: libgomp records no thread state, and the target cannot place code addresses to read thread %d's stack", th.os.ID)
		return si
	}
	st, err := unwind.Thread(context.Background(), r.t, th.os.ID, unwind.Options{MaxDepth: maxFrames})
	if err != nil || len(st.Frames) == 0 {
		si.stateErr = omprt.Wrap(omprt.ErrUnavailable, err, "gomp: libgomp records no thread state, and thread %d's stack cannot be read", th.os.ID)
		return si
	}
	frames := make([]frameInfo, len(st.Frames))
	for i := range st.Frames {
		f := &st.Frames[i]
		fi := frameInfo{pc: f.PC}
		if cl, err := loc.LocateCode(f.LookupPC()); err == nil {
			// libgomp's internal aliases of its exported functions
			// (ialias) and versioned names say the same.
			fi.function, fi.entry = strings.TrimPrefix(cl.Function, "gomp_ialias_"), cl.Entry
			fi.function, _, _ = strings.Cut(fi.function, "@")
			base := path.Base(cl.Object)
			switch {
			case isLibgomp(base):
				fi.where = inLibgomp
			case isSystem(base):
				fi.where = inSystem
			default:
				fi.where = inUser
			}
		}
		frames[i] = fi
	}
	si.entries = regionEntries(frames, st.Complete())
	si.state, si.waitID, si.stateErr = r.inferState(th, st, frames)
	return si
}

// isSystem reports the C library, the dynamic linker and the vDSO.
func isSystem(base string) bool {
	for _, p := range []string{"libc.so", "ld-linux", "libpthread.so", "linux-vdso", "[vdso]"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}

// regionEntries finds the outlined functions on a stack: frames called by
// a region starter, or, in a worker, by the libgomp frame the thread
// started in (gomp_thread_start, told by its place when the library's
// internal names are unknown: only the C library's frames are below it).
func regionEntries(frames []frameInfo, complete bool) []uint64 {
	var out []uint64
	for i := 0; i+1 < len(frames); i++ {
		f, caller := frames[i], frames[i+1]
		if f.where != inUser || caller.where != inLibgomp || f.entry == 0 {
			continue
		}
		start := regionStarters[caller.function]
		if !start && caller.function == "" && complete {
			start = reachesStart(frames, i+2)
		}
		if start {
			out = append(out, f.entry)
		}
	}
	return out
}

// inferState says what a thread is doing from its stack.
func (r *Runtime) inferState(th *thread, st unwind.Stack, frames []frameInfo) (int64, uint64, error) {
	// The thread's own code starts past the C library's frames and
	// what the C library calls in no loaded object: the vDSO, the
	// kernel's code for clock_gettime, gettimeofday, time and getcpu,
	// which targets do not list among the objects (a thread polling the
	// clock in MPI_Barrier is stopped there often).
	k := 0
	for k < len(frames) && (frames[k].where == inSystem ||
		frames[k].where == inUnknown && k+1 < len(frames) && frames[k+1].where == inSystem) {
		k++
	}
	if k == len(frames) || frames[k].where == inUnknown {
		return 0, 0, omprt.Errorf(omprt.ErrUnavailable, "gomp: libgomp records no thread state, and thread %d's stack does not tell", th.os.ID)
	}
	if frames[k].where == inUser {
		if th.level > 0 {
			return stateWorkParallel, 0, nil
		}
		return stateWorkSerial, 0, nil
	}
	// The run of libgomp frames the thread is in, innermost first.
	end := k
	for end < len(frames) && frames[end].where == inLibgomp {
		end++
	}
	run := frames[k:end]
	waitID := r.futexAddr(st)
	for _, f := range run {
		if s, ok := waits[f.function]; ok {
			if s != stateLock && s != stateCritical && s != stateAtomic {
				waitID = 0
			}
			return s, waitID, nil
		}
	}
	// A worker whose libgomp frames reach its thread's start, waiting in
	// its team's barrier: the region's body returned, this is the barrier
	// that ends it (gomp_thread_start calls gomp_team_barrier_wait_final
	// after the outlined function). Idle workers were told apart before.
	// gomp_barrier_wait_end there is no such certainty: a nested team's
	// worker waits in it both before its body (the team's start) and
	// after (gomp_barrier_wait_last), so it stays unknown below.
	if st.Complete() && reachesStart(frames, end) {
		for _, f := range run {
			if f.function == "gomp_team_barrier_wait_end" {
				return stateBarrierImplicitPar, 0, nil
			}
		}
	}
	toUser := end < len(frames) && frames[end].where == inUser
	if toUser {
		if s, ok := tailWaits[run[len(run)-1].function]; ok {
			if s == stateMutex {
				// GOMP_critical_start, GOMP_critical_name_start,
				// GOMP_atomic_start and omp_set_lock all tail-call
				// the lock's slow path: the address tells them apart.
				return r.mutexState(waitID), waitID, nil
			}
			return s, 0, nil
		}
	}
	name := run[0].function
	if name == "" {
		// Without libgomp's internal names, a futex wait on the lock
		// of a named critical section (a symbol of the program) still
		// says what it is.
		if toUser && waitID != 0 {
			if obj, ok, err := r.objectAt(waitID); err == nil && ok && !isLibgomp(obj) {
				if critical, _ := r.namedCritical(obj, waitID); critical {
					return stateCritical, waitID, nil
				}
			}
		}
		return 0, 0, omprt.Errorf(omprt.ErrUnavailable, "gomp: thread %d waits in libgomp; telling where needs the library's debug information (its internal function names)", th.os.ID)
	}
	return 0, 0, omprt.Errorf(omprt.ErrUnavailable, "gomp: thread %d is in libgomp's %s, which says nothing certain of its state", th.os.ID, name)
}

// reachesStart reports whether only system frames (the C library's thread
// start) follow frames[end:].
func reachesStart(frames []frameInfo, end int) bool {
	for _, f := range frames[end:] {
		if f.where != inSystem && f.where != inUnknown {
			return false
		}
	}
	return true
}

// futexAddr is the address a thread waits on in a futex system call: its
// rdi, when it stopped right after a syscall instruction in the innermost
// frame. 0 otherwise.
func (r *Runtime) futexAddr(st unwind.Stack) uint64 {
	f := &st.Frames[0]
	if f.PC < 2 {
		return 0
	}
	b, err := r.mem.Read(f.PC-2, 2)
	if err != nil || b[0] != 0x0f || b[1] != 0x05 {
		return 0
	}
	rax, ok1 := f.Regs.Get(0)
	rdi, ok2 := f.Regs.Get(5)
	// rax holds the syscall's number before it runs, its result after;
	// a stopped futex wait shows SYS_futex (202) or -EINTR/-ERESTARTSYS.
	if !ok2 || (ok1 && rax != 202 && int64(rax) >= 0) {
		return 0
	}
	return rdi
}
