package ompd

import (
	"fmt"
	"strings"
)

// Task is an OpenMP task (ompd_task_handle_t): an explicit task, or the
// implicit task of a thread in a parallel region. The zero Task is not a
// task; its methods fail with ErrBadInput.
//
// In LLVM's runtime a task is a kmp_taskdata_t. The implicit task of a
// serial team stands for every nested serialized level of that team; as
// with Parallel, each level gets its own handle, told apart by the level.
//
// Tasks are comparable with == and usable as map keys.
type Task struct {
	as    *AddressSpace
	td    uint64 // kmp_taskdata_t
	level int32  // for implicit tasks, the level of their region; -1 for explicit tasks
}

// AddressSpace returns the address space the handle belongs to.
func (t Task) AddressSpace() *AddressSpace { return t.as }

// Addr returns the address of the runtime's kmp_taskdata_t for the task.
func (t Task) Addr() uint64 { return t.td }

// Equal reports whether t and u are the same task of the same address space
// (ompd_task_handle_compare).
func (t Task) Equal(u Task) bool { return t.as != nil && t == u }

// String returns a stable id for the handle (ompd_get_task_handle_string_id):
// "task/ADDR" for explicit tasks, "task/ADDR/LLEVEL" for implicit ones.
func (t Task) String() string {
	if t.as == nil {
		return "task/none"
	}
	if t.level < 0 {
		return fmt.Sprintf("task/%#x", t.td)
	}
	return fmt.Sprintf("task/%#x/L%d", t.td, t.level)
}

// TaskKind is a set of task flags (ompt_task_flag_t values).
type TaskKind uint32

// Task kinds and properties (OMPT's ompt_task_flag_t).
const (
	TaskInitial  TaskKind = 0x00000001 // the implicit task of an initial thread
	TaskImplicit TaskKind = 0x00000002
	TaskExplicit TaskKind = 0x00000004
	TaskTarget   TaskKind = 0x00000008
	// TaskIncluded marks an undeferred task executed right away by the
	// encountering thread (ompt_task_undeferred): if(0) tasks and the
	// descendants of final tasks.
	TaskIncluded TaskKind = 0x08000000
	TaskUntied   TaskKind = 0x10000000
	TaskFinal    TaskKind = 0x20000000
)

var kindNames = []struct {
	k    TaskKind
	name string
}{
	{TaskInitial, "initial"}, {TaskImplicit, "implicit"}, {TaskExplicit, "explicit"}, {TaskTarget, "target"},
	{TaskIncluded, "included"}, {TaskUntied, "untied"}, {TaskFinal, "final"},
}

// String lists the flags, e.g. "explicit|untied".
func (k TaskKind) String() string {
	var parts []string
	for _, e := range kindNames {
		if k&e.k != 0 {
			parts = append(parts, e.name)
			k &^= e.k
		}
	}
	if k != 0 {
		parts = append(parts, fmt.Sprintf("%#x", uint32(k)))
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, "|")
}

// Has reports whether every flag of f is set in k.
func (k TaskKind) Has(f TaskKind) bool { return k&f == f }

// taskInfo is a task decoded from one read.
type taskInfo struct {
	v        view
	implicit bool
	team     *teamInfo // the task's team, for implicit tasks
	j        int32     // depth of the handle's level in the team (implicit tasks)
}

func (as *AddressSpace) taskView(td uint64) (view, error) {
	return as.readView(td, as.l.taskExtent, "task")
}

func (as *AddressSpace) flag(v view, mask []byte) bool {
	b := v.bytes(as.l.tdFlags)
	for i := range b {
		if i < len(mask) && b[i]&mask[i] != 0 {
			return true
		}
	}
	return false
}

