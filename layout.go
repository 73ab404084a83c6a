package ompd

import (
	"errors"
	"fmt"

	"github.com/ompd-go/ompd/target"
)

// field locates a member inside the structure a view was read from.
type field struct {
	off, size uint64
}

func (f field) end() uint64 { return f.off + f.size }

// LayoutSource says where an address space took the runtime's structure
// layout from.
type LayoutSource int

const (
	// LayoutOMPDTables: the runtime's own OMPD tables (ompd_access__*,
	// ompd_sizeof__*, ompd_bitfield__*), filled in by the runtime at
	// start-up when it is built with OMPD support.
	LayoutOMPDTables LayoutSource = iota + 1
	// LayoutDWARF: the runtime's debug information, through the target's
	// TypeSize and FieldOffset (a runtime built without OMPD support).
	LayoutDWARF
)

func (s LayoutSource) String() string {
	switch s {
	case LayoutOMPDTables:
		return "OMPD tables"
	case LayoutDWARF:
		return "DWARF"
	}
	return fmt.Sprintf("LayoutSource(%d)", int(s))
}

// layout holds every offset and size this package decodes runtime memory
// with. Offsets are relative to the start of the structure a view holds:
// kmp_info_t for thread fields, kmp_base_team_t for team fields,
// kmp_taskdata_t for task fields, ompt_lw_taskteam_t for lwt fields.
type layout struct {
	source LayoutSource

	infoSize uint64 // sizeof(kmp_info_t)
	// kmp_info_t
	thTeam, thCurrentTask, thThread, thTid, thState, thWaitID, thThreadData field
	thExtent                                                                uint64

	teamT uint64 // offset of kmp_base_team_t in kmp_team_t
	// kmp_base_team_t
	tThreads, tNproc, tLevel, tActiveLevel, tParent, tPkfn, tImplicitTask, tMasterTid, tParallelData, tSerialInfo field
	teamExtent                                                                                                    uint64

	taskdataSize uint64 // sizeof(kmp_taskdata_t)
	// kmp_taskdata_t
	tdFlags, tdTeam, tdParent, tdTaskData, tdSchedParent, tdExitFrame, tdEnterFrame, tdExitFlags, tdEnterFlags     field
	icvDynamic, icvMaxActive, icvNproc, icvProcBind, icvSchedType, icvSchedChunk, icvDefaultDevice, icvThreadLimit field
	taskExtent                                                                                                     uint64
	taskRoutine                                                                                                    field // in kmp_task_t, which follows kmp_taskdata_t

	// task flag masks: the memory image of kmp_tasking_flags_t with only
	// that bit set.
	flagFinal, flagTiedness, flagTasktype, flagTaskSerial, flagTaskingSer, flagTeamSerial, flagStarted, flagExecuting, flagComplete, flagFreed, flagNative []byte

	// ompt_lw_taskteam_t
	lwParallelData, lwTaskData, lwSchedParent, lwExitFrame, lwEnterFrame, lwExitFlags, lwEnterFlags, lwParent field
	lwExtent                                                                                                  uint64

	// kmp_nested_nthreads_t / kmp_nested_proc_bind_t
	nestedNth, nestedNthUsed, nestedBind, nestedBindUsed field
	intSize                                              uint64

	// sizes of global variables, by symbol name
	globals map[string]uint64
}

// globalsNeeded lists the runtime globals whose sizes the OMPD tables give
// (ompd_sizeof__<name>).
var globalsNeeded = []string{
	"__kmp_avail_proc", "__kmp_max_nth", "__kmp_stksize", "__kmp_omp_cancellation",
	"__kmp_max_task_priority", "__kmp_display_affinity", "__kmp_affinity_format",
	"__kmp_tool_libraries", "__kmp_tool_verbose_init", "__kmp_tool", "ompd_state",
	"__kmp_nested_nth", "__kmp_nested_proc_bind", "__kmp_gtid", "__kmp_nth",
}

