package ompd

import (
	"fmt"
	"strconv"
	"strings"
)

// ScopeKind is the kind of handle an ICV is read from (ompd_scope_t).
type ScopeKind int

// ICV scopes (ompd_scope_t).
const (
	ScopeGlobal       ScopeKind = 1
	ScopeAddressSpace ScopeKind = 2
	ScopeThread       ScopeKind = 3
	ScopeParallel     ScopeKind = 4
	ScopeImplicitTask ScopeKind = 5
	ScopeTask         ScopeKind = 6
)

func (s ScopeKind) String() string {
	switch s {
	case ScopeGlobal:
		return "global"
	case ScopeAddressSpace:
		return "address_space"
	case ScopeThread:
		return "thread"
	case ScopeParallel:
		return "parallel"
	case ScopeImplicitTask:
		return "implicit_task"
	case ScopeTask:
		return "task"
	}
	return fmt.Sprintf("ScopeKind(%d)", int(s))
}

// ICV identifies an internal control variable (ompd_icv_id_t). The ids and
// names are those of LLVM's libompd 19, in its order, so ids can be passed
// between the two.
type ICV int

// The ICVs, in libompd's enumeration order.
const (
	ICVDynVar ICV = iota + 1
	ICVRunSchedVar
	ICVStacksizeVar
	ICVCancelVar
	ICVMaxTaskPriorityVar
	ICVDebugVar
	ICVNthreadsVar
	ICVDisplayAffinityVar
	ICVAffinityFormatVar
	ICVDefaultDeviceVar
	ICVToolVar
	ICVToolLibrariesVar
	ICVToolVerboseInitVar
	ICVLevelsVar
	ICVActiveLevelsVar
	ICVThreadLimitVar
	ICVMaxActiveLevelsVar
	ICVBindVar
	ICVNumProcsVar
	ICVOMPDNumProcsVar
	ICVThreadNumVar
	ICVOMPDThreadNumVar
	ICVFinalTaskVar
	ICVOMPDFinalVar
	ICVOMPDFinalTaskVar
	ICVImplicitTaskVar
	ICVOMPDImplicitVar
	ICVOMPDImplicitTaskVar
	ICVTeamSizeVar
	ICVOMPDTeamSizeVar
	icvEnd
)

var icvTable = [...]struct {
	name  string
	scope ScopeKind
}{
	ICVDynVar:              {"dyn-var", ScopeThread},
	ICVRunSchedVar:         {"run-sched-var", ScopeTask},
	ICVStacksizeVar:        {"stacksize-var", ScopeAddressSpace},
	ICVCancelVar:           {"cancel-var", ScopeAddressSpace},
	ICVMaxTaskPriorityVar:  {"max-task-priority-var", ScopeAddressSpace},
	ICVDebugVar:            {"debug-var", ScopeAddressSpace},
	ICVNthreadsVar:         {"nthreads-var", ScopeThread},
	ICVDisplayAffinityVar:  {"display-affinity-var", ScopeAddressSpace},
	ICVAffinityFormatVar:   {"affinity-format-var", ScopeAddressSpace},
	ICVDefaultDeviceVar:    {"default-device-var", ScopeThread},
	ICVToolVar:             {"tool-var", ScopeAddressSpace},
	ICVToolLibrariesVar:    {"tool-libraries-var", ScopeAddressSpace},
	ICVToolVerboseInitVar:  {"tool-verbose-init-var", ScopeAddressSpace},
	ICVLevelsVar:           {"levels-var", ScopeParallel},
	ICVActiveLevelsVar:     {"active-levels-var", ScopeParallel},
	ICVThreadLimitVar:      {"thread-limit-var", ScopeTask},
	ICVMaxActiveLevelsVar:  {"max-active-levels-var", ScopeTask},
	ICVBindVar:             {"bind-var", ScopeTask},
	ICVNumProcsVar:         {"num-procs-var", ScopeAddressSpace},
	ICVOMPDNumProcsVar:     {"ompd-num-procs-var", ScopeAddressSpace},
	ICVThreadNumVar:        {"thread-num-var", ScopeThread},
	ICVOMPDThreadNumVar:    {"ompd-thread-num-var", ScopeThread},
	ICVFinalTaskVar:        {"final-task-var", ScopeTask},
	ICVOMPDFinalVar:        {"ompd-final-var", ScopeTask},
	ICVOMPDFinalTaskVar:    {"ompd-final-task-var", ScopeTask},
	ICVImplicitTaskVar:     {"implicit-task-var", ScopeTask},
	ICVOMPDImplicitVar:     {"ompd-implicit-var", ScopeTask},
	ICVOMPDImplicitTaskVar: {"ompd-implicit-task-var", ScopeTask},
	ICVTeamSizeVar:         {"team-size-var", ScopeParallel},
	ICVOMPDTeamSizeVar:     {"ompd-team-size-var", ScopeParallel},
}

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
	return icvTable[i].name
}

