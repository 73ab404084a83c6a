package ompd

import (
	"fmt"
)

// Parallel is a parallel region (ompd_parallel_handle_t). The zero Parallel
// is not a region; its methods fail with ErrBadInput.
//
// In LLVM's runtime an active region is a team (kmp_team_t). Serialized
// regions (num_threads(1), or nested beyond max-active-levels) run in a
// thread's serial team, which stands for a whole stack of nested serialized
// levels at once; this package gives each of those levels its own handle,
// told apart by its nesting level, so that every level a program sees with
// omp_get_level is a region here (LLVM's libompd reports them one level off).
//
// Parallels are comparable with == and usable as map keys.
type Parallel struct {
	as    *AddressSpace
	team  uint64 // kmp_team_t
	level int32  // nesting level of this region
}

// AddressSpace returns the address space the handle belongs to.
func (p Parallel) AddressSpace() *AddressSpace { return p.as }

// Team returns the address of the runtime's kmp_team_t behind the region.
func (p Parallel) Team() uint64 { return p.team }

// Equal reports whether p and q are the same region of the same address
// space (ompd_parallel_handle_compare).
func (p Parallel) Equal(q Parallel) bool { return p.as != nil && p == q }

// String returns a stable id for the handle (ompd_get_parallel_handle_string_id),
// "parallel/TEAM/LLEVEL".
func (p Parallel) String() string {
	if p.as == nil {
		return "parallel/none"
	}
	return fmt.Sprintf("parallel/%#x/L%d", p.team, p.level)
}

// teamInfo is a team decoded from one read.
type teamInfo struct {
	addr        uint64
	level       int32 // t_level: the innermost level the team stands for
	first       int32 // the outermost level it stands for (serial teams stand for several)
	activeLevel int32
	nproc       int32
	parent      uint64
	pkfn        uint64
	threads     uint64
	implicit    uint64
	masterTid   int32
	parallelID  uint64
	serialInfo  uint64 // head of the ompt_lw_taskteam_t chain
}

// depth is the number of nesting levels the team stands for.
func (ti *teamInfo) depth() int32 { return ti.level - ti.first + 1 }

// team reads and decodes the team at addr (a kmp_team_t). The levels a
// team stands for run from its parent's level + 1 to its own t_level: one
// level for an active team, one per nested serialized region for a serial
// team (the runtime increments a serial team's t_level for each).
func (as *AddressSpace) team(addr uint64) (*teamInfo, error) {
	if err := as.check(); err != nil {
		return nil, err
	}
	l := as.l
	if addr == 0 {
		return nil, errorf(ErrCorrupt, "null team pointer")
	}
	v, err := as.readView(addr+l.teamT, l.teamExtent, "team")
	if err != nil {
		return nil, err
	}
	ti := &teamInfo{
		addr:        addr,
		level:       int32(v.fi(l.tLevel)),
		activeLevel: int32(v.fi(l.tActiveLevel)),
		nproc:       int32(v.fi(l.tNproc)),
		parent:      v.f(l.tParent),
		pkfn:        v.f(l.tPkfn),
		threads:     v.f(l.tThreads),
		implicit:    v.f(l.tImplicitTask),
		masterTid:   int32(v.fi(l.tMasterTid)),
		parallelID:  v.f(l.tParallelData),
		serialInfo:  v.f(l.tSerialInfo),
	}
	if ti.level < 0 || ti.level > maxChain || ti.activeLevel < 0 || ti.activeLevel > ti.level {
		return nil, errorf(ErrCorrupt, "team %#x: level %d, active level %d", addr, ti.level, ti.activeLevel)
	}
	if ti.nproc < 1 || ti.nproc > maxThreadsCapacity {
		return nil, errorf(ErrCorrupt, "team %#x: t_nproc %d", addr, ti.nproc)
	}
	ti.first = ti.level
	if ti.parent != 0 {
		if ti.parent == addr {
			return nil, errorf(ErrCorrupt, "team %#x is its own parent", addr)
		}
		pv, err := as.readView(ti.parent+l.teamT, l.teamExtent, "parent team")
		if err != nil {
			return nil, err
		}
		pl := int32(pv.fi(l.tLevel))
		if pl < ti.level {
			ti.first = pl + 1
		}
	} else {
		ti.first = 0
	}
	return ti, nil
}