// taskAt makes the handle of the task at td, as it is now: an implicit
// task at its team's innermost level.
func (as *AddressSpace) taskAt(td uint64) (Task, error) {
	v, err := as.taskView(td)
	if err != nil {
		return Task{}, err
	}
	if as.flag(v, as.l.flagFreed) {
		return Task{}, errorf(ErrCorrupt, "task %#x is marked freed", td)
	}
	if as.flag(v, as.l.flagTasktype) { // explicit
		return Task{as: as, td: td, level: -1}, nil
	}
	team := v.f(as.l.tdTeam)
	if team == 0 {
		return Task{}, errorf(ErrCorrupt, "implicit task %#x has no team", td)
	}
	ti, err := as.team(team)
	if err != nil {
		return Task{}, err
	}
	return Task{as: as, td: td, level: ti.level}, nil
}

// resolve reads the task, checks it is still alive, and for implicit tasks
// finds its level within its team.
func (t Task) resolve() (*taskInfo, error) {
	if t.as == nil {
		return nil, errorf(ErrBadInput, "zero Task handle")
	}
	if err := t.as.check(); err != nil {
		return nil, err
	}
	v, err := t.as.taskView(t.td)
	if err != nil {
		return nil, err
	}
	if t.as.flag(v, t.as.l.flagFreed) {
		return nil, errorf(ErrStaleHandle, "%v: task was freed", t)
	}
	ti := &taskInfo{v: v, implicit: !t.as.flag(v, t.as.l.flagTasktype)}
	if ti.implicit != (t.level >= 0) {
		return nil, errorf(ErrStaleHandle, "%v: task memory now holds another kind of task", t)
	}
	if ti.implicit {
		team, err := t.as.team(v.f(t.as.l.tdTeam))
		if err != nil {
			return nil, err
		}
		if t.level < team.first || t.level > team.level {
			return nil, errorf(ErrStaleHandle, "%v: its team now stands for levels %d..%d", t, team.first, team.level)
		}
		ti.team, ti.j = team, team.level-t.level
	}
	return ti, nil
}

// Kind returns the task's kind and properties.
func (t Task) Kind() (TaskKind, error) {
	ti, err := t.resolve()
	if err != nil {
		return 0, err
	}
	l := t.as.l
	var k TaskKind
	if ti.implicit {
		k |= TaskImplicit
		if t.level == 0 {
			k |= TaskInitial
		}
	} else {
		k |= TaskExplicit
		if t.as.flag(ti.v, l.flagTaskSerial) {
			k |= TaskIncluded
		}
		if !t.as.flag(ti.v, l.flagTiedness) {
			k |= TaskUntied
		}
	}
	if t.as.flag(ti.v, l.flagFinal) {
		k |= TaskFinal
	}
	return k, nil
}

// InFinal reports whether the task is a final task or runs inside one
// (ompd_in_final; omp_in_final in the task).
func (t Task) InFinal() (bool, error) {
	ti, err := t.resolve()
	if err != nil {
		return false, err
	}
	return t.as.flag(ti.v, t.as.l.flagFinal), nil
}

// Parallel returns the innermost parallel region the task belongs to
// (ompd_get_task_parallel_handle).
func (t Task) Parallel() (Parallel, error) {
	ti, err := t.resolve()
	if err != nil {
		return Parallel{}, err
	}
	if ti.implicit {
		return Parallel{as: t.as, team: ti.team.addr, level: t.level}, nil
	}
	team := ti.v.f(t.as.l.tdTeam)
	if team == 0 {
		return Parallel{}, errorf(ErrCorrupt, "%v has no team", t)
	}
	tm, err := t.as.team(team)
	if err != nil {
		return Parallel{}, err
	}
	return Parallel{as: t.as, team: team, level: tm.level}, nil
}

