package gomp

import (
	"github.com/ompd-go/ompd/internal/omprt"
)

// Region returns a region's record: a team at its level, or the level-0
// region.
func (r *Runtime) Region(ref omprt.Ref) (*omprt.RegionData, error) {
	rec := r.getStop().regions.Get(ref, r.decodeRegion)
	return rec.d, rec.err
}

func (r *Runtime) decodeRegion(ref omprt.Ref) *regionRec {
	noFn := omprt.Errorf(omprt.ErrUnavailable, "gomp: libgomp does not keep a region's outlined function, and the stacks do not tell")
	noID := omprt.Errorf(omprt.ErrUnsupported, "gomp: libgomp keeps no OMPT parallel data")
	if ref == r.level0() {
		return &regionRec{d: &omprt.RegionData{
			Ref: ref, TeamSize: 1,
			FunctionErr:  omprt.Errorf(omprt.ErrUnavailable, "gomp: the outermost region has no outlined function"),
			IDErr:        noID,
			EnclosingErr: omprt.Errorf(omprt.ErrUnavailable, "gomp: the outermost region has no enclosing region"),
		}}
	}
	if ref.Level <= 0 || ref.Addr == 0 {
		return &regionRec{err: omprt.Errorf(omprt.ErrBadInput, "gomp: no region %#x at level %d", ref.Addr, ref.Level)}
	}
	lv, prev, _, err := r.team(ref.Addr, int(ref.Level))
	if err != nil {
		return &regionRec{err: err}
	}
	d := &omprt.RegionData{Ref: ref, ActiveLevel: lv.active, TeamSize: lv.size, FunctionErr: noFn, IDErr: noID}
	if fn, ok := r.regionFunction(ref); ok {
		d.Function, d.FunctionErr = fn, nil
	}
	if prev == 0 {
		d.Enclosing = r.level0()
	} else {
		d.Enclosing = omprt.Ref{Addr: prev, Level: ref.Level - 1}
	}
	return &regionRec{d: d}
}

// regionFunction is the outlined function of a region, as the stacks of
// its threads show it (see stack.go).
func (r *Runtime) regionFunction(ref omprt.Ref) (uint64, bool) {
	fn, ok := r.getStop().fns[ref]
	return fn, ok
}

// RegionThread returns the thread with number n in a region's team.
func (r *Runtime) RegionThread(ref omprt.Ref, n int) (omprt.ThreadRef, error) {
	reg, err := r.Region(ref)
	if err != nil {
		return omprt.ThreadRef{}, err
	}
	if n < 0 || n >= reg.TeamSize {
		return omprt.ThreadRef{}, omprt.Errorf(omprt.ErrBadInput, "gomp: thread %d of a team of %d", n, reg.TeamSize)
	}
	s := r.getStop()
	if t, ok := s.members[member{ref, n}]; ok {
		return t, nil
	}
	return omprt.ThreadRef{}, omprt.Errorf(omprt.ErrUnavailable, "gomp: thread %d of team %#x at level %d is not among the stop's threads", n, ref.Addr, ref.Level)
}

// ImplicitTask returns the implicit task of thread n of a region.
func (r *Runtime) ImplicitTask(ref omprt.Ref, n int) (omprt.Ref, error) {
	reg, err := r.Region(ref)
	if err != nil {
		return omprt.Ref{}, err
	}
	if n < 0 || n >= reg.TeamSize {
		return omprt.Ref{}, omprt.Errorf(omprt.ErrBadInput, "gomp: implicit task %d of a team of %d", n, reg.TeamSize)
	}
	if ref == r.level0() {
		return r.getStop().initialTask, nil
	}
	addr := ref.Addr + r.lay.f(teamImplicitTask).Off + uint64(n)*r.lay.size(typeTask)
	return omprt.Ref{Addr: addr, Level: ref.Level}, nil
}

// Task returns a task's record.
func (r *Runtime) Task(ref omprt.Ref) (*omprt.TaskData, error) {
	rec := r.getStop().tasks.Get(ref, r.decodeTask)
	return rec.d, rec.err
}

func (r *Runtime) decodeTask(ref omprt.Ref) *taskRec {
	s := r.getStop()
	rec := r.decodeTaskData(s, ref)
	if rec.d != nil {
		r.stackFrames(s, rec.d)
	}
	return rec
}

// stackFrames fills a task's frames and scheduling task from the stacks
// (taskframes.go): libgomp records neither.
func (r *Runtime) stackFrames(s *stop, d *omprt.TaskData) {
	tf := s.taskFrames[d.Ref]
	if tf == nil {
		d.FramesErr = omprt.Errorf(omprt.ErrUnavailable, "gomp: libgomp records no task frames, and no thread's stack shows task %#x running", d.Ref.Addr)
		d.SchedulingErr = omprt.Errorf(omprt.ErrUnavailable, "gomp: libgomp does not record which task a thread set aside to run this one, and no thread's stack shows task %#x running", d.Ref.Addr)
		return
	}
	d.Exit, d.Enter, d.FramesErr = tf.exit, tf.enter, nil
	if tf.hasSched {
		d.Scheduling, d.SchedulingErr = tf.sched, nil
	} else {
		d.SchedulingErr = omprt.Errorf(omprt.ErrUnavailable, "gomp: task %#x is the outermost task of its thread's stack: it set no task aside", d.Ref.Addr)
	}
}

