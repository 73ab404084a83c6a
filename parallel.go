package ompd

import (
	"fmt"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
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
	as  *AddressSpace
	ref omprt.Ref // the team and the nesting level of this region
}

// AddressSpace returns the address space the handle belongs to.
func (p Parallel) AddressSpace() *AddressSpace { return p.as }

// Addr returns the address of the runtime's structure behind the region
// (LLVM's kmp_team_t; libgomp's gomp_team), as Thread.Addr and Task.Addr
// do for theirs. With the region's level it identifies the region; a
// serialized or outermost region may stand on another structure of the
// runtime's.
func (p Parallel) Addr() uint64 { return p.ref.Addr }

// Equal reports whether p and q are the same region of the same address
// space (ompd_parallel_handle_compare).
func (p Parallel) Equal(q Parallel) bool { return p.as != nil && p == q }

// String returns a stable id for the handle (ompd_get_parallel_handle_string_id),
// "parallel/ADDR/LLEVEL".
func (p Parallel) String() string {
	if p.as == nil {
		return "parallel/none"
	}
	return omprt.RegionName(p.ref).String()
}

// data returns the region's record at this stop.
func (p Parallel) data() (*omprt.RegionData, error) {
	if err := p.as.checkHandle("Parallel"); err != nil {
		return nil, err
	}
	return p.as.rt.Region(p.ref)
}

// Level returns the region's nesting level (ompd_get_level; omp_get_level
// inside it): 1 for an outermost parallel region, 0 for the implicit
// region around the initial thread.
func (p Parallel) Level() (int, error) {
	if _, err := p.data(); err != nil {
		return 0, err
	}
	return int(p.ref.Level), nil
}

// ActiveLevel returns the number of active (more than one thread) regions
// enclosing and including this one (ompd_get_active_level).
func (p Parallel) ActiveLevel() (int, error) {
	d, err := p.data()
	if err != nil {
		return 0, err
	}
	return d.ActiveLevel, nil
}

// NumThreads returns the number of threads in the region's team
// (ompd_get_num_threads): 1 for a serialized region.
func (p Parallel) NumThreads() (int, error) {
	d, err := p.data()
	if err != nil {
		return 0, err
	}
	return d.TeamSize, nil
}

// Enclosing returns the region that encloses p
// (ompd_get_enclosing_parallel_handle, the 2014 proposal's
// ompd_get_ancestor_parallel_handle).
// The outermost region gives an error matching ErrUnavailable. Levels fall
// strictly going outwards: memory that says otherwise gives ErrCorrupt
// there, so a loop over Enclosing ends.
func (p Parallel) Enclosing() (Parallel, error) {
	d, err := p.data()
	return follow(d, err, func(d *omprt.RegionData) (omprt.Ref, error) { return d.Enclosing, d.EnclosingErr }, p.as.parallel)
}

// Thread returns the thread with number n in the region's team
// (ompd_get_thread_in_parallel). n out of range gives ErrBadInput. Level 0
// of a team of a host teams league (LLVM) gives ErrUnavailable: the runtime
// keeps one region there for all teams, so it cannot tell which team's
// initial thread is meant.
func (p Parallel) Thread(n int) (Thread, error) {
	if _, err := p.data(); err != nil {
		return Thread{}, err
	}
	r, err := p.as.rt.RegionThread(p.ref, n)
	if err != nil {
		return Thread{}, err
	}
	return Thread{as: p.as, ref: r}, nil
}

// Primary returns the primary (master) thread of the region
// (ompd_get_master_thread_in_parallel).
func (p Parallel) Primary() (Thread, error) { return p.Thread(0) }

// ImplicitTask returns the implicit task of thread number n of the region
// (ompd_get_task_in_parallel / ompd_get_implicit_task_in_parallel); like
// Thread, ErrUnavailable at level 0 of a team of a host teams league.
func (p Parallel) ImplicitTask(n int) (Task, error) {
	if _, err := p.data(); err != nil {
		return Task{}, err
	}
	r, err := p.as.rt.ImplicitTask(p.ref, n)
	if err != nil {
		return Task{}, err
	}
	return Task{as: p.as, ref: r}, nil
}

// ID returns the region's OMPT parallel data value (ompd_get_parallel_id):
// the id an OMPT tool assigned, 0 when no tool did.
func (p Parallel) ID() (uint64, error) {
	d, err := p.data()
	if err != nil {
		return 0, err
	}
	return d.ID, d.IDErr
}

// Function returns the entry address of the region's outlined function
// (ompd_get_parallel_function) and its symbol when the target knows one.
//
// The runtime keeps the function of a serial team's innermost level only:
// for an enclosing serialized level in the same serial team the error
// matches ErrUnavailable. The implicit region of the initial thread has no
// function either.
func (p Parallel) Function() (Function, error) {
	d, err := p.data()
	if err != nil {
		return Function{}, err
	}
	if d.FunctionErr != nil {
		return Function{}, d.FunctionErr
	}
	return p.as.function(d.Function), nil
}

// Function is a code address with, when the target can tell, the symbol
// it belongs to.
type Function struct {
	Addr   uint64 // the code address
	Symbol string // the symbol containing Addr, "" if unknown
	// File and Line are the source position of Addr, from the target's
	// line tables when it has them (target.CodeLocator); "" and 0
	// otherwise.
	File string
	Line int // see File
}

// String returns the symbol and address, e.g. "main._omp_fn.0 (0x401136)",
// or the address alone when the symbol is unknown.
func (f Function) String() string {
	if f.Symbol != "" {
		return fmt.Sprintf("%s (%#x)", f.Symbol, f.Addr)
	}
	return fmt.Sprintf("%#x", f.Addr)
}

func (as *AddressSpace) function(addr uint64) Function {
	f := Function{Addr: addr}
	if s, ok := as.t.(target.Symbolizer); ok {
		f.Symbol, _ = s.SymbolAt(addr)
	}
	if cl, ok := as.t.(target.CodeLocator); ok {
		if loc, err := cl.LocateCode(addr); err == nil {
			f.File, f.Line = loc.File, loc.Line
			if f.Symbol == "" {
				f.Symbol = loc.Function
			}
		}
	}
	return f
}
