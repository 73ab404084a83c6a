package ompd

import (
	"iter"
	"slices"

	"github.com/ompd-go/ompd/internal/omprt"
)

// Thread is an OpenMP thread (ompd_thread_handle_t): one entry of the
// runtime's threads (a kmp_info_t in LLVM's libomp, a gomp_thread in GCC's
// libgomp). The zero Thread is not a thread;
// its methods fail with ErrBadInput.
//
// Threads are comparable with == and usable as map keys; two handles are
// equal when they name the same runtime thread of the same AddressSpace.
type Thread struct {
	as  *AddressSpace
	ref omprt.ThreadRef
}

// GTID returns the runtime's global thread id: for LLVM's libomp the index
// in its thread table (0 is the initial thread); for libgomp, which has no
// such id, a number stable for the thread's life.
func (t Thread) GTID() int { return int(t.ref.ID) }

// Addr returns the address of the runtime's structure for the thread
// (LLVM's kmp_info_t; libgomp's thread-local gomp_thread data).
func (t Thread) Addr() uint64 { return t.ref.Addr }

// AddressSpace returns the address space the handle belongs to.
func (t Thread) AddressSpace() *AddressSpace { return t.as }

// Equal reports whether t and u name the same thread of the same address
// space (ompd_thread_handle_compare). Handles of different address spaces
// are never equal.
func (t Thread) Equal(u Thread) bool { return t.as != nil && t == u }

// String returns a stable id for the handle (ompd_get_thread_handle_string_id),
// "thread/GTID@ADDR".
func (t Thread) String() string {
	if t.as == nil {
		return "thread/none"
	}
	return omprt.ThreadName(t.ref).String()
}

// data returns the thread's record at this stop.
func (t Thread) data() (*omprt.ThreadData, error) {
	if err := t.as.checkHandle("Thread"); err != nil {
		return nil, err
	}
	d, err := t.as.rt.Thread(t.ref)
	if err != nil {
		return nil, err
	}
	if d.Err != nil {
		return nil, d.Err
	}
	return d, nil
}

// Threads walks every OpenMP thread of the runtime, in gtid order
// (ompd_get_threads):
//
//	for th, err := range as.Threads() {
//		if err != nil {
//			return err // the thread table could not be read
//		}
//		...
//	}
//
// Threads idle in the runtime's pool are included. A thread whose runtime
// structure cannot be read is yielded too; its methods return the error.
// An error reading the runtime's thread table is yielded once, with a
// zero Thread, and ends the walk. Collect gathers the threads in a slice.
func (as *AddressSpace) Threads() iter.Seq2[Thread, error] {
	return func(yield func(Thread, error) bool) {
		refs, err := as.threadRefs()
		if err != nil {
			yield(Thread{}, err)
			return
		}
		for _, r := range refs {
			if !yield(Thread{as: as, ref: r}, nil) {
				return
			}
		}
	}
}

// threadRefs lists the runtime's threads.
func (as *AddressSpace) threadRefs() ([]omprt.ThreadRef, error) {
	if err := as.check(); err != nil {
		return nil, err
	}
	return as.rt.Threads()
}

// ThreadID kinds (ompd_thread_id_t) for ThreadByOSThread and OSThread.
type ThreadIDKind int

const (
	// PthreadID is a POSIX thread id (pthread_t), OMPD_THREAD_ID_PTHREAD.
	PthreadID ThreadIDKind = 0
	// LWPID is a kernel thread id (what gettid returns),
	// OMPD_THREAD_ID_LWP.
	LWPID ThreadIDKind = 1
	// WinThreadID is a Windows thread handle, OMPD_THREAD_ID_WINTHREAD;
	// this package does not support it.
	WinThreadID ThreadIDKind = 2
)

// String returns the kind's name, e.g. "pthread".
func (k ThreadIDKind) String() string { return omprt.IDKindName(k).String() }

// ThreadByOSThread returns the OpenMP thread running on the given OS thread
// (ompd_get_thread_handle). A thread that is not an OpenMP thread gives an
// error matching ErrUnavailable. After the first call at a stop, every
// lookup is a map lookup.
//
// The rule: an OS thread is an OpenMP thread as soon as the runtime has
// registered it in its thread table (__kmp_threads) with its pthread id.
// This package matches the pthread id (on glibc, the thread pointer the
// target reports) against the table's ds_thread entries. LLVM's libompd
// instead reads the thread's __kmp_gtid, which a freshly created worker
// sets a moment after it is registered; in that window libompd calls the
// thread "no OpenMP thread" while this package already answers it, in
// agreement with Threads.
func (as *AddressSpace) ThreadByOSThread(kind ThreadIDKind, id uint64) (Thread, error) {
	if err := as.check(); err != nil {
		return Thread{}, err
	}
	r, err := as.rt.ThreadByOS(int(kind), id)
	if err != nil {
		return Thread{}, err
	}
	return Thread{as: as, ref: r}, nil
}