// decodeTaskData decodes a task but its frames and scheduling task.
func (r *Runtime) decodeTaskData(s *stop, ref omprt.Ref) *taskRec {
	noID := omprt.Errorf(omprt.ErrUnsupported, "gomp: libgomp keeps no OMPT task data")
	l0 := r.level0()
	if ref == l0 {
		// No task structure yet: the initial task, with the global ICVs.
		d := &omprt.TaskData{Ref: ref, Kind: flagInitial | flagImplicit,
			FunctionErr:   omprt.Errorf(omprt.ErrUnavailable, "gomp: the initial task has no function"),
			IDErr:         noID,
			Region:        l0,
			GeneratingErr: omprt.Errorf(omprt.ErrUnavailable, "gomp: the initial task has no generating task"),
		}
		d.Schedule, d.ScheduleErr = r.globalSchedule()
		return &taskRec{d: d}
	}
	if ref.Addr == 0 {
		return &taskRec{err: omprt.Errorf(omprt.ErrBadInput, "gomp: null task")}
	}
	l := r.lay
	v, err := r.mem.View(ref.Addr, l.size(typeTask), "gomp_task")
	if err != nil {
		return &taskRec{err: err}
	}
	kind := v.F(l.f(taskKind))
	if kind > kindDetached {
		return &taskRec{err: omprt.Errorf(omprt.ErrCorrupt, "gomp: task %#x has kind %d", ref.Addr, kind)}
	}
	if (kind == kindImplicit) != (ref.Level >= 0) {
		return &taskRec{err: omprt.Errorf(omprt.ErrStaleHandle, "gomp: task %#x is no longer the task the handle named (kind %d)", ref.Addr, kind)}
	}
	d := &omprt.TaskData{Ref: ref, IDErr: noID}
	d.InFinal = v.F(l.f(taskFinal)) != 0
	d.Schedule = schedule(v.F(l.f(taskRunSched)), v.FI(l.f(taskRunSchedChunk)))
	parent := v.F(l.f(taskParent))
	switch {
	case kind == kindImplicit:
		d.Kind = flagImplicit
		if ref.Level == 0 {
			d.Kind |= flagInitial
		}
		d.FunctionErr = omprt.Errorf(omprt.ErrUnavailable, "gomp: libgomp keeps no function for an implicit task (its region's outlined function)")
		if reg, ok := s.implicit[ref.Addr]; ok {
			d.Region = reg
		} else if ref.Level == 0 {
			d.Region = l0
		} else {
			d.RegionErr = omprt.Errorf(omprt.ErrUnavailable, "gomp: the region of implicit task %#x is not on any thread of this stop", ref.Addr)
		}
		if fn, ok := r.regionFunction(d.Region); ok && d.RegionErr == nil {
			d.Function, d.FunctionErr = fn, nil
		}
	default:
		d.Kind = flagExplicit
		if kind == kindUndeferred {
			d.Kind |= flagUndeferred
			d.FunctionErr = omprt.Errorf(omprt.ErrUnavailable, "gomp: libgomp does not keep an undeferred task's function")
		} else if fn := v.F(l.f(taskFn)); fn != 0 {
			d.Function = fn
		} else {
			d.FunctionErr = omprt.Errorf(omprt.ErrUnavailable, "gomp: task %#x has no function", ref.Addr)
		}
		d.Region, d.RegionErr = r.explicitRegion(s, parent)
	}
	if d.InFinal {
		d.Kind |= flagFinal
	}
	switch {
	case parent != 0:
		d.Generating = r.taskRef(s, parent)
	case kind != kindImplicit || ref.Level > 0:
		d.Generating = s.initialTask
		if d.Generating == ref {
			d.Generating, d.GeneratingErr = omprt.Ref{}, omprt.Errorf(omprt.ErrUnavailable, "gomp: the initial task has no generating task")
		}
	default:
		d.GeneratingErr = omprt.Errorf(omprt.ErrUnavailable, "gomp: the initial task has no generating task")
	}
	return &taskRec{d: d}
}

// explicitRegion is the region of an explicit task: that of the nearest
// implicit task among its generating ancestors.
func (r *Runtime) explicitRegion(s *stop, parent uint64) (omprt.Ref, error) {
	for i := 0; i < maxParents; i++ {
		if parent == 0 {
			return r.level0(), nil
		}
		if reg, ok := s.implicit[parent]; ok {
			return reg, nil
		}
		v, err := r.mem.View(parent, r.lay.size(typeTask), "gomp_task")
		if err != nil {
			return omprt.Ref{}, err
		}
		if v.F(r.lay.f(taskKind)) == kindImplicit {
			return omprt.Ref{}, omprt.Errorf(omprt.ErrUnavailable, "gomp: implicit task %#x is not on any thread of this stop", parent)
		}
		parent = v.F(r.lay.f(taskParent))
	}
	return omprt.Ref{}, omprt.Errorf(omprt.ErrCorrupt, "gomp: more than %d generating tasks", maxParents)
}

// schedule decodes libgomp's run_sched_var (enum gomp_schedule_type, whose
// values are omp_sched_t's, with GFS_MONOTONIC as the monotonic bit) and
// chunk.
func schedule(raw uint64, chunk int64) omprt.Schedule {
	s := omprt.Schedule{Raw: int(int32(raw)), Chunk: int(chunk)}
	s.Monotonic = raw&0x80000000 != 0
	s.Kind = int(raw &^ 0x80000000)
	return s
}

// globalSchedule is run-sched-var of gomp_global_icv.
func (r *Runtime) globalSchedule() (omprt.Schedule, error) {
	v, err := r.globalICV()
	if err != nil {
		return omprt.Schedule{}, err
	}
	return schedule(v.F(r.lay.f(icvRunSched)), v.FI(r.lay.f(icvRunSchedChunk))), nil
}

// globalICV reads gomp_global_icv.
func (r *Runtime) globalICV() (omprt.View, error) {
	a, err := r.global("gomp_global_icv")
	if err != nil {
		return omprt.View{}, err
	}
	return r.mem.View(a, r.lay.size(typeICV), "gomp_global_icv")
}
