package kmp

import (
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// icvs is every ICV: LLVM's runtime has them all (the teams ICVs from
// LLVM 12 on).
var icvs = func() []omprt.ICV {
	out := make([]omprt.ICV, 0, omprt.ICVEnd-1)
	for i := omprt.ICV(1); i < omprt.ICVEnd; i++ {
		out = append(out, i)
	}
	return out
}()

// teamsICVs are OpenMP 5.1's teams ICVs and the runtime variables that
// hold them (kmp_global.cpp; set from OMP_NUM_TEAMS and
// OMP_TEAMS_THREAD_LIMIT, or omp_set_num_teams and
// omp_set_teams_thread_limit; 0 lets the runtime choose).
var teamsICVs = map[omprt.ICV]string{
	omprt.ICVNteamsVar:           "__kmp_nteams",
	omprt.ICVTeamsThreadLimitVar: "__kmp_teams_thread_limit",
}

// ICVs lists the ICVs: all of them, but the teams ICVs only if the
// runtime has their variables (LLVM 12 and later).
func (rt *Runtime) ICVs() []omprt.ICV {
	out := make([]omprt.ICV, 0, len(icvs))
	for _, id := range icvs {
		if name, ok := teamsICVs[id]; ok {
			if _, err := rt.sym(name); err != nil {
				continue
			}
		}
		out = append(out, id)
	}
	return out
}

func intValue(v int64, err error) (omprt.Value, error) {
	if err != nil {
		return omprt.Value{}, err
	}
	return omprt.Value{Int: v}, nil
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// listMemo is the value of a list ICV made last: the threads of a team
// mostly share nthreads-var and bind-var, and their lists and texts are
// made once for all of them (the values handed out must not be modified).
type listMemo struct {
	first int64
	rest  []int64 // a tail of the runtime's nested list, shared by the stop
	v     omprt.Value
}

// memoList is listValue(first, rest) through the memo at m.
func memoList(m *atomic.Pointer[listMemo], first int64, rest []int64) omprt.Value {
	if l := m.Load(); l != nil && l.first == first && len(l.rest) == len(rest) && (len(rest) == 0 || &l.rest[0] == &rest[0]) {
		return l.v
	}
	l := &listMemo{first, rest, listValue(first, rest)}
	m.Store(l)
	return l.v
}

// listValue is the list ICV first, rest...: one allocation for the list,
// one for its text.
func listValue(first int64, rest []int64) omprt.Value {
	list := make([]int64, 1+len(rest))
	list[0] = first
	copy(list[1:], rest)
	var buf [64]byte
	return omprt.Value{Int: first, List: list, Text: string(joinInts(buf[:0], list)), HasText: true}
}

func joinInts(b []byte, list []int64) []byte {
	for i, v := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, v, 10)
	}
	return b
}

// ICV reads one ICV at a scope.
func (rt *Runtime) ICV(sc omprt.ScopeRef, id omprt.ICV) (omprt.Value, error) {
	return rt.stop().icv(sc, id)
}

// ICVsAt reads several ICVs of one scope (omprt.ICVBatch); a thread's or
// task's record is looked up once for all.
func (rt *Runtime) ICVsAt(sc omprt.ScopeRef, ids []omprt.ICV, vals []omprt.Value, errs []error) {
	s := rt.stop()
	switch sc.Kind {
	case omprt.ScopeTask:
		rec := s.taskRec(sc.Ref)
		for i, id := range ids {
			vals[i], errs[i] = s.taskRecICV(rec, sc.Ref, id)
		}
	case omprt.ScopeThread:
		rec, err := s.thread(sc.Thread)
		for i, id := range ids {
			vals[i], errs[i] = s.threadRecICV(rec, err, id)
		}
	default:
		for i, id := range ids {
			vals[i], errs[i] = s.icv(sc, id)
		}
	}
}

func (s *stop) icv(sc omprt.ScopeRef, id omprt.ICV) (omprt.Value, error) {
	switch sc.Kind {
	case omprt.ScopeAddressSpace:
		return s.addressSpaceICV(id)
	case omprt.ScopeThread:
		return s.threadICV(sc.Thread, id)
	case omprt.ScopeParallel:
		rec := s.region(sc.Ref)
		if rec.err != nil {
			return omprt.Value{}, rec.err
		}
		switch id {
		case omprt.ICVLevelsVar:
			return omprt.Value{Int: int64(sc.Ref.Level)}, nil
		case omprt.ICVActiveLevelsVar:
			return omprt.Value{Int: int64(rec.data.ActiveLevel)}, nil
		}
		return omprt.Value{Int: int64(rec.data.TeamSize)}, nil
	case omprt.ScopeTask:
		return s.taskICV(sc.Ref, id)
	}
	return omprt.Value{}, errorf(omprt.ErrBadInput, "ICV scope %d", int(sc.Kind))
}