// State returns the thread's state and, for wait states, the id of what it
// waits for (ompd_get_state). It needs the runtime's state tracking
// (ErrNeedsStateTracking without OMP_DEBUG=enabled). On LLVM's runtime the
// state is the runtime's own state word, as it is: LLVM 19 leaves, for
// example, the primary thread of a parallel region in a host teams region
// in StateOverhead while it runs user code. On libgomp, which keeps no
// state, it is inferred (see StateInferred), and ErrUnavailable where the
// thread's stack does not tell. With an error the state is
// StateUndefined, never a state the thread may not be in (the zero State
// is StateWorkSerial).
func (t Thread) State() (State, WaitID, error) {
	d, err := t.data()
	if err != nil {
		return StateUndefined, 0, err
	}
	if d.StateErr != nil {
		return StateUndefined, 0, d.StateErr
	}
	return State(d.State), WaitID(d.WaitID), nil
}

// StateInferred reports whether the thread's state was inferred rather
// than recorded by the runtime: GCC's libgomp records no thread states, so
// they are read from the thread's stack (the function it waits in, the
// address of its futex wait), or, for an idle pool thread, from the pool.
// Where the stack does not tell, State fails with ErrUnavailable.
func (t Thread) StateInferred() (bool, error) {
	d, err := t.data()
	if err != nil {
		return false, err
	}
	if d.StateErr != nil {
		return false, d.StateErr
	}
	return d.StateInferred, nil
}

// Num returns the thread's number in the team of its innermost parallel
// region (ompd_get_thread_num; omp_get_thread_num in the thread). A thread
// in no team (idle in the thread pool or in a hot team whose region ended,
// kept by a team beyond the size of its current region, or not started)
// has none: ErrUnavailable, saying which. At ompd_bp_parallel_end the
// ending region is the innermost one, and its primary is thread 0.
func (t Thread) Num() (int, error) {
	d, err := t.data()
	if err != nil {
		return 0, err
	}
	return d.Num, d.NumErr
}

// InParallel reports whether the thread is inside an active parallel region
// (ompd_in_parallel; omp_in_parallel in the thread).
func (t Thread) InParallel() (bool, error) {
	p, err := t.CurrentParallel()
	if err != nil {
		return false, err
	}
	n, err := p.ActiveLevel()
	return n > 0, err
}

// OSThread returns the thread's OS thread id of the given kind
// (ompd_get_thread_id, the 2014 proposal's ompd_get_osthread): the pthread_t, or the kernel's LWP id (found by
// matching the pthread id with the target's threads). A thread the runtime
// is still starting has no pthread id recorded yet: ErrUnavailable.
func (t Thread) OSThread(kind ThreadIDKind) (uint64, error) {
	d, err := t.data()
	if err != nil {
		return 0, err
	}
	switch kind {
	case PthreadID:
		return d.Pthread, d.PthreadErr
	case LWPID:
		return d.LWP, d.LWPErr
	}
	return 0, errorf(ErrUnsupported, "thread id kind %v", kind)
}

// TeamNum returns the number of the thread's team in a host teams league
// (omp_get_team_num in the thread): 0 outside any league.
func (t Thread) TeamNum() (int, error) {
	d, err := t.league()
	return d.TeamNum, err
}

// NumTeams returns the number of teams of the host teams league the thread
// is in (omp_get_num_teams in the thread): 1 outside any league.
func (t Thread) NumTeams() (int, error) {
	d, err := t.league()
	return d.NumTeams, err
}

func (t Thread) league() (*omprt.ThreadData, error) {
	d, err := t.data()
	switch {
	case err != nil:
		return &omprt.ThreadData{}, err
	case d.LeagueErr != nil:
		return &omprt.ThreadData{}, d.LeagueErr
	case d.NumTeams == 0:
		return &omprt.ThreadData{}, errorf(ErrUnsupported, "%v: this runtime's teams leagues are not decoded", t)
	}
	return d, nil
}

