package ompd

import (
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/internal/omprt"
)

// ScopeKind is the kind of handle an ICV is read from (ompd_scope_t).
type ScopeKind int

// ICV scopes: ompd_scope_t's values, 1 (global) to 6 (task) in this order.
const (
	ScopeGlobal       ScopeKind = omprt.ScopeGlobal       // global
	ScopeAddressSpace ScopeKind = omprt.ScopeAddressSpace // address_space
	ScopeThread       ScopeKind = omprt.ScopeThread       // thread
	ScopeParallel     ScopeKind = omprt.ScopeParallel     // parallel
	ScopeImplicitTask ScopeKind = omprt.ScopeImplicitTask // implicit_task
	ScopeTask         ScopeKind = omprt.ScopeTask         // task
)

// ICV identifies an internal control variable (ompd_icv_id_t). The ids and
// names of 1 to 30 are those of LLVM's libompd 19, in its order, so ids
// can be passed between the two; later ids are ICVs libompd does not know.
type ICV int

// The ICVs, in libompd's enumeration order (ids 1 to 30), then OpenMP
// 5.1's teams ICVs. Their ids, names and scopes are defined once, at the
// boundary to the runtimes.
const (
	ICVDynVar              ICV = omprt.ICVDynVar
	ICVRunSchedVar         ICV = omprt.ICVRunSchedVar
	ICVStacksizeVar        ICV = omprt.ICVStacksizeVar
	ICVCancelVar           ICV = omprt.ICVCancelVar
	ICVMaxTaskPriorityVar  ICV = omprt.ICVMaxTaskPriorityVar
	ICVDebugVar            ICV = omprt.ICVDebugVar
	ICVNthreadsVar         ICV = omprt.ICVNthreadsVar
	ICVDisplayAffinityVar  ICV = omprt.ICVDisplayAffinityVar
	ICVAffinityFormatVar   ICV = omprt.ICVAffinityFormatVar
	ICVDefaultDeviceVar    ICV = omprt.ICVDefaultDeviceVar
	ICVToolVar             ICV = omprt.ICVToolVar
	ICVToolLibrariesVar    ICV = omprt.ICVToolLibrariesVar
	ICVToolVerboseInitVar  ICV = omprt.ICVToolVerboseInitVar
	ICVLevelsVar           ICV = omprt.ICVLevelsVar
	ICVActiveLevelsVar     ICV = omprt.ICVActiveLevelsVar
	ICVThreadLimitVar      ICV = omprt.ICVThreadLimitVar
	ICVMaxActiveLevelsVar  ICV = omprt.ICVMaxActiveLevelsVar
	ICVBindVar             ICV = omprt.ICVBindVar
	ICVNumProcsVar         ICV = omprt.ICVNumProcsVar
	ICVOMPDNumProcsVar     ICV = omprt.ICVOMPDNumProcsVar
	ICVThreadNumVar        ICV = omprt.ICVThreadNumVar
	ICVOMPDThreadNumVar    ICV = omprt.ICVOMPDThreadNumVar
	ICVFinalTaskVar        ICV = omprt.ICVFinalTaskVar
	ICVOMPDFinalVar        ICV = omprt.ICVOMPDFinalVar
	ICVOMPDFinalTaskVar    ICV = omprt.ICVOMPDFinalTaskVar
	ICVImplicitTaskVar     ICV = omprt.ICVImplicitTaskVar
	ICVOMPDImplicitVar     ICV = omprt.ICVOMPDImplicitVar
	ICVOMPDImplicitTaskVar ICV = omprt.ICVOMPDImplicitTaskVar
	ICVTeamSizeVar         ICV = omprt.ICVTeamSizeVar
	ICVOMPDTeamSizeVar     ICV = omprt.ICVOMPDTeamSizeVar
	// ICVNteamsVar is nteams-var, what omp_get_max_teams returns: the
	// number of teams a teams construct without num_teams asks for (0:
	// the runtime chooses). Address-space scope (OpenMP's device scope).
	ICVNteamsVar ICV = omprt.ICVNteamsVar
	// ICVTeamsThreadLimitVar is teams-thread-limit-var, what
	// omp_get_teams_thread_limit returns: the thread limit of each team of
	// a teams construct without thread_limit (0: the runtime chooses).
	// Address-space scope (OpenMP's device scope).
	ICVTeamsThreadLimitVar ICV = omprt.ICVTeamsThreadLimitVar

	icvEnd ICV = omprt.ICVEnd // one past the last
)

