// Package kmp reads LLVM's OpenMP runtime (libomp, whose internal names
// start with __kmp) for package ompd, behind the omprt.Runtime boundary.
//
// The layout of the runtime's structures comes from its OMPD tables
// (ompd_access__*, ompd_sizeof__*, ompd_bitfield__*) when it is built with
// OMPD support, else from its DWARF. Each thread (kmp_info_t), team
// (kmp_team_t) and task (kmp_taskdata_t) is decoded once per stop; every
// answer is derived from those decodes, and every invariant the walks rely
// on (levels falling, bounded counts, no cycles) is checked there, so a
// corrupt structure gives omprt.ErrCorrupt at the step where it breaks.
package kmp

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

func errorf(kind error, format string, args ...any) error { return omprt.Errorf(kind, format, args...) }
func wrapErr(kind, cause error, format string, args ...any) error {
	return omprt.Wrap(kind, cause, format, args...)
}

// Bounds on what runtime memory may claim, so that corrupt memory gives an
// error instead of an unbounded loop or allocation.
const (
	maxThreadsCapacity = 1 << 20 // entries of __kmp_threads
	maxChain           = 1 << 16 // links followed in any runtime list
	maxLevel           = 1 << 12 // nesting levels of parallel regions
	maxEnvBlock        = 1 << 20 // bytes of the display-variables block
	maxDLLs            = 64      // entries of ompd_dll_locations
)

// Name is the runtime's name (omprt.Info.Name).
const Name = "LLVM libomp"

// Runtime is LLVM's OpenMP runtime in one target.
type Runtime struct {
	t   target.Target
	mem *omprt.Memory
	l   *layout

	symMu sync.Mutex
	syms  map[string]uint64
	obj   string // the object holding the runtime's code (see object)

	cur   atomic.Pointer[stop]
	stops atomic.Uint64 // stops made (stop.id)

	gomp gompABI // regions of gcc-compiled programs
	bp   bpInfo  // the OMPD breakpoint functions and their callers

	// stock is set for a stripped runtime read through a known
	// release's table (stock.go).
	stock *stockRuntime

	stacks stackInfo // for states read from the stacks (states.go)

	relOnce sync.Once
	rel     *release // the known release the runtime is (see release)
}

var _ omprt.Runtime = (*Runtime)(nil)

// Open detects LLVM's OpenMP runtime in t and reads its layout. It is an
// omprt.Opener; see ompd.Open for the errors.
func Open(t target.Target) (omprt.Runtime, error) {
	rt := &Runtime{t: t, mem: omprt.NewMemory(t), syms: make(map[string]uint64, 512)}
	sz := t.Sizes()
	ptr := uint64(sz.Pointer)
	var r layoutReader
	if _, err := rt.sym("ompd_sizeof__kmp_info_t"); err == nil {
		r = &tableReader{t: symTarget{Target: t, rt: rt}, mem: rt.mem}
	} else if !errors.Is(err, target.ErrNotFound) {
		return nil, wrapErr(omprt.ErrReadFailed, err, "open: looking up the runtime's OMPD tables")
	} else if _, err2 := rt.sym("__kmp_threads"); err2 == nil {
		// A runtime built without OMPD support: its layout comes from
		// its debug information, if the target has it.
		r = &dwarfReader{t: t, ptr: ptr, int: uint64(sz.Int)}
	} else if errors.Is(err2, target.ErrNotFound) {
		if fork, err3 := rt.sym("__kmpc_fork_call"); err3 == nil {
			// The runtime is there (every LLVM runtime exports its
			// compiler entry points) but its internal symbols, local
			// ones, are not: it is stripped and the target found no
			// separate debug information for it. Read it as the known
			// release it is, if it is one.
			st, serr := openStock(t, rt, fork)
			if serr != nil {
				return nil, stockErr(st, serr, err2)
			}
			rt.stock = st
			r = &knownReader{s: st, order: t.ByteOrder()}
		} else if errors.Is(err2, target.ErrObjectMissing) {
			// The runtime may be among the objects the target could not
			// load: say so, rather than that there is none (unless
			// another runtime package found its own).
			return nil, omprt.Unidentified(wrapErr(omprt.ErrIncompatible, err2, "open: no OpenMP runtime among the objects loaded"))
		} else {
			return nil, errorf(omprt.ErrNoRuntime, "open: no symbol ompd_sizeof__kmp_info_t or __kmp_threads")
		}
	} else {
		return nil, wrapErr(omprt.ErrReadFailed, err2, "open: looking up __kmp_threads")
	}
	l, err := readLayout(r, ptr)
	if err != nil {
		return nil, omprt.Wrap(omprt.ErrIncompatible, err, "open")
	}
	rt.l = l
	rt.cur.Store(rt.newStop())
	if rt.stock != nil {
		if err := rt.confirmStock(); err != nil {
			return nil, err
		}
	}
	return rt, nil
}

