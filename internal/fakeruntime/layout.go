package fakeruntime

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strings"
)

// Field is a member's place in its struct.
type Field struct {
	Off  uint64 // byte offset in the struct
	Size uint64 // size in bytes
	Type string // struct type of a nested member, "" for scalars
}

// Struct is the fake runtime's layout of one runtime type.
type Struct struct {
	Name   string
	Size   uint64
	Fields map[string]Field
}

// Layout is the fake runtime's own layout of LLVM's runtime structures: the
// same members as LLVM's kmp.h and omp-tools.h, in other orders and with
// padding of their own, so that a reader that assumed LLVM's offsets would
// fail. It depends on the pointer size only.
type Layout struct {
	Ptr     uint64
	Structs map[string]*Struct
	// Bits gives the position of each kmp_tasking_flags_t member, counted
	// as DWARF's DW_AT_data_bit_offset counts it (in memory order: from
	// the least significant bit of the first byte on little-endian
	// targets, from its most significant bit on big-endian ones).
	Bits map[string]uint64
}

// FlagNames lists the kmp_tasking_flags_t members the OMPD tables describe.
var FlagNames = []string{"final", "tiedness", "tasktype", "task_serial", "tasking_ser", "team_serial",
	"started", "executing", "complete", "freed", "native"}

type member struct {
	name  string
	size  uint64
	align uint64
	typ   string
}

type layoutBuilder struct{ l *Layout }

func (b layoutBuilder) scalar(name string, size uint64) member {
	return member{name: name, size: size, align: size}
}

func (b layoutBuilder) ptr(name string) member { return b.scalar(name, b.l.Ptr) }

func (b layoutBuilder) nested(name, typ string) member {
	s := b.l.Structs[typ]
	return member{name: name, size: s.Size, align: 8, typ: typ}
}

func pad(n uint64) member { return member{size: n, align: 1} }

func (b layoutBuilder) define(name string, members ...member) {
	s := &Struct{Name: name, Fields: make(map[string]Field)}
	var off, maxAlign uint64 = 0, 1
	for _, m := range members {
		a := m.align
		if a > 8 {
			a = 8
		}
		if a > maxAlign {
			maxAlign = a
		}
		off = alignUp(off, a)
		if m.name != "" {
			s.Fields[m.name] = Field{Off: off, Size: m.size, Type: m.typ}
		}
		off += m.size
	}
	s.Size = alignUp(off, maxAlign)
	b.l.Structs[name] = s
}

