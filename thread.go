package ompd

import (
	"errors"
	"fmt"

	"github.com/ompd-go/ompd/target"
)

// Thread is an OpenMP thread (ompd_thread_handle_t): one entry of the
// runtime's thread table (a kmp_info_t). The zero Thread is not a thread;
// its methods fail with ErrBadInput.
//
// Threads are comparable with == and usable as map keys; two handles are
// equal when they name the same runtime thread of the same AddressSpace.
type Thread struct {
	as   *AddressSpace
	addr uint64 // kmp_info_t
	gtid int32
}

// GTID returns the runtime's global thread id (the index in its thread
// table; 0 is the initial thread).
func (t Thread) GTID() int { return int(t.gtid) }

// Addr returns the address of the runtime's kmp_info_t for the thread.
func (t Thread) Addr() uint64 { return t.addr }

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
	return fmt.Sprintf("thread/%d@%#x", t.gtid, t.addr)
}

// threadIndex is the runtime's thread table as read at one stop.
type threadIndex struct {
	threads   []Thread
	byAddr    map[uint64]int32 // kmp_info_t -> gtid
	byPthread map[uint64]int32 // ds_thread -> gtid
}

// threadTable reads the runtime's thread table: the address of the
// __kmp_threads array and its capacity, as the runtime has them now.
func (as *AddressSpace) threadTable() (arr uint64, capacity int64, err error) {
	capacity, err = as.global("__kmp_threads_capacity", 4, true)
	if err != nil {
		return 0, 0, err
	}
	tab, err := as.sym("__kmp_threads")
	if err != nil {
		return 0, 0, wrapErr(ErrIncompatible, err, "runtime variable __kmp_threads")
	}
	arr, err = as.readPtr(tab, "__kmp_threads")
	return arr, capacity, err
}

// index reads (once per stop) the runtime's thread table __kmp_threads.
func (as *AddressSpace) index() (*threadIndex, error) {
	if err := as.check(); err != nil {
		return nil, err
	}
	as.idxMu.Lock()
	defer as.idxMu.Unlock()
	if as.idx != nil {
		return as.idx, nil
	}
	arr, capacity, err := as.threadTable()
	if err != nil {
		return nil, err
	}
	if capacity < 0 || capacity > maxThreadsCapacity {
		return nil, errorf(ErrCorrupt, "__kmp_threads_capacity %d out of range", capacity)
	}
	idx := &threadIndex{byAddr: make(map[uint64]int32), byPthread: make(map[uint64]int32)}
	if capacity == 0 || arr == 0 {
		as.idx = idx
		return idx, nil
	}
	ptr := uint64(as.mem.ptrSize)
	v, err := as.readView(arr, uint64(capacity)*ptr, "__kmp_threads array")
	if err != nil {
		return nil, err
	}
	for i := uint64(0); i < uint64(capacity); i++ {
		addr := v.uint(i*ptr, ptr)
		if addr == 0 {
			continue
		}
		if _, dup := idx.byAddr[addr]; dup {
			return nil, errorf(ErrCorrupt, "__kmp_threads[%d] repeats thread %#x", i, addr)
		}
		th := Thread{as: as, addr: addr, gtid: int32(i)}
		info, err := as.readView(addr, as.l.thExtent, "kmp_info_t of a thread")
		if err != nil {
			return nil, err
		}
		idx.threads = append(idx.threads, th)
		idx.byAddr[addr] = int32(i)
		if pt := info.f(as.l.thThread); pt != 0 {
			idx.byPthread[pt] = int32(i)
		}
	}
	as.idx = idx
	return idx, nil
}

// threadAt returns the handle of the thread whose kmp_info_t is at addr.
func (as *AddressSpace) threadAt(addr uint64, what string) (Thread, error) {
	idx, err := as.index()
	if err != nil {
		return Thread{}, err
	}
	g, ok := idx.byAddr[addr]
	if !ok {
		return Thread{}, errorf(ErrCorrupt, "%s: thread %#x is not in __kmp_threads", what, addr)
	}
	return Thread{as: as, addr: addr, gtid: g}, nil
}