// Generating returns the task that created t, its generating ancestor
// (ompd_get_generating_task_handle). The initial task gives an error
// matching ErrUnavailable. Corrupt memory can link tasks in a cycle; two
// tasks naming each other give ErrCorrupt, but a loop over Generating should
// still bound its steps.
func (t Task) Generating() (Task, error) {
	ti, err := t.resolve()
	if err != nil {
		return Task{}, err
	}
	if ti.implicit && t.level > ti.team.first {
		// An enclosing serialized level of the same serial team.
		return Task{as: t.as, td: t.td, level: t.level - 1}, nil
	}
	parent := ti.v.f(t.as.l.tdParent)
	if parent == 0 {
		return Task{}, errorf(ErrUnavailable, "%v has no generating task", t)
	}
	if parent == t.td {
		return Task{}, errorf(ErrCorrupt, "%v is its own parent", t)
	}
	if err := t.as.notChild(parent, t.td, t.as.l.tdParent, "td_parent"); err != nil {
		return Task{}, err
	}
	return t.as.taskAt(parent)
}

// notChild fails if the task at parent has child as its own parent (by
// the given link): a two-task cycle. Longer cycles are not detected here;
// a walk over Generating or Scheduling must bound itself, as Snapshot does.
func (as *AddressSpace) notChild(parent, child uint64, link field, name string) error {
	pv, err := as.taskView(parent)
	if err != nil {
		return err
	}
	if pv.f(link) == child {
		return errorf(ErrCorrupt, "tasks %#x and %#x are each other's %s", parent, child, name)
	}
	return nil
}

// Scheduling returns the task whose execution t interrupted in its thread,
// its scheduling ancestor (ompd_get_scheduling_task_handle). For explicit
// tasks that is what the runtime recorded when the task started (needs
// state tracking); a serialized region's implicit task and a primary
// thread's implicit task interrupt the task that encountered the region; a
// worker's implicit task and the initial task have none (ErrUnavailable).
func (t Task) Scheduling() (Task, error) {
	ti, err := t.resolve()
	if err != nil {
		return Task{}, err
	}
	if ti.implicit {
		if t.level > ti.team.first {
			return Task{as: t.as, td: t.td, level: t.level - 1}, nil
		}
		if t.td != ti.team.implicit { // a worker's implicit task
			return Task{}, errorf(ErrUnavailable, "%v: a worker's implicit task interrupts no task", t)
		}
		parent := ti.v.f(t.as.l.tdParent)
		if parent == 0 {
			return Task{}, errorf(ErrUnavailable, "%v has no scheduling task", t)
		}
		return t.as.taskAt(parent)
	}
	sp := ti.v.f(t.as.l.tdSchedParent)
	if sp == 0 {
		on, err := t.as.stateTracking()
		if err != nil {
			return Task{}, err
		}
		if !on {
			return Task{}, errorf(ErrNeedsStateTracking, "%v: scheduling parent", t)
		}
		return Task{}, errorf(ErrUnavailable, "%v has no scheduling task", t)
	}
	if sp == t.td {
		return Task{}, errorf(ErrCorrupt, "%v schedules itself", t)
	}
	if err := t.as.notChild(sp, t.td, t.as.l.tdSchedParent, "scheduling_parent"); err != nil {
		return Task{}, err
	}
	return t.as.taskAt(sp)
}

// Function returns the entry address of the task's code
// (ompd_get_task_function): the task routine of an explicit task, the
// outlined function of an implicit task's region. See Parallel.Function
// for when the runtime keeps none (ErrUnavailable).
func (t Task) Function() (Function, error) {
	ti, err := t.resolve()
	if err != nil {
		return Function{}, err
	}
	if ti.implicit {
		return Parallel{as: t.as, team: ti.team.addr, level: t.level}.Function()
	}
	l := t.as.l
	addr, err := t.as.readUint(t.td+l.taskdataSize+l.taskRoutine.off, l.taskRoutine.size, "kmp_task_t routine")
	if err != nil {
		return Function{}, err
	}
	if addr == 0 {
		return Function{}, errorf(ErrUnavailable, "%v has no routine", t)
	}
	return t.as.function(addr), nil
}

// FrameFlags describe a frame address (ompt_frame_flag_t).
type FrameFlags uint32

// Frame flags (ompt_frame_flag_t).
const (
	FrameRuntime      FrameFlags = 0x00
	FrameApplication  FrameFlags = 0x01
	FrameCFA          FrameFlags = 0x10
	FrameFramePointer FrameFlags = 0x20
	FrameStackAddress FrameFlags = 0x30
)

