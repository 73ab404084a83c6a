package kmp

import (
	"errors"
	"fmt"

	"github.com/ompd-go/ompd/internal/errjoin"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// field locates a member inside the structure a view was read from.
type field = omprt.Field

// view is a decoded window onto one runtime structure.
type view = omprt.View

// layout holds every offset and size this package decodes runtime memory
// with. Offsets are relative to the start of the structure a view holds:
// kmp_info_t for thread fields, kmp_base_team_t for team fields,
// kmp_taskdata_t for task fields, ompt_lw_taskteam_t for lwt fields.
type layout struct {
	source omprt.LayoutSource

	infoSize uint64 // sizeof(kmp_info_t)
	// kmp_info_t
	thTeam, thCurrentTask, thThread, thTid, thState, thWaitID, thThreadData field
	thExtent                                                                uint64

	teamT     uint64 // offset of kmp_base_team_t in kmp_team_t
	teamTSize uint64 // sizeof(kmp_base_team_t) when the tables give it, else 0
	thSize    uint64 // offset + size of kmp_info_t's th member (0 if unknown)
	// kmp_base_team_t
	tThreads, tNproc, tLevel, tActiveLevel, tParent, tPkfn, tImplicitTask, tMasterTid, tParallelData, tSerialInfo field
	teamExtent                                                                                                    uint64

	taskdataSize uint64 // sizeof(kmp_taskdata_t)
	// kmp_taskdata_t
	tdFlags, tdTeam, tdParent, tdTaskData, tdSchedParent, tdExitFrame, tdEnterFrame, tdExitFlags, tdEnterFlags     field
	icvDynamic, icvMaxActive, icvNproc, icvProcBind, icvSchedType, icvSchedChunk, icvDefaultDevice, icvThreadLimit field
	taskExtent                                                                                                     uint64
	icvLo, icvHi                                                                                                   uint64 // where the icv fields lie, first start to last end
	taskRoutine                                                                                                    field  // in kmp_task_t, which follows kmp_taskdata_t

	// task flag masks: the memory image of kmp_tasking_flags_t with only
	// that bit set. Only the flags read are looked up: a runtime whose
	// other flags moved or vanished reads as well.
	flagFinal, flagTiedness, flagTasktype, flagTaskSerial, flagFreed []byte

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
	source() omprt.LayoutSource
}

// tableReader reads the runtime's OMPD layout tables: each entry is a
// uint64 global the runtime fills at start-up.
type tableReader struct {
	t   target.Target
	mem *omprt.Memory
	err error // first failure
}

func (r *tableReader) u64(sym string) uint64 {
	if r.err != nil {
		return 0
	}
	addr, err := r.t.LookupSymbol(sym)
	if err != nil {
		r.err = lookupErr(err, "layout table %s", sym)
		return 0
	}
	b, err := r.mem.Read(addr, 8)
	if err != nil {
		r.err = wrapErr(omprt.ErrReadFailed, err, "layout table %s", sym)
		return 0
	}
	return r.mem.Order.Uint64(b)
}

func (r *tableReader) access(typ, member string) field {
	off := r.u64("ompd_access__" + typ + "__" + member)
	size := r.u64("ompd_sizeof__" + typ + "__" + member)
	return field{Off: off, Size: size}
}

func (r *tableReader) sizeof(name string) uint64  { return r.u64("ompd_sizeof__" + name) }
func (r *tableReader) failed() error              { return r.err }
func (r *tableReader) source() omprt.LayoutSource { return omprt.LayoutOMPDTables }

func (r *tableReader) mask(typ, member string) []byte {
	sym := "ompd_bitfield__" + typ + "__" + member
	if r.err != nil {
		return nil
	}
	addr, err := r.t.LookupSymbol(sym)
	if err != nil {
		r.err = lookupErr(err, "layout table %s", sym)
		return nil
	}
	b, err := r.mem.Read(addr, 8)
	if err != nil {
		r.err = wrapErr(omprt.ErrReadFailed, err, "layout table %s", sym)
		return nil
	}
	return append([]byte(nil), b...)
}

// lookupErr is the error of a failed lookup of a layout table: a symbol
// the runtime lacks makes it one this package cannot read
// (omprt.ErrIncompatible); a target that could not look (a process that died
// meanwhile, say) is a failed read, with the target's cause.
func lookupErr(err error, format string, args ...any) error {
	if errors.Is(err, target.ErrNotFound) {
		return wrapErr(omprt.ErrIncompatible, err, format, args...)
	}
	return wrapErr(omprt.ErrReadFailed, err, format, args...)
}

// in shifts a field of a nested structure by the offset of that structure.
// A member that does not fit in the member it is nested in (whose size the
// OMPD tables give; DWARF layouts give 0, unchecked) comes out with size 0,
// which finish rejects: tables that put a field past the end of its
// structure are corrupt, even within maxStruct.
func in(base field, f field) field {
	if base.Size > 0 && (f.End() > base.Size || f.End() < f.Off) {
		return field{Off: base.Off + f.Off}
	}
	return field{Off: base.Off + f.Off, Size: f.Size}
}

// readLayout reads every offset and size this package needs from r.
func readLayout(r layoutReader, ptr uint64) (*layout, error) {
	l := &layout{source: r.source(), globals: make(map[string]uint64)}

	l.infoSize = r.sizeof("kmp_info_t")
	if r.failed() == nil && l.infoSize == 0 {
		return nil, errorf(omprt.ErrUnavailable, "OpenMP runtime not initialized yet (its OMPD tables are empty)")
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

	teamT := r.access("kmp_team_p", "t")
	l.teamT, l.teamTSize = teamT.Off, teamT.Size
	if th.Size > 0 {
		l.thSize = th.End()
	}
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
	exitFlags := field{Off: maxU(exitF.End(), enterF.End()), Size: 4}
	enterFlags := field{Off: exitFlags.End(), Size: 4}
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
		{&l.flagTaskSerial, "task_serial"}, {&l.flagFreed, "freed"},
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
	if l.source == omprt.LayoutOMPDTables {
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

// Kinds of decoded fields, for the layout checks.
const (
	anyField = iota // 1 to 8 bytes
	ptrField        // pointer-sized
	intField        // 1, 2, 4 or 8 bytes
)

// finish checks that the layout is sane and computes read extents.
func (l *layout) finish(ptr uint64) error {
	fields := []struct {
		name string
		f    field
		kind int
	}{
		{"th_team", l.thTeam, ptrField}, {"th_current_task", l.thCurrentTask, ptrField},
		{"ds_thread", l.thThread, intField}, {"ds_tid", l.thTid, intField},
		{"state", l.thState, intField}, {"wait_id", l.thWaitID, intField}, {"thread_data", l.thThreadData, anyField},
		{"t_threads", l.tThreads, ptrField}, {"t_nproc", l.tNproc, intField}, {"t_level", l.tLevel, intField},
		{"t_active_level", l.tActiveLevel, intField}, {"t_parent", l.tParent, ptrField}, {"t_pkfn", l.tPkfn, ptrField},
		{"t_implicit_task_taskdata", l.tImplicitTask, ptrField}, {"t_master_tid", l.tMasterTid, intField},
		{"team parallel_data", l.tParallelData, anyField}, {"ompt_serialized_team_info", l.tSerialInfo, ptrField},
		{"td_flags", l.tdFlags, intField}, {"td_team", l.tdTeam, ptrField}, {"td_parent", l.tdParent, ptrField},
		{"task_data", l.tdTaskData, anyField}, {"scheduling_parent", l.tdSchedParent, ptrField},
		{"exit_frame", l.tdExitFrame, anyField}, {"enter_frame", l.tdEnterFrame, anyField},
		{"exit_frame_flags", l.tdExitFlags, anyField}, {"enter_frame_flags", l.tdEnterFlags, anyField},
		{"dynamic", l.icvDynamic, intField}, {"max_active_levels", l.icvMaxActive, intField},
		{"nproc", l.icvNproc, intField}, {"proc_bind", l.icvProcBind, intField},
		{"r_sched_type", l.icvSchedType, intField}, {"chunk", l.icvSchedChunk, intField},
		{"default_device", l.icvDefaultDevice, intField}, {"thread_limit", l.icvThreadLimit, intField},
		{"routine", l.taskRoutine, ptrField},
		{"lwt parallel_data", l.lwParallelData, anyField}, {"lwt task_data", l.lwTaskData, anyField},
		{"lwt scheduling_parent", l.lwSchedParent, anyField}, {"lwt exit_frame", l.lwExitFrame, anyField},
		{"lwt enter_frame", l.lwEnterFrame, anyField}, {"lwt exit_frame_flags", l.lwExitFlags, anyField},
		{"lwt enter_frame_flags", l.lwEnterFlags, anyField}, {"lwt parent", l.lwParent, ptrField},
		{"nested nth", l.nestedNth, ptrField}, {"nested nth used", l.nestedNthUsed, intField},
		{"nested bind_types", l.nestedBind, ptrField}, {"nested bind used", l.nestedBindUsed, intField},
	}
	var errs []error
	// Every decoded field must lie within a structure of sane size and be
	// at most 8 bytes; checked one by one, so that no sum can wrap.
	for _, e := range fields {
		if e.f.Off > maxStruct || e.f.Size == 0 || e.f.Size > 8 {
			errs = append(errs, fmt.Errorf("layout: %s at offset %d, %d bytes (outside its structure, or of no size)", e.name, e.f.Off, e.f.Size))
		}
	}
	if l.taskdataSize > maxStruct || l.infoSize > maxStruct || l.teamT > maxStruct {
		errs = append(errs, fmt.Errorf("layout: structure sizes out of range"))
	}
	if len(errs) > 0 {
		return wrapErr(omprt.ErrIncompatible, errjoin.Join(errs...), "runtime layout tables")
	}

	ext := func(fs ...field) uint64 {
		var e uint64
		for _, f := range fs {
			e = maxU(e, f.End())
		}
		return e
	}
	l.thExtent = ext(l.thTeam, l.thCurrentTask, l.thThread, l.thTid, l.thState, l.thWaitID, l.thThreadData)
	l.teamExtent = ext(l.tThreads, l.tNproc, l.tLevel, l.tActiveLevel, l.tParent, l.tPkfn, l.tImplicitTask, l.tMasterTid, l.tParallelData, l.tSerialInfo)
	icvFields := []field{l.icvDynamic, l.icvMaxActive, l.icvNproc, l.icvProcBind, l.icvSchedType, l.icvSchedChunk, l.icvDefaultDevice, l.icvThreadLimit}
	l.taskExtent = max(ext(l.tdFlags, l.tdTeam, l.tdParent, l.tdTaskData, l.tdSchedParent, l.tdExitFrame, l.tdEnterFrame, l.tdExitFlags, l.tdEnterFlags),
		ext(icvFields...))
	l.icvLo, l.icvHi = ^uint64(0), ext(icvFields...)
	for _, f := range icvFields {
		l.icvLo = min(l.icvLo, f.Off)
	}
	l.lwExtent = ext(l.lwParallelData, l.lwTaskData, l.lwSchedParent, l.lwExitFrame, l.lwEnterFrame, l.lwExitFlags, l.lwEnterFlags, l.lwParent)

	check := func(name string, ok bool) {
		if !ok {
			errs = append(errs, fmt.Errorf("layout: %s", name))
		}
	}
	check("sizeof(kmp_info_t) out of range", l.infoSize > 0 && l.thExtent <= l.infoSize)
	check("sizeof(kmp_taskdata_t) out of range", l.taskdataSize > 0 && l.taskExtent <= l.taskdataSize)
	check("team fields out of range", l.teamExtent > 0 && l.teamExtent <= maxStruct)
	check("team fields beyond sizeof(kmp_base_team_t)", l.teamTSize == 0 || l.teamExtent <= l.teamTSize)
	check("kmp_info_t.th beyond sizeof(kmp_info_t)", l.thSize <= l.infoSize)
	check("lw taskteam fields out of range", l.lwExtent > 0 && l.lwExtent <= maxStruct)
	for _, e := range fields {
		switch sz := e.f.Size; e.kind {
		case ptrField:
			check(e.name+" is not pointer-sized", sz == ptr)
		case intField:
			check(e.name+" has an odd size", sz == 1 || sz == 2 || sz == 4 || sz == 8)
		}
	}
	check("sizeof(int) is odd", l.intSize == 4 || l.intSize == 2 || l.intSize == 8)
	if len(errs) > 0 {
		return wrapErr(omprt.ErrIncompatible, errjoin.Join(errs...), "runtime layout tables")
	}
	return nil
}
