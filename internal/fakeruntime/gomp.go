package fakeruntime

import (
	"debug/elf"
	"fmt"
	"sort"
	"sync"

	"github.com/ompd-go/ompd/target"
)

// Gomp lays GCC's OpenMP runtime, libgomp, out in a Target, as
// internal/gomp finds and reads it: the dynamic linker's list naming
// libgomp.so.1 (through the executable's _DYNAMIC and its DT_DEBUG entry),
// libgomp's dynamic section with the R_X86_64_TPOFF64 relocation whose GOT
// slot holds the thread-pointer offset of gomp_tls_data, each OS thread's
// gomp_thread at that offset, and teams, tasks and a thread pool. The
// layout of its structures (GCC 12's) is given as the target's debug
// information, as libgomp's DWARF gives it. libgomp records no thread
// states: the library infers them from the threads' stacks, which a Gomp
// does not lay out, so states read as unknown.
//
// Only x86-64 targets (NewGomp sets the target's machine): the relocation
// is x86-64's.
type Gomp struct {
	T *Target
	// TPOff is the thread-pointer offset of each thread's gomp_thread.
	TPOff int64

	mu      sync.Mutex
	threads map[uint64]*GompThread // by LWP
	funcs   map[string]uint64
}

// A libgomp structure's size and the offsets of the members internal/gomp
// reads, as GCC 12.2.0 lays them out (the members' sizes are libgomp's).
var gompLayout = map[string]struct {
	size   uint64
	fields map[string]uint64
}{
	"struct gomp_thread": {120, map[string]uint64{
		"fn": 0, "data": 8, "ts.team": 16, "ts.team_id": 40, "ts.level": 44, "ts.active_level": 48,
		"task": 88, "release": 96, "thread_pool": 104, "num_teams": 112, "team_num": 116}},
	"struct gomp_team": {1344, map[string]uint64{
		"nthreads": 0, "prev_ts.team": 8, "prev_ts.team_id": 32, "prev_ts.level": 36, "prev_ts.active_level": 40,
		"ordered_release": 88, "master_release": 80, "barrier.generation": 132, "implicit_task": 1344}},
	"struct gomp_task": {216, map[string]uint64{
		"parent": 0, "taskgroup": 40, "taskwait": 64, "icv.nthreads_var": 152, "icv.run_sched_var": 160,
		"icv.run_sched_chunk_size": 164, "icv.default_device_var": 168, "icv.thread_limit_var": 172,
		"icv.dyn_var": 176, "icv.max_active_levels_var": 177, "icv.bind_var": 178,
		"fn": 192, "fn_data": 200, "kind": 208, "final_task": 213}},
	"struct gomp_thread_pool": {192, map[string]uint64{
		"threads": 0, "threads_used": 12, "last_team": 16, "threads_dock": 64}},
	"struct gomp_task_icv": {40, map[string]uint64{
		"nthreads_var": 0, "run_sched_var": 8, "run_sched_chunk_size": 12, "default_device_var": 16,
		"thread_limit_var": 20, "dyn_var": 24, "max_active_levels_var": 25, "bind_var": 26}},
}

// libgomp's enum gomp_task_kind values a GompTask may have.
const (
	GompTaskImplicit   = 0
	GompTaskUndeferred = 1
	GompTaskWaiting    = 2
	GompTaskTied       = 3
)

// gompTPOff is the thread-pointer offset NewGomp gives gomp_tls_data:
// below the thread pointer, as x86-64's TLS variant II places it.
const gompTPOff = -0x100

// GompLibrary is the path the dynamic linker's list gives libgomp.
const GompLibrary = "/usr/lib/x86_64-linux-gnu/libgomp.so.1"