// NewLayout returns the fake layout for the given pointer size (4 or 8).
func NewLayout(ptr int) *Layout {
	l := &Layout{Ptr: uint64(ptr), Structs: make(map[string]*Struct)}
	b := layoutBuilder{l}
	// ompt_data_t is a union of a uint64_t and a pointer.
	l.Structs["ompt_data_t"] = &Struct{Name: "ompt_data_t", Size: 8, Fields: map[string]Field{
		"value": {Off: 0, Size: 8}, "ptr": {Off: 0, Size: l.Ptr}}}
	// The frame flags must follow the two frame addresses, exit's first:
	// OMPD's tables do not describe them.
	b.define("ompt_frame_t", b.scalar("enter_frame", 8), b.scalar("exit_frame", 8),
		b.scalar("exit_frame_flags", 4), b.scalar("enter_frame_flags", 4))
	b.define("ompt_task_info_t", b.scalar("task_data", 8), pad(4), b.ptr("scheduling_parent"),
		b.scalar("thread_num", 4), b.nested("frame", "ompt_frame_t"))
	b.define("ompt_team_info_t", pad(8), b.scalar("parallel_data", 8), b.ptr("master_return_address"))
	b.define("ompt_thread_info_t", b.scalar("thread_data", 8), b.scalar("wait_id", 8), pad(4), b.scalar("state", 4))
	b.define("ompt_lw_taskteam_t", b.ptr("parent"), pad(8), b.nested("ompt_task_info", "ompt_task_info_t"),
		b.scalar("heap", 4), b.nested("ompt_team_info", "ompt_team_info_t"))

	b.define("kmp_desc_base_t", b.scalar("ds_tid", 4), pad(4), b.ptr("ds_thread"), b.scalar("ds_gtid", 4))
	b.define("kmp_desc_t", pad(8), b.nested("ds", "kmp_desc_base_t"))
	b.define("kmp_base_info_t", pad(8), b.nested("ompt_thread_info", "ompt_thread_info_t"),
		b.ptr("th_current_task"), pad(12), b.nested("th_info", "kmp_desc_t"), b.ptr("th_team"), pad(16))
	b.define("kmp_info_t", pad(16), b.nested("th", "kmp_base_info_t"), pad(40))

	b.define("kmp_r_sched_t", b.scalar("chunk", 4), b.scalar("r_sched_type", 4))
	b.define("kmp_internal_control_t", b.scalar("serial_nesting_level", 4), b.scalar("thread_limit", 4),
		b.scalar("nproc", 4), b.scalar("dynamic", 1), pad(3), b.scalar("default_device", 4),
		b.nested("sched", "kmp_r_sched_t"), b.scalar("max_active_levels", 4), b.scalar("proc_bind", 4), b.ptr("next"))
	b.define("kmp_tasking_flags_t", b.scalar("bits", 4))
	b.define("kmp_taskdata_t", b.scalar("td_task_id", 4), pad(4), b.nested("td_icvs", "kmp_internal_control_t"),
		b.ptr("td_parent"), pad(4), b.scalar("td_flags", 4), b.nested("ompt_task_info", "ompt_task_info_t"),
		b.ptr("td_team"), pad(24))
	b.define("kmp_task_t", b.ptr("shareds"), b.scalar("part_id", 4), pad(4), b.ptr("routine"))

	b.define("kmp_base_team_t", pad(8), b.scalar("t_level", 4), b.scalar("t_nproc", 4), b.ptr("t_parent"),
		b.ptr("ompt_serialized_team_info"), b.ptr("t_threads"), b.nested("ompt_team_info", "ompt_team_info_t"),
		b.scalar("t_master_tid", 4), b.scalar("t_active_level", 4), b.ptr("t_pkfn"),
		b.ptr("t_implicit_task_taskdata"), pad(16))
	b.define("kmp_team_p", pad(32), b.nested("t", "kmp_base_team_t"), pad(8))

	b.define("kmp_base_root_t", pad(8), b.scalar("r_in_parallel", 4))
	b.define("kmp_root_t", pad(8), b.nested("r", "kmp_base_root_t"))

	b.define("kmp_base_global_t", pad(8), b.scalar("g_abort", 4), b.scalar("g_done", 4), pad(4),
		b.scalar("g_dynamic_mode", 4), b.scalar("g_dynamic", 4))
	b.define("kmp_global_t", pad(16), b.nested("g", "kmp_base_global_t"), pad(8))

	b.define("kmp_nested_nthreads_t", b.scalar("used", 4), b.scalar("size", 4), b.ptr("nth"))
	b.define("kmp_nested_proc_bind_t", b.scalar("size", 4), b.scalar("used", 4), b.ptr("bind_types"))

	l.Bits = map[string]uint64{
		"tiedness": 3, "final": 5, "tasktype": 7, "task_serial": 9, "tasking_ser": 10, "team_serial": 11,
		"started": 16, "executing": 17, "complete": 18, "freed": 19, "native": 26,
	}
	return l
}

// Field returns the place of a member given by a dotted path within typ,
// e.g. Field("kmp_info_t", "th.th_info.ds.ds_thread"). It panics on an
// unknown type or member.
func (l *Layout) Field(typ, path string) Field {
	var off uint64
	cur := typ
	var f Field
	for _, name := range strings.Split(path, ".") {
		s, ok := l.Structs[cur]
		if !ok {
			panic(fmt.Sprintf("fakeruntime: no type %q", cur))
		}
		f, ok = s.Fields[name]
		if !ok {
			panic(fmt.Sprintf("fakeruntime: no member %q in %s", name, cur))
		}
		off += f.Off
		cur = f.Type
	}
	return Field{Off: off, Size: f.Size, Type: f.Type}
}

// Off returns the offset of a member given by a dotted path (see Field).
func (l *Layout) Off(typ, path string) uint64 { return l.Field(typ, path).Off }