// resolve reads the region's team and checks that it still stands for the
// handle's level. It returns the team and the depth of the level within
// the team's stack of serialized levels (0 = innermost).
func (p Parallel) resolve() (*teamInfo, int32, error) {
	if p.as == nil {
		return nil, 0, errorf(ErrBadInput, "zero Parallel handle")
	}
	ti, err := p.as.team(p.team)
	if err != nil {
		return nil, 0, err
	}
	if p.level < ti.first || p.level > ti.level {
		return nil, 0, errorf(ErrStaleHandle, "%v: team now stands for levels %d..%d", p, ti.first, ti.level)
	}
	return ti, ti.level - p.level, nil
}

// lwt returns the ompt_lw_taskteam_t that keeps the OMPT data of the level
// at depth j of a serial team (j >= 1), or 0 if the runtime keeps none
// (OMPT not enabled). The runtime keeps the innermost level's data in the
// team itself and pushes the data of each enclosing serialized level on the
// team's lw-taskteam list when a nested one starts.
func (as *AddressSpace) lwt(ti *teamInfo, j int32) (uint64, error) {
	cur := ti.serialInfo
	for k := int32(1); k < j && cur != 0; k++ {
		if k > maxChain {
			return 0, errorf(ErrCorrupt, "team %#x: lw taskteam list too long", ti.addr)
		}
		next, err := as.readPtr(cur+as.l.lwParent.off, "lw taskteam parent")
		if err != nil {
			return 0, err
		}
		if next == cur {
			return 0, errorf(ErrCorrupt, "team %#x: lw taskteam %#x links to itself", ti.addr, cur)
		}
		cur = next
	}
	return cur, nil
}

// Level returns the region's nesting level (ompd_get_level; omp_get_level
// inside it): 1 for an outermost parallel region, 0 for the implicit
// region around the initial thread.
func (p Parallel) Level() (int, error) {
	if _, _, err := p.resolve(); err != nil {
		return 0, err
	}
	return int(p.level), nil
}

// ActiveLevel returns the number of active (more than one thread) regions
// enclosing and including this one (ompd_get_active_level).
func (p Parallel) ActiveLevel() (int, error) {
	ti, _, err := p.resolve()
	if err != nil {
		return 0, err
	}
	return int(ti.activeLevel), nil
}

// NumThreads returns the number of threads in the region's team
// (ompd_get_num_threads): 1 for a serialized region.
func (p Parallel) NumThreads() (int, error) {
	ti, j, err := p.resolve()
	if err != nil {
		return 0, err
	}
	if j > 0 {
		return 1, nil
	}
	return int(ti.nproc), nil
}

// Enclosing returns the region that encloses p (ompd_get_enclosing_parallel_handle).
// The outermost region gives an error matching ErrUnavailable.
func (p Parallel) Enclosing() (Parallel, error) {
	ti, _, err := p.resolve()
	if err != nil {
		return Parallel{}, err
	}
	if p.level > ti.first {
		return Parallel{as: p.as, team: p.team, level: p.level - 1}, nil
	}
	if ti.parent == 0 {
		return Parallel{}, errorf(ErrUnavailable, "%v is the outermost region", p)
	}
	pt, err := p.as.team(ti.parent)
	if err != nil {
		return Parallel{}, err
	}
	if pt.level >= p.level {
		// Levels must fall going outwards; anything else is a cycle
		// or corrupt memory, and would make a walk endless.
		return Parallel{}, errorf(ErrCorrupt, "%v: enclosing team %#x is at level %d", p, ti.parent, pt.level)
	}
	return Parallel{as: p.as, team: ti.parent, level: pt.level}, nil
}

