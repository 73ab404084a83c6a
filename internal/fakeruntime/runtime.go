package fakeruntime

import (
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/ompd-go/ompd/target"
)

// Runtime sched_type values (LLVM's kmp.h) for ICVs.SchedType.
const (
	SchedStaticChunked   = 33
	SchedStatic          = 34
	SchedDynamicChunked  = 35
	SchedGuidedChunked   = 36
	SchedAuto            = 38
	SchedTrapezoidal     = 39
	SchedStaticSteal     = 44
	SchedMonotonic       = 1 << 29 // modifier bit
	SchedNonmonotonic    = 1 << 30 // modifier bit
	DefaultOpenMPVersion = 201811
)

// Thread states (ompt_state_t) the builders use by default.
const (
	StateWorkSerial   = 0x000
	StateWorkParallel = 0x001
	StateUndefined    = 0x102
)

// ICVs are the internal control variables a task carries (LLVM's
// kmp_internal_control_t).
type ICVs struct {
	Dynamic         bool
	NProc           int
	ThreadLimit     int
	MaxActiveLevels int
	DefaultDevice   int
	ProcBind        int // omp_proc_bind_t
	SchedType       int // runtime sched_type, with modifier bits
	SchedChunk      int
}

// TaskFlags select the kmp_tasking_flags_t bits NewTask sets.
type TaskFlags uint32

// Task flags. Tasks are tied unless Untied is given.
const (
	Explicit   TaskFlags = 1 << iota // tasktype: an explicit task
	Final                            // final
	Untied                           // tiedness cleared
	Included                         // task_serial: undeferred
	TaskingSer                       // tasking_ser
	TeamSerial                       // team_serial
	Started                          // started
	Executing                        // executing
	Complete                         // complete
	Freed                            // freed
	Native                           // native
)

var flagBits = []struct {
	f    TaskFlags
	name string
}{
	{Explicit, "tasktype"}, {Final, "final"}, {Included, "task_serial"}, {TaskingSer, "tasking_ser"},
	{TeamSerial, "team_serial"}, {Started, "started"}, {Executing, "executing"}, {Complete, "complete"},
	{Freed, "freed"}, {Native, "native"},
}

// Object is a piece of runtime memory the builder allocated, for tests that
// corrupt memory at random.
type Object struct {
	Kind string // "tables", "globals", "thread", "team", "task", "lwt", "array", "string"
	Addr uint64
	Size int
}

// Runtime lays out LLVM OpenMP runtime structures in a Target, with the
// fake Layout, and writes the OMPD layout tables that describe them.
type Runtime struct {
	T *Target
	L *Layout
	// DefaultICVs are the ICVs of tasks made without a parent task.
	DefaultICVs ICVs

	p     uint64
	order binary.ByteOrder

	mu       sync.Mutex
	tables   map[string]uint64 // table symbol -> address
	globals  map[string]global
	gaddr    map[string]uint64
	thArr    uint64
	thCap    int
	threads  map[int]*Thread
	objects  []Object
	funcs    map[string]uint64
	tlsNames map[uint64]bool
}

// New lays out an initialized runtime in t: the layout tables, the runtime
// globals with default values (ompd_state 1, as OMP_DEBUG=enabled sets it;
// an empty thread table of capacity 16; OpenMP version 201811; a display
// environment block; one DLL location), and the breakpoint functions.
func New(t *Target) *Runtime {
	rt := &Runtime{
		T: t, L: NewLayout(t.Sizes().Pointer),
		DefaultICVs: ICVs{NProc: 4, ThreadLimit: 2147483647, MaxActiveLevels: 2147483647,
			ProcBind: 0, SchedType: SchedStatic},
		p: uint64(t.Sizes().Pointer), order: t.ByteOrder(),
		tables: make(map[string]uint64), globals: make(map[string]global), gaddr: make(map[string]uint64),
		threads: make(map[int]*Thread), funcs: make(map[string]uint64), tlsNames: make(map[uint64]bool),
	}
	// Layout tables: one region of uint64 globals.
	tabs := rt.L.Tables(rt.order)
	names := make([]string, 0, len(tabs))
	for k := range tabs {
		names = append(names, k)
	}
	sort.Strings(names)
	base := t.Alloc(8 * len(names))
	rt.object("tables", base, 8*len(names))
	for i, n := range names {
		a := base + uint64(8*i)
		t.PutUint(a, 8, tabs[n])
		t.SetSymbol(n, a)
		rt.tables[n] = a
	}
	// Globals: one region, each aligned to 8.
	defs := globalDefs(rt.L)
	var size uint64
	for _, g := range defs {
		size = alignUp(size, 8) + g.size
	}
	gbase := t.Alloc(int(size))
	rt.object("globals", gbase, int(size))
	var off uint64
	for _, g := range defs {
		off = alignUp(off, 8)
		rt.globals[g.name] = g
		rt.gaddr[g.name] = gbase + off
		t.SetSymbol(g.name, gbase+off)
		off += g.size
	}
	for _, bp := range []string{"ompd_bp_parallel_begin", "ompd_bp_parallel_end", "ompd_bp_task_begin",
		"ompd_bp_task_end", "ompd_bp_thread_begin", "ompd_bp_thread_end", "ompd_dll_locations_valid"} {
		rt.Function(bp)
	}
	// __kmp_global.g.g_dynamic is found through debug information.
	t.SetFieldOffset("kmp_global_t", "g", rt.L.Off("kmp_global_t", "g"))
	t.SetFieldOffset("kmp_base_global_t", "g_dynamic", rt.L.Off("kmp_base_global_t", "g_dynamic"))
	rt.SetThreadsCapacity(16)
	rt.SetGlobal("ompd_state", 1)
	rt.SetGlobal("__kmp_openmp_version", DefaultOpenMPVersion)
	rt.SetGlobal("ompd_rtl_version", 5)
	rt.SetGlobal("__kmp_avail_proc", 8)
	rt.SetGlobal("__kmp_max_nth", 256)
	rt.SetGlobal("__kmp_sys_max_nth", 2147483647) // INT_MAX: Linux's unlimited threads
	rt.SetGlobal("__kmp_cg_max_nth", 2147483647)
	rt.SetGlobal("__kmp_dflt_max_active_levels", 1)
	rt.SetGlobal("__kmp_sched", SchedStatic)
	rt.SetGlobal("__kmp_stksize", 8<<20)
	rt.SetGlobal("__kmp_tool", 1)
	rt.SetStringGlobal("__kmp_affinity_format", DefaultAffinityFormat)
	rt.SetDLLLocations([]string{"libompd.so"})
	rt.SetEnvBlock(DefaultEnvBlock)
	return rt
}

