package kmp

import (
	"errors"

	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// needOMPD fails for what only a runtime built with OMPD support has.
func (rt *Runtime) needOMPD(what string) error {
	if !rt.hasOMPD() {
		return errorf(omprt.ErrUnsupported, "%s: the runtime is built without OMPD support", what)
	}
	return nil
}

// hasOMPD reports whether the runtime is built with OMPD support: it has
// OMPD tables, or (a stripped runtime read through a known release's
// table) its code leads to ompd_state.
func (rt *Runtime) hasOMPD() bool {
	switch rt.l.source {
	case omprt.LayoutOMPDTables:
		return true
	case omprt.LayoutKnownTable:
		_, err := rt.sym("ompd_state")
		return err == nil
	}
	return false
}

// funcSym looks up a function of the runtime that LLVM 13-16 compile as
// C++ (the OMPD breakpoint functions and ompd_dll_locations_valid, all
// void f(void)): by its C name, else by its C++ one,
// _Z<length><name>v. It returns the symbol found.
func (rt *Runtime) funcSym(name string) (string, uint64, error) {
	a, err := rt.sym(name)
	if err == nil || !errors.Is(err, target.ErrNotFound) {
		return name, a, err
	}
	mangled := objfile.CXXFuncName(name)
	if a, err2 := rt.sym(mangled); err2 == nil {
		return mangled, a, nil
	}
	return name, 0, err
}

// OpenMPVersion returns _OPENMP of the runtime.
func (rt *Runtime) OpenMPVersion() (int, error) {
	v, err := rt.global("__kmp_openmp_version", 4, true)
	return int(v), err
}

// NumProcs returns __kmp_avail_proc, which the runtime sets when it
// initializes its affinity: before that (0) there is no count yet.
func (rt *Runtime) NumProcs() (int, error) {
	v, err := rt.global("__kmp_avail_proc", 4, true)
	if err == nil && v <= 0 {
		return 0, errorf(omprt.ErrUnavailable, "the runtime has not counted the processors yet (__kmp_avail_proc %d)", v)
	}
	return int(v), err
}

// ThreadLimit returns __kmp_cg_max_nth.
func (rt *Runtime) ThreadLimit() (int, error) {
	v, err := rt.global("__kmp_cg_max_nth", 4, true)
	return int(v), err
}

// DLLLocations returns the names in ompd_dll_locations.
func (rt *Runtime) DLLLocations() ([]string, error) {
	if err := rt.needOMPD("DLL locations"); err != nil {
		return nil, err
	}
	arr, err := rt.globalPtr("ompd_dll_locations")
	if err != nil {
		return nil, err
	}
	if arr == 0 {
		return nil, errorf(omprt.ErrUnavailable, "ompd_dll_locations is not set yet")
	}
	ptr := uint64(rt.mem.PtrSize)
	var out []string
	for i := uint64(0); ; i++ {
		if i >= maxDLLs {
			return nil, errorf(omprt.ErrCorrupt, "ompd_dll_locations has no end within %d entries", maxDLLs)
		}
		p, err := rt.readPtr(arr+i*ptr, "ompd_dll_locations entry")
		if err != nil {
			return nil, err
		}
		if p == 0 {
			return out, nil
		}
		s, err := rt.mem.String(p, "ompd_dll_locations entry")
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
}

var breakpointNames = []string{"ompd_bp_parallel_begin", "ompd_bp_parallel_end", "ompd_bp_task_begin",
	"ompd_bp_task_end", "ompd_bp_thread_begin", "ompd_bp_thread_end", "ompd_dll_locations_valid"}

// Breakpoints returns the runtime's OMPD breakpoint functions.
func (rt *Runtime) Breakpoints() ([]omprt.Breakpoint, error) {
	if err := rt.needOMPD("breakpoints"); err != nil {
		return nil, err
	}
	out := make([]omprt.Breakpoint, len(breakpointNames))
	for i, name := range breakpointNames {
		sym, a, err := rt.funcSym(name)
		if err != nil {
			return nil, wrapErr(omprt.ErrIncompatible, err, "breakpoint %s", name)
		}
		out[i] = omprt.Breakpoint{Name: sym, Addr: a}
	}
	return out, nil
}

// ompdEnableBP is the runtime's OMPD_ENABLE_BP bit of ompd_state.
const ompdEnableBP = 0x1

// Enabled reports whether ompd_state has OMPD_ENABLE_BP set.
func (rt *Runtime) Enabled() (bool, error) {
	if err := rt.needOMPD("enabled"); err != nil {
		return false, err
	}
	v, err := rt.global("ompd_state", 8, false)
	return v&ompdEnableBP != 0, err
}

// Enable sets or clears OMPD_ENABLE_BP in ompd_state.
func (rt *Runtime) Enable(on bool) error {
	if err := rt.needOMPD("enable"); err != nil {
		return err
	}
	addr, err := rt.sym("ompd_state")
	if err != nil {
		return wrapErr(omprt.ErrIncompatible, err, "ompd_state")
	}
	size := rt.l.globals["ompd_state"]
	if size == 0 {
		size = 8
	}
	if size != 1 && size != 2 && size != 4 && size != 8 {
		return errorf(omprt.ErrIncompatible, "enable: ompd_state is %d bytes", size)
	}
	cur, err := rt.readUint(addr, size, "ompd_state")
	if err != nil {
		return err
	}
	if on {
		cur |= ompdEnableBP
	} else {
		cur &^= ompdEnableBP
	}
	buf := omprt.PutUint(rt.mem.Order, size, cur)
	if err := rt.t.WriteMemory(addr, buf); err != nil {
		return wrapErr(omprt.ErrWriteFailed, err, "enable: write ompd_state at %#x", addr)
	}
	rt.Refresh()
	return nil
}