// symTarget is the target with symbol lookups through the runtime's cache.
type symTarget struct {
	target.Target
	rt *Runtime
}

// LookupSymbol looks the symbol up through the runtime's cache.
func (s symTarget) LookupSymbol(name string) (uint64, error) { return s.rt.sym(name) }

// Info says this is LLVM's runtime and where its layout came from.
func (rt *Runtime) Info() omprt.Info {
	i := omprt.Info{Name: Name, Layout: rt.l.source}
	if on, err := rt.stop().stateTracking(); err == nil && !on {
		i.InfersStates = true
	}
	if rt.stock != nil {
		i.Version = rt.stock.rel.version
	}
	return i
}

// Refresh drops everything read or decoded from target memory.
func (rt *Runtime) Refresh() {
	rt.mem.Refresh()
	rt.cur.Store(rt.newStop())
}

// stop returns the decodes of the current stop.
func (rt *Runtime) stop() *stop { return rt.cur.Load() }

// sym looks a symbol up once; the addresses of symbols do not change while
// a program runs, so the cache outlives stops.
func (rt *Runtime) sym(name string) (uint64, error) {
	rt.symMu.Lock()
	a, ok := rt.syms[name]
	rt.symMu.Unlock()
	if ok {
		return a, nil
	}
	a, err := rt.t.LookupSymbol(name)
	if err != nil && rt.stock != nil && errors.Is(err, target.ErrNotFound) {
		a, err = rt.stock.lookup(rt.t, name)
	}
	if err != nil {
		return 0, err
	}
	rt.symMu.Lock()
	rt.syms[name] = a
	rt.symMu.Unlock()
	return a, nil
}

func (rt *Runtime) view(addr, size uint64, what string) (view, error) {
	return rt.mem.View(addr, size, what)
}

func (rt *Runtime) readUint(addr, size uint64, what string) (uint64, error) {
	return rt.mem.Uint(addr, size, what)
}

func (rt *Runtime) readPtr(addr uint64, what string) (uint64, error) { return rt.mem.Ptr(addr, what) }

// global reads the integer global variable name; size comes from the
// runtime's OMPD tables when they list it, else def.
func (rt *Runtime) global(name string, def uint64, signed bool) (int64, error) {
	size := def
	if s, ok := rt.l.globals[name]; ok && s > 0 && s <= 8 {
		size = s
	}
	addr, err := rt.sym(name)
	if err != nil {
		return 0, wrapErr(omprt.ErrIncompatible, err, "runtime variable %s", name)
	}
	v, err := rt.view(addr, size, name)
	if err != nil {
		return 0, err
	}
	if signed {
		return v.Int(0, size), nil
	}
	return int64(v.Uint(0, size)), nil
}

// globalPtr reads the pointer global variable name.
func (rt *Runtime) globalPtr(name string) (uint64, error) {
	addr, err := rt.sym(name)
	if err != nil {
		return 0, wrapErr(omprt.ErrIncompatible, err, "runtime variable %s", name)
	}
	return rt.readPtr(addr, name)
}

// globalString reads the char* global variable name.
func (rt *Runtime) globalString(name string) (string, error) {
	p, err := rt.globalPtr(name)
	if err != nil {
		return "", err
	}
	if p == 0 {
		return "", nil
	}
	return rt.mem.String(p, name)
}

// once is a value computed at most once per stop.
type once[T any] struct {
	o   sync.Once
	v   T
	err error
}

func (o *once[T]) get(f func() (T, error)) (T, error) {
	o.o.Do(func() { o.v, o.err = f() })
	return o.v, o.err
}