// DefaultAffinityFormat is LLVM's default OMP_AFFINITY_FORMAT.
const DefaultAffinityFormat = "OMP: pid %P tid %i thread %n bound to OS proc set {%A}"

// DefaultEnvBlock is the display block New writes: what LLVM's runtime
// records (__kmp_env_dump, before it reads the environment), so the
// defaults, in its format.
const DefaultEnvBlock = "OMP_AFFINITY_FORMAT='" + DefaultAffinityFormat + "'\n" +
	"OMP_CANCELLATION=false\n" +
	"OMP_DEFAULT_DEVICE=0\n" +
	"OMP_DISPLAY_AFFINITY=false\n" +
	"OMP_DISPLAY_ENV=false\n" +
	"OMP_DYNAMIC=false\n" +
	"OMP_MAX_ACTIVE_LEVELS=1\n" +
	"OMP_MAX_TASK_PRIORITY=0\n" +
	"OMP_NESTED: deprecated; max-active-levels-var=1\n" +
	"OMP_NUM_THREADS=undefined\n" +
	"OMP_PLACES=undefined\n" +
	"OMP_PROC_BIND='false'\n" +
	"OMP_SCHEDULE='static'\n" +
	"OMP_STACKSIZE=8M\n" +
	"OMP_THREAD_LIMIT=2147483647\n" +
	"OMP_WAIT_POLICY=PASSIVE\n" +
	"KMP_BLOCKTIME=200\n"

// SetDynamicDefault sets __kmp_global.g.g_dynamic, the initial dyn-var
// (OMP_DYNAMIC).
func (rt *Runtime) SetDynamicDefault(on bool) {
	rt.putField(rt.GlobalAddr("__kmp_global"), "kmp_global_t", "g.g_dynamic", uint64(boolInt(on)))
}

func (rt *Runtime) object(kind string, addr uint64, size int) {
	rt.mu.Lock()
	rt.objects = append(rt.objects, Object{Kind: kind, Addr: addr, Size: size})
	rt.mu.Unlock()
}

func (rt *Runtime) alloc(kind string, size uint64) uint64 {
	a := rt.T.Alloc(int(size))
	rt.object(kind, a, int(size))
	return a
}

// Objects lists the memory the builder allocated: tables, globals, threads,
// teams, tasks, lw taskteams, arrays and strings.
func (rt *Runtime) Objects() []Object {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return slices.Clone(rt.objects)
}

// Ptr returns the target's pointer size.
func (rt *Runtime) Ptr() int { return int(rt.p) }

func (rt *Runtime) put(addr, size, v uint64) { rt.T.PutUint(addr, int(size), v) }
func (rt *Runtime) putPtr(addr, v uint64)    { rt.T.PutUint(addr, int(rt.p), v) }

// putField writes v into the member at path of the struct typ at base.
func (rt *Runtime) putField(base uint64, typ, path string, v uint64) {
	f := rt.L.Field(typ, path)
	rt.put(base+f.Off, f.Size, v)
}

func (rt *Runtime) field(base uint64, typ, path string) uint64 {
	f := rt.L.Field(typ, path)
	return rt.T.Uint(base+f.Off, int(f.Size))
}

func signExtend(v, size uint64) int64 {
	switch size {
	case 1:
		return int64(int8(v))
	case 2:
		return int64(int16(v))
	case 4:
		return int64(int32(v))
	}
	return int64(v)
}

