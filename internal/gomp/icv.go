package gomp

import (
	"errors"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// icvs are the ICVs libgomp has, among omprt's ids.
var icvs = []omprt.ICV{
	omprt.ICVDynVar, omprt.ICVRunSchedVar, omprt.ICVStacksizeVar, omprt.ICVCancelVar,
	omprt.ICVMaxTaskPriorityVar, omprt.ICVNthreadsVar,
	omprt.ICVDisplayAffinityVar, omprt.ICVAffinityFormatVar,
	omprt.ICVDefaultDeviceVar, omprt.ICVLevelsVar, omprt.ICVActiveLevelsVar,
	omprt.ICVThreadLimitVar, omprt.ICVMaxActiveLevelsVar, omprt.ICVBindVar,
	omprt.ICVNumProcsVar, omprt.ICVThreadNumVar, omprt.ICVFinalTaskVar,
	omprt.ICVImplicitTaskVar, omprt.ICVTeamSizeVar,
	omprt.ICVNteamsVar, omprt.ICVTeamsThreadLimitVar,
}

// teamsICVs are OpenMP 5.1's teams ICVs and the hidden globals libgomp
// keeps them in (GCC 12 and later, env.c: set from OMP_NUM_TEAMS and
// OMP_TEAMS_THREAD_LIMIT or by omp_set_num_teams and
// omp_set_teams_thread_limit, returned as they are by omp_get_max_teams
// and omp_get_teams_thread_limit; 0 lets the runtime choose).
var teamsICVs = map[omprt.ICV]string{
	omprt.ICVNteamsVar:           "gomp_nteams_var",
	omprt.ICVTeamsThreadLimitVar: "gomp_teams_thread_limit_var",
}

// ICVs lists the ICVs libgomp has. The teams ICVs are left out when the
// library's debug information shows it has no variables for them (before
// GCC 12); without debug information they are listed (every libgomp of
// the known layouts has them) and read as ErrUnavailable.
func (r *Runtime) ICVs() []omprt.ICV {
	out := make([]omprt.ICV, 0, len(icvs))
	for _, id := range icvs {
		if name, ok := teamsICVs[id]; ok && r.lacks(name) {
			continue
		}
		out = append(out, id)
	}
	return out
}

// lacks says whether the library's symbols, read from its debug
// information, show it has no global name.
func (r *Runtime) lacks(name string) bool {
	if r.source == omprt.LayoutKnownTable {
		return false
	}
	_, err := r.t.LookupSymbol(name)
	return errors.Is(err, target.ErrNotFound)
}

// ICV reads one ICV at a scope.
func (r *Runtime) ICV(s omprt.ScopeRef, id omprt.ICV) (omprt.Value, error) {
	switch s.Kind {
	case omprt.ScopeAddressSpace, omprt.ScopeGlobal:
		return r.globalValue(id)
	case omprt.ScopeThread:
		d, err := r.Thread(s.Thread)
		if err != nil {
			return omprt.Value{}, err
		}
		if d.Err != nil {
			return omprt.Value{}, d.Err
		}
		if id == omprt.ICVThreadNumVar {
			if d.NumErr != nil {
				return omprt.Value{}, d.NumErr
			}
			return omprt.Value{Int: int64(d.Num)}, nil
		}
		if d.TaskErr != nil {
			return omprt.Value{}, d.TaskErr
		}
		return r.taskValue(d.Task, id)
	case omprt.ScopeParallel:
		reg, err := r.Region(s.Ref)
		if err != nil {
			return omprt.Value{}, err
		}
		switch id {
		case omprt.ICVLevelsVar:
			return omprt.Value{Int: int64(reg.Ref.Level)}, nil
		case omprt.ICVActiveLevelsVar:
			return omprt.Value{Int: int64(reg.ActiveLevel)}, nil
		case omprt.ICVTeamSizeVar:
			return omprt.Value{Int: int64(reg.TeamSize)}, nil
		}
	case omprt.ScopeTask, omprt.ScopeImplicitTask:
		return r.taskValue(s.Ref, id)
	}
	return omprt.Value{}, omprt.Errorf(omprt.ErrBadInput, "gomp: ICV %d at scope %d", id, s.Kind)
}

// taskValue reads an ICV of a task (the thread-scope ones through the
// thread's current task, where libgomp keeps them).
func (r *Runtime) taskValue(ref omprt.Ref, id omprt.ICV) (omprt.Value, error) {
	d, err := r.Task(ref)
	if err != nil {
		return omprt.Value{}, err
	}
	switch id {
	case omprt.ICVFinalTaskVar:
		return boolValue(d.InFinal), nil
	case omprt.ICVImplicitTaskVar:
		return boolValue(d.Kind&flagImplicit != 0), nil
	}
	// The ICV block: the task's own, or the global one for the initial
	// task before libgomp created a structure for it.
	var v omprt.View
	level := int(ref.Level)
	if level < 0 {
		level = int(d.Region.Level)
	}
	f := func(task, global fieldID) omprt.Field {
		if ref == r.level0() {
			return r.lay.f(global)
		}
		return r.lay.f(task)
	}
	if ref == r.level0() {
		if v, err = r.globalICV(); err != nil {
			return omprt.Value{}, err
		}
	} else if v, err = r.mem.View(ref.Addr, r.lay.size(typeTask), "gomp_task"); err != nil {
		return omprt.Value{}, err
	}
	switch id {
	case omprt.ICVDynVar:
		return boolValue(v.F(f(taskDyn, icvDyn)) != 0), nil
	case omprt.ICVRunSchedVar:
		s := d.Schedule
		if d.ScheduleErr != nil {
			return omprt.Value{}, d.ScheduleErr
		}
		k := int64(s.Kind)
		if s.Monotonic {
			k |= 0x80000000 // omp_sched_monotonic, as omp_get_schedule gives it
		}
		return omprt.Value{Int: k, Text: s.String(), HasText: true}, nil
	case omprt.ICVNthreadsVar:
		n := int64(v.F(f(taskNthreads, icvNthreads)))
		return r.listValue(n, "gomp_nthreads_var_list", 8, level)
	case omprt.ICVDefaultDeviceVar:
		return omprt.Value{Int: v.FI(f(taskDefaultDevice, icvDefaultDevice))}, nil
	case omprt.ICVThreadLimitVar:
		return omprt.Value{Int: threadLimit(v.F(f(taskThreadLimit, icvThreadLimit)))}, nil
	case omprt.ICVMaxActiveLevelsVar:
		if fl := f(taskMaxActiveLevels, icvMaxActiveLevels); fl.Size > 0 {
			return omprt.Value{Int: int64(v.F(fl))}, nil
		}
		// GCC 10 and older keep it in one global, not per task.
		return r.globalInt("gomp_max_active_levels_var", 8)
	case omprt.ICVBindVar:
		b := v.FI(f(taskBind, icvBind))
		return r.listValue(b, "gomp_bind_var_list", 1, level)
	}
	return omprt.Value{}, omprt.Errorf(omprt.ErrBadInput, "gomp: ICV %d is not a task ICV", id)
}

// threadLimit turns thread_limit_var into what omp_get_thread_limit says.
func threadLimit(v uint64) int64 {
	if v > 0x7fffffff {
		return 0x7fffffff
	}
	return int64(v)
}

func boolValue(b bool) omprt.Value {
	if b {
		return omprt.Value{Int: 1}
	}
	return omprt.Value{}
}

// listValue is a list ICV (nthreads-var, bind-var): the task's value, then
// what the global list (name, elements of elem bytes) holds for the levels
// below level, as libgomp gives it to nested regions. Without the list's
// hidden global (no debug information) the rest of the list cannot be
// read: the value is the task's alone, with an error matching
// omprt.ErrIncomplete that says the debug file is needed.
func (r *Runtime) listValue(first int64, name string, elem uint64, level int) (omprt.Value, error) {
	val := omprt.Value{Int: first, List: []int64{first}, Text: strconv.FormatInt(first, 10), HasText: true}
	a, err := r.global(name)
	if err == nil {
		var la uint64
		if la, err = r.global(name + "_len"); err == nil {
			return r.readList(val, name, a, la, elem, level)
		}
	}
	if errors.Is(err, omprt.ErrReadFailed) {
		return omprt.Value{}, err
	}
	// Not ErrUnavailable: the value given is right as far as it goes.
	return val, omprt.Errorf(omprt.ErrIncomplete,
		"gomp: the first element only: the values for nested levels are in %s (%v)", name, err)
}

// readList appends to val the entries of the global list at a (its length
// at la) for the levels below level.
func (r *Runtime) readList(val omprt.Value, name string, a, la, elem uint64, level int) (omprt.Value, error) {
	list, err := r.mem.Ptr(a, name)
	if err != nil {
		return omprt.Value{}, err
	}
	n, err := r.mem.Uint(la, 8, name+"_len")
	if err != nil {
		return omprt.Value{}, err
	}
	if list == 0 || n == 0 {
		return val, nil
	}
	if n > 1<<16 {
		return omprt.Value{}, omprt.Errorf(omprt.ErrCorrupt, "gomp: %s has %d entries", name, n)
	}
	for i := uint64(level) + 1; i < n; i++ {
		x, err := r.mem.Uint(list+i*elem, elem, name)
		if err != nil {
			return omprt.Value{}, err
		}
		val.List = append(val.List, int64(x))
	}
	var txt []string
	for _, x := range val.List {
		txt = append(txt, strconv.FormatInt(x, 10))
	}
	val.Text = strings.Join(txt, ",")
	return val, nil
}

// globalValue reads an address-space ICV from libgomp's globals, or,
// where they are out of reach, from the start-up environment where that
// is certain (environ.go).
func (r *Runtime) globalValue(id omprt.ICV) (omprt.Value, error) {
	v, err := r.globalState(id)
	if err != nil {
		return r.envICV(id, err)
	}
	return v, nil
}

// globalState reads an address-space ICV from libgomp's globals.
func (r *Runtime) globalState(id omprt.ICV) (omprt.Value, error) {
	switch id {
	case omprt.ICVCancelVar:
		return r.globalInt("gomp_cancel_var", 1)
	case omprt.ICVMaxTaskPriorityVar:
		return r.globalInt("gomp_max_task_priority_var", 4)
	case omprt.ICVDisplayAffinityVar:
		return r.globalInt("gomp_display_affinity_var", 1)
	case omprt.ICVNumProcsVar:
		return r.globalInt("gomp_available_cpus", 8)
	case omprt.ICVNteamsVar, omprt.ICVTeamsThreadLimitVar:
		name := teamsICVs[id]
		if r.lacks(name) {
			return omprt.Value{}, omprt.Errorf(omprt.ErrUnsupported,
				"gomp: %s: %s has no %s (GCC 12 and later have it)", omprt.ICVTable[id].Name, r.lib.name, name)
		}
		v, err := r.globalInt(name, 4)
		v.Int = int64(int32(v.Int)) // an int; the setters keep it >= 0
		return v, err
	case omprt.ICVStacksizeVar:
		// env.c's static stacksize: OMP_STACKSIZE (or GOMP_STACKSIZE)
		// in bytes, as OMP_DISPLAY_ENV prints it.
		return r.globalInt("stacksize", 8)
	case omprt.ICVAffinityFormatVar:
		a, err := r.global("gomp_affinity_format_var")
		if err != nil {
			return omprt.Value{}, err
		}
		p, err := r.mem.Ptr(a, "gomp_affinity_format_var")
		if err != nil {
			return omprt.Value{}, err
		}
		s, err := r.mem.String(p, "gomp_affinity_format_var")
		if err != nil {
			return omprt.Value{}, err
		}
		return omprt.Value{Text: s, HasText: true, IsString: true}, nil
	}
	return omprt.Value{}, omprt.Errorf(omprt.ErrBadInput, "gomp: ICV %d is not an address-space ICV", id)
}

func (r *Runtime) globalInt(name string, size uint64) (omprt.Value, error) {
	a, err := r.global(name)
	if err != nil {
		return omprt.Value{}, err
	}
	v, err := r.mem.Uint(a, size, name)
	if err != nil {
		return omprt.Value{}, err
	}
	return omprt.Value{Int: int64(v)}, nil
}

// NumProcs is gomp_available_cpus: the processors libgomp found at start.
func (r *Runtime) NumProcs() (int, error) {
	v, err := r.globalInt("gomp_available_cpus", 8)
	return int(v.Int), err
}

// ThreadLimit is the global thread-limit-var.
func (r *Runtime) ThreadLimit() (int, error) {
	v, err := r.globalICV()
	if err != nil {
		return 0, err
	}
	return int(threadLimit(v.F(r.lay.f(icvThreadLimit)))), nil
}

// StateTracking reports false: libgomp records no thread state (states are
// inferred from the stacks).
func (r *Runtime) StateTracking() (bool, error) { return false, nil }

// OpenMPVersion is the _OPENMP value libgomp reports (OMP_DISPLAY_ENV's
// first line): 201511 for GCC 12 to 14.
func (r *Runtime) OpenMPVersion() (int, error) { return 201511, nil }

// DLLLocations: libgomp names no OMPD library.
func (r *Runtime) DLLLocations() ([]string, error) {
	return nil, omprt.Errorf(omprt.ErrUnsupported, "gomp: libgomp names no OMPD library")
}

// Breakpoints: libgomp has no OMPD breakpoint functions.
func (r *Runtime) Breakpoints() ([]omprt.Breakpoint, error) {
	return nil, omprt.Errorf(omprt.ErrUnsupported, "gomp: libgomp has no OMPD breakpoint functions")
}

// Enabled reports false: libgomp has no OMPD support to enable.
func (r *Runtime) Enabled() (bool, error) { return false, nil }

// Enable is unsupported: libgomp has no OMPD support to enable.
func (r *Runtime) Enable(on bool) error {
	return omprt.Errorf(omprt.ErrUnsupported, "gomp: libgomp has no OMPD support to enable")
}