// Thread returns the thread with number n in the region's team
// (ompd_get_thread_in_parallel). n out of range gives ErrBadInput.
func (p Parallel) Thread(n int) (Thread, error) {
	ti, j, err := p.resolve()
	if err != nil {
		return Thread{}, err
	}
	size := ti.nproc
	if j > 0 {
		size = 1
	}
	if n < 0 || n >= int(size) {
		return Thread{}, errorf(ErrBadInput, "%v: thread number %d out of range 0..%d", p, n, size-1)
	}
	if ti.threads == 0 {
		return Thread{}, errorf(ErrCorrupt, "%v: team has no thread array", p)
	}
	addr, err := p.as.readPtr(ti.threads+uint64(n)*uint64(p.as.mem.ptrSize), "team thread array")
	if err != nil {
		return Thread{}, err
	}
	if addr == 0 {
		return Thread{}, errorf(ErrUnavailable, "%v: thread %d not set", p, n)
	}
	return p.as.threadAt(addr, p.String())
}

// Primary returns the primary (master) thread of the region
// (ompd_get_master_thread_in_parallel).
func (p Parallel) Primary() (Thread, error) { return p.Thread(0) }

// ImplicitTask returns the implicit task of thread number n of the region
// (ompd_get_task_in_parallel / ompd_get_implicit_task_in_parallel).
func (p Parallel) ImplicitTask(n int) (Task, error) {
	ti, j, err := p.resolve()
	if err != nil {
		return Task{}, err
	}
	size := ti.nproc
	if j > 0 {
		size = 1
	}
	if n < 0 || n >= int(size) {
		return Task{}, errorf(ErrBadInput, "%v: thread number %d out of range 0..%d", p, n, size-1)
	}
	if ti.implicit == 0 {
		return Task{}, errorf(ErrCorrupt, "%v: team has no implicit tasks", p)
	}
	return Task{as: p.as, td: ti.implicit + uint64(n)*p.as.l.taskdataSize, level: p.level}, nil
}

// ID returns the region's OMPT parallel data value (ompd_get_parallel_id):
// the id an OMPT tool assigned, 0 when no tool did.
func (p Parallel) ID() (uint64, error) {
	ti, j, err := p.resolve()
	if err != nil {
		return 0, err
	}
	if j == 0 {
		return ti.parallelID, nil
	}
	lwt, err := p.as.lwt(ti, j)
	if err != nil {
		return 0, err
	}
	if lwt == 0 {
		return 0, errorf(ErrNeedsStateTracking, "%v: serialized region data", p)
	}
	return p.as.readUint(lwt+p.as.l.lwParallelData.off, p.as.l.lwParallelData.size, "lw taskteam parallel data")
}

// Function returns the entry address of the region's outlined function
// (ompd_get_parallel_function) and its symbol when the target knows one.
//
// The runtime keeps the function of a serial team's innermost level only:
// for an enclosing serialized level in the same serial team the error
// matches ErrUnavailable. The implicit region of the initial thread has no
// function either.
func (p Parallel) Function() (Function, error) {
	ti, j, err := p.resolve()
	if err != nil {
		return Function{}, err
	}
	if j > 0 {
		return Function{}, errorf(ErrUnavailable, "%v: the runtime keeps no function for an enclosing serialized level", p)
	}
	if ti.pkfn == 0 || ti.pkfn == p.as.allOnes() {
		return Function{}, errorf(ErrUnavailable, "%v has no entry function", p)
	}
	return p.as.function(ti.pkfn), nil
}

func (as *AddressSpace) allOnes() uint64 {
	if as.mem.ptrSize == 4 {
		return 0xffffffff
	}
	return ^uint64(0)
}

// Function is a code address with, when the target can tell, the symbol
// it belongs to.
type Function struct {
	Addr   uint64
	Symbol string // the symbol containing Addr, "" if unknown
}

func (f Function) String() string {
	if f.Symbol != "" {
		return fmt.Sprintf("%s (%#x)", f.Symbol, f.Addr)
	}
	return fmt.Sprintf("%#x", f.Addr)
}

// Symbolizer is implemented by targets that can name the function at a
// code address. target/core and target/delve implement it.
type Symbolizer interface {
	// SymbolAt returns the name of the function symbol containing addr.
	SymbolAt(addr uint64) (string, bool)
}

func (as *AddressSpace) function(addr uint64) Function {
	f := Function{Addr: addr}
	if s, ok := as.t.(Symbolizer); ok {
		f.Symbol, _ = s.SymbolAt(addr)
	}
	return f
}