// Function returns the address of a function symbol of the target's text,
// defining it on first use.
func (rt *Runtime) Function(name string) uint64 {
	rt.mu.Lock()
	a, ok := rt.funcs[name]
	rt.mu.Unlock()
	if ok {
		return a
	}
	a = rt.T.AddFunction(name, 64)
	rt.mu.Lock()
	rt.funcs[name] = a
	rt.mu.Unlock()
	return a
}

// ---- tables and symbols ----

// TableNames returns the names of every layout table written, sorted.
func (rt *Runtime) TableNames() []string { return rt.L.TableNames() }

// TableAddr returns the address of a layout table (0 if none).
func (rt *Runtime) TableAddr(sym string) uint64 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.tables[sym]
}

// SetTable overwrites the value of a layout table, e.g.
// SetTable("ompd_sizeof__kmp_info_t", 0). It panics on an unknown table.
func (rt *Runtime) SetTable(sym string, v uint64) {
	a := rt.TableAddr(sym)
	if a == 0 {
		panic(fmt.Sprintf("fakeruntime: no layout table %q", sym))
	}
	rt.put(a, 8, v)
}

// Table reads the value of a layout table.
func (rt *Runtime) Table(sym string) uint64 {
	a := rt.TableAddr(sym)
	if a == 0 {
		panic(fmt.Sprintf("fakeruntime: no layout table %q", sym))
	}
	return rt.T.Uint(a, 8)
}

// DropSymbol removes a symbol from the target (a table, a global, a
// breakpoint function...).
func (rt *Runtime) DropSymbol(name string) { rt.T.DeleteSymbol(name) }

// DropTables removes every OMPD layout table symbol, as in a runtime built
// without OMPD support.
func (rt *Runtime) DropTables() {
	for _, n := range rt.TableNames() {
		rt.T.DeleteSymbol(n)
	}
}

// RegisterDWARF records the fake layout as the target's debug information
// (TypeSize, FieldOffset, BitField), for reading the runtime without its
// OMPD tables.
func (rt *Runtime) RegisterDWARF() { rt.L.registerDWARF(rt.T) }

// ---- globals ----

// GlobalAddr returns the address of a runtime global (0 if the runtime does
// not define it).
func (rt *Runtime) GlobalAddr(name string) uint64 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.gaddr[name]
}

func (rt *Runtime) globalDef(name string) (global, uint64) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	g, ok := rt.globals[name]
	if !ok {
		panic(fmt.Sprintf("fakeruntime: no runtime global %q", name))
	}
	return g, rt.gaddr[name]
}

// SetGlobal writes an integer (or pointer) runtime global in its own size,
// e.g. SetGlobal("__kmp_avail_proc", 8). It panics on a global that is not
// an integer.
func (rt *Runtime) SetGlobal(name string, v int64) {
	g, a := rt.globalDef(name)
	if g.size > 8 {
		panic(fmt.Sprintf("fakeruntime: global %s is a struct", name))
	}
	rt.put(a, g.size, uint64(v))
}

// Global reads an integer runtime global, sign-extended.
func (rt *Runtime) Global(name string) int64 {
	g, a := rt.globalDef(name)
	return signExtend(rt.T.Uint(a, int(g.size)), g.size)
}

// SetStringGlobal points a char* runtime global at a new copy of s.
func (rt *Runtime) SetStringGlobal(name, s string) {
	g, a := rt.globalDef(name)
	if g.size != rt.p {
		panic(fmt.Sprintf("fakeruntime: global %s is not a pointer", name))
	}
	sa := rt.T.AllocString(s)
	rt.object("string", sa, len(s)+1)
	rt.putPtr(a, sa)
}

// SetOMPDState writes ompd_state (1 = OMPD_ENABLE_BP, as OMP_DEBUG=enabled
// sets it; 0 = no state tracking).
func (rt *Runtime) SetOMPDState(v uint64) { rt.SetGlobal("ompd_state", int64(v)) }

// OMPDState reads ompd_state.
func (rt *Runtime) OMPDState() uint64 { return uint64(rt.Global("ompd_state")) }

// SetOpenMPVersion writes __kmp_openmp_version.
func (rt *Runtime) SetOpenMPVersion(v int) { rt.SetGlobal("__kmp_openmp_version", int64(v)) }

// SetNestedNth sets __kmp_nested_nth (the OMP_NUM_THREADS list) to list;
// nil leaves it empty.
func (rt *Runtime) SetNestedNth(list []int) {
	rt.setNested("__kmp_nested_nth", "kmp_nested_nthreads_t", "nth", list)
}

// SetNestedProcBind sets __kmp_nested_proc_bind (the OMP_PROC_BIND list,
// omp_proc_bind_t values) to list.
func (rt *Runtime) SetNestedProcBind(list []int) {
	rt.setNested("__kmp_nested_proc_bind", "kmp_nested_proc_bind_t", "bind_types", list)
}