// Threads returns every OpenMP thread of the runtime, in gtid order
// (ompd_get_threads). Threads idle in the runtime's pool are included.
func (as *AddressSpace) Threads() ([]Thread, error) {
	idx, err := as.index()
	if err != nil {
		return nil, err
	}
	return append([]Thread(nil), idx.threads...), nil
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

func (k ThreadIDKind) String() string {
	switch k {
	case PthreadID:
		return "pthread"
	case LWPID:
		return "lwp"
	case WinThreadID:
		return "winthread"
	}
	return fmt.Sprintf("ThreadIDKind(%d)", int(k))
}

// ThreadByOSThread returns the OpenMP thread running on the given OS thread
// (ompd_get_thread_handle). A thread that is not an OpenMP thread gives an
// error matching ErrUnavailable.
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
	idx, err := as.index()
	if err != nil {
		return Thread{}, err
	}
	pthread := id
	switch kind {
	case PthreadID:
	case LWPID:
		ths, err := as.t.Threads()
		if err != nil {
			return Thread{}, wrapErr(ErrReadFailed, err, "listing target threads")
		}
		found := false
		for _, th := range ths {
			if th.ID == id {
				pthread, found = th.Pointer, true
				break
			}
		}
		if !found {
			return Thread{}, errorf(ErrBadInput, "no OS thread with LWP id %d in target", id)
		}
		if pthread == 0 {
			return as.threadByTLS(id)
		}
	default:
		return Thread{}, errorf(ErrUnsupported, "thread id kind %v", kind)
	}
	g, ok := idx.byPthread[pthread]
	if !ok {
		return Thread{}, errorf(ErrUnavailable, "%v thread %#x is not an OpenMP thread", kind, id)
	}
	return idx.threads[indexOf(idx, g)], nil
}

// threadByTLS finds the OpenMP thread of an OS thread whose thread pointer
// the target does not know, through the thread's __kmp_gtid.
func (as *AddressSpace) threadByTLS(lwp uint64) (Thread, error) {
	addr, err := as.t.LookupThreadLocal(lwp, "__kmp_gtid")
	if err != nil {
		if errors.Is(err, target.ErrNoMemory) {
			return Thread{}, wrapErr(ErrUnavailable, err, "thread %d has no __kmp_gtid", lwp)
		}
		return Thread{}, wrapErr(ErrReadFailed, err, "thread %d: __kmp_gtid", lwp)
	}
	g, err := as.readUint(addr, 4, "__kmp_gtid")
	if err != nil {
		return Thread{}, err
	}
	gtid := int32(g)
	if gtid < 0 {
		return Thread{}, errorf(ErrUnavailable, "thread %d is not an OpenMP thread (__kmp_gtid %d)", lwp, gtid)
	}
	idx, err := as.index()
	if err != nil {
		return Thread{}, err
	}
	for _, th := range idx.threads {
		if th.gtid == gtid {
			return th, nil
		}
	}
	return Thread{}, errorf(ErrUnavailable, "thread %d: __kmp_gtid %d not in __kmp_threads", lwp, gtid)
}

func indexOf(idx *threadIndex, gtid int32) int {
	for i, th := range idx.threads {
		if th.gtid == gtid {
			return i
		}
	}
	return -1
}

// info reads the thread's kmp_info_t, after checking that the runtime's
// thread table still holds it.
func (t Thread) info() (view, error) {
	if t.as == nil {
		return view{}, errorf(ErrBadInput, "zero Thread handle")
	}
	as := t.as
	if err := as.check(); err != nil {
		return view{}, err
	}
	arr, capacity, err := as.threadTable()
	if err != nil {
		return view{}, err
	}
	if arr == 0 || int64(t.gtid) >= capacity {
		return view{}, errorf(ErrStaleHandle, "%v: no longer in __kmp_threads", t)
	}
	cur, err := as.readPtr(arr+uint64(t.gtid)*uint64(as.mem.ptrSize), "__kmp_threads entry")
	if err != nil {
		return view{}, err
	}
	if cur != t.addr {
		return view{}, errorf(ErrStaleHandle, "%v: __kmp_threads[%d] is now %#x", t, t.gtid, cur)
	}
	return as.readView(t.addr, as.l.thExtent, "kmp_info_t")
}

// State returns the thread's state and, for wait states, the id of what it
// waits for (ompd_get_state). It needs the runtime's state tracking
// (ErrNeedsStateTracking without OMP_DEBUG=enabled).
func (t Thread) State() (State, WaitID, error) {
	v, err := t.info()
	if err != nil {
		return 0, 0, err
	}
	on, err := t.as.stateTracking()
	if err != nil {
		return 0, 0, err
	}
	if !on {
		return 0, 0, errorf(ErrNeedsStateTracking, "%v: state", t)
	}
	return State(v.fi(t.as.l.thState)), WaitID(v.f(t.as.l.thWaitID)), nil
}