func (s *stop) addressSpaceICV(id omprt.ICV) (omprt.Value, error) {
	rt := s.rt
	str := func(name string) (omprt.Value, error) {
		v, err := rt.globalString(name)
		return omprt.Value{Text: v, HasText: true, IsString: true}, err
	}
	switch id {
	case omprt.ICVStacksizeVar:
		return intValue(rt.global("__kmp_stksize", uint64(rt.mem.PtrSize), false))
	case omprt.ICVCancelVar:
		return intValue(rt.global("__kmp_omp_cancellation", 4, true))
	case omprt.ICVMaxTaskPriorityVar:
		return intValue(rt.global("__kmp_max_task_priority", 4, true))
	case omprt.ICVDebugVar:
		on, err := s.stateTracking()
		return intValue(boolInt(on), err)
	case omprt.ICVDisplayAffinityVar:
		return intValue(rt.global("__kmp_display_affinity", 4, true))
	case omprt.ICVToolVar:
		return intValue(rt.global("__kmp_tool", 4, true))
	case omprt.ICVNumProcsVar, omprt.ICVOMPDNumProcsVar:
		n, err := rt.NumProcs()
		return intValue(int64(n), err)
	case omprt.ICVNteamsVar, omprt.ICVTeamsThreadLimitVar:
		name := teamsICVs[id]
		if _, err := rt.sym(name); errors.Is(err, target.ErrNotFound) {
			return omprt.Value{}, wrapErr(omprt.ErrUnsupported, err, "%s: this runtime has no %s (LLVM 12 and later have it)", omprt.ICVTable[id].Name, name)
		}
		return intValue(rt.global(name, 4, true))
	case omprt.ICVAffinityFormatVar:
		return str("__kmp_affinity_format")
	case omprt.ICVToolLibrariesVar:
		return str("__kmp_tool_libraries")
	case omprt.ICVToolVerboseInitVar:
		return str("__kmp_tool_verbose_init")
	}
	return omprt.Value{}, errorf(omprt.ErrUnsupported, "ICV %d", int(id))
}

// icvsUnset returns why a task's ICVs (td_icvs) are not set yet, or nil.
// The runtime copies the ICVs into a new worker's implicit task at its
// first fork barrier; before that they are zero, and nthreads-var, at
// least 1 in every set of ICVs, is 0.
func (s *stop) icvsUnset(v view, name omprt.TaskName) error {
	if v.FI(s.rt.l.icvNproc) <= 0 {
		return errorf(omprt.ErrUnavailable, "%v: its ICVs are not set yet (its thread is starting: before its first fork barrier)", name)
	}
	return nil
}

// currentTask returns the record of the current task of the thread
// whose record, or why there is none, is rec, err.
func currentTask(rec *threadRec, err error) (*taskRec, error) {
	switch {
	case err != nil:
		return nil, err
	case rec.data.Err != nil:
		return nil, rec.data.Err
	case rec.data.TaskErr != nil:
		return nil, rec.data.TaskErr
	case rec.task.err != nil:
		return nil, rec.task.err
	}
	return rec.task, nil
}

func (s *stop) threadICV(th omprt.ThreadRef, id omprt.ICV) (omprt.Value, error) {
	rec, err := s.thread(th)
	return s.threadRecICV(rec, err, id)
}

// threadRecICV is threadICV of the thread whose record, or why there is
// none, is th, err.
func (s *stop) threadRecICV(th *threadRec, err error, id omprt.ICV) (omprt.Value, error) {
	if id == omprt.ICVThreadNumVar || id == omprt.ICVOMPDThreadNumVar {
		switch {
		case err != nil:
			return omprt.Value{}, err
		case th.data.Err != nil:
			return omprt.Value{}, th.data.Err
		}
		return intValue(int64(th.data.Num), th.data.NumErr)
	}
	rec, err := currentTask(th, err)
	if err != nil {
		return omprt.Value{}, err
	}
	if rec.icvsErr != nil {
		return omprt.Value{}, rec.icvsErr
	}
	l := s.rt.l
	v := rec.raw.v
	switch id {
	case omprt.ICVDynVar:
		return omprt.Value{Int: boolInt(v.F(l.icvDynamic) != 0)}, nil
	case omprt.ICVNthreadsVar:
		if rec.teamErr != nil {
			return omprt.Value{}, rec.teamErr
		}
		rest, err := s.nested(&s.nth, "__kmp_nested_nth", l.nestedNth, l.nestedNthUsed, int64(rec.teamLevel))
		if err != nil {
			return omprt.Value{}, err
		}
		if r := rec.data.Ref; r.Level >= 0 && len(rest) > 0 && s.innerLevels(r) {
			// A serial team's levels share one kmp_taskdata_t, whose
			// nthreads-var each nested level sets from the list as it
			// begins (__kmp_serialized_parallel) and none restores.
			return omprt.Value{}, errorf(omprt.ErrUnavailable, "%v: its serial team keeps one nthreads-var for all its levels, which a nested level has set from OMP_NUM_THREADS", omprt.TaskName(r))
		}
		return memoList(&s.nthMemo, v.FI(l.icvNproc), rest), nil
	case omprt.ICVDefaultDeviceVar:
		return omprt.Value{Int: v.FI(l.icvDefaultDevice)}, nil
	}
	return omprt.Value{}, errorf(omprt.ErrUnsupported, "ICV %d", int(id))
}