func (rt *Runtime) setNested(name, typ, arrField string, list []int) {
	_, a := rt.globalDef(name)
	var arr uint64
	if len(list) > 0 {
		arr = rt.alloc("array", uint64(4*len(list)))
		for i, v := range list {
			rt.put(arr+uint64(4*i), 4, uint64(v))
		}
	}
	rt.putField(a, typ, arrField, arr)
	rt.putField(a, typ, "used", uint64(len(list)))
	rt.putField(a, typ, "size", uint64(len(list)))
}

// SetNestedUsed overwrites the used count of __kmp_nested_nth (bind false)
// or __kmp_nested_proc_bind (bind true), for corrupting it.
func (rt *Runtime) SetNestedUsed(bind bool, used int) {
	if bind {
		rt.putField(rt.GlobalAddr("__kmp_nested_proc_bind"), "kmp_nested_proc_bind_t", "used", uint64(used))
	} else {
		rt.putField(rt.GlobalAddr("__kmp_nested_nth"), "kmp_nested_nthreads_t", "used", uint64(used))
	}
}

// SetEnvBlock sets the display-variables block to text: ompd_env_block
// points to a NUL-terminated copy and ompd_env_block_size is its strlen, as
// LLVM's __kmp_env_dump sets them. An empty text clears both.
func (rt *Runtime) SetEnvBlock(text string) {
	if text == "" {
		rt.SetGlobal("ompd_env_block", 0)
		rt.SetGlobal("ompd_env_block_size", 0)
		return
	}
	a := rt.alloc("string", uint64(len(text)+1))
	if err := rt.T.Poke(a, append([]byte(text), 0)); err != nil {
		panic(err)
	}
	rt.SetGlobal("ompd_env_block", int64(a))
	rt.SetGlobal("ompd_env_block_size", int64(len(text)))
}

// SetDLLLocations sets ompd_dll_locations to a NULL-terminated array of
// the given names; nil sets the pointer to NULL.
func (rt *Runtime) SetDLLLocations(names []string) {
	if names == nil {
		rt.SetGlobal("ompd_dll_locations", 0)
		return
	}
	arr := rt.alloc("array", rt.p*uint64(len(names)+1))
	for i, n := range names {
		sa := rt.T.AllocString(n)
		rt.object("string", sa, len(n)+1)
		rt.putPtr(arr+uint64(i)*rt.p, sa)
	}
	rt.SetGlobal("ompd_dll_locations", int64(arr))
}

// ---- the thread table ----

// SetThreadsCapacity allocates a new __kmp_threads array of n entries,
// copying the entries that fit, and sets __kmp_threads_capacity to n.
func (rt *Runtime) SetThreadsCapacity(n int) {
	arr := rt.alloc("array", rt.p*uint64(max(n, 1)))
	rt.mu.Lock()
	old, oldCap := rt.thArr, rt.thCap
	rt.mu.Unlock()
	for i := 0; i < min(n, oldCap); i++ {
		rt.putPtr(arr+uint64(i)*rt.p, rt.T.Ptr(old+uint64(i)*rt.p))
	}
	rt.mu.Lock()
	rt.thArr, rt.thCap = arr, n
	rt.mu.Unlock()
	rt.SetGlobal("__kmp_threads", int64(arr))
	rt.SetGlobal("__kmp_threads_capacity", int64(n))
}

// SetCapacityValue overwrites __kmp_threads_capacity alone (the array stays
// as it is), e.g. with an absurd value.
func (rt *Runtime) SetCapacityValue(n int64) { rt.SetGlobal("__kmp_threads_capacity", n) }

// ThreadsArray returns the address of the __kmp_threads array.
func (rt *Runtime) ThreadsArray() uint64 {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.thArr
}

// SetThreadsEntry overwrites __kmp_threads[gtid] (0 removes the thread,
// another address replaces it: handles of the old thread become stale).
func (rt *Runtime) SetThreadsEntry(gtid int, addr uint64) {
	rt.mu.Lock()
	arr, capacity := rt.thArr, rt.thCap
	rt.mu.Unlock()
	if gtid < 0 || gtid >= capacity {
		panic(fmt.Sprintf("fakeruntime: gtid %d beyond capacity %d", gtid, capacity))
	}
	rt.putPtr(arr+uint64(gtid)*rt.p, addr)
}

// Thread is an OpenMP thread (kmp_info_t) of the fake runtime.
type Thread struct {
	rt      *Runtime
	Addr    uint64 // kmp_info_t
	GTID    int
	Pthread uint64 // ds_thread, and the thread pointer in the OS thread list
	LWP     uint64 // OS thread id (0: none in the OS thread list)
	GTIDVar uint64 // address of the thread's __kmp_gtid
}