// icvAliases maps other spellings of ICV names onto the ids: the OpenMP 5.2
// names of the OMPD-specific ICVs, and names without the "-var" suffix.
var icvAliases = map[string]ICV{
	"num-procs":         ICVNumProcsVar,
	"thread-num":        ICVThreadNumVar,
	"final-task":        ICVFinalTaskVar,
	"implicit-task":     ICVImplicitTaskVar,
	"team-size":         ICVTeamSizeVar,
	"ompd-final-task":   ICVOMPDFinalTaskVar,
	"ompd-implicit-var": ICVOMPDImplicitVar,
}

// Name returns the ICV's name, e.g. "nthreads-var".
func (i ICV) Name() string {
	if i <= 0 || i >= icvEnd {
		return ""
	}
	return omprt.ICVTable[i].Name
}

// Scope returns the kind of handle the ICV is read from.
func (i ICV) Scope() ScopeKind {
	if i <= 0 || i >= icvEnd {
		return 0
	}
	return ScopeKind(omprt.ICVTable[i].Scope)
}

// String returns the ICV's name, or ICV(n) for an unknown id.
func (i ICV) String() string {
	if n := i.Name(); n != "" {
		return n
	}
	return fmt.Sprintf("ICV(%d)", int(i))
}

// AllICVs enumerates every ICV this package knows, in id order (LLVM's
// libompd's ids). AddressSpace.ICVs gives those a runtime has
// (ompd_enumerate_icvs).
func AllICVs() iter.Seq[ICV] {
	return func(yield func(ICV) bool) {
		for i := ICV(1); i < icvEnd; i++ {
			if !yield(i) {
				return
			}
		}
	}
}

// ICVByName returns the ICV with the given name (or alias).
func ICVByName(name string) (ICV, bool) {
	for i := ICV(1); i < icvEnd; i++ {
		if omprt.ICVTable[i].Name == name {
			return i, true
		}
	}
	if i, ok := icvAliases[name]; ok {
		return i, true
	}
	if i, ok := icvAliases[strings.TrimSuffix(name, "-var")]; ok {
		return i, true
	}
	return 0, false
}

// ICVs enumerates the ICVs this address space's runtime has
// (ompd_enumerate_icvs): every ICV of AllICVs for LLVM's runtime (the
// teams ICVs from LLVM 12 on). Reading one the runtime does not have
// gives an error matching ErrUnsupported.
func (as *AddressSpace) ICVs() iter.Seq[ICV] {
	return func(yield func(ICV) bool) {
		for _, id := range as.rt.ICVs() {
			if !yield(ICV(id)) {
				return
			}
		}
	}
}

// Scope is a handle ICVs are read from: *AddressSpace, Thread, Parallel or
// Task (ompd_get_icv_from_scope / ompd_get_icv_string_from_scope).
type Scope interface {
	// ScopeKind says which ICVs the handle holds.
	ScopeKind() ScopeKind
	// ICV returns the integer value of the ICV. Text ICVs have none: an
	// error matching ErrIncompatible (OMPD's ompd_rc_incompatible).
	// List-valued ones give their first element, and with it an error
	// matching ErrIncomplete when the list has more elements (OMPD's
	// ompd_rc_incomplete).
	ICV(id ICV) (int64, error)
	// ICVString returns the value as text. List-valued ICVs give their
	// whole list, comma separated; where the runtime lets only part of
	// the list be read, that part comes with an error matching
	// ErrIncomplete.
	ICVString(id ICV) (string, error)
}