func (s *stop) taskICV(r omprt.Ref, id omprt.ICV) (omprt.Value, error) {
	return s.taskRecICV(s.taskRec(r), r, id)
}

// taskRecICV is taskICV of the task r whose record is rec.
func (s *stop) taskRecICV(rec *taskRec, r omprt.Ref, id omprt.ICV) (omprt.Value, error) {
	if rec.err != nil {
		return omprt.Value{}, rec.err
	}
	l := s.rt.l
	v := rec.raw.v
	switch id {
	case omprt.ICVRunSchedVar, omprt.ICVThreadLimitVar, omprt.ICVMaxActiveLevelsVar, omprt.ICVBindVar:
		if rec.icvsErr != nil {
			return omprt.Value{}, rec.icvsErr
		}
	}
	switch id {
	case omprt.ICVRunSchedVar:
		sc := rec.data.Schedule
		k := int64(sc.Kind)
		if sc.Monotonic {
			k |= monotonicBit
		}
		return omprt.Value{Int: k, Text: s.scheduleText(sc), HasText: true}, nil
	case omprt.ICVThreadLimitVar:
		return omprt.Value{Int: v.FI(l.icvThreadLimit)}, nil
	case omprt.ICVMaxActiveLevelsVar:
		return omprt.Value{Int: v.FI(l.icvMaxActive)}, nil
	case omprt.ICVBindVar:
		if rec.teamErr != nil {
			return omprt.Value{}, rec.teamErr
		}
		rest, err := s.nested(&s.bind, "__kmp_nested_proc_bind", l.nestedBind, l.nestedBindUsed, int64(rec.teamLevel))
		if err != nil {
			return omprt.Value{}, err
		}
		return memoList(&s.bindMemo, v.FI(l.icvProcBind), rest), nil
	case omprt.ICVFinalTaskVar, omprt.ICVOMPDFinalVar, omprt.ICVOMPDFinalTaskVar:
		return omprt.Value{Int: boolInt(rec.data.InFinal)}, nil
	case omprt.ICVImplicitTaskVar, omprt.ICVOMPDImplicitVar, omprt.ICVOMPDImplicitTaskVar:
		return omprt.Value{Int: boolInt(r.Level >= 0)}, nil
	}
	return omprt.Value{}, errorf(omprt.ErrUnsupported, "ICV %d", int(id))
}

// innerLevels reports whether the implicit task r is at an enclosing
// level of its team: a serial team that stands for a nested level too
// (at the breakpoint of that level's begin, r is the level that
// encountered it).
func (s *stop) innerLevels(r omprt.Ref) bool {
	t := s.task(r.Addr)
	if t.err != nil || t.team == 0 {
		return false
	}
	tm := s.team(t.team)
	if tm.err != nil || tm.isTeamsBody(r) {
		return false
	}
	return r.Level < tm.level
}

// nested returns the elements level+1 .. used-1 of the list an ICV
// continues with below level: the runtime's __kmp_nested_nth or
// __kmp_nested_proc_bind (an array of int and a used count), read once
// per stop.
func (s *stop) nested(o *once[[]int64], global string, arrF, usedF field, level int64) ([]int64, error) {
	all, err := o.get(func() ([]int64, error) { return s.readNested(global, arrF, usedF) })
	if err != nil {
		return nil, err
	}
	if level+1 >= int64(len(all)) {
		return nil, nil
	}
	return all[level+1:], nil
}

func (s *stop) readNested(global string, arrF, usedF field) ([]int64, error) {
	rt := s.rt
	addr, err := rt.sym(global)
	if err != nil {
		return nil, wrapErr(omprt.ErrIncompatible, err, "runtime variable %s", global)
	}
	v, err := rt.view(addr, maxU(arrF.End(), usedF.End()), global)
	if err != nil {
		return nil, err
	}
	used := v.FI(usedF)
	if used < 0 || used > maxChain {
		return nil, errorf(omprt.ErrCorrupt, "%s.used %d out of range", global, used)
	}
	if used == 0 {
		return nil, nil
	}
	isz := rt.l.intSize
	av, err := rt.view(v.F(arrF), uint64(used)*isz, global+" list")
	if err != nil {
		return nil, err
	}
	out := make([]int64, used)
	for i := range out {
		out[i] = av.Int(uint64(i)*isz, isz)
	}
	return out, nil
}