// NewThread makes an OpenMP thread: a kmp_info_t with ds_thread pthread,
// registered as __kmp_threads[gtid] (growing the table as needed), in state
// work_serial and in no team. A nonzero lwp also adds an OS thread {lwp,
// pthread} to the target, with __kmp_gtid = gtid as its thread-local.
func (rt *Runtime) NewThread(gtid int, pthread, lwp uint64) *Thread {
	rt.mu.Lock()
	capacity := rt.thCap
	rt.mu.Unlock()
	if gtid >= capacity {
		rt.SetThreadsCapacity(max(2*capacity, gtid+1))
	}
	th := &Thread{rt: rt, Addr: rt.alloc("thread", rt.L.Size("kmp_info_t")), GTID: gtid, Pthread: pthread, LWP: lwp}
	th.SetPthread(pthread)
	rt.putField(th.Addr, "kmp_info_t", "th.th_info.ds.ds_gtid", uint64(gtid))
	th.SetState(StateWorkSerial, 0)
	rt.SetThreadsEntry(gtid, th.Addr)
	if lwp != 0 {
		rt.T.AddThread(target.Thread{ID: lwp, Pointer: pthread})
		th.GTIDVar = rt.alloc("tls", 4)
		rt.put(th.GTIDVar, 4, uint64(gtid))
		rt.T.SetThreadLocal(lwp, "__kmp_gtid", th.GTIDVar)
	}
	rt.mu.Lock()
	rt.threads[gtid] = th
	n := len(rt.threads)
	rt.mu.Unlock()
	rt.SetGlobal("__kmp_nth", int64(n))
	rt.SetGlobal("__kmp_all_nth", int64(n))
	return th
}

// Threads returns the threads made with NewThread, in gtid order.
func (rt *Runtime) Threads() []*Thread {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	out := make([]*Thread, 0, len(rt.threads))
	for _, th := range rt.threads {
		out = append(out, th)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GTID < out[j].GTID })
	return out
}

func (th *Thread) put(path string, v uint64) { th.rt.putField(th.Addr, "kmp_info_t", "th."+path, v) }

// Get reads a member of the thread's kmp_base_info_t given by a dotted path,
// e.g. Get("ompt_thread_info.state").
func (th *Thread) Get(path string) uint64 { return th.rt.field(th.Addr, "kmp_info_t", "th."+path) }

// SetState sets the thread's OMPT state and wait id.
func (th *Thread) SetState(state int64, wait uint64) {
	th.put("ompt_thread_info.state", uint64(state))
	th.put("ompt_thread_info.wait_id", wait)
}

// SetThreadData sets the thread's OMPT thread data.
func (th *Thread) SetThreadData(v uint64) { th.put("ompt_thread_info.thread_data", v) }

// SetPthread sets ds_thread.
func (th *Thread) SetPthread(p uint64) { th.put("th_info.ds.ds_thread", p) }

// SetTid sets ds_tid, the thread's number in its team.
func (th *Thread) SetTid(n int) { th.put("th_info.ds.ds_tid", uint64(n)) }

// SetTeam sets th_team (nil: in no team, idle in the pool).
func (th *Thread) SetTeam(team *Team) {
	var a uint64
	if team != nil {
		a = team.Addr
	}
	th.SetTeamAddr(a)
}

// SetTeamAddr sets th_team to any address.
func (th *Thread) SetTeamAddr(a uint64) { th.put("th_team", a) }

// SetCurrentTask sets th_current_task (nil: none).
func (th *Thread) SetCurrentTask(task *Task) {
	var a uint64
	if task != nil {
		a = task.Addr
	}
	th.SetCurrentTaskAddr(a)
}

// SetCurrentTaskAddr sets th_current_task to any address.
func (th *Thread) SetCurrentTaskAddr(a uint64) { th.put("th_current_task", a) }

// CurrentTaskAddr reads th_current_task.
func (th *Thread) CurrentTaskAddr() uint64 { return th.Get("th_current_task") }

// ---- teams ----

// Team is a team (kmp_team_t) of the fake runtime. A serial team stands for
// the levels Parent.Level+1 .. Level.
type Team struct {
	rt       *Runtime
	Addr     uint64 // kmp_team_t
	Base     uint64 // its kmp_base_team_t (Addr + offset of t)
	Parent   *Team
	Level    int
	Active   int
	NProc    int
	Threads  []*Thread
	Pkfn     uint64
	Array    uint64  // t_threads
	Implicit []*Task // t_implicit_task_taskdata entries
	// LWT holds the ompt_lw_taskteam_t chain of a serial team: LWT[0]
	// keeps the OMPT data of level Level-1, LWT[1] of Level-2, ...
	LWT []uint64
}