// Num returns the thread's number in the team of its innermost parallel
// region (ompd_get_thread_num; omp_get_thread_num in the thread).
func (t Thread) Num() (int, error) {
	v, err := t.info()
	if err != nil {
		return 0, err
	}
	return int(v.fi(t.as.l.thTid)), nil
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
// (ompd_get_thread_id): the pthread_t, or the kernel's LWP id (found by
// matching the pthread id with the target's threads).
func (t Thread) OSThread(kind ThreadIDKind) (uint64, error) {
	v, err := t.info()
	if err != nil {
		return 0, err
	}
	pt := v.f(t.as.l.thThread)
	switch kind {
	case PthreadID:
		return pt, nil
	case LWPID:
		ths, err := t.as.t.Threads()
		if err != nil {
			return 0, wrapErr(ErrReadFailed, err, "listing target threads")
		}
		for _, th := range ths {
			if th.Pointer == pt && pt != 0 {
				return th.ID, nil
			}
		}
		return 0, errorf(ErrUnavailable, "%v: pthread %#x matches no OS thread of the target", t, pt)
	}
	return 0, errorf(ErrUnsupported, "thread id kind %v", kind)
}

// CurrentParallel returns the innermost parallel region the thread is in
// (ompd_get_curr_parallel_handle). Serialized regions count: a thread inside
// a num_threads(1) region gets that region, at its own level.
func (t Thread) CurrentParallel() (Parallel, error) {
	v, err := t.info()
	if err != nil {
		return Parallel{}, err
	}
	team := v.f(t.as.l.thTeam)
	if team == 0 {
		return Parallel{}, errorf(ErrUnavailable, "%v is in no team (idle in the thread pool)", t)
	}
	ti, err := t.as.team(team)
	if err != nil {
		return Parallel{}, err
	}
	return Parallel{as: t.as, team: team, level: ti.level}, nil
}

// CurrentTask returns the task the thread is executing
// (ompd_get_curr_task_handle).
func (t Thread) CurrentTask() (Task, error) {
	v, err := t.info()
	if err != nil {
		return Task{}, err
	}
	td := v.f(t.as.l.thCurrentTask)
	if td == 0 {
		return Task{}, errorf(ErrUnavailable, "%v has no current task", t)
	}
	return t.as.taskAt(td)
}

// State is an OpenMP thread state (ompt_state_t).
type State int64

// Thread states of the OpenMP specification (ompt_state_t).
const (
	StateWorkSerial                   State = 0x000
	StateWorkParallel                 State = 0x001
	StateWorkReduction                State = 0x002
	StateWaitBarrier                  State = 0x010
	StateWaitBarrierImplicitParallel  State = 0x011
	StateWaitBarrierImplicitWorkshare State = 0x012
	StateWaitBarrierImplicit          State = 0x013
	StateWaitBarrierExplicit          State = 0x014
	StateWaitBarrierImplementation    State = 0x015
	StateWaitBarrierTeams             State = 0x016
	StateWaitTaskwait                 State = 0x020
	StateWaitTaskgroup                State = 0x021
	StateWaitMutex                    State = 0x040
	StateWaitLock                     State = 0x041
	StateWaitCritical                 State = 0x042
	StateWaitAtomic                   State = 0x043
	StateWaitOrdered                  State = 0x044
	StateWaitTarget                   State = 0x080
	StateWaitTargetMap                State = 0x081
	StateWaitTargetUpdate             State = 0x082
	StateIdle                         State = 0x100
	StateOverhead                     State = 0x101
	StateUndefined                    State = 0x102
)

var stateNames = []struct {
	s    State
	name string
}{
	{StateUndefined, "undefined"},
	{StateWorkSerial, "work_serial"},
	{StateWorkParallel, "work_parallel"},
	{StateWorkReduction, "work_reduction"},
	{StateWaitBarrier, "wait_barrier"},
	{StateWaitBarrierImplicitParallel, "wait_barrier_implicit_parallel"},
	{StateWaitBarrierImplicitWorkshare, "wait_barrier_implicit_workshare"},
	{StateWaitBarrierImplicit, "wait_barrier_implicit"},
	{StateWaitBarrierExplicit, "wait_barrier_explicit"},
	{StateWaitBarrierImplementation, "wait_barrier_implementation"},
	{StateWaitBarrierTeams, "wait_barrier_teams"},
	{StateWaitTaskwait, "wait_taskwait"},
	{StateWaitTaskgroup, "wait_taskgroup"},
	{StateWaitMutex, "wait_mutex"},
	{StateWaitLock, "wait_lock"},
	{StateWaitCritical, "wait_critical"},
	{StateWaitAtomic, "wait_atomic"},
	{StateWaitOrdered, "wait_ordered"},
	{StateWaitTarget, "wait_target"},
	{StateWaitTargetMap, "wait_target_map"},
	{StateWaitTargetUpdate, "wait_target_update"},
	{StateIdle, "idle"},
	{StateOverhead, "overhead"},
}

// String returns the state's name as OMPT spells it without the
// "ompt_state_" prefix, e.g. "wait_barrier_explicit".
func (s State) String() string {
	for _, e := range stateNames {
		if e.s == s {
			return e.name
		}
	}
	return fmt.Sprintf("State(%#x)", int64(s))
}

// IsWait reports whether the state is a wait state (one with a wait id).
func (s State) IsWait() bool { return s >= 0x010 && s < 0x100 }

// States enumerates every thread state of the OpenMP specification
// (ompd_enumerate_states), undefined first as the specification orders them.
func States() []State {
	out := make([]State, len(stateNames))
	for i, e := range stateNames {
		out[i] = e.s
	}
	return out
}

// WaitID identifies what a waiting thread waits for (ompt_wait_id_t): the
// address of a lock or critical section, for instance.
type WaitID uint64
