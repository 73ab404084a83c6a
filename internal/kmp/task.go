package kmp

import (
	"github.com/ompd-go/ompd/internal/omprt"
)

// Task kinds (ompt_task_flag_t).
const (
	taskInitial  = 0x00000001
	taskImplicit = 0x00000002
	taskExplicit = 0x00000004
	taskIncluded = 0x08000000
	taskUntied   = 0x10000000
	taskFinal    = 0x20000000
)

// taskRaw is one kmp_taskdata_t as read at one stop.
type taskRaw struct {
	err      error
	v        view
	explicit bool
	freed    bool
	team     uint64
	cycle    [2]cycleMark // of the generating and the scheduling chain (chain.idx)
}

// task reads the kmp_taskdata_t at td once per stop.
func (s *stop) task(td uint64) *taskRaw {
	return s.tasks.Get(td, func(td uint64) *taskRaw {
		return s.taskRaw(s.rt.view(td, s.rt.l.taskExtent, "task"))
	})
}

// taskRaw makes the record of a kmp_taskdata_t read as v (or not, err).
func (s *stop) taskRaw(v view, err error) *taskRaw {
	if err != nil {
		return &taskRaw{err: err}
	}
	l := s.rt.l
	t := s.raws.New()
	*t = taskRaw{v: v, explicit: flag(v, l.tdFlags, l.flagTasktype), freed: flag(v, l.tdFlags, l.flagFreed), team: v.F(l.tdTeam)}
	return t
}

// readCurrentTasks reads the current task of every thread of the table
// at once (omprt.Memory.ReadEach): the implicit tasks of a team, one per
// thread, lie next to each other in an array, which a core then reads
// with a read or two instead of a read per page, and a target that reads
// scattered ranges at once (a live process) with one call.
func (s *stop) readCurrentTasks(tt *threadTable) {
	l := s.rt.l
	addrs := make([]uint64, len(tt.refs))
	for pos := range tt.refs {
		if tt.errs[pos] == nil {
			// A task two threads name (corrupt memory) is read once:
			// ReadEach reads structures at one address together, and
			// the cache keeps the first record stored.
			addrs[pos] = tt.infos[pos].current
		}
	}
	views := make([]view, len(addrs))
	errs := make([]error, len(addrs))
	s.rt.mem.ReadEach(addrs, l.taskExtent, "task", views, errs)
	for pos, td := range addrs {
		if td != 0 {
			s.tasks.Store(td, s.taskRaw(views[pos], errs[pos]))
		}
	}
}

func flag(v view, flags field, mask []byte) bool {
	b := v.Bytes(flags)
	for i := range b {
		if i < len(mask) && b[i]&mask[i] != 0 {
			return true
		}
	}
	return false
}

func (s *stop) flag(t *taskRaw, mask []byte) bool { return flag(t.v, s.rt.l.tdFlags, mask) }

// taskRef makes the ref of the task at td as it is now: an implicit task
// at its team's innermost level.
func (s *stop) taskRef(td uint64) (omprt.Ref, error) {
	t := s.task(td)
	if t.err != nil {
		return omprt.Ref{}, t.err
	}
	if t.freed {
		return omprt.Ref{}, errorf(omprt.ErrCorrupt, "task %#x is marked freed", td)
	}
	if t.explicit {
		return omprt.Ref{Addr: td, Level: -1}, nil
	}
	if t.team == 0 {
		return omprt.Ref{}, errorf(omprt.ErrCorrupt, "implicit task %#x has no team", td)
	}
	tm := s.team(t.team)
	if tm.err != nil {
		return omprt.Ref{}, tm.err
	}
	return omprt.Ref{Addr: td, Level: tm.level}, nil
}

// taskRec is a task decoded at one stop, with what ICVs need.
type taskRec struct {
	data omprt.TaskData
	err  error
	raw  *taskRaw
	// teamLevel is the level the task's ICV lists continue from: the
	// t_level of its team, or for an enclosing level of a serial team
	// that level; teamErr why there is none.
	teamLevel int32
	teamErr   error
	// icvsErr is why the task's ICVs cannot be read (not set yet).
	icvsErr error
}