const monotonicBit = 0x80000000

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

// Schedule kinds as omp_get_schedule reports them (omp_sched_t and LLVM's
// extensions).
const (
	schedStatic      = 1
	schedDynamic     = 2
	schedGuided      = 3
	schedAuto        = 4
	schedTrapezoidal = 101
	schedStaticSteal = 102
)

var schedNames = omprt.ScheduleNames

// decodeSchedule maps the runtime's sched_type and chunk to what
// omp_get_schedule reports (kmp_runtime.cpp, __kmp_get_schedule).
func decodeSchedule(raw, chunk int64) omprt.Schedule {
	s := omprt.Schedule{Raw: int(raw), Chunk: int(chunk),
		Monotonic:    raw&kmpSchModifierMonotonic != 0,
		Nonmonotonic: raw&kmpSchModifierNonmonotonic != 0}
	switch raw &^ (kmpSchModifierMonotonic | kmpSchModifierNonmonotonic) {
	case kmpSchStatic, kmpSchStaticGreedy, kmpSchStaticBalanced:
		s.Kind, s.Chunk = schedStatic, 0
	case kmpSchStaticChunked:
		s.Kind = schedStatic
	case kmpSchDynamicChunked:
		s.Kind = schedDynamic
	case kmpSchGuidedChunked, kmpSchGuidedIterativeChunked, kmpSchGuidedAnalyticalChunked:
		s.Kind = schedGuided
	case kmpSchAuto:
		s.Kind = schedAuto
	case kmpSchTrapezoidal:
		s.Kind = schedTrapezoidal
	case kmpSchStaticSteal:
		s.Kind = schedStaticSteal
	default:
		s.Kind, s.Chunk = 0, 0
	}
	return s
}

// scheduleText is libompdSchedule, made once for the schedule asked for
// last: a stop's tasks mostly share one.
func (s *stop) scheduleText(sc omprt.Schedule) string {
	if t := s.sched.Load(); t != nil && t.sc == sc {
		return t.text
	}
	t := &schedText{sc, libompdSchedule(sc)}
	s.sched.Store(t)
	return t.text
}

type schedText struct {
	sc   omprt.Schedule
	text string
}

// libompdSchedule is run-sched-var as LLVM's libompd writes it: empty for
// an unknown kind.
func libompdSchedule(s omprt.Schedule) string {
	if s.Kind == 0 {
		return ""
	}
	return s.String()
}

// ICVsAtKeyed reads several ICVs of one scope (omprt.ICVKeyed): at task
// scope, a task's ICVs are made of the bytes of its kmp_internal_control_t
// that hold them, the level its ICV lists continue from and its final and
// implicit flags (taskRecICV), at one stop; two tasks with the same have
// the same ICVs. Other scopes have no key.
func (rt *Runtime) ICVsAtKeyed(sc omprt.ScopeRef, ids []omprt.ICV, vals []omprt.Value, errs []error, key *omprt.ICVKey) bool {
	if sc.Kind != omprt.ScopeTask {
		*key = omprt.ICVKey{}
		rt.ICVsAt(sc, ids, vals, errs)
		return false
	}
	s := rt.stop()
	rec := s.taskRec(sc.Ref)
	var k omprt.ICVKey
	if s.taskICVKey(rec, sc.Ref, &k) && k == *key {
		return true
	}
	for i, id := range ids {
		vals[i], errs[i] = s.taskRecICV(rec, sc.Ref, id)
	}
	*key = k
	return false
}

// taskICVKey sets *k to the key of the ICVs of task r, whose record is
// rec; false (and the zero key) when the task's ICVs cannot be read whole
// (taskRecICV answers with the record's own errors then).
func (s *stop) taskICVKey(rec *taskRec, r omprt.Ref, k *omprt.ICVKey) bool {
	lo, hi := s.rt.l.icvLo, s.rt.l.icvHi
	if rec.err != nil || rec.icvsErr != nil || rec.teamErr != nil || hi-lo > uint64(len(k.Raw)) || hi > uint64(len(rec.raw.v.B)) {
		return false
	}
	copy(k.Raw[:], rec.raw.v.B[lo:hi])
	k.Stop, k.Level = s.id, rec.teamLevel
	if rec.data.InFinal {
		k.Flags |= 1
	}
	if r.Level >= 0 {
		k.Flags |= 2
	}
	return true
}