// Scope returns the kind of handle the ICV is read from.
func (i ICV) Scope() ScopeKind {
	if i <= 0 || i >= icvEnd {
		return 0
	}
	return icvTable[i].scope
}

func (i ICV) String() string {
	if n := i.Name(); n != "" {
		return n
	}
	return fmt.Sprintf("ICV(%d)", int(i))
}

// ICVs enumerates every ICV (ompd_enumerate_icvs), in id order.
func ICVs() []ICV {
	out := make([]ICV, 0, icvEnd-1)
	for i := ICV(1); i < icvEnd; i++ {
		out = append(out, i)
	}
	return out
}

// ICVByName returns the ICV with the given name (or alias).
func ICVByName(name string) (ICV, bool) {
	for i := ICV(1); i < icvEnd; i++ {
		if icvTable[i].name == name {
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

// ICVs enumerates the ICVs this address space can read. Every ICV is
// available for LLVM's runtime; the method exists for OMPD's per-address-space
// enumeration.
func (as *AddressSpace) ICVs() []ICV { return ICVs() }

// Scope is a handle ICVs are read from: *AddressSpace, Thread, Parallel or
// Task (ompd_get_icv_from_scope / ompd_get_icv_string_from_scope).
type Scope interface {
	// ScopeKind says which ICVs the handle holds.
	ScopeKind() ScopeKind
	// ICV returns the integer value of the ICV. String-valued ICVs give
	// ErrUnsupported; list-valued ones give their first element.
	ICV(id ICV) (int64, error)
	// ICVString returns the value as text. List-valued ICVs give their
	// whole list, comma separated.
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

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// ICV returns an address-space ICV.
func (as *AddressSpace) ICV(id ICV) (int64, error) {
	if err := checkScope(id, ScopeAddressSpace); err != nil {
		return 0, err
	}
	ptr := uint64(as.mem.ptrSize)
	switch id {
	case ICVStacksizeVar:
		return as.global("__kmp_stksize", ptr, false)
	case ICVCancelVar:
		return as.global("__kmp_omp_cancellation", 4, true)
	case ICVMaxTaskPriorityVar:
		return as.global("__kmp_max_task_priority", 4, true)
	case ICVDebugVar:
		on, err := as.stateTracking()
		return boolInt(on), err
	case ICVDisplayAffinityVar:
		return as.global("__kmp_display_affinity", 4, true)
	case ICVToolVar:
		return as.global("__kmp_tool", 4, true)
	case ICVNumProcsVar, ICVOMPDNumProcsVar:
		return as.global("__kmp_avail_proc", 4, true)
	}
	return 0, errorf(ErrUnsupported, "ICV %s is a string: use ICVString", id)
}

// ICVString returns an address-space ICV as text.
func (as *AddressSpace) ICVString(id ICV) (string, error) {
	if err := checkScope(id, ScopeAddressSpace); err != nil {
		return "", err
	}
	switch id {
	case ICVAffinityFormatVar:
		return as.globalString("__kmp_affinity_format")
	case ICVToolLibrariesVar:
		return as.globalString("__kmp_tool_libraries")
	case ICVToolVerboseInitVar:
		return as.globalString("__kmp_tool_verbose_init")
	}
	v, err := as.ICV(id)
	return strconv.FormatInt(v, 10), err
}

// currentTaskView reads the thread's current task.
func (t Thread) currentTaskView() (view, error) {
	v, err := t.info()
	if err != nil {
		return view{}, err
	}
	td := v.f(t.as.l.thCurrentTask)
	if td == 0 {
		return view{}, errorf(ErrUnavailable, "%v has no current task", t)
	}
	return t.as.taskView(td)
}

// ICV returns a thread ICV.
func (t Thread) ICV(id ICV) (int64, error) {
	if err := checkScope(id, ScopeThread); err != nil {
		return 0, err
	}
	switch id {
	case ICVThreadNumVar, ICVOMPDThreadNumVar:
		n, err := t.Num()
		return int64(n), err
	}
	tv, err := t.currentTaskView()
	if err != nil {
		return 0, err
	}
	l := t.as.l
	switch id {
	case ICVDynVar:
		return boolInt(tv.f(l.icvDynamic) != 0), nil
	case ICVNthreadsVar:
		return tv.fi(l.icvNproc), nil
	case ICVDefaultDeviceVar:
		return tv.fi(l.icvDefaultDevice), nil
	}
	return 0, errorf(ErrUnsupported, "ICV %s", id)
}

// ICVString returns a thread ICV as text; nthreads-var gives the whole
// list the thread's nested regions will use, e.g. "3,2,1".
func (t Thread) ICVString(id ICV) (string, error) {
	if err := checkScope(id, ScopeThread); err != nil {
		return "", err
	}
	if id == ICVNthreadsVar {
		list, err := t.NthreadsList()
		if err != nil {
			return "", err
		}
		return joinInts(list), nil
	}
	v, err := t.ICV(id)
	return strconv.FormatInt(v, 10), err
}

func joinInts(list []int64) string {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = strconv.FormatInt(v, 10)
	}
	return strings.Join(parts, ",")
}

// nestedList reads the list an ICV continues with at levels below level:
// the runtime's __kmp_nested_nth or __kmp_nested_proc_bind (an array of
// int and a used count), elements level+1 .. used-1.
func (as *AddressSpace) nestedList(global string, arrF, usedF field, level int64) ([]int64, error) {
	addr, err := as.sym(global)
	if err != nil {
		return nil, wrapErr(ErrIncompatible, err, "runtime variable %s", global)
	}
	v, err := as.readView(addr, maxU(arrF.end(), usedF.end()), global)
	if err != nil {
		return nil, err
	}
	used := v.fi(usedF)
	if used < 0 || used > maxChain {
		return nil, errorf(ErrCorrupt, "%s.used %d out of range", global, used)
	}
	if level+1 >= used {
		return nil, nil
	}
	arr := v.f(arrF)
	n := used - (level + 1)
	isz := as.l.intSize
	av, err := as.readView(arr+uint64(level+1)*isz, uint64(n)*isz, global+" list")
	if err != nil {
		return nil, err
	}
	out := make([]int64, n)
	for i := range out {
		out[i] = av.int(uint64(i)*isz, isz)
	}
	return out, nil
}

// taskLevel returns the t_level of the team of the task in view tv.
func (as *AddressSpace) taskTeamLevel(tv view) (int64, error) {
	team := tv.f(as.l.tdTeam)
	if team == 0 {
		return 0, errorf(ErrCorrupt, "task has no team")
	}
	ti, err := as.team(team)
	if err != nil {
		return 0, err
	}
	return int64(ti.level), nil
}

// NthreadsList returns the thread's nthreads-var: the number of threads for
// the next parallel region it starts, then for each region nested below it.
// The first element is what omp_get_max_threads returns in the thread.
func (t Thread) NthreadsList() ([]int64, error) {
	tv, err := t.currentTaskView()
	if err != nil {
		return nil, err
	}
	l := t.as.l
	level, err := t.as.taskTeamLevel(tv)
	if err != nil {
		return nil, err
	}
	rest, err := t.as.nestedList("__kmp_nested_nth", l.nestedNth, l.nestedNthUsed, level)
	if err != nil {
		return nil, err
	}
	return append([]int64{tv.fi(l.icvNproc)}, rest...), nil
}

// MaxThreads returns the thread's omp_get_max_threads (ompd_get_max_threads):
// the first element of its nthreads-var.
func (t Thread) MaxThreads() (int, error) {
	v, err := t.ICV(ICVNthreadsVar)
	return int(v), err
}

// Dynamic reports the thread's dyn-var (ompd_get_dynamic; omp_get_dynamic).
func (t Thread) Dynamic() (bool, error) {
	v, err := t.ICV(ICVDynVar)
	return v != 0, err
}

// ICV returns a parallel-region ICV.
func (p Parallel) ICV(id ICV) (int64, error) {
	if err := checkScope(id, ScopeParallel); err != nil {
		return 0, err
	}
	var n int
	var err error
	switch id {
	case ICVLevelsVar:
		n, err = p.Level()
	case ICVActiveLevelsVar:
		n, err = p.ActiveLevel()
	default: // team size
		n, err = p.NumThreads()
	}
	return int64(n), err
}

// ICVString returns a parallel-region ICV as text.
func (p Parallel) ICVString(id ICV) (string, error) {
	v, err := p.ICV(id)
	return strconv.FormatInt(v, 10), err
}

// ICV returns a task ICV. run-sched-var gives the schedule kind as
// omp_get_schedule reports it (an omp_sched_t value, with the monotonic
// bit); bind-var gives its first element.
func (t Task) ICV(id ICV) (int64, error) {
	if err := checkScope(id, ScopeTask); err != nil {
		return 0, err
	}
	ti, err := t.resolve()
	if err != nil {
		return 0, err
	}
	l := t.as.l
	switch id {
	case ICVRunSchedVar:
		s := decodeSchedule(ti.v.fi(l.icvSchedType), ti.v.fi(l.icvSchedChunk))
		k := int64(s.Kind)
		if s.Monotonic {
			k |= int64(monotonicBit)
		}
		return k, nil
	case ICVThreadLimitVar:
		return ti.v.fi(l.icvThreadLimit), nil
	case ICVMaxActiveLevelsVar:
		return ti.v.fi(l.icvMaxActive), nil
	case ICVBindVar:
		return ti.v.fi(l.icvProcBind), nil
	case ICVFinalTaskVar, ICVOMPDFinalVar, ICVOMPDFinalTaskVar:
		return boolInt(t.as.flag(ti.v, l.flagFinal)), nil
	default: // implicit-task-var and its aliases
		return boolInt(ti.implicit), nil
	}
}

// ICVString returns a task ICV as text. run-sched-var reads as LLVM's
// libompd writes it, "[monotonic:|nonmonotonic:]kind,chunk"; bind-var gives
// the whole list as numbers (omp_proc_bind_t values), e.g. "4,3".
func (t Task) ICVString(id ICV) (string, error) {
	if err := checkScope(id, ScopeTask); err != nil {
		return "", err
	}
	switch id {
	case ICVRunSchedVar:
		s, err := t.Schedule()
		if err != nil {
			return "", err
		}
		return s.libompdString(), nil
	case ICVBindVar:
		list, err := t.procBindList()
		if err != nil {
			return "", err
		}
		return joinInts(list), nil
	}
	v, err := t.ICV(id)
	return strconv.FormatInt(v, 10), err
}

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
	v, err := as.ICV(ICVNumProcsVar)
	return int(v), err
}

// ScheduleKind is a loop schedule kind (omp_sched_t, without the
// monotonic bit).
type ScheduleKind int

// Schedule kinds (omp_sched_t, plus LLVM's extensions).
const (
	ScheduleStatic      ScheduleKind = 1
	ScheduleDynamic     ScheduleKind = 2
	ScheduleGuided      ScheduleKind = 3
	ScheduleAuto        ScheduleKind = 4
	ScheduleTrapezoidal ScheduleKind = 101 // LLVM extension
	ScheduleStaticSteal ScheduleKind = 102 // LLVM extension
)

const monotonicBit = 0x80000000

func (k ScheduleKind) String() string {
	switch k {
	case ScheduleStatic:
		return "static"
	case ScheduleDynamic:
		return "dynamic"
	case ScheduleGuided:
		return "guided"
	case ScheduleAuto:
		return "auto"
	case ScheduleTrapezoidal:
		return "trapezoidal"
	case ScheduleStaticSteal:
		return "static_steal"
	}
	return fmt.Sprintf("ScheduleKind(%d)", int(k))
}

// Schedule is a run-sched-var value, as omp_get_schedule reports it.
type Schedule struct {
	Kind         ScheduleKind
	Chunk        int  // 0 when unchunked
	Monotonic    bool // the monotonic modifier is set
	Nonmonotonic bool // the nonmonotonic modifier is set
	Raw          int  // the runtime's internal sched_type value
}

func (s Schedule) String() string {
	p := ""
	if s.Monotonic {
		p = "monotonic:"
	} else if s.Nonmonotonic {
		p = "nonmonotonic:"
	}
	return fmt.Sprintf("%s%v,%d", p, s.Kind, s.Chunk)
}

func (s Schedule) libompdString() string {
	if s.Kind == 0 {
		return ""
	}
	return s.String()
}

// Runtime sched_type values (kmp.h).
const (
	kmpSchStaticChunked           = 33
	kmpSchStatic                  = 34
	kmpSchDynamicChunked          = 35
	kmpSchGuidedChunked           = 36
	kmpSchAuto                    = 38
	kmpSchTrapezoidal             = 39
	kmpSchStaticGreedy            = 40
	kmpSchStaticBalanced          = 41
	kmpSchGuidedIterativeChunked  = 42
	kmpSchGuidedAnalyticalChunked = 43
	kmpSchStaticSteal             = 44
	kmpSchModifierMonotonic       = 1 << 29
	kmpSchModifierNonmonotonic    = 1 << 30
)

// decodeSchedule maps the runtime's sched_type and chunk to what
// omp_get_schedule reports (kmp_runtime.cpp, __kmp_get_schedule).
func decodeSchedule(raw, chunk int64) Schedule {
	s := Schedule{Raw: int(raw), Chunk: int(chunk),
		Monotonic:    raw&kmpSchModifierMonotonic != 0,
		Nonmonotonic: raw&kmpSchModifierNonmonotonic != 0}
	switch raw &^ (kmpSchModifierMonotonic | kmpSchModifierNonmonotonic) {
	case kmpSchStatic, kmpSchStaticGreedy, kmpSchStaticBalanced:
		s.Kind, s.Chunk = ScheduleStatic, 0
	case kmpSchStaticChunked:
		s.Kind = ScheduleStatic
	case kmpSchDynamicChunked:
		s.Kind = ScheduleDynamic
	case kmpSchGuidedChunked, kmpSchGuidedIterativeChunked, kmpSchGuidedAnalyticalChunked:
		s.Kind = ScheduleGuided
	case kmpSchAuto:
		s.Kind = ScheduleAuto
	case kmpSchTrapezoidal:
		s.Kind = ScheduleTrapezoidal
	case kmpSchStaticSteal:
		s.Kind = ScheduleStaticSteal
	default:
		s.Kind, s.Chunk = 0, 0
	}
	return s
}

// Schedule returns the task's run-sched-var (ompd_get_schedule;
// omp_get_schedule in the task).
func (t Task) Schedule() (Schedule, error) {
	ti, err := t.resolve()
	if err != nil {
		return Schedule{}, err
	}
	l := t.as.l
	return decodeSchedule(ti.v.fi(l.icvSchedType), ti.v.fi(l.icvSchedChunk)), nil
}

// ProcBind is a thread affinity policy (omp_proc_bind_t).
type ProcBind int

// Affinity policies (omp_proc_bind_t, plus LLVM's).
const (
	ProcBindFalse   ProcBind = 0
	ProcBindTrue    ProcBind = 1
	ProcBindPrimary ProcBind = 2
	ProcBindClose   ProcBind = 3
	ProcBindSpread  ProcBind = 4
	ProcBindIntel   ProcBind = 5 // LLVM: KMP_AFFINITY decides
	ProcBindDefault ProcBind = 6 // LLVM: not set
)

func (b ProcBind) String() string {
	switch b {
	case ProcBindFalse:
		return "false"
	case ProcBindTrue:
		return "true"
	case ProcBindPrimary:
		return "primary"
	case ProcBindClose:
		return "close"
	case ProcBindSpread:
		return "spread"
	case ProcBindIntel:
		return "intel"
	case ProcBindDefault:
		return "default"
	}
	return fmt.Sprintf("ProcBind(%d)", int(b))
}

func (t Task) procBindList() ([]int64, error) {
	ti, err := t.resolve()
	if err != nil {
		return nil, err
	}
	l := t.as.l
	level, err := t.as.taskTeamLevel(ti.v)
	if err != nil {
		return nil, err
	}
	rest, err := t.as.nestedList("__kmp_nested_proc_bind", l.nestedBind, l.nestedBindUsed, level)
	if err != nil {
		return nil, err
	}
	return append([]int64{ti.v.fi(l.icvProcBind)}, rest...), nil
}

// ProcBind returns the task's bind-var (ompd_get_proc_bind): the policy for
// the next parallel region, then for each nested below it. The first
// element is what omp_get_proc_bind returns in the task.
func (t Task) ProcBind() ([]ProcBind, error) {
	list, err := t.procBindList()
	if err != nil {
		return nil, err
	}
	out := make([]ProcBind, len(list))
	for i, v := range list {
		out[i] = ProcBind(v)
	}
	return out, nil
}