func (f FrameFlags) String() string {
	var parts []string
	if f&FrameApplication != 0 {
		parts = append(parts, "application")
	} else {
		parts = append(parts, "runtime")
	}
	switch f & 0x30 {
	case FrameCFA:
		parts = append(parts, "cfa")
	case FrameFramePointer:
		parts = append(parts, "framepointer")
	case FrameStackAddress:
		parts = append(parts, "stackaddress")
	}
	return strings.Join(parts, "|")
}

// FrameInfo is one frame address with its flags (ompd_frame_info_t).
type FrameInfo struct {
	Addr  uint64 // 0 when not set
	Flags FrameFlags
}

// Frames are a task's frame addresses (ompd_get_task_frame): Exit is the
// frame where the runtime entered the task's code (the outlined function's
// caller side), Enter the frame where the task's code last called back into
// the runtime (0 while it runs user code).
type Frames struct {
	Exit, Enter FrameInfo
}

// Frame returns the task's frames. It needs state tracking.
func (t Task) Frame() (Frames, error) {
	ti, err := t.resolve()
	if err != nil {
		return Frames{}, err
	}
	on, err := t.as.stateTracking()
	if err != nil {
		return Frames{}, err
	}
	if !on {
		return Frames{}, errorf(ErrNeedsStateTracking, "%v: frames", t)
	}
	l := t.as.l
	v := ti.v
	exit, enter, exitF, enterF := l.tdExitFrame, l.tdEnterFrame, l.tdExitFlags, l.tdEnterFlags
	if ti.implicit && ti.j > 0 {
		lwt, err := t.as.lwt(ti.team, ti.j)
		if err != nil {
			return Frames{}, err
		}
		if lwt == 0 {
			return Frames{}, errorf(ErrUnavailable, "%v: no frame kept for this serialized level", t)
		}
		v, err = t.as.readView(lwt, l.lwExtent, "lw taskteam")
		if err != nil {
			return Frames{}, err
		}
		exit, enter, exitF, enterF = l.lwExitFrame, l.lwEnterFrame, l.lwExitFlags, l.lwEnterFlags
	}
	return Frames{
		Exit:  frameInfo(v.f(exit), v.f(exitF)),
		Enter: frameInfo(v.f(enter), v.f(enterF)),
	}, nil
}

// frameInfo normalizes the flags the runtime stored with a frame address.
// LLVM's runtime sets them only for explicit tasks; for implicit tasks and
// serialized levels the memory holds whatever was there before. Every frame
// address LLVM records is the frame pointer (__builtin_frame_address) of a
// runtime procedure unless it says otherwise, so flags that are no valid
// ompt_frame_flag_t combination read as runtime|framepointer, and a set
// address without an address kind gets framepointer.
func frameInfo(addr, flags uint64) FrameInfo {
	f := FrameFlags(flags)
	if flags&^0x31 != 0 {
		f = FrameRuntime | FrameFramePointer
	} else if f&0x30 == 0 && addr != 0 {
		f |= FrameFramePointer
	}
	if addr == 0 {
		f = 0
	}
	return FrameInfo{Addr: addr, Flags: f}
}

// ID returns the task's OMPT task data value (ompd_get_task_id): the id an
// OMPT tool assigned, 0 when no tool did.
func (t Task) ID() (uint64, error) {
	ti, err := t.resolve()
	if err != nil {
		return 0, err
	}
	l := t.as.l
	if ti.implicit && ti.j > 0 {
		lwt, err := t.as.lwt(ti.team, ti.j)
		if err != nil {
			return 0, err
		}
		if lwt == 0 {
			return 0, errorf(ErrNeedsStateTracking, "%v: serialized level data", t)
		}
		return t.as.readUint(lwt+l.lwTaskData.off, l.lwTaskData.size, "lw taskteam task data")
	}
	return ti.v.f(l.tdTaskData), nil
}