// NewTeam makes a team at the given nesting level and active level, with
// t_nproc nproc, the given threads in t_threads, and outlined function pkfn.
// Each thread enters it: th_team is the team, ds_tid its index, and
// th_current_task its implicit task. The implicit tasks' generating task
// (td_parent) is the current task of threads[0] before it entered, and their
// ICVs are copied from it (DefaultICVs if none). An absurd nproc is written
// as given, with arrays sized from the threads.
func (rt *Runtime) NewTeam(parent *Team, level, activeLevel, nproc int, threads []*Thread, pkfn uint64) *Team {
	n := len(threads)
	if nproc >= n && nproc <= 4096 {
		n = nproc
	}
	n = max(n, 1)
	size := rt.L.Size("kmp_team_p")
	tm := &Team{rt: rt, Addr: rt.alloc("team", size), Parent: parent, Level: level, Active: activeLevel,
		NProc: nproc, Threads: threads, Pkfn: pkfn}
	tm.Base = tm.Addr + rt.L.Off("kmp_team_p", "t")
	tm.Array = rt.alloc("array", rt.p*uint64(n))
	tdSize := rt.L.Size("kmp_taskdata_t")
	impl := rt.alloc("array", tdSize*uint64(n))
	tm.put("t_level", uint64(level))
	tm.put("t_active_level", uint64(activeLevel))
	tm.put("t_nproc", uint64(nproc))
	if parent != nil {
		tm.put("t_parent", parent.Addr)
	}
	tm.put("t_threads", tm.Array)
	tm.put("t_pkfn", pkfn)
	tm.put("t_implicit_task_taskdata", impl)
	var enc uint64
	icvs := rt.DefaultICVs
	if len(threads) > 0 && threads[0] != nil {
		enc = threads[0].CurrentTaskAddr()
		if enc != 0 {
			icvs = rt.readICVs(enc)
		}
	}
	flags := Started | Executing
	if nproc == 1 {
		flags |= TeamSerial
	}
	for i := 0; i < n; i++ {
		task := &Task{rt: rt, Addr: impl + uint64(i)*tdSize, Team: tm}
		task.SetFlags(flags)
		task.SetTeamAddr(tm.Addr)
		task.SetParentAddr(enc)
		task.SetICVs(icvs)
		tm.Implicit = append(tm.Implicit, task)
	}
	for i, th := range threads {
		if th == nil {
			continue
		}
		rt.putPtr(tm.Array+uint64(i)*rt.p, th.Addr)
		th.SetTeam(tm)
		th.SetTid(i)
		th.SetCurrentTask(tm.Implicit[i])
	}
	return tm
}

// SerialTeam makes the serial team of thread th standing for depth nested
// serialized regions below parent: levels parent.Level+1 .. parent.Level+depth,
// one thread, active level that of parent, and pkfn the function of the
// innermost one. Its lw-taskteam chain keeps one entry for each enclosing
// level (depth-1 entries); SetLevelData fills in per-level OMPT data.
func (rt *Runtime) SerialTeam(parent *Team, th *Thread, depth int, pkfn uint64) *Team {
	level := depth
	active := 0
	if parent != nil {
		level += parent.Level
		active = parent.Active
	}
	tm := rt.NewTeam(parent, level, active, 1, []*Thread{th}, pkfn)
	tm.Implicit[0].SetFlags(Started | Executing | TeamSerial | TaskingSer)
	lwSize := rt.L.Size("ompt_lw_taskteam_t")
	tm.LWT = make([]uint64, max(depth-1, 0))
	for i := range tm.LWT {
		tm.LWT[i] = rt.alloc("lwt", lwSize)
	}
	for i := range tm.LWT {
		var next uint64
		if i+1 < len(tm.LWT) {
			next = tm.LWT[i+1]
		}
		rt.putPtr(tm.LWT[i]+rt.L.Off("ompt_lw_taskteam_t", "parent"), next)
	}
	if len(tm.LWT) > 0 {
		tm.put("ompt_serialized_team_info", tm.LWT[0])
	}
	return tm
}

func (tm *Team) put(path string, v uint64) { tm.rt.putField(tm.Base, "kmp_base_team_t", path, v) }

// Get reads a member of the team's kmp_base_team_t given by a dotted path.
func (tm *Team) Get(path string) uint64 { return tm.rt.field(tm.Base, "kmp_base_team_t", path) }

// SetParentAddr sets t_parent (tm.Addr makes the team its own parent).
func (tm *Team) SetParentAddr(a uint64) { tm.put("t_parent", a) }

// SetLevel sets t_level.
func (tm *Team) SetLevel(l int) { tm.Level = l; tm.put("t_level", uint64(l)) }

// SetActiveLevel sets t_active_level.
func (tm *Team) SetActiveLevel(l int) { tm.Active = l; tm.put("t_active_level", uint64(l)) }

// SetNProc sets t_nproc (the arrays stay as they are).
func (tm *Team) SetNProc(n int) { tm.NProc = n; tm.put("t_nproc", uint64(n)) }

// SetPkfn sets t_pkfn.
func (tm *Team) SetPkfn(a uint64) { tm.Pkfn = a; tm.put("t_pkfn", a) }

// SetThreadsAddr sets t_threads.
func (tm *Team) SetThreadsAddr(a uint64) { tm.put("t_threads", a) }

// SetImplicitAddr sets t_implicit_task_taskdata.
func (tm *Team) SetImplicitAddr(a uint64) { tm.put("t_implicit_task_taskdata", a) }

// SetMasterTid sets t_master_tid.
func (tm *Team) SetMasterTid(n int) { tm.put("t_master_tid", uint64(n)) }