// Task returns the record of task r.
func (rt *Runtime) Task(r omprt.Ref) (*omprt.TaskData, error) {
	rec := rt.stop().taskRec(r)
	if rec.err != nil {
		return nil, rec.err
	}
	return &rec.data, nil
}

func (s *stop) taskRec(r omprt.Ref) *taskRec {
	return s.taskRecs.Get(r, s.decodeTask)
}

func (s *stop) decodeTask(r omprt.Ref) *taskRec {
	name := omprt.TaskName(r)
	t := s.task(r.Addr)
	if t.err != nil {
		return &taskRec{err: t.err}
	}
	if t.freed {
		return &taskRec{err: errorf(omprt.ErrStaleHandle, "%v: task was freed", name)}
	}
	implicit := !t.explicit
	if implicit != (r.Level >= 0) {
		return &taskRec{err: errorf(omprt.ErrStaleHandle, "%v: task memory now holds another kind of task", name)}
	}
	rec := s.taskSlab.New()
	rec.raw = t
	dt := taskDecode{s: s, r: r, t: t, rec: rec, d: &rec.data, tn: omprt.TaskN(r), implicit: implicit}
	if t.team == 0 {
		rec.teamErr = errorf(omprt.ErrCorrupt, "%v has no team", name)
	} else if dt.tm = s.team(t.team); dt.tm.err != nil {
		rec.teamErr = dt.tm.err
	} else {
		rec.teamLevel = dt.tm.level
	}
	if implicit {
		if rec.teamErr != nil {
			return &taskRec{err: rec.teamErr}
		}
		tm := dt.tm
		dt.body = tm.isTeamsBody(r)
		if (r.Level < tm.first || r.Level > tm.level) && !dt.body {
			return &taskRec{err: errorf(omprt.ErrStaleHandle, "%v: its team now stands for levels %d..%d", name, tm.first, tm.level)}
		}
		if !dt.body {
			rec.teamLevel = r.Level
		}
	}
	rec.data.Ref = r
	dt.kind()
	dt.region()
	dt.generating()
	dt.scheduling()
	dt.function()
	dt.idAndFrames()
	return rec
}

// taskDecode is the decoding of one task's record (decodeTask), its
// fields filled a group at a time.
type taskDecode struct {
	s        *stop
	r        omprt.Ref
	t        *taskRaw
	tm       *team // the task's team; nil when rec.teamErr says why
	rec      *taskRec
	d        *omprt.TaskData // &rec.data
	tn       omprt.Name
	implicit bool
	// body: the implicit task that ran the teams region's body
	// (team.inLeague).
	body bool
}

// kind fills the task's kind, final flag and schedule.
func (dt *taskDecode) kind() {
	s, l, t, d, r, tm, body := dt.s, dt.s.rt.l, dt.t, dt.d, dt.r, dt.tm, dt.body
	if dt.implicit {
		d.Kind = taskImplicit
		// The initial task of the program (or of a foreign thread),
		// as ompt_get_task_info types it: in a league the task at level
		// 0 that each team's primary runs for the league, and the one
		// that runs the teams region's body, are implicit tasks.
		if r.Level == 0 && !tm.league && !body {
			d.Kind |= taskInitial
		}
	} else {
		d.Kind = taskExplicit
		if s.flag(t, l.flagTaskSerial) {
			d.Kind |= taskIncluded
		}
		if !s.flag(t, l.flagTiedness) {
			d.Kind |= taskUntied
		}
	}
	d.InFinal = s.flag(t, l.flagFinal)
	if d.InFinal {
		d.Kind |= taskFinal
	}
	d.Schedule = decodeSchedule(t.v.FI(l.icvSchedType), t.v.FI(l.icvSchedChunk))
	if dt.rec.icvsErr = s.icvsUnset(t.v, omprt.TaskName(r)); dt.rec.icvsErr != nil {
		d.Schedule, d.ScheduleErr = omprt.Schedule{}, dt.rec.icvsErr
	}
}