// layoutReader is where a layout comes from: the runtime's OMPD tables or
// its DWARF. The first failure sticks and is returned by failed.
type layoutReader interface {
	access(typ, member string) field
	sizeof(name string) uint64
	mask(typ, member string) []byte
	failed() error
	source() LayoutSource
}

// tableReader reads the runtime's OMPD layout tables: each entry is a
// uint64 global the runtime fills at start-up.
type tableReader struct {
	t   target.Target
	mem *memory
	err error // first failure
}

func (r *tableReader) u64(sym string) uint64 {
	if r.err != nil {
		return 0
	}
	addr, err := r.t.LookupSymbol(sym)
	if err != nil {
		r.err = wrapErr(ErrIncompatible, err, "layout table %s", sym)
		return 0
	}
	b, err := r.mem.read(addr, 8)
	if err != nil {
		r.err = wrapErr(ErrReadFailed, err, "layout table %s", sym)
		return 0
	}
	return r.mem.order.Uint64(b)
}

func (r *tableReader) access(typ, member string) field {
	off := r.u64("ompd_access__" + typ + "__" + member)
	size := r.u64("ompd_sizeof__" + typ + "__" + member)
	return field{off: off, size: size}
}

func (r *tableReader) sizeof(name string) uint64 { return r.u64("ompd_sizeof__" + name) }
func (r *tableReader) failed() error             { return r.err }
func (r *tableReader) source() LayoutSource      { return LayoutOMPDTables }

func (r *tableReader) mask(typ, member string) []byte {
	sym := "ompd_bitfield__" + typ + "__" + member
	if r.err != nil {
		return nil
	}
	addr, err := r.t.LookupSymbol(sym)
	if err != nil {
		r.err = wrapErr(ErrIncompatible, err, "layout table %s", sym)
		return nil
	}
	b, err := r.mem.read(addr, 8)
	if err != nil {
		r.err = wrapErr(ErrReadFailed, err, "layout table %s", sym)
		return nil
	}
	return append([]byte(nil), b...)
}

// in shifts a field of a nested structure by the offset of that structure.
func in(base field, f field) field { return field{off: base.off + f.off, size: f.size} }