var (
	_ Scope = (*AddressSpace)(nil)
	_ Scope = Thread{}
	_ Scope = Parallel{}
	_ Scope = Task{}
)

// ScopeKind returns ScopeAddressSpace.
func (as *AddressSpace) ScopeKind() ScopeKind { return ScopeAddressSpace }

// ScopeKind returns ScopeThread.
func (t Thread) ScopeKind() ScopeKind { return ScopeThread }

// ScopeKind returns ScopeParallel.
func (p Parallel) ScopeKind() ScopeKind { return ScopeParallel }

// ScopeKind returns ScopeTask.
func (t Task) ScopeKind() ScopeKind { return ScopeTask }

func checkScope(id ICV, s ScopeKind) error {
	if id <= 0 || id >= icvEnd {
		return errorf(ErrBadInput, "unknown ICV id %d", int(id))
	}
	if id.Scope() != s {
		return errorf(ErrBadInput, "ICV %s has scope %v, not %v", id, id.Scope(), s)
	}
	return nil
}

// icv reads id at scope sc, after checking that id belongs there.
func (as *AddressSpace) icv(sc omprt.ScopeRef, id ICV) (omprt.Value, error) {
	if err := checkScope(id, ScopeKind(sc.Kind)); err != nil {
		return omprt.Value{}, err
	}
	if err := as.checkHandle(ScopeKind(sc.Kind)); err != nil {
		return omprt.Value{}, err
	}
	if !as.hasICV(id) {
		return omprt.Value{}, errorf(ErrUnsupported, "ICV %s: not among the ICVs read from %s (AddressSpace.ICVs)", id, as.rt.Info().Name)
	}
	return as.rt.ICV(sc, omprt.ICV(id))
}

// hasICV says whether the runtime has ICV id (is in as.ICVs).
func (as *AddressSpace) hasICV(id ICV) bool {
	as.icvsOnce.Do(func() {
		for _, i := range as.rt.ICVs() {
			if i > 0 && ICV(i) < icvEnd {
				as.icvs[i] = true
			}
		}
	})
	return as.icvs[id]
}

// icvInt is the integer value of an ICV, as Scope.ICV documents it.
func icvInt(v omprt.Value, err error, id ICV) (int64, error) {
	if errors.Is(err, ErrIncomplete) {
		// The runtime could read only the first element.
		return v.Int, err
	}
	if err != nil {
		return 0, err
	}
	if v.IsString {
		return 0, errorf(ErrIncompatible, "ICV %s is text, not an integer: use ICVString", id)
	}
	if len(v.List) > 1 {
		return v.Int, errorf(ErrIncomplete, "ICV %s is a list of %d elements, this is the first: use ICVString for all", id, len(v.List))
	}
	return v.Int, nil
}

// icvList is the whole list of a list-valued ICV, element by element. When
// the runtime could read only part of it (an error matching ErrIncomplete),
// that part comes with the error.
func icvList[E ~int](v omprt.Value, err error) ([]E, error) {
	if err != nil && !errors.Is(err, ErrIncomplete) {
		return nil, err
	}
	out := make([]E, len(v.List))
	for i, n := range v.List {
		out[i] = E(n)
	}
	return out, err
}

// icvText is the value of an ICV as text. When the runtime could read only
// part of it (an error matching ErrIncomplete), that part comes with the
// error.
func icvText(v omprt.Value, err error) (string, error) {
	if err != nil && !errors.Is(err, ErrIncomplete) {
		return "", err
	}
	if v.HasText {
		return v.Text, err
	}
	return strconv.FormatInt(v.Int, 10), err
}