// region fills the task's region.
func (dt *taskDecode) region() {
	d, r, tm := dt.d, dt.r, dt.tm
	switch {
	case dt.rec.teamErr != nil:
		d.RegionErr = dt.rec.teamErr
	case dt.body:
		d.Region = omprt.Ref{Addr: tm.parent, Level: tm.parentLevel}
	case dt.implicit:
		d.Region = r
		d.Region.Addr = tm.addr
	default:
		d.Region = omprt.Ref{Addr: tm.addr, Level: tm.level}
	}
}

// generating fills the task's generating task.
func (dt *taskDecode) generating() {
	s, l, t, d, r, tm, implicit, rec := dt.s, dt.s.rt.l, dt.t, dt.d, dt.r, dt.tm, dt.implicit, dt.rec
	if implicit && r.Level > tm.first {
		// An enclosing serialized level of the same serial team.
		d.Generating = omprt.Ref{Addr: r.Addr, Level: r.Level - 1}
	} else if implicit && tm.inLeague && r.Level == tm.first && !dt.body {
		// td_parent names the league's task; the teams region's body
		// ran between the two.
		d.Generating = tm.teamsBody()
	} else if err := s.onCycle(&s.generating, r.Addr); err != nil {
		d.GeneratingErr = err
	} else {
		d.Generating, d.GeneratingErr = rec.ancestor(s, r, t.v.F(l.tdParent), l.tdParent, "td_parent", "has no generating task", "is its own parent")
		if d.GeneratingErr == nil && rec.teamErr == nil {
			// A task's generating task runs in its region (an
			// explicit task's) or in an enclosing one (an implicit
			// task's, but for the teams region's body and a league's
			// task at level 0, which the league's and the initial task
			// generated at their own level): never deeper.
			level := tm.level
			if implicit {
				level = r.Level
			}
			d.GeneratingErr = s.generatingLevel(r, level, implicit && !dt.body && !tm.league, d.Generating)
		}
	}
}

// scheduling fills the task's scheduling task.
func (dt *taskDecode) scheduling() {
	s, l, t, d, r, tm, implicit, rec, tn, body := dt.s, dt.s.rt.l, dt.t, dt.d, dt.r, dt.tm, dt.implicit, dt.rec, dt.tn, dt.body
	switch {
	case implicit && r.Level > tm.first:
		d.Scheduling = omprt.Ref{Addr: r.Addr, Level: r.Level - 1}
	case implicit && tm.inLeague && r.Level == tm.first && r.Addr == tm.implicit && !body:
		d.Scheduling = tm.teamsBody()
	case (!implicit || r.Addr == tm.implicit) && s.onCycle(&s.scheduling, r.Addr) != nil:
		d.SchedulingErr = s.onCycle(&s.scheduling, r.Addr)
	case implicit && r.Addr != tm.implicit: // a worker's implicit task
		d.SchedulingErr = s.errs.Error(omprt.ErrUnavailable, tn, ": a worker's implicit task interrupts no task")
	case implicit:
		if parent := t.v.F(l.tdParent); parent == 0 {
			d.SchedulingErr = s.errs.Error(omprt.ErrUnavailable, tn, " has no scheduling task")
		} else {
			d.Scheduling, d.SchedulingErr = s.taskRef(parent)
		}
	default:
		sp := t.v.F(l.tdSchedParent)
		if sp == 0 {
			if on, err := s.stateTracking(); err != nil {
				d.SchedulingErr = err
			} else if !on {
				d.SchedulingErr = s.errs.Error(omprt.ErrNeedsStateTracking, tn, ": scheduling parent")
			} else {
				d.SchedulingErr = s.errs.Error(omprt.ErrUnavailable, tn, " has no scheduling task")
			}
		} else {
			d.Scheduling, d.SchedulingErr = rec.ancestor(s, r, sp, l.tdSchedParent, "scheduling_parent", "has no scheduling task", "schedules itself")
		}
	}
}