// NewGomp lays out a loaded libgomp with no threads in t, a 64-bit
// little-endian target, whose machine it sets to x86-64.
func NewGomp(t *Target) *Gomp {
	if t.Sizes().Pointer != 8 || t.ByteOrder().Uint16([]byte{1, 0}) != 1 {
		panic("fakeruntime: libgomp is laid out on 64-bit little-endian targets only")
	}
	g := &Gomp{T: t, TPOff: gompTPOff, threads: map[uint64]*GompThread{}, funcs: map[string]uint64{}}
	t.SetMachine(elf.EM_X86_64)
	for typ, l := range gompLayout {
		t.SetTypeSize(typ, l.size)
		for f, off := range l.fields {
			t.SetFieldOffset(typ, f, off)
		}
	}
	// libgomp: its dynamic section, one relocation, its GOT slot.
	base := t.Alloc(PageSize)
	const relocOff, slotOff, dynOff = 0x100, 0x200, 0x300
	rela := base + relocOff
	t.PutUint(rela, 8, slotOff)                        // r_offset
	t.PutUint(rela+8, 8, uint64(elf.R_X86_64_TPOFF64)) // r_info: symbol 0
	t.PutUint(rela+16, 8, 0)                           // r_addend
	t.PutUint(base+slotOff, 8, uint64(g.TPOff))        // filled by the dynamic linker
	dyn := base + dynOff
	for i, e := range [][2]uint64{{uint64(elf.DT_RELA), relocOff}, {uint64(elf.DT_RELASZ), 24}, {uint64(elf.DT_RELAENT), 24}, {uint64(elf.DT_NULL), 0}} {
		t.PutUint(dyn+uint64(16*i), 8, e[0])
		t.PutUint(dyn+uint64(16*i)+8, 8, e[1])
	}
	// The dynamic linker's list: the executable, then libgomp.
	name := t.AllocString(GompLibrary)
	lmExe, lmGomp := t.Alloc(40), t.Alloc(40)
	t.PutUint(lmExe+24, 8, lmGomp) // l_next
	t.PutUint(lmGomp, 8, base)     // l_addr
	t.PutUint(lmGomp+8, 8, name)   // l_name
	t.PutUint(lmGomp+16, 8, dyn)   // l_ld
	t.PutUint(lmGomp+32, 8, lmExe) // l_prev
	rDebug := t.Alloc(40)
	t.PutUint(rDebug, 4, 1)       // r_version
	t.PutUint(rDebug+8, 8, lmExe) // r_map
	// The executable's dynamic section, whose DT_DEBUG points to r_debug.
	exeDyn := t.Alloc(32)
	t.PutUint(exeDyn, 8, uint64(elf.DT_DEBUG))
	t.PutUint(exeDyn+8, 8, rDebug)
	t.SetSymbol("_DYNAMIC", exeDyn)
	return g
}

// Function returns the address of a function symbol, defining it on first
// use (an outlined function, a task's routine).
func (g *Gomp) Function(name string) uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	a, ok := g.funcs[name]
	if !ok {
		a = g.T.AddFunction(name, 64)
		g.funcs[name] = a
	}
	return a
}

func (g *Gomp) put(base uint64, typ, field string, size int, v uint64) {
	off, ok := gompLayout["struct "+typ].fields[field]
	if !ok {
		panic(fmt.Sprintf("fakeruntime: no member %s of struct %s", field, typ))
	}
	g.T.PutUint(base+off, size, v)
}

// GompThread is an OS thread of a Gomp program: its gomp_thread, zero (not
// an OpenMP thread yet) until it joins a team.
type GompThread struct {
	g *Gomp
	// LWP is its kernel thread id; Pointer its thread pointer (its
	// pthread_t).
	LWP, Pointer uint64
	// Addr is its gomp_thread.
	Addr uint64
	// Team and Num are the team it is in and its number there (nil, 0
	// outside any); Task its current task.
	Team *GompTeam
	Num  int
	Task *GompTask
}

// NewThread adds an OS thread whose thread pointer is pointer, with its
// gomp_thread (zero).
func (g *Gomp) NewThread(lwp, pointer uint64) *GompThread {
	th := &GompThread{g: g, LWP: lwp, Pointer: pointer, Addr: uint64(int64(pointer) + g.TPOff)}
	if err := g.T.Map(th.Addr&^(PageSize-1), PageSize); err != nil {
		panic(fmt.Sprintf("fakeruntime: thread %d's gomp_thread at %#x: %v", lwp, th.Addr, err))
	}
	g.T.AddThread(target.Thread{ID: lwp, Pointer: pointer, Pthread: pointer})
	g.mu.Lock()
	g.threads[lwp] = th
	g.mu.Unlock()
	return th
}