func (as *AddressSpace) scope() omprt.ScopeRef { return omprt.ScopeRef{Kind: omprt.ScopeAddressSpace} }
func (t Thread) scope() omprt.ScopeRef {
	return omprt.ScopeRef{Kind: omprt.ScopeThread, Thread: t.ref}
}
func (p Parallel) scope() omprt.ScopeRef {
	return omprt.ScopeRef{Kind: omprt.ScopeParallel, Ref: p.ref}
}
func (t Task) scope() omprt.ScopeRef { return omprt.ScopeRef{Kind: omprt.ScopeTask, Ref: t.ref} }

// ICV returns an address-space ICV.
func (as *AddressSpace) ICV(id ICV) (int64, error) {
	v, err := as.icv(as.scope(), id)
	return icvInt(v, err, id)
}

// ICVString returns an address-space ICV as text.
func (as *AddressSpace) ICVString(id ICV) (string, error) { return icvText(as.icv(as.scope(), id)) }

// ICV returns a thread ICV (see Scope.ICV); nthreads-var gives its first
// element, with ErrIncomplete if the list has more.
func (t Thread) ICV(id ICV) (int64, error) {
	v, err := t.as.icv(t.scope(), id)
	return icvInt(v, err, id)
}

// ICVString returns a thread ICV as text; nthreads-var gives the whole
// list the thread's nested regions will use, e.g. "3,2,1". Where the
// runtime keeps the rest of a list where it cannot be read (libgomp
// without its debug file), the part read comes with an error matching
// ErrIncomplete.
func (t Thread) ICVString(id ICV) (string, error) { return icvText(t.as.icv(t.scope(), id)) }

// NthreadsList returns the thread's nthreads-var: the number of threads for
// the next parallel region it starts, then for each region nested below it.
// The first element is what omp_get_max_threads returns in the thread.
// When only the first element can be read (libgomp without its debug
// file), it comes with an error matching ErrIncomplete.
func (t Thread) NthreadsList() ([]int, error) {
	return icvList[int](t.as.icv(t.scope(), ICVNthreadsVar))
}

// MaxThreads returns the thread's omp_get_max_threads (ompd_get_max_threads):
// the first element of its nthreads-var.
func (t Thread) MaxThreads() (int, error) {
	v, err := t.as.icv(t.scope(), ICVNthreadsVar)
	if errors.Is(err, ErrIncomplete) {
		// The first element is all this asks for.
		err = nil
	}
	return int(v.Int), err
}

// Dynamic reports the thread's dyn-var (ompd_get_dynamic; omp_get_dynamic).
func (t Thread) Dynamic() (bool, error) {
	v, err := t.ICV(ICVDynVar)
	return v != 0, err
}

// ICV returns a parallel-region ICV.
func (p Parallel) ICV(id ICV) (int64, error) {
	v, err := p.as.icv(p.scope(), id)
	return icvInt(v, err, id)
}

// ICVString returns a parallel-region ICV as text.
func (p Parallel) ICVString(id ICV) (string, error) { return icvText(p.as.icv(p.scope(), id)) }

// ICV returns a task ICV. run-sched-var gives the schedule kind as
// omp_get_schedule reports it (an omp_sched_t value, with the monotonic
// bit); bind-var gives its first element, with ErrIncomplete if the list
// has more (see Scope.ICV).
func (t Task) ICV(id ICV) (int64, error) {
	v, err := t.as.icv(t.scope(), id)
	return icvInt(v, err, id)
}

// ICVString returns a task ICV as text. run-sched-var reads as LLVM's
// libompd writes it, "[monotonic:|nonmonotonic:]kind,chunk"; bind-var gives
// the whole list as numbers (omp_proc_bind_t values), e.g. "4,3".
func (t Task) ICVString(id ICV) (string, error) { return icvText(t.as.icv(t.scope(), id)) }

// ThreadLimit returns the task's thread-limit-var (ompd_get_thread_limit).
func (t Task) ThreadLimit() (int, error) {
	v, err := t.ICV(ICVThreadLimitVar)
	return int(v), err
}