// function fills the task's function: its region's outlined function for
// an implicit task, its routine for an explicit one.
func (dt *taskDecode) function() {
	s, l, d, r, tn := dt.s, dt.s.rt.l, dt.d, dt.r, dt.tn
	if dt.implicit {
		reg := s.region(d.Region)
		if reg.err != nil {
			d.FunctionErr = reg.err
		} else {
			d.Function, d.FunctionErr = reg.data.Function, reg.data.FunctionErr
		}
		return
	}
	addr, err := s.rt.readUint(r.Addr+l.taskdataSize+l.taskRoutine.Off, l.taskRoutine.Size, "kmp_task_t routine")
	switch {
	case err != nil:
		d.FunctionErr = err
	case addr == 0:
		d.FunctionErr = s.errs.Error(omprt.ErrUnavailable, tn, " has no routine")
	default:
		d.Function = addr
	}
}

// idAndFrames fills the task's id and frames: a serialized level's are in
// the team's lw taskteam list.
func (dt *taskDecode) idAndFrames() {
	s, l, d, tn := dt.s, dt.s.rt.l, dt.d, dt.tn
	src := ompData{v: dt.t.v}
	if dt.implicit {
		src = s.implicitData(dt.tm, dt.t.v, dt.r.Level, tn)
	}
	d.ID, d.IDErr = src.id(l)
	if on, err := s.stateTracking(); err != nil {
		d.FramesErr = err
	} else if !on {
		d.FramesErr = s.errs.Error(omprt.ErrNeedsStateTracking, tn, ": frames")
	} else {
		d.Exit, d.Enter, d.FramesErr = src.frames(l)
	}
}

// ompData is where the OMPT data of a task (its id and frames) is at one
// stop: the kmp_taskdata_t itself, or the lw taskteam (lw) that keeps an
// enclosing serialized level's; or why it is nowhere to be read (idErr
// for the id, frameErr for the frames).
type ompData struct {
	v               view
	lw              bool
	idErr, frameErr error
}

func (o ompData) id(l *layout) (uint64, error) {
	switch {
	case o.idErr != nil:
		return 0, o.idErr
	case o.lw:
		return o.v.F(l.lwTaskData), nil
	}
	return o.v.F(l.tdTaskData), nil
}

func (o ompData) frames(l *layout) (exit, enter omprt.Frame, err error) {
	if o.frameErr != nil {
		return omprt.Frame{}, omprt.Frame{}, o.frameErr
	}
	if o.lw {
		return frameInfo(o.v.F(l.lwExitFrame), o.v.F(l.lwExitFlags)), frameInfo(o.v.F(l.lwEnterFrame), o.v.F(l.lwEnterFlags)), nil
	}
	return frameInfo(o.v.F(l.tdExitFrame), o.v.F(l.tdExitFlags)), frameInfo(o.v.F(l.tdEnterFrame), o.v.F(l.tdEnterFlags)), nil
}

