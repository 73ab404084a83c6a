package kmp

import (
	"context"
	"fmt"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/stackstate"
	"github.com/ompd-go/ompd/target"
)

// LLVM's runtime records thread states only for OMPT: when a program is
// started with OMP_DEBUG=enabled (or has an OMPT tool), and never when the
// runtime is built without OMPD support. Otherwise the states are read from
// the threads' stacks with internal/stackstate, as for libgomp: the
// runtime's entry point the program called (its exported names are there
// in a stripped runtime too), the runtime's internal functions a worker
// waits in (by name with symbols; in a stripped runtime by the addresses
// its code leads to, stockNames), and for a barrier the construct the
// program's call named (th_ident's flags). A state read so is marked
// inferred (ThreadData.StateInferred); where the stack does not tell, the
// state is unknown, never guessed.

// maxFrames bounds each unwind.
const maxFrames = 256

// entryWaits are the runtime's entry points a program calls to wait, with
// the state of a thread waiting in them (the barrier's flavour comes from
// th_ident, see barrierState).
var entryWaits = map[string]int64{
	"__kmpc_barrier": stackstate.Barrier,
	"GOMP_barrier":   stackstate.Barrier, "GOMP_barrier_cancel": stackstate.Barrier,
	"__kmpc_omp_taskwait": stackstate.Taskwait, "__kmpc_omp_taskwait_deps_51": stackstate.Taskwait,
	"__kmpc_omp_wait_deps": stackstate.Taskwait, "GOMP_taskwait": stackstate.Taskwait,
	"GOMP_taskwait_depend": stackstate.Taskwait,
	"__kmpc_end_taskgroup": stackstate.Taskgroup, "GOMP_taskgroup_end": stackstate.Taskgroup,
	"__kmpc_critical": stackstate.Critical, "__kmpc_critical_with_hint": stackstate.Critical,
	"GOMP_critical_start": stackstate.Critical, "GOMP_critical_name_start": stackstate.Critical,
	"omp_set_lock": stackstate.Lock, "omp_set_lock_": stackstate.Lock, "__kmpc_set_lock": stackstate.Lock,
	"omp_set_nest_lock": stackstate.Lock, "omp_set_nest_lock_": stackstate.Lock, "__kmpc_set_nest_lock": stackstate.Lock,
	"__kmpc_ordered": stackstate.Ordered, "__kmpc_doacross_wait": stackstate.Ordered,
	"GOMP_ordered_start": stackstate.Ordered, "GOMP_doacross_wait": stackstate.Ordered,
	"GOMP_atomic_start": stackstate.Atomic,
	"GOMP_parallel_end": stackstate.BarrierImplicitPar,
	"GOMP_loop_end":     stackstate.BarrierImplicitWork, "GOMP_sections_end": stackstate.BarrierImplicitWork,
	"GOMP_single_copy_start": stackstate.BarrierImplicitWork, "GOMP_single_copy_end": stackstate.BarrierImplicitWork,
}

// internalWaits are the runtime's internal functions a thread waits in
// with no call of the program's above: a worker in its fork barrier (idle
// between regions, or, its region's body done, at the end of a region
// whose primary has not ended it: a worker's part of the join barrier only
// signals its arrival, then it waits in the fork barrier; see inferState),
// a thread in the barrier that ends a region, a primary thread forming its
// team.
var internalWaits = map[string]int64{
	"__kmp_fork_barrier": stackstate.BarrierImplicitPar,
	"__kmp_join_barrier": stackstate.BarrierImplicitPar,
	"__kmp_join_call":    stackstate.BarrierImplicitPar,
	"__kmp_fork_call":    stackstate.Overhead,
}

// stackFuncs are the internal functions named in a stripped runtime by
// the addresses its code leads to.
var stackFuncs = []string{"__kmp_fork_barrier", "__kmp_join_barrier", "__kmp_join_call", "__kmp_fork_call"}

// ident_t's flags (kmp.h): the compiler says in the ident_t it passes to
// __kmpc_barrier which construct's barrier it is.
const (
	identFlagsOff       = 4 // ident_t {int reserved_1; int flags; ...}
	identBarrierExpl    = 0x20
	identBarrierImplMsk = 0x1c0
)

// stackInfo is what the stacks need, found once per runtime.
type stackInfo struct {
	once   sync.Once
	tables *stackstate.Tables
	local  map[uint64]string // internal functions of a stripped runtime, by entry
	ident  uint64            // offset of th_ident in kmp_info_t, 0 if unknown
	loc    target.CodeLocator
}

func (rt *Runtime) stackInfo() *stackInfo {
	si := &rt.stacks
	si.once.Do(func() {
		obj := path.Base(rt.object())
		si.tables = &stackstate.Tables{
			IsRuntime: func(base string) bool { return obj != "." && base == obj },
			Name:      baseName,
			Starters:  map[string]bool{"__kmp_invoke_microtask": true},
		}
		si.loc, _ = rt.t.(target.CodeLocator)
		si.local = map[uint64]string{}
		if rt.stock != nil {
			for _, n := range stackFuncs {
				if a, err := rt.sym(n); err == nil {
					si.local[a] = n
				}
			}
		}
		if off, err := rt.fieldOffset("kmp_base_info_t", "th_ident"); err == nil {
			si.ident = off
		}
	})
	return si
}