// readLayout reads every offset and size this package needs from r.
func readLayout(r layoutReader, ptr uint64) (*layout, error) {
	l := &layout{source: r.source(), globals: make(map[string]uint64)}

	l.infoSize = r.sizeof("kmp_info_t")
	if r.failed() == nil && l.infoSize == 0 {
		return nil, errorf(ErrUnavailable, "OpenMP runtime not initialized yet (its OMPD tables are empty)")
	}
	th := r.access("kmp_info_t", "th")
	thInfo := in(th, r.access("kmp_base_info_t", "th_info"))
	ds := in(thInfo, r.access("kmp_desc_t", "ds"))
	l.thThread = in(ds, r.access("kmp_desc_base_t", "ds_thread"))
	l.thTid = in(ds, r.access("kmp_desc_base_t", "ds_tid"))
	l.thTeam = in(th, r.access("kmp_base_info_t", "th_team"))
	l.thCurrentTask = in(th, r.access("kmp_base_info_t", "th_current_task"))
	oti := in(th, r.access("kmp_base_info_t", "ompt_thread_info"))
	l.thState = in(oti, r.access("ompt_thread_info_t", "state"))
	l.thWaitID = in(oti, r.access("ompt_thread_info_t", "wait_id"))
	l.thThreadData = in(oti, r.access("ompt_thread_info_t", "thread_data"))

	l.teamT = r.access("kmp_team_p", "t").off
	l.tThreads = r.access("kmp_base_team_t", "t_threads")
	l.tNproc = r.access("kmp_base_team_t", "t_nproc")
	l.tLevel = r.access("kmp_base_team_t", "t_level")
	l.tActiveLevel = r.access("kmp_base_team_t", "t_active_level")
	l.tParent = r.access("kmp_base_team_t", "t_parent")
	l.tPkfn = r.access("kmp_base_team_t", "t_pkfn")
	l.tImplicitTask = r.access("kmp_base_team_t", "t_implicit_task_taskdata")
	l.tMasterTid = r.access("kmp_base_team_t", "t_master_tid")
	teamInfo := r.access("kmp_base_team_t", "ompt_team_info")
	parData := r.access("ompt_team_info_t", "parallel_data")
	l.tParallelData = in(teamInfo, parData)
	l.tSerialInfo = r.access("kmp_base_team_t", "ompt_serialized_team_info")

	l.taskdataSize = r.sizeof("kmp_taskdata_t")
	l.tdFlags = r.access("kmp_taskdata_t", "td_flags")
	l.tdTeam = r.access("kmp_taskdata_t", "td_team")
	l.tdParent = r.access("kmp_taskdata_t", "td_parent")
	taskInfo := r.access("kmp_taskdata_t", "ompt_task_info")
	frame := r.access("ompt_task_info_t", "frame")
	exitF := r.access("ompt_frame_t", "exit_frame")
	enterF := r.access("ompt_frame_t", "enter_frame")
	taskData := r.access("ompt_task_info_t", "task_data")
	schedParent := r.access("ompt_task_info_t", "scheduling_parent")
	// The frame flags are not in the tables; ompt_frame_t is fixed by the
	// OpenMP standard: two ompt_data_t then exit and enter flags (int).
	exitFlags := field{off: maxU(exitF.end(), enterF.end()), size: 4}
	enterFlags := field{off: exitFlags.end(), size: 4}
	l.tdTaskData = in(taskInfo, taskData)
	l.tdSchedParent = in(taskInfo, schedParent)
	l.tdExitFrame = in(taskInfo, in(frame, exitF))
	l.tdEnterFrame = in(taskInfo, in(frame, enterF))
	l.tdExitFlags = in(taskInfo, in(frame, exitFlags))
	l.tdEnterFlags = in(taskInfo, in(frame, enterFlags))
	icvs := r.access("kmp_taskdata_t", "td_icvs")
	l.icvDynamic = in(icvs, r.access("kmp_internal_control_t", "dynamic"))
	l.icvMaxActive = in(icvs, r.access("kmp_internal_control_t", "max_active_levels"))
	l.icvNproc = in(icvs, r.access("kmp_internal_control_t", "nproc"))
	l.icvProcBind = in(icvs, r.access("kmp_internal_control_t", "proc_bind"))
	sched := in(icvs, r.access("kmp_internal_control_t", "sched"))
	l.icvSchedType = in(sched, r.access("kmp_r_sched_t", "r_sched_type"))
	l.icvSchedChunk = in(sched, r.access("kmp_r_sched_t", "chunk"))
	l.icvDefaultDevice = in(icvs, r.access("kmp_internal_control_t", "default_device"))
	l.icvThreadLimit = in(icvs, r.access("kmp_internal_control_t", "thread_limit"))
	l.taskRoutine = r.access("kmp_task_t", "routine")

	for _, m := range []struct {
		dst  *[]byte
		name string
	}{
		{&l.flagFinal, "final"}, {&l.flagTiedness, "tiedness"}, {&l.flagTasktype, "tasktype"},
		{&l.flagTaskSerial, "task_serial"}, {&l.flagTaskingSer, "tasking_ser"}, {&l.flagTeamSerial, "team_serial"},
		{&l.flagStarted, "started"}, {&l.flagExecuting, "executing"}, {&l.flagComplete, "complete"},
		{&l.flagFreed, "freed"}, {&l.flagNative, "native"},
	} {
		*m.dst = r.mask("kmp_tasking_flags_t", m.name)
	}

	lwTeamInfo := r.access("ompt_lw_taskteam_t", "ompt_team_info")
	lwTaskInfo := r.access("ompt_lw_taskteam_t", "ompt_task_info")
	l.lwParallelData = in(lwTeamInfo, parData)
	l.lwTaskData = in(lwTaskInfo, taskData)
	l.lwSchedParent = in(lwTaskInfo, schedParent)
	l.lwExitFrame = in(lwTaskInfo, in(frame, exitF))
	l.lwEnterFrame = in(lwTaskInfo, in(frame, enterF))
	l.lwExitFlags = in(lwTaskInfo, in(frame, exitFlags))
	l.lwEnterFlags = in(lwTaskInfo, in(frame, enterFlags))
	l.lwParent = r.access("ompt_lw_taskteam_t", "parent")

	l.nestedNth = r.access("kmp_nested_nthreads_t", "nth")
	l.nestedNthUsed = r.access("kmp_nested_nthreads_t", "used")
	l.nestedBind = r.access("kmp_nested_proc_bind_t", "bind_types")
	l.nestedBindUsed = r.access("kmp_nested_proc_bind_t", "used")
	l.intSize = r.sizeof("int")
	if l.source == LayoutOMPDTables {
		for _, g := range globalsNeeded {
			l.globals[g] = r.sizeof(g)
		}
	}
	if err := r.failed(); err != nil {
		return nil, err
	}
	if err := l.finish(ptr); err != nil {
		return nil, err
	}
	return l, nil
}