// implicitData finds the OMPT data of the implicit task of team tm at the
// given level, whose kmp_taskdata_t reads as td. The innermost level's is
// in the task, an enclosing serialized level's in the lw taskteam list,
// the innermost first, except while the runtime swaps a serialized
// level's task data in or out (see the top of moment.go): at the
// ompd_bp_parallel_begin of a serialized level and at the
// ompd_bp_parallel_end of a nested one, the task holds the enclosing
// level's data and the lw taskteam at the head of the list the level's
// own (when the begin linked one: the first level of a serial team keeps
// its data on the runtime's stack until after the breakpoint). So does a
// parallel region closely nested in a teams construct, whose enclosing
// task is the one that ran the teams region's body (team.teamsBody).
func (s *stop) implicitData(tm *team, td view, level int32, tn omprt.Name) ompData {
	j := tm.level - level // 0: the task's own data; k > 0: lw taskteam k
	if j <= 1 {
		m := s.teamMoment(tm)
		switch site := s.siteOn(m, tm); {
		case site != siteLinkFork && site != siteLinkSerialized && site != siteUnlink:
		case j == 1:
			j = 0
		case site != siteUnlink && tm.nproc == 1 && tm.level == tm.first:
			err := errorf(omprt.ErrUnavailable, "%v: its thread is %v: the runtime has not stored the task's data yet", omprt.TaskName(omprt.Ref{Addr: tm.implicit, Level: level}), m)
			return ompData{idErr: err, frameErr: err}
		default:
			j = 1
		}
	}
	if j == 0 {
		return ompData{v: td}
	}
	lwt, err := s.lwt(tm, j)
	switch {
	case err != nil:
		return ompData{idErr: err, frameErr: err}
	case lwt == 0:
		return ompData{idErr: s.errs.Error(omprt.ErrNeedsStateTracking, tn, ": serialized level data"),
			frameErr: s.errs.Error(omprt.ErrUnavailable, tn, ": no frame kept for this serialized level")}
	}
	v, err := s.rt.view(lwt, s.rt.l.lwExtent, "lw taskteam")
	if err != nil {
		return ompData{idErr: err, frameErr: err}
	}
	return ompData{v: v, lw: true}
}

// generatingLevel checks that g, the generating task of task r whose
// region is at level, runs at that level or an enclosing one (strictly
// enclosing if strict): a generating chain whose levels climb is corrupt.
// A level that cannot be read is left to the walk to report.
func (s *stop) generatingLevel(r omprt.Ref, level int32, strict bool, g omprt.Ref) error {
	gl := g.Level
	if gl < 0 { // explicit: its team's innermost level
		t := s.task(g.Addr)
		if t.err != nil || t.team == 0 {
			return nil
		}
		tm := s.team(t.team)
		if tm.err != nil {
			return nil
		}
		gl = tm.level
	}
	if gl > level || strict && gl == level {
		return errorf(omprt.ErrCorrupt, "%v (at level %d): its generating task %v runs at level %d, not in an enclosing region", omprt.TaskName(r), level, omprt.TaskName(g), gl)
	}
	return nil
}

// ancestor makes the ref of the task at link (a td_parent or
// scheduling_parent of task r). A task that links to itself, or two tasks
// that link to each other, are corrupt; longer cycles are cut by the
// walks' visited sets.
func (rec *taskRec) ancestor(s *stop, r omprt.Ref, link uint64, f field, fname, none, self string) (omprt.Ref, error) {
	if link == 0 {
		return omprt.Ref{}, s.errs.Error(omprt.ErrUnavailable, omprt.TaskN(r), " "+none)
	}
	if link == r.Addr {
		return omprt.Ref{}, errorf(omprt.ErrCorrupt, "%v %s", omprt.TaskName(r), self)
	}
	p := s.task(link)
	if p.err != nil {
		return omprt.Ref{}, p.err
	}
	if p.v.F(f) == r.Addr {
		return omprt.Ref{}, errorf(omprt.ErrCorrupt, "tasks %#x and %#x are each other's %s", link, r.Addr, fname)
	}
	return s.taskRef(link)
}

// frameInfo normalizes the flags the runtime stored with a frame address.
// LLVM's runtime sets them only for explicit tasks; for implicit tasks and
// serialized levels the memory holds whatever was there before. Every frame
// address LLVM records is the frame pointer (__builtin_frame_address) of a
// runtime procedure unless it says otherwise, so flags that are no valid
// ompt_frame_flag_t combination read as runtime|framepointer, and a set
// address without an address kind gets framepointer.
func frameInfo(addr, flags uint64) omprt.Frame {
	const framePointer = 0x20
	f := uint32(flags)
	if flags&^0x31 != 0 {
		f = framePointer
	} else if f&0x30 == 0 && addr != 0 {
		f |= framePointer
	}
	if addr == 0 {
		f = 0
	}
	return omprt.Frame{Addr: addr, Flags: f}
}
