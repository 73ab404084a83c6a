package ompd

import (
	"fmt"
	"strings"

	"github.com/ompd-go/ompd/internal/omprt"
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
	as  *AddressSpace
	ref omprt.Ref // the task; Level is its region's level for implicit tasks, -1 for explicit ones
}

// AddressSpace returns the address space the handle belongs to.
func (t Task) AddressSpace() *AddressSpace { return t.as }

// Addr returns the address of the runtime's structure for the task
// (LLVM's kmp_taskdata_t; libgomp's gomp_task).
func (t Task) Addr() uint64 { return t.ref.Addr }

// Equal reports whether t and u are the same task of the same address space
// (ompd_task_handle_compare).
func (t Task) Equal(u Task) bool { return t.as != nil && t == u }

// String returns a stable id for the handle (ompd_get_task_handle_string_id):
// "task/ADDR" for explicit tasks, "task/ADDR/LLEVEL" for implicit ones.
func (t Task) String() string {
	if t.as == nil {
		return "task/none"
	}
	return omprt.TaskName(t.ref).String()
}

// data returns the task's record at this stop.
func (t Task) data() (*omprt.TaskData, error) {
	if err := t.as.checkHandle("Task"); err != nil {
		return nil, err
	}
	return t.as.rt.Task(t.ref)
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

// Kind returns the task's kind and properties.
func (t Task) Kind() (TaskKind, error) {
	d, err := t.data()
	if err != nil {
		return 0, err
	}
	return TaskKind(d.Kind), nil
}

// InFinal reports whether the task is a final task or runs inside one
// (ompd_in_final; omp_in_final in the task).
func (t Task) InFinal() (bool, error) {
	d, err := t.data()
	if err != nil {
		return false, err
	}
	return d.InFinal, nil
}

// Parallel returns the innermost parallel region the task belongs to
// (ompd_get_task_parallel_handle).
func (t Task) Parallel() (Parallel, error) {
	d, err := t.data()
	return follow(d, err, func(d *omprt.TaskData) (omprt.Ref, error) { return d.Region, d.RegionErr }, t.as.parallel)
}

// Generating returns the task that created t, its generating ancestor
// (ompd_get_generating_task_handle, the drafts'
// ompd_get_generating_ancestor_task_region and the 2014 proposal's
// ompd_get_ancestor_task_handle). The initial task gives an error
// matching ErrUnavailable. Corrupt memory can link tasks in a cycle; two
// tasks naming each other give ErrCorrupt, but a loop over Generating should
// still bound its steps or keep a visited set, as Snapshot does.
func (t Task) Generating() (Task, error) {
	d, err := t.data()
	return follow(d, err, func(d *omprt.TaskData) (omprt.Ref, error) { return d.Generating, d.GeneratingErr }, t.as.task)
}

// Scheduling returns the task whose execution t interrupted in its thread,
// its scheduling ancestor (ompd_get_scheduling_task_handle, the drafts'
// ompd_get_scheduling_ancestor_task_region). For explicit
// tasks that is what the runtime recorded when the task started (needs
// state tracking); a serialized region's implicit task and a primary
// thread's implicit task interrupt the task that encountered the region; a
// worker's implicit task and the initial task have none (ErrUnavailable).
func (t Task) Scheduling() (Task, error) {
	d, err := t.data()
	return follow(d, err, func(d *omprt.TaskData) (omprt.Ref, error) { return d.Scheduling, d.SchedulingErr }, t.as.task)
}

// Function returns the entry address of the task's code
// (ompd_get_task_function): the task routine of an explicit task, the
// outlined function of an implicit task's region. See Parallel.Function
// for when the runtime keeps none (ErrUnavailable).
func (t Task) Function() (Function, error) {
	d, err := t.data()
	if err != nil {
		return Function{}, err
	}
	if d.FunctionErr != nil {
		return Function{}, d.FunctionErr
	}
	return t.as.function(d.Function), nil
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

// String returns the flags as text: "application" or "runtime", then
// "|cfa", "|framepointer" or "|stackaddress" when the kind is set.
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
	Addr  uint64     // 0 when not set
	Flags FrameFlags // who owns the frame and what kind of address Addr is
}

// Frames are a task's frame addresses (ompd_get_task_frame): Exit is the
// frame where the runtime entered the task's code (the outlined function's
// caller side), Enter the frame where the task's code last called back into
// the runtime (0 while it runs user code).
type Frames struct {
	Exit, Enter FrameInfo // see Frames
}

// Frames returns the task's exit and enter frames (ompd_get_task_frame).
// It needs state tracking.
func (t Task) Frames() (Frames, error) {
	d, err := t.data()
	if err != nil {
		return Frames{}, err
	}
	if d.FramesErr != nil {
		return Frames{}, d.FramesErr
	}
	return Frames{
		Exit:  FrameInfo{Addr: d.Exit.Addr, Flags: FrameFlags(d.Exit.Flags)},
		Enter: FrameInfo{Addr: d.Enter.Addr, Flags: FrameFlags(d.Enter.Flags)},
	}, nil
}

// ID returns the task's OMPT task data value (ompd_get_task_id): the id an
// OMPT tool assigned, 0 when no tool did.
func (t Task) ID() (uint64, error) {
	d, err := t.data()
	if err != nil {
		return 0, err
	}
	return d.ID, d.IDErr
}