// baseName turns a function symbol of the runtime into the name the
// tables use: without a version (omp_set_lock@@OMP_1.0), and for a C++
// function its identifier alone (_Z18__kmp_fork_barrierii is
// __kmp_fork_barrier; _ZL19__kmp_launch_workerPv, __kmp_launch_worker).
func baseName(sym string) string {
	sym, _, _ = strings.Cut(sym, "@")
	rest, ok := strings.CutPrefix(sym, "_Z")
	if !ok {
		return sym
	}
	rest = strings.TrimPrefix(rest, "L")
	n := 0
	for n < len(rest) && rest[n] >= '0' && rest[n] <= '9' {
		n++
	}
	l, err := strconv.Atoi(rest[:n])
	if err != nil || l <= 0 || n+l > len(rest) {
		return sym
	}
	return rest[n : n+l]
}

// inferState reads a thread's state from its stack: the thread r, on
// LWP lwp, working in parallel when it is in an active region or a teams
// league (parallel), between regions when it is in the runtime's pool or
// kept in a hot team whose region ended (idle when it waits then).
func (s *stop) inferState(r omprt.ThreadRef, lwp uint64, parallel, between bool) (int64, error) {
	rt := s.rt
	unknown := func(why string, cause error) error {
		var err error = &omprt.StateUnknown{Reason: "the runtime records no thread states (the program was not started with OMP_DEBUG=enabled, or the runtime is built without OMPD support), and " + why}
		if cause != nil {
			err = fmt.Errorf("%w: %w", err, cause)
		}
		return wrapErr(omprt.ErrNeedsStateTracking, err, "%v: state", omprt.ThreadName(r))
	}

	if lwp == 0 {
		return 0, unknown("its OS thread is not known", nil)
	}
	si := rt.stackInfo()
	if si.loc == nil {
		return 0, unknown("the target cannot place code addresses in functions", nil)
	}
	st, why, err := stackstate.ReadWhy(context.Background(), rt.t, lwp, si.tables, maxFrames)
	if err != nil {
		return 0, unknown(why, err)
	}
	rt.nameFrames(si, st)
	k, ok := st.Own()
	if !ok {
		return 0, unknown("its stack does not tell (its innermost code is in no known object)", nil)
	}
	fr := st.Frames
	if fr[k].Where == stackstate.User {
		if parallel {
			return stackstate.WorkParallel, nil
		}
		return stackstate.WorkSerial, nil
	}
	end := st.RunEnd(k)
	run := fr[k:end]
	// The entry point the program called: the run's outermost frame, or
	// (a tail call left no frame of it) the call the program's frame made.
	called := run[len(run)-1].Function
	if end < len(fr) && fr[end].Where == stackstate.User {
		if ca, ok := stackstate.CallTarget(rt.mem, si.loc, &fr[end]); ok {
			called = si.tables.Name(ca.Function)
		}
	}
	if w, ok := entryWaits[called]; ok {
		if w == stackstate.Barrier && strings.HasPrefix(called, "__kmpc") {
			w = s.barrierState(si, r)
		}
		return w, nil
	}
	for _, f := range run {
		if w, ok := entryWaits[f.Function]; ok {
			return w, nil
		}
	}
	for _, f := range run {
		if w, ok := internalWaits[f.Function]; ok {
			if between && f.Function == "__kmp_fork_barrier" {
				return stackstate.Idle, nil
			}
			return w, nil
		}
	}
	if between {
		// In no region: waiting for the next (in the pool, or kept in
		// a hot team), whatever its stack shows.
		return stackstate.Idle, nil
	}
	name := called
	if name == "" {
		name = "an unnamed function of the runtime"
	}
	return 0, unknown(fmt.Sprintf("its stack (in %s) says nothing certain", name), nil)
}

// nameFrames names the runtime's frames a stripped runtime leaves
// unnamed, through the call each caller frame made: its target is the
// callee's entry, which the runtime's code led to (stackFuncs).
func (rt *Runtime) nameFrames(si *stackInfo, st *stackstate.Stack) {
	if len(si.local) == 0 {
		return
	}
	fr := st.Frames
	for i := 0; i+1 < len(fr); i++ {
		if fr[i].Where != stackstate.Runtime || fr[i].Function != "" {
			continue
		}
		if to, ok := stackstate.CallAddr(rt.mem, &fr[i+1]); ok {
			if n, ok := si.local[to]; ok {
				fr[i].Function, fr[i].Entry = n, to
			}
		}
	}
}

// barrierState tells which barrier a thread waits in that called
// __kmpc_barrier: the ident_t the program passed (th_ident) says whether
// it is an explicit barrier or the implicit one of a worksharing
// construct. Where th_ident cannot be read, it is a barrier of unknown
// kind.
func (s *stop) barrierState(si *stackInfo, r omprt.ThreadRef) int64 {
	if si.ident == 0 {
		return stackstate.Barrier
	}
	rt := s.rt
	id, err := rt.readPtr(r.Addr+si.ident, "th_ident")
	if err != nil || id == 0 {
		return stackstate.Barrier
	}
	flags, err := rt.readUint(id+identFlagsOff, 4, "ident_t flags")
	switch {
	case err != nil:
		return stackstate.Barrier
	case flags&identBarrierImplMsk != 0:
		return stackstate.BarrierImplicitWork
	case flags&identBarrierExpl != 0:
		return stackstate.BarrierExplicit
	}
	return stackstate.Barrier
}