// SetSerializedInfo sets ompt_serialized_team_info, the head of the lw
// taskteam chain.
func (tm *Team) SetSerializedInfo(a uint64) { tm.put("ompt_serialized_team_info", a) }

// SetLWTParent sets the parent link of lw taskteam LWT[i] (LWT[i] itself, or
// LWT[0], makes the chain cyclic).
func (tm *Team) SetLWTParent(i int, a uint64) {
	tm.rt.putPtr(tm.LWT[i]+tm.rt.L.Off("ompt_lw_taskteam_t", "parent"), a)
}

// SetParallelID sets the team's OMPT parallel data (that of its innermost
// level).
func (tm *Team) SetParallelID(v uint64) { tm.put("ompt_team_info.parallel_data", v) }

// Frames are the OMPT frame addresses and flags of a task.
type Frames struct {
	Exit, Enter           uint64
	ExitFlags, EnterFlags uint32
}

// LevelData is the OMPT data the runtime keeps for one level of a serial
// team.
type LevelData struct {
	ParallelID uint64
	TaskID     uint64
	Frames     Frames
}

// SetLevelData sets the OMPT data of one level of the team: for the
// innermost level (Level) in the team and its implicit task, for an
// enclosing serialized level in its lw taskteam. It panics on a level the
// team does not keep data for.
func (tm *Team) SetLevelData(level int, d LevelData) {
	j := tm.Level - level
	if j == 0 {
		tm.SetParallelID(d.ParallelID)
		tm.Implicit[0].SetTaskID(d.TaskID)
		tm.Implicit[0].SetFrames(d.Frames)
		return
	}
	if j < 0 || j > len(tm.LWT) {
		panic(fmt.Sprintf("fakeruntime: team at level %d keeps no data for level %d", tm.Level, level))
	}
	rt := tm.rt
	a := tm.LWT[j-1]
	rt.putField(a, "ompt_lw_taskteam_t", "ompt_team_info.parallel_data", d.ParallelID)
	rt.putField(a, "ompt_lw_taskteam_t", "ompt_task_info.task_data", d.TaskID)
	rt.writeFrames(a+rt.L.Off("ompt_lw_taskteam_t", "ompt_task_info.frame"), d.Frames)
}

// PopLevel ends the innermost serialized level of a serial team, as the
// runtime does when a nested serialized region ends: t_level goes down by
// one and the head of the lw taskteam chain is popped.
func (tm *Team) PopLevel() {
	tm.SetLevel(tm.Level - 1)
	var head uint64
	if len(tm.LWT) > 0 {
		tm.LWT = tm.LWT[1:]
	}
	if len(tm.LWT) > 0 {
		head = tm.LWT[0]
	}
	tm.SetSerializedInfo(head)
}

func (rt *Runtime) writeFrames(frame uint64, f Frames) {
	rt.putField(frame, "ompt_frame_t", "exit_frame", f.Exit)
	rt.putField(frame, "ompt_frame_t", "enter_frame", f.Enter)
	rt.putField(frame, "ompt_frame_t", "exit_frame_flags", uint64(f.ExitFlags))
	rt.putField(frame, "ompt_frame_t", "enter_frame_flags", uint64(f.EnterFlags))
}

// ---- tasks ----

// Task is a task (kmp_taskdata_t, followed for explicit tasks by a
// kmp_task_t) of the fake runtime.
type Task struct {
	rt   *Runtime
	Addr uint64 // kmp_taskdata_t
	Team *Team
}

// NewTask makes a task generated by parent (nil: none) in team (nil: none):
// flags as given (tied unless Untied), td_parent parent, scheduling parent
// parent, ICVs copied from parent (DefaultICVs without one), and routine as
// the kmp_task_t's routine.
func (rt *Runtime) NewTask(parent *Task, team *Team, flags TaskFlags, routine uint64) *Task {
	tdSize := rt.L.Size("kmp_taskdata_t")
	task := &Task{rt: rt, Addr: rt.alloc("task", tdSize+rt.L.Size("kmp_task_t")), Team: team}
	task.SetFlags(flags)
	icvs := rt.DefaultICVs
	if parent != nil {
		task.SetParentAddr(parent.Addr)
		task.SetSchedulingParentAddr(parent.Addr)
		icvs = rt.readICVs(parent.Addr)
	}
	if team != nil {
		task.SetTeamAddr(team.Addr)
	}
	task.SetICVs(icvs)
	task.SetRoutine(routine)
	return task
}

// TaskAt returns a builder handle for the kmp_taskdata_t at addr.
func (rt *Runtime) TaskAt(addr uint64, team *Team) *Task {
	return &Task{rt: rt, Addr: addr, Team: team}
}

func (tk *Task) put(path string, v uint64) { tk.rt.putField(tk.Addr, "kmp_taskdata_t", path, v) }

// Get reads a member of the task's kmp_taskdata_t given by a dotted path.
func (tk *Task) Get(path string) uint64 { return tk.rt.field(tk.Addr, "kmp_taskdata_t", path) }