// Threads returns the threads, by LWP.
func (g *Gomp) Threads() []*GompThread {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make([]*GompThread, 0, len(g.threads))
	for _, th := range g.threads {
		out = append(out, th)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LWP < out[j].LWP })
	return out
}

// SetTask makes task the thread's current task.
func (th *GompThread) SetTask(task *GompTask) {
	th.Task = task
	th.g.put(th.Addr, "gomp_thread", "task", 8, task.Addr)
}

// GompTeam is a team of a Gomp program: one parallel region. libgomp
// makes one for every region, a serialized one included.
type GompTeam struct {
	g *Gomp
	// Addr is its struct gomp_team.
	Addr uint64
	// Parent is the team of the enclosing region, nil at level 1.
	Parent *GompTeam
	// Level and Active are its level and active level.
	Level, Active int
	// Threads are its members, the primary first.
	Threads []*GompThread
	// Implicit are its implicit tasks, one a member.
	Implicit []*GompTask
	// Pool is the thread pool its members belong to.
	Pool uint64
}

// NewTeam makes the team of a region that threads[0] starts from its
// current region (level 0 when it is in none) and task: threads[i] is its
// member i and runs implicit task i, generated by threads[0]'s task, with
// its ICVs (DefaultGompICVs when it has none); fn is the region's outlined
// function, which each worker's gomp_thread.fn holds (0 for none).
func (g *Gomp) NewTeam(threads []*GompThread, fn uint64) *GompTeam {
	if len(threads) == 0 {
		panic("fakeruntime: a team of no threads")
	}
	primary := threads[0]
	n := len(threads)
	taskSize := gompLayout["struct gomp_task"].size
	implOff := gompLayout["struct gomp_team"].fields["implicit_task"]
	tm := &GompTeam{g: g, Parent: primary.Team, Threads: threads}
	tm.Addr = g.T.Alloc(int(implOff + uint64(n)*taskSize))
	if tm.Parent != nil {
		tm.Level, tm.Active = tm.Parent.Level+1, tm.Parent.Active
	} else {
		tm.Level = 1
	}
	if n > 1 {
		tm.Active++
	}
	g.put(tm.Addr, "gomp_team", "nthreads", 4, uint64(n))
	if tm.Parent != nil {
		g.put(tm.Addr, "gomp_team", "prev_ts.team", 8, tm.Parent.Addr)
		g.put(tm.Addr, "gomp_team", "prev_ts.team_id", 4, uint64(primary.Num))
		g.put(tm.Addr, "gomp_team", "prev_ts.level", 4, uint64(tm.Parent.Level))
		g.put(tm.Addr, "gomp_team", "prev_ts.active_level", 4, uint64(tm.Parent.Active))
	}
	// The pool: the primary's, made when it first starts a team; its
	// last team is none of the running ones, so no member is idle.
	tm.Pool = g.poolOf(primary)
	icvs := DefaultGompICVs
	var gen uint64
	if primary.Task != nil {
		gen = primary.Task.Addr
		icvs = primary.Task.ICVs
	}
	for i, th := range threads {
		task := &GompTask{g: g, Addr: tm.Addr + implOff + uint64(i)*taskSize, Kind: GompTaskImplicit, ICVs: icvs}
		g.put(task.Addr, "gomp_task", "parent", 8, gen)
		g.put(task.Addr, "gomp_task", "kind", 4, GompTaskImplicit)
		task.SetICVs(icvs)
		tm.Implicit = append(tm.Implicit, task)
		th.Team, th.Num = tm, i
		g.put(th.Addr, "gomp_thread", "ts.team", 8, tm.Addr)
		g.put(th.Addr, "gomp_thread", "ts.team_id", 4, uint64(i))
		g.put(th.Addr, "gomp_thread", "ts.level", 4, uint64(tm.Level))
		g.put(th.Addr, "gomp_thread", "ts.active_level", 4, uint64(tm.Active))
		g.put(th.Addr, "gomp_thread", "thread_pool", 8, tm.Pool)
		if i > 0 {
			g.put(th.Addr, "gomp_thread", "fn", 8, fn) // what a worker runs
		}
		th.SetTask(task)
	}
	return tm
}