func maxU(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

// maxStruct bounds every structure size the layout may claim, so that
// corrupt tables cannot make this package allocate without bound.
const maxStruct = 1 << 20

// finish computes read extents and checks that the layout is sane.
func (l *layout) finish(ptr uint64) error {
	ext := func(fs ...field) uint64 {
		var e uint64
		for _, f := range fs {
			e = maxU(e, f.end())
		}
		return e
	}
	l.thExtent = ext(l.thTeam, l.thCurrentTask, l.thThread, l.thTid, l.thState, l.thWaitID, l.thThreadData)
	l.teamExtent = ext(l.tThreads, l.tNproc, l.tLevel, l.tActiveLevel, l.tParent, l.tPkfn, l.tImplicitTask, l.tMasterTid, l.tParallelData, l.tSerialInfo)
	l.taskExtent = ext(l.tdFlags, l.tdTeam, l.tdParent, l.tdTaskData, l.tdSchedParent, l.tdExitFrame, l.tdEnterFrame, l.tdExitFlags, l.tdEnterFlags,
		l.icvDynamic, l.icvMaxActive, l.icvNproc, l.icvProcBind, l.icvSchedType, l.icvSchedChunk, l.icvDefaultDevice, l.icvThreadLimit)
	l.lwExtent = ext(l.lwParallelData, l.lwTaskData, l.lwSchedParent, l.lwExitFrame, l.lwEnterFrame, l.lwExitFlags, l.lwEnterFlags, l.lwParent)

	var errs []error
	// Every decoded field must lie within a structure of sane size and be
	// at most 8 bytes; checked one by one, so that no sum can wrap.
	for name, f := range map[string]field{
		"th_team": l.thTeam, "th_current_task": l.thCurrentTask, "ds_thread": l.thThread, "ds_tid": l.thTid,
		"state": l.thState, "wait_id": l.thWaitID, "thread_data": l.thThreadData,
		"t_threads": l.tThreads, "t_nproc": l.tNproc, "t_level": l.tLevel, "t_active_level": l.tActiveLevel,
		"t_parent": l.tParent, "t_pkfn": l.tPkfn, "t_implicit_task_taskdata": l.tImplicitTask,
		"t_master_tid": l.tMasterTid, "team parallel_data": l.tParallelData, "ompt_serialized_team_info": l.tSerialInfo,
		"td_flags": l.tdFlags, "td_team": l.tdTeam, "td_parent": l.tdParent, "task_data": l.tdTaskData,
		"scheduling_parent": l.tdSchedParent, "exit_frame": l.tdExitFrame, "enter_frame": l.tdEnterFrame,
		"exit_frame_flags": l.tdExitFlags, "enter_frame_flags": l.tdEnterFlags,
		"dynamic": l.icvDynamic, "max_active_levels": l.icvMaxActive, "nproc": l.icvNproc, "proc_bind": l.icvProcBind,
		"r_sched_type": l.icvSchedType, "chunk": l.icvSchedChunk, "default_device": l.icvDefaultDevice,
		"thread_limit": l.icvThreadLimit, "routine": l.taskRoutine,
		"lwt parallel_data": l.lwParallelData, "lwt task_data": l.lwTaskData, "lwt scheduling_parent": l.lwSchedParent,
		"lwt exit_frame": l.lwExitFrame, "lwt enter_frame": l.lwEnterFrame, "lwt exit_frame_flags": l.lwExitFlags,
		"lwt enter_frame_flags": l.lwEnterFlags, "lwt parent": l.lwParent,
		"nested nth": l.nestedNth, "nested nth used": l.nestedNthUsed, "nested bind_types": l.nestedBind,
		"nested bind used": l.nestedBindUsed,
	} {
		if f.off > maxStruct || f.size == 0 || f.size > 8 {
			errs = append(errs, fmt.Errorf("layout: %s at offset %d, %d bytes", name, f.off, f.size))
		}
	}
	if l.taskdataSize > maxStruct || l.infoSize > maxStruct || l.teamT > maxStruct {
		errs = append(errs, fmt.Errorf("layout: structure sizes out of range"))
	}
	if len(errs) > 0 {
		return wrapErr(ErrIncompatible, errors.Join(errs...), "runtime layout tables")
	}
	check := func(name string, ok bool) {
		if !ok {
			errs = append(errs, fmt.Errorf("layout: %s", name))
		}
	}
	isPtr := func(f field) bool { return f.size == ptr }
	isInt := func(f field) bool { return f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8 }
	check("sizeof(kmp_info_t) out of range", l.infoSize > 0 && l.infoSize <= maxStruct && l.thExtent <= l.infoSize)
	check("sizeof(kmp_taskdata_t) out of range", l.taskdataSize > 0 && l.taskdataSize <= maxStruct && l.taskExtent <= l.taskdataSize)
	check("team fields out of range", l.teamExtent > 0 && l.teamExtent <= maxStruct && l.teamT <= maxStruct)
	check("lw taskteam fields out of range", l.lwExtent > 0 && l.lwExtent <= maxStruct)
	for name, f := range map[string]field{"th_team": l.thTeam, "th_current_task": l.thCurrentTask, "t_threads": l.tThreads,
		"t_parent": l.tParent, "t_pkfn": l.tPkfn, "t_implicit_task_taskdata": l.tImplicitTask, "td_team": l.tdTeam,
		"td_parent": l.tdParent, "scheduling_parent": l.tdSchedParent, "lwt parent": l.lwParent, "ompt_serialized_team_info": l.tSerialInfo,
		"nested nth": l.nestedNth, "nested bind_types": l.nestedBind, "routine": l.taskRoutine} {
		check(name+" is not pointer-sized", isPtr(f))
	}
	for name, f := range map[string]field{"ds_thread": l.thThread, "ds_tid": l.thTid, "state": l.thState, "wait_id": l.thWaitID,
		"t_nproc": l.tNproc, "t_level": l.tLevel, "t_active_level": l.tActiveLevel, "t_master_tid": l.tMasterTid,
		"td_flags": l.tdFlags, "dynamic": l.icvDynamic, "max_active_levels": l.icvMaxActive, "nproc": l.icvNproc,
		"proc_bind": l.icvProcBind, "r_sched_type": l.icvSchedType, "chunk": l.icvSchedChunk,
		"default_device": l.icvDefaultDevice, "thread_limit": l.icvThreadLimit, "used": l.nestedNthUsed,
		"bind used": l.nestedBindUsed} {
		check(name+" has an odd size", isInt(f))
	}
	check("sizeof(int) is odd", l.intSize == 4 || l.intSize == 2 || l.intSize == 8)
	if len(errs) > 0 {
		return wrapErr(ErrIncompatible, errors.Join(errs...), "runtime layout tables")
	}
	return nil
}