// SetFlags rewrites td_flags from flags.
func (tk *Task) SetFlags(flags TaskFlags) {
	order := tk.rt.order
	img := make([]byte, 4)
	set := func(name string) {
		m := tk.rt.L.FlagMask(name, order)
		for i := range img {
			img[i] |= m[i]
		}
	}
	if flags&Untied == 0 {
		set("tiedness")
	}
	for _, b := range flagBits {
		if flags&b.f != 0 {
			set(b.name)
		}
	}
	if err := tk.rt.T.Poke(tk.Addr+tk.rt.L.Off("kmp_taskdata_t", "td_flags"), img); err != nil {
		panic(err)
	}
}

// Flags reads td_flags back as TaskFlags.
func (tk *Task) Flags() TaskFlags {
	b, err := tk.rt.T.Peek(tk.Addr+tk.rt.L.Off("kmp_taskdata_t", "td_flags"), 4)
	if err != nil {
		panic(err)
	}
	has := func(name string) bool {
		m := tk.rt.L.FlagMask(name, tk.rt.order)
		for i := range b {
			if b[i]&m[i] != 0 {
				return true
			}
		}
		return false
	}
	var f TaskFlags
	if !has("tiedness") {
		f |= Untied
	}
	for _, e := range flagBits {
		if has(e.name) {
			f |= e.f
		}
	}
	return f
}

// SetFreed sets or clears the freed bit, as the runtime does when it frees
// the task.
func (tk *Task) SetFreed(freed bool) {
	f := tk.Flags()
	if freed {
		f |= Freed
	} else {
		f &^= Freed
	}
	tk.SetFlags(f)
}

// SetParentAddr sets td_parent (the generating task).
func (tk *Task) SetParentAddr(a uint64) { tk.put("td_parent", a) }

// SetSchedulingParentAddr sets ompt_task_info.scheduling_parent.
func (tk *Task) SetSchedulingParentAddr(a uint64) { tk.put("ompt_task_info.scheduling_parent", a) }

// SetTeamAddr sets td_team.
func (tk *Task) SetTeamAddr(a uint64) { tk.put("td_team", a) }

// SetTaskID sets the task's OMPT task data.
func (tk *Task) SetTaskID(v uint64) { tk.put("ompt_task_info.task_data", v) }

// SetFrames sets the task's OMPT frames.
func (tk *Task) SetFrames(f Frames) {
	tk.rt.writeFrames(tk.Addr+tk.rt.L.Off("kmp_taskdata_t", "ompt_task_info.frame"), f)
}

// SetRoutine sets the routine of the kmp_task_t that follows an explicit
// task's kmp_taskdata_t. Implicit tasks have none: on one, it writes into
// whatever follows it (the next implicit task), or panics past the array.
func (tk *Task) SetRoutine(a uint64) {
	off := tk.rt.L.Size("kmp_taskdata_t") + tk.rt.L.Off("kmp_task_t", "routine")
	tk.rt.putPtr(tk.Addr+off, a)
}

// SetICVs writes the task's ICVs (td_icvs).
func (tk *Task) SetICVs(v ICVs) {
	p := "td_icvs."
	tk.put(p+"dynamic", uint64(boolInt(v.Dynamic)))
	tk.put(p+"nproc", uint64(v.NProc))
	tk.put(p+"thread_limit", uint64(v.ThreadLimit))
	tk.put(p+"max_active_levels", uint64(v.MaxActiveLevels))
	tk.put(p+"default_device", uint64(v.DefaultDevice))
	tk.put(p+"proc_bind", uint64(v.ProcBind))
	tk.put(p+"sched.r_sched_type", uint64(v.SchedType))
	tk.put(p+"sched.chunk", uint64(v.SchedChunk))
}

// ICVs reads the task's ICVs.
func (tk *Task) ICVs() ICVs { return tk.rt.readICVs(tk.Addr) }

func (rt *Runtime) readICVs(td uint64) ICVs {
	get := func(path string) int {
		f := rt.L.Field("kmp_taskdata_t", "td_icvs."+path)
		return int(signExtend(rt.T.Uint(td+f.Off, int(f.Size)), f.Size))
	}
	return ICVs{
		Dynamic: get("dynamic") != 0, NProc: get("nproc"), ThreadLimit: get("thread_limit"),
		MaxActiveLevels: get("max_active_levels"), DefaultDevice: get("default_device"),
		ProcBind: get("proc_bind"), SchedType: get("sched.r_sched_type"), SchedChunk: get("sched.chunk"),
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// String describes the flags, e.g. "explicit|final".
func (f TaskFlags) String() string {
	names := []string{"explicit", "final", "untied", "included", "tasking_ser", "team_serial", "started",
		"executing", "complete", "freed", "native"}
	var parts []string
	for i, n := range names {
		if f&(1<<i) != 0 {
			parts = append(parts, n)
		}
	}
	if len(parts) == 0 {
		return "0"
	}
	return strings.Join(parts, "|")
}