// Size returns the size of a type.
func (l *Layout) Size(typ string) uint64 {
	s, ok := l.Structs[typ]
	if !ok {
		panic(fmt.Sprintf("fakeruntime: no type %q", typ))
	}
	return s.Size
}

// FlagMask returns the memory image of a 4-byte kmp_tasking_flags_t with
// only the named member set, in the given byte order.
func (l *Layout) FlagMask(name string, order binary.ByteOrder) []byte {
	bit, ok := l.Bits[name]
	if !ok {
		panic(fmt.Sprintf("fakeruntime: no task flag %q", name))
	}
	m := make([]byte, 4)
	if order == binary.BigEndian {
		m[bit/8] = 0x80 >> (bit % 8)
	} else {
		m[bit/8] = 1 << (bit % 8)
	}
	return m
}

// accessTable lists the members OMPD's tables describe (LLVM's
// OMPD_FOREACH_ACCESS), as type and member.
var accessTable = [][2]string{
	{"kmp_base_info_t", "th_current_task"}, {"kmp_base_info_t", "th_team"}, {"kmp_base_info_t", "th_info"},
	{"kmp_base_info_t", "ompt_thread_info"},
	{"kmp_base_root_t", "r_in_parallel"},
	{"kmp_base_team_t", "ompt_team_info"}, {"kmp_base_team_t", "ompt_serialized_team_info"},
	{"kmp_base_team_t", "t_active_level"}, {"kmp_base_team_t", "t_implicit_task_taskdata"},
	{"kmp_base_team_t", "t_master_tid"}, {"kmp_base_team_t", "t_nproc"}, {"kmp_base_team_t", "t_level"},
	{"kmp_base_team_t", "t_parent"}, {"kmp_base_team_t", "t_pkfn"}, {"kmp_base_team_t", "t_threads"},
	{"kmp_desc_t", "ds"},
	{"kmp_desc_base_t", "ds_thread"}, {"kmp_desc_base_t", "ds_tid"},
	{"kmp_info_t", "th"},
	{"kmp_r_sched_t", "r_sched_type"}, {"kmp_r_sched_t", "chunk"},
	{"kmp_root_t", "r"},
	{"kmp_internal_control_t", "dynamic"}, {"kmp_internal_control_t", "max_active_levels"},
	{"kmp_internal_control_t", "nproc"}, {"kmp_internal_control_t", "proc_bind"},
	{"kmp_internal_control_t", "sched"}, {"kmp_internal_control_t", "default_device"},
	{"kmp_internal_control_t", "thread_limit"},
	{"kmp_taskdata_t", "ompt_task_info"}, {"kmp_taskdata_t", "td_flags"}, {"kmp_taskdata_t", "td_icvs"},
	{"kmp_taskdata_t", "td_parent"}, {"kmp_taskdata_t", "td_team"},
	{"kmp_task_t", "routine"},
	{"kmp_team_p", "t"},
	{"kmp_nested_nthreads_t", "used"}, {"kmp_nested_nthreads_t", "nth"},
	{"kmp_nested_proc_bind_t", "used"}, {"kmp_nested_proc_bind_t", "bind_types"},
	{"ompt_task_info_t", "frame"}, {"ompt_task_info_t", "scheduling_parent"}, {"ompt_task_info_t", "task_data"},
	{"ompt_team_info_t", "parallel_data"},
	{"ompt_thread_info_t", "state"}, {"ompt_thread_info_t", "wait_id"}, {"ompt_thread_info_t", "thread_data"},
	{"ompt_data_t", "value"}, {"ompt_data_t", "ptr"},
	{"ompt_frame_t", "exit_frame"}, {"ompt_frame_t", "enter_frame"},
	{"ompt_lw_taskteam_t", "parent"}, {"ompt_lw_taskteam_t", "ompt_team_info"},
	{"ompt_lw_taskteam_t", "ompt_task_info"},
}

// typeSizes lists the types whose sizes OMPD's tables give (part of LLVM's
// OMPD_FOREACH_SIZEOF; the globals are in globalDefs).
var typeSizes = []string{"kmp_info_t", "kmp_taskdata_t", "kmp_task_t", "kmp_tasking_flags_t",
	"kmp_thread_t", "ompt_data_t", "ompt_id_t", "kmp_nested_nthreads_t", "kmp_nested_proc_bind_t", "int", "char"}