// poolOf returns the thread pool of th, making one.
func (g *Gomp) poolOf(th *GompThread) uint64 {
	off := gompLayout["struct gomp_thread"].fields["thread_pool"]
	if p := g.T.Uint(th.Addr+off, 8); p != 0 {
		return p
	}
	return g.T.Alloc(int(gompLayout["struct gomp_thread_pool"].size))
}

// GompICVs are the ICVs a task carries (struct gomp_task_icv).
type GompICVs struct {
	NThreads        uint64
	RunSched        uint32 // enum gomp_schedule_type (1 static, 2 dynamic, 3 guided, 4 auto), monotonic bit 0x80000000
	RunSchedChunk   uint32
	DefaultDevice   uint32
	ThreadLimit     uint32
	Dyn             bool
	MaxActiveLevels uint8
	Bind            uint8 // omp_proc_bind_t
}

// DefaultGompICVs are the ICVs of a region's implicit tasks whose
// primary thread has no task yet (libgomp's defaults on 4 processors).
var DefaultGompICVs = GompICVs{NThreads: 4, RunSched: 2, ThreadLimit: 0xffffffff, MaxActiveLevels: 1}

// GompTask is a task of a Gomp program (struct gomp_task).
type GompTask struct {
	g *Gomp
	// Addr is its struct gomp_task.
	Addr uint64
	// Kind is its enum gomp_task_kind.
	Kind int
	// ICVs are its ICVs.
	ICVs GompICVs
}

// SetICVs writes the task's ICVs.
func (tk *GompTask) SetICVs(v GompICVs) {
	tk.ICVs = v
	g := tk.g
	g.put(tk.Addr, "gomp_task", "icv.nthreads_var", 8, v.NThreads)
	g.put(tk.Addr, "gomp_task", "icv.run_sched_var", 4, uint64(v.RunSched))
	g.put(tk.Addr, "gomp_task", "icv.run_sched_chunk_size", 4, uint64(v.RunSchedChunk))
	g.put(tk.Addr, "gomp_task", "icv.default_device_var", 4, uint64(v.DefaultDevice))
	g.put(tk.Addr, "gomp_task", "icv.thread_limit_var", 4, uint64(v.ThreadLimit))
	g.put(tk.Addr, "gomp_task", "icv.dyn_var", 1, uint64(boolInt(v.Dyn)))
	g.put(tk.Addr, "gomp_task", "icv.max_active_levels_var", 1, uint64(v.MaxActiveLevels))
	g.put(tk.Addr, "gomp_task", "icv.bind_var", 1, uint64(v.Bind))
}

// NewTask makes an explicit task generated by parent, of the given kind
// (GompTaskTied for a deferred task that runs, GompTaskUndeferred for an
// undeferred one), final or not, running fn; it inherits parent's ICVs.
// Thread th runs it: it becomes th's current task.
func (g *Gomp) NewTask(th *GompThread, parent *GompTask, kind int, final bool, fn uint64) *GompTask {
	task := &GompTask{g: g, Addr: g.T.Alloc(int(gompLayout["struct gomp_task"].size)), Kind: kind}
	if parent != nil {
		g.put(task.Addr, "gomp_task", "parent", 8, parent.Addr)
		task.SetICVs(parent.ICVs)
	}
	g.put(task.Addr, "gomp_task", "kind", 4, uint64(kind))
	g.put(task.Addr, "gomp_task", "final_task", 1, uint64(boolInt(final)))
	g.put(task.Addr, "gomp_task", "fn", 8, fn)
	th.SetTask(task)
	return task
}