// CurrentParallel returns the innermost parallel region the thread is in
// (ompd_get_curr_parallel_handle, the drafts' ompd_get_top_parallel_region
// and ompd_get_innermost_parallel_region). Serialized regions count: a thread inside
// a num_threads(1) region gets that region, at its own level.
//
// A thread stopped in one of the runtime's breakpoint functions
// (Breakpoints) is bound as OpenMP 5.1 binds it there: at
// ompd_bp_parallel_begin and ompd_bp_parallel_end its current region is
// the one beginning or ending and its current task the one that
// encountered it; at ompd_bp_task_begin and ompd_bp_task_end its current
// task is the one beginning or ending. Where the runtime's memory does not
// show that region or task at that moment (LLVM's runtime makes a forked
// team the primary's own only after ompd_bp_parallel_begin, unless it
// reinitialized the primary into a hot team that grew), the answer
// matches ErrUnavailable and says why. Telling the moment needs a target
// that reads registers and places code (target.RegisterReader,
// target.CodeLocator).
func (t Thread) CurrentParallel() (Parallel, error) {
	d, err := t.data()
	return follow(d, err, func(d *omprt.ThreadData) (omprt.Ref, error) { return d.Region, d.RegionErr }, t.as.parallel)
}

// CurrentTask returns the task the thread is executing
// (ompd_get_curr_task_handle, the drafts' ompd_get_top_task_region); at the runtime's breakpoint functions, the
// task OpenMP binds there (see CurrentParallel).
func (t Thread) CurrentTask() (Task, error) {
	d, err := t.data()
	return follow(d, err, func(d *omprt.ThreadData) (omprt.Ref, error) { return d.Task, d.TaskErr }, t.as.task)
}

// State is an OpenMP thread state (ompt_state_t). String gives the state's
// name as OMPT spells it without the "ompt_state_" prefix, e.g.
// "wait_barrier_explicit".
type State int64

// Thread states of the OpenMP specification (ompt_state_t).
const (
	StateWorkSerial                   State = 0x000 // work_serial
	StateWorkParallel                 State = 0x001 // work_parallel
	StateWorkReduction                State = 0x002 // work_reduction
	StateWaitBarrier                  State = 0x010 // wait_barrier
	StateWaitBarrierImplicitParallel  State = 0x011 // wait_barrier_implicit_parallel
	StateWaitBarrierImplicitWorkshare State = 0x012 // wait_barrier_implicit_workshare
	StateWaitBarrierImplicit          State = 0x013 // wait_barrier_implicit
	StateWaitBarrierExplicit          State = 0x014 // wait_barrier_explicit
	StateWaitBarrierImplementation    State = 0x015 // wait_barrier_implementation
	StateWaitBarrierTeams             State = 0x016 // wait_barrier_teams
	StateWaitTaskwait                 State = 0x020 // wait_taskwait
	StateWaitTaskgroup                State = 0x021 // wait_taskgroup
	StateWaitMutex                    State = 0x040 // wait_mutex
	StateWaitLock                     State = 0x041 // wait_lock
	StateWaitCritical                 State = 0x042 // wait_critical
	StateWaitAtomic                   State = 0x043 // wait_atomic
	StateWaitOrdered                  State = 0x044 // wait_ordered
	StateWaitTarget                   State = 0x080 // wait_target
	StateWaitTargetMap                State = 0x081 // wait_target_map
	StateWaitTargetUpdate             State = 0x082 // wait_target_update
	StateIdle                         State = 0x100 // idle
	StateOverhead                     State = 0x101 // overhead
	StateUndefined                    State = 0x102 // undefined
)

// IsWait reports whether the state is a wait state (one with a wait id).
func (s State) IsWait() bool { return s >= 0x010 && s < 0x100 }

// States enumerates every thread state of the OpenMP specification
// (ompd_enumerate_states), undefined first as the specification orders them.
func States() iter.Seq[State] { return slices.Values(states[:]) }

// states are the states States enumerates.
var states = [...]State{
	StateUndefined, StateWorkSerial, StateWorkParallel, StateWorkReduction,
	StateWaitBarrier, StateWaitBarrierImplicitParallel, StateWaitBarrierImplicitWorkshare,
	StateWaitBarrierImplicit, StateWaitBarrierExplicit, StateWaitBarrierImplementation,
	StateWaitBarrierTeams, StateWaitTaskwait, StateWaitTaskgroup, StateWaitMutex, StateWaitLock,
	StateWaitCritical, StateWaitAtomic, StateWaitOrdered, StateWaitTarget, StateWaitTargetMap,
	StateWaitTargetUpdate, StateIdle, StateOverhead,
}

// WaitID identifies what a waiting thread waits for (ompt_wait_id_t): the
// address of a lock or critical section, for instance.
type WaitID uint64