// Tables returns every OMPD layout table the fake runtime defines, symbol
// name to value, for a target of the given byte order: ompd_access__T__M,
// ompd_sizeof__T__M, ompd_sizeof__T (types and globals) and
// ompd_bitfield__kmp_tasking_flags_t__M (the value whose memory image is the
// flags struct with that member set).
func (l *Layout) Tables(order binary.ByteOrder) map[string]uint64 {
	out := make(map[string]uint64)
	for _, e := range accessTable {
		f := l.Field(e[0], e[1])
		out["ompd_access__"+e[0]+"__"+e[1]] = f.Off
		out["ompd_sizeof__"+e[0]+"__"+e[1]] = f.Size
	}
	for _, t := range typeSizes {
		out["ompd_sizeof__"+t] = l.typeSize(t)
	}
	for _, g := range globalDefs(l) {
		if g.sized {
			out["ompd_sizeof__"+g.name] = g.size
		}
	}
	out["ompd_sizeof____kmp_gtid"] = 4 // thread-local int
	for _, name := range FlagNames {
		img := make([]byte, 8)
		copy(img, l.FlagMask(name, order))
		out["ompd_bitfield__kmp_tasking_flags_t__"+name] = order.Uint64(img)
	}
	return out
}

func (l *Layout) typeSize(t string) uint64 {
	switch t {
	case "kmp_thread_t":
		return l.Ptr
	case "ompt_id_t":
		return 8
	case "int":
		return 4
	case "char":
		return 1
	}
	return l.Size(t)
}

// TableNames returns the names of every layout table, sorted.
func (l *Layout) TableNames() []string {
	m := l.Tables(binary.LittleEndian)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// global is a runtime global variable the fake runtime defines.
type global struct {
	name  string
	size  uint64
	sized bool // its size is in the OMPD tables (ompd_sizeof__NAME)
}

func globalDefs(l *Layout) []global {
	p := l.Ptr
	return []global{
		{"__kmp_threads", p, false},
		{"__kmp_threads_capacity", 4, false},
		{"__kmp_nth", 4, true},
		{"__kmp_all_nth", 4, false},
		{"__kmp_sys_max_nth", 4, false},
		{"__kmp_avail_proc", 4, true},
		{"__kmp_max_nth", 4, true},
		{"__kmp_stksize", p, true},
		{"__kmp_omp_cancellation", 4, true},
		{"__kmp_max_task_priority", 4, true},
		{"__kmp_display_affinity", 4, true},
		{"__kmp_affinity_format", p, true},
		{"__kmp_tool_libraries", p, true},
		{"__kmp_tool_verbose_init", p, true},
		{"__kmp_tool", 4, true},
		{"__kmp_nteams", 4, true},
		{"__kmp_teams_thread_limit", 4, true},
		{"ompd_state", 8, true},
		{"ompd_env_block", p, false},
		{"ompd_env_block_size", 8, false}, // ompd_size_t: uint64_t on every target
		{"ompd_dll_locations", p, false},
		{"ompd_rtl_version", 4, false},
		{"__kmp_openmp_version", 4, false},
		{"__kmp_cg_max_nth", 4, false},
		{"__kmp_dflt_max_active_levels", 4, false},
		{"__kmp_default_device", 4, false},
		{"__kmp_sched", 4, false}, // enum sched_type
		{"__kmp_chunk", 4, false},
		{"__kmp_global", l.Size("kmp_global_t"), false},
		{"__kmp_nested_nth", l.Size("kmp_nested_nthreads_t"), true},
		{"__kmp_nested_proc_bind", l.Size("kmp_nested_proc_bind_t"), true},
	}
}

// registerDWARF records the layout as debug information in t (type sizes,
// member offsets and task flag bit positions), as a runtime built without
// OMPD support but with debug information would have it.
func (l *Layout) registerDWARF(t *Target) {
	for name, s := range l.Structs {
		t.SetTypeSize(name, s.Size)
		for f, fl := range s.Fields {
			t.SetFieldOffset(name, f, fl.Off)
		}
	}
	for name, bit := range l.Bits {
		t.SetBitField("kmp_tasking_flags_t", name, bit, 1)
	}
}