// MaxActiveLevels returns the task's max-active-levels-var
// (ompd_get_max_active_levels).
func (t Task) MaxActiveLevels() (int, error) {
	v, err := t.ICV(ICVMaxActiveLevelsVar)
	return int(v), err
}

// Nested reports whether nested parallelism is enabled for the task
// (ompd_get_nested; omp_get_nested): max-active-levels-var above 1.
func (t Task) Nested() (bool, error) {
	v, err := t.MaxActiveLevels()
	return v > 1, err
}

// NumProcs returns the number of processors available to the program
// (ompd_get_num_procs; omp_get_num_procs).
func (as *AddressSpace) NumProcs() (int, error) {
	if err := as.check(); err != nil {
		return 0, err
	}
	return as.rt.NumProcs()
}

// ScheduleKind is a loop schedule kind (omp_sched_t, without the
// monotonic bit).
type ScheduleKind int

// Schedule kinds (omp_sched_t, plus LLVM's extensions trapezoidal and
// static_steal).
const (
	ScheduleStatic      ScheduleKind = 1   // static
	ScheduleDynamic     ScheduleKind = 2   // dynamic
	ScheduleGuided      ScheduleKind = 3   // guided
	ScheduleAuto        ScheduleKind = 4   // auto
	ScheduleTrapezoidal ScheduleKind = 101 // trapezoidal
	ScheduleStaticSteal ScheduleKind = 102 // static_steal
)

const monotonicBit = 0x80000000

// Schedule is a run-sched-var value, as omp_get_schedule reports it.
type Schedule struct {
	Kind         ScheduleKind // the schedule kind without modifiers
	Chunk        int          // 0 when unchunked
	Monotonic    bool         // the monotonic modifier is set
	Nonmonotonic bool         // the nonmonotonic modifier is set
	Raw          int          // the runtime's internal sched_type value
}

// String returns the schedule in OMP_SCHEDULE's form, chunk included,
// e.g. "monotonic:dynamic,7" or "static,0".
func (s Schedule) String() string {
	p := ""
	if s.Monotonic {
		p = "monotonic:"
	} else if s.Nonmonotonic {
		p = "nonmonotonic:"
	}
	return fmt.Sprintf("%s%v,%d", p, s.Kind, s.Chunk)
}

// Schedule returns the task's run-sched-var (ompd_get_schedule;
// omp_get_schedule in the task).
func (t Task) Schedule() (Schedule, error) {
	d, err := t.data()
	if err != nil {
		return Schedule{}, err
	}
	if d.ScheduleErr != nil {
		return Schedule{}, d.ScheduleErr
	}
	s := d.Schedule
	return Schedule{Kind: ScheduleKind(s.Kind), Chunk: s.Chunk, Monotonic: s.Monotonic, Nonmonotonic: s.Nonmonotonic, Raw: s.Raw}, nil
}

// ProcBind is a thread affinity policy (omp_proc_bind_t).
type ProcBind int

// Affinity policies (omp_proc_bind_t, plus LLVM's intel, where
// KMP_AFFINITY decides, and default, where nothing is set).
const (
	ProcBindFalse   ProcBind = 0 // false
	ProcBindTrue    ProcBind = 1 // true
	ProcBindPrimary ProcBind = 2 // primary
	ProcBindClose   ProcBind = 3 // close
	ProcBindSpread  ProcBind = 4 // spread
	ProcBindIntel   ProcBind = 5 // intel
	ProcBindDefault ProcBind = 6 // default
)

// ProcBind returns the task's bind-var (ompd_get_proc_bind): the policy for
// the next parallel region, then for each nested below it. The first
// element is what omp_get_proc_bind returns in the task. When only the
// first element can be read (libgomp without its debug file), it comes
// with an error matching ErrIncomplete.
func (t Task) ProcBind() ([]ProcBind, error) {
	return icvList[ProcBind](t.as.icv(t.scope(), ICVBindVar))
}
