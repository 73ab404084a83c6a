package ompd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ompd-go/ompd/target"
)

// Bounds on what runtime memory may claim, so that corrupt memory gives an
// error instead of an unbounded loop or allocation.
const (
	maxThreadsCapacity = 1 << 20 // entries of __kmp_threads
	maxChain           = 1 << 16 // links followed in any runtime list
	maxEnvBlock        = 1 << 20 // bytes of the display-variables block
	maxDLLs            = 64      // entries of ompd_dll_locations
	maxString          = 1 << 16 // bytes of a runtime string
)

// AddressSpace is the OpenMP runtime of one process (ompd_address_space_handle_t),
// seen through a target.Target. Create it with Open.
type AddressSpace struct {
	t   target.Target
	mem *memory
	l   *layout

	symMu sync.Mutex
	syms  map[string]uint64

	idxMu sync.Mutex
	idx   *threadIndex

	closed atomic.Bool
}

// Open detects LLVM's OpenMP runtime in t, reads its layout tables and
// returns its address space (ompd_process_initialize).
//
// A target with no OpenMP runtime gives an error matching ErrNoRuntime
// (and ErrIncompatible). A runtime that is loaded (it exports
// __kmpc_fork_call) but whose internal symbols the target cannot see,
// because the library is stripped and its separate debug information was
// not found, gives ErrIncompatible but not ErrNoRuntime: the program does
// use OpenMP, and the error (which also matches target.ErrNotFound) says
// what the target's symbol lookup tried. A runtime whose layout tables are
// missing or inconsistent gives ErrIncompatible; a runtime that has not initialized
// itself yet (the program has not entered any OpenMP construct or call)
// gives ErrUnavailable: open again once it has, for instance after the
// breakpoint Breakpoints().DLLLocationsValid. A target that finds no
// runtime but could not load some of its libraries (a core whose libomp
// is missing, unreadable or of another build) gives ErrIncompatible with
// the target's reason (target.ErrObjectMissing), not ErrNoRuntime.
func Open(t target.Target) (*AddressSpace, error) {
	if t == nil {
		return nil, errorf(ErrBadInput, "open: nil target")
	}
	sz := t.Sizes()
	if sz.Pointer != 4 && sz.Pointer != 8 {
		return nil, errorf(ErrUnsupported, "open: pointer size %d", sz.Pointer)
	}
	if t.ByteOrder() == nil {
		return nil, errorf(ErrBadInput, "open: target has no byte order")
	}
	as := &AddressSpace{t: t, mem: newMemory(t), syms: make(map[string]uint64)}
	ptr := uint64(sz.Pointer)
	var r layoutReader
	if _, err := as.sym("ompd_sizeof__kmp_info_t"); err == nil {
		r = &tableReader{t: as.lookupTarget(), mem: as.mem}
	} else if !errors.Is(err, target.ErrNotFound) {
		return nil, wrapErr(ErrReadFailed, err, "open: looking up the runtime's OMPD tables")
	} else if _, err2 := as.sym("__kmp_threads"); err2 == nil {
		// A runtime built without OMPD support: its layout comes from
		// its debug information, if the target has it.
		r = &dwarfReader{t: t, ptr: ptr, int: uint64(sz.Int)}
	} else if errors.Is(err2, target.ErrNotFound) {
		if _, err3 := as.sym("__kmpc_fork_call"); err3 == nil {
			// The runtime is there (every LLVM runtime exports its
			// compiler entry points) but its internal symbols, local
			// ones, are not: it is stripped and the target found no
			// separate debug information for it.
			return nil, wrapErr(ErrIncompatible, err2, "open: the OpenMP runtime is loaded but has no symbol ompd_sizeof__kmp_info_t or __kmp_threads: it is stripped and no usable debug information was found for it (install its debug package, or point the target at its debug file or at a debuginfod server)")
		}
		if errors.Is(err2, target.ErrObjectMissing) {
			// The runtime may be among the objects the target could not
			// load: say so, rather than that there is none.
			return nil, wrapErr(ErrIncompatible, err2, "open: no OpenMP runtime among the objects loaded")
		}
		return nil, fmt.Errorf("open: no symbol ompd_sizeof__kmp_info_t or __kmp_threads: %w", ErrNoRuntime)
	} else {
		return nil, wrapErr(ErrReadFailed, err2, "open: looking up __kmp_threads")
	}
	l, err := readLayout(r, ptr)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	as.l = l
	return as, nil
}

// lookupTarget returns a target whose symbol lookups go through the
// address space's symbol cache.
func (as *AddressSpace) lookupTarget() target.Target { return symCache{as} }

type symCache struct{ *AddressSpace }

func (s symCache) LookupSymbol(name string) (uint64, error) { return s.sym(name) }
func (s symCache) LookupThreadLocal(th uint64, name string) (uint64, error) {
	return s.t.LookupThreadLocal(th, name)
}
func (s symCache) TypeSize(n string) (uint64, error)       { return s.t.TypeSize(n) }
func (s symCache) FieldOffset(t, f string) (uint64, error) { return s.t.FieldOffset(t, f) }
func (s symCache) ReadMemory(b []byte, a uint64) error     { return s.t.ReadMemory(b, a) }
func (s symCache) WriteMemory(a uint64, d []byte) error    { return s.t.WriteMemory(a, d) }
func (s symCache) ByteOrder() binary.ByteOrder             { return s.t.ByteOrder() }
func (s symCache) Sizes() target.Sizes                     { return s.t.Sizes() }
func (s symCache) Threads() ([]target.Thread, error)       { return s.t.Threads() }

// Close releases the address space (ompd_rel_address_space_handle). Handles
// made from it fail with ErrStaleHandle afterwards. It does not close the
// target.
func (as *AddressSpace) Close() error {
	as.closed.Store(true)
	as.mem.refresh()
	return nil
}

// Target returns the target the address space reads.
func (as *AddressSpace) Target() target.Target { return as.t }

// LayoutSource says where the runtime's structure layout was read from.
func (as *AddressSpace) LayoutSource() LayoutSource { return as.l.source }

// Refresh drops everything cached from target memory. Call it after a live
// target ran and stopped again; a stopped target or a core never needs it.
// Handles stay usable: they are checked against the new memory and fail with
// ErrStaleHandle where the runtime shows their object is gone.
func (as *AddressSpace) Refresh() {
	as.mem.refresh()
	as.idxMu.Lock()
	as.idx = nil
	as.idxMu.Unlock()
}

func (as *AddressSpace) check() error {
	if as == nil {
		return errorf(ErrBadInput, "nil address space")
	}
	if as.closed.Load() {
		return errorf(ErrStaleHandle, "address space is closed")
	}
	return nil
}

func (as *AddressSpace) sym(name string) (uint64, error) {
	as.symMu.Lock()
	a, ok := as.syms[name]
	as.symMu.Unlock()
	if ok {
		return a, nil
	}
	a, err := as.t.LookupSymbol(name)
	if err != nil {
		return 0, err
	}
	as.symMu.Lock()
	as.syms[name] = a
	as.symMu.Unlock()
	return a, nil
}

// readView reads size bytes at addr for decoding.
func (as *AddressSpace) readView(addr, size uint64, what string) (view, error) {
	if addr == 0 {
		return view{}, errorf(ErrCorrupt, "%s: null pointer", what)
	}
	b, err := as.mem.read(addr, int(size))
	if err != nil {
		return view{}, wrapErr(ErrReadFailed, err, "%s at %#x", what, addr)
	}
	return view{b: b, order: as.mem.order}, nil
}

// readUint reads an unsigned integer of size bytes at addr.
func (as *AddressSpace) readUint(addr, size uint64, what string) (uint64, error) {
	v, err := as.readView(addr, size, what)
	if err != nil {
		return 0, err
	}
	return v.uint(0, size), nil
}

func (as *AddressSpace) readPtr(addr uint64, what string) (uint64, error) {
	return as.readUint(addr, uint64(as.mem.ptrSize), what)
}

// global reads the integer global variable name; size comes from the
// runtime's OMPD tables when they list it, else def.
func (as *AddressSpace) global(name string, def uint64, signed bool) (int64, error) {
	if err := as.check(); err != nil {
		return 0, err
	}
	size := def
	if s, ok := as.l.globals[name]; ok && s > 0 && s <= 8 {
		size = s
	}
	addr, err := as.sym(name)
	if err != nil {
		return 0, wrapErr(ErrIncompatible, err, "runtime variable %s", name)
	}
	v, err := as.readView(addr, size, name)
	if err != nil {
		return 0, err
	}
	if signed {
		return v.int(0, size), nil
	}
	return int64(v.uint(0, size)), nil
}

// globalString reads the char* global variable name.
func (as *AddressSpace) globalString(name string) (string, error) {
	if err := as.check(); err != nil {
		return "", err
	}
	addr, err := as.sym(name)
	if err != nil {
		return "", wrapErr(ErrIncompatible, err, "runtime variable %s", name)
	}
	p, err := as.readPtr(addr, name)
	if err != nil {
		return "", err
	}
	if p == 0 {
		return "", nil
	}
	return as.readString(p, name)
}

func (as *AddressSpace) readString(addr uint64, what string) (string, error) {
	s, err := target.ReadString(as.t, addr, maxString)
	if err != nil {
		return "", wrapErr(ErrReadFailed, err, "%s string at %#x", what, addr)
	}
	return s, nil
}

// OpenMPVersion returns the OpenMP version the runtime implements, as the
// value of _OPENMP (ompd_get_omp_version), e.g. 201611.
func (as *AddressSpace) OpenMPVersion() (int, error) {
	v, err := as.global("__kmp_openmp_version", 4, true)
	return int(v), err
}

// DLLLocations returns the names of the OMPD libraries the runtime
// advertises in ompd_dll_locations, in its order.
func (as *AddressSpace) DLLLocations() ([]string, error) {
	if err := as.needOMPD("DLL locations"); err != nil {
		return nil, err
	}
	addr, err := as.sym("ompd_dll_locations")
	if err != nil {
		return nil, wrapErr(ErrIncompatible, err, "ompd_dll_locations")
	}
	arr, err := as.readPtr(addr, "ompd_dll_locations")
	if err != nil {
		return nil, err
	}
	if arr == 0 {
		return nil, errorf(ErrUnavailable, "ompd_dll_locations is not set yet")
	}
	ptr := uint64(as.mem.ptrSize)
	var out []string
	for i := uint64(0); ; i++ {
		if i >= maxDLLs {
			return nil, errorf(ErrCorrupt, "ompd_dll_locations has no end within %d entries", maxDLLs)
		}
		p, err := as.readPtr(arr+i*ptr, "ompd_dll_locations entry")
		if err != nil {
			return nil, err
		}
		if p == 0 {
			return out, nil
		}
		s, err := as.readString(p, "ompd_dll_locations entry")
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
}

// ControlVar is one display control variable (ompd_get_display_control_vars).
type ControlVar struct {
	Name  string `json:"name"`  // e.g. "OMP_SCHEDULE"
	Value string `json:"value"` // the value without quotes, e.g. "dynamic,7"
	Raw   string `json:"raw"`   // the line, e.g. "OMP_SCHEDULE='dynamic,7'"
	// Corrected tells that the value was read from the runtime's state
	// because the runtime's own record of it is wrong (see
	// DisplayControlVars); RuntimeRaw is then the runtime's line.
	Corrected  bool   `json:"corrected"`
	RuntimeRaw string `json:"runtime_raw,omitempty"`
}

func (c ControlVar) String() string { return c.Raw }

// DisplayControlVars returns the display control variables: what
// OMP_DISPLAY_ENV=verbose prints, NAME=value, in the runtime's order.
//
// LLVM's runtime records them at start-up before it reads the environment,
// so its record shows the defaults (LLVM's libompd reports those). Where
// the value of an OMP_* variable sits in runtime state this package reads
// (schedule, thread counts, binding, levels, limits, cancellation, priority,
// affinity format and display, stack size, default device, dynamic), it is
// replaced by the value the program runs with, and Corrected is set. The
// others (OMP_PLACES, OMP_WAIT_POLICY, the KMP_* variables, ...) keep the
// runtime's start-up text.
func (as *AddressSpace) DisplayControlVars() ([]ControlVar, error) {
	if err := as.needOMPD("display control variables"); err != nil {
		return nil, err
	}
	addr, err := as.sym("ompd_env_block")
	if err != nil {
		return nil, wrapErr(ErrIncompatible, err, "ompd_env_block")
	}
	block, err := as.readPtr(addr, "ompd_env_block")
	if err != nil {
		return nil, err
	}
	// ompd_size_t is a uint64_t on every target.
	size, err := as.global("ompd_env_block_size", 8, false)
	if err != nil {
		return nil, err
	}
	if block == 0 || size == 0 {
		return nil, errorf(ErrUnavailable, "display control variables not recorded yet")
	}
	if size < 0 || size > maxEnvBlock {
		return nil, errorf(ErrCorrupt, "ompd_env_block_size %d out of range", size)
	}
	b, err := as.mem.read(block, int(size))
	if err != nil {
		return nil, wrapErr(ErrReadFailed, err, "ompd_env_block at %#x", block)
	}
	cur := as.currentSettings()
	var out []ControlVar
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		name, val, _ := strings.Cut(line, "=")
		cv := ControlVar{Name: name, Raw: line}
		if c, ok := cur[name]; ok && c != val {
			cv.Corrected, cv.RuntimeRaw, cv.Raw, val = true, line, name+"="+c, c
		}
		if len(val) >= 2 && val[0] == '\'' && val[len(val)-1] == '\'' {
			val = val[1 : len(val)-1]
		}
		cv.Value = val
		out = append(out, cv)
	}
	return out, nil
}

// Breakpoint is a function of the runtime a debugger can stop in to see
// OpenMP events (ompd_bp_*).
type Breakpoint struct {
	Name string `json:"name"` // symbol name, e.g. "ompd_bp_parallel_begin"
	Addr uint64 `json:"addr"` // its address in the target
}

// Breakpoints lists the runtime's OMPD breakpoint functions. The runtime
// calls them only when started with OMP_DEBUG=enabled (or after Enable).
type Breakpoints struct {
	ParallelBegin, ParallelEnd Breakpoint // a parallel region starts / ends (in its primary thread)
	TaskBegin, TaskEnd         Breakpoint // a task starts / ends
	ThreadBegin, ThreadEnd     Breakpoint // an OpenMP thread starts / ends
	// DLLLocationsValid is called once ompd_dll_locations is set, which
	// is also when the runtime's OMPD tables are filled and Open works.
	DLLLocationsValid Breakpoint
}

// All returns the breakpoints in a slice, in declaration order.
func (b Breakpoints) All() []Breakpoint {
	return []Breakpoint{b.ParallelBegin, b.ParallelEnd, b.TaskBegin, b.TaskEnd, b.ThreadBegin, b.ThreadEnd, b.DLLLocationsValid}
}

// Breakpoints returns the addresses of the runtime's breakpoint functions.
func (as *AddressSpace) Breakpoints() (Breakpoints, error) {
	var b Breakpoints
	if err := as.needOMPD("breakpoints"); err != nil {
		return b, err
	}
	for _, e := range []struct {
		dst  *Breakpoint
		name string
	}{
		{&b.ParallelBegin, "ompd_bp_parallel_begin"}, {&b.ParallelEnd, "ompd_bp_parallel_end"},
		{&b.TaskBegin, "ompd_bp_task_begin"}, {&b.TaskEnd, "ompd_bp_task_end"},
		{&b.ThreadBegin, "ompd_bp_thread_begin"}, {&b.ThreadEnd, "ompd_bp_thread_end"},
		{&b.DLLLocationsValid, "ompd_dll_locations_valid"},
	} {
		a, err := as.sym(e.name)
		if err != nil {
			return Breakpoints{}, wrapErr(ErrIncompatible, err, "breakpoint %s", e.name)
		}
		*e.dst = Breakpoint{Name: e.name, Addr: a}
	}
	return b, nil
}

// ompdEnableBP is the runtime's OMPD_ENABLE_BP bit of ompd_state.
const ompdEnableBP = 0x1

// Enabled reports whether the runtime calls its breakpoint functions
// (ompd_state has OMPD_ENABLE_BP set).
func (as *AddressSpace) Enabled() (bool, error) {
	if err := as.needOMPD("enabled"); err != nil {
		return false, err
	}
	v, err := as.global("ompd_state", 8, false)
	return v&ompdEnableBP != 0, err
}

// Enable turns the runtime's calls to its breakpoint functions on or off
// (ompd_enable) by writing ompd_state in the target. A read-only target,
// such as a core file, gives an error matching ErrWriteFailed and
// target.ErrReadOnly.
//
// Enabling at run time does not turn on the runtime's thread-state and
// frame tracking; only OMP_DEBUG=enabled at start-up does that.
func (as *AddressSpace) Enable(on bool) error {
	if err := as.needOMPD("enable"); err != nil {
		return err
	}
	addr, err := as.sym("ompd_state")
	if err != nil {
		return wrapErr(ErrIncompatible, err, "ompd_state")
	}
	size := as.l.globals["ompd_state"]
	if size == 0 {
		size = 8
	}
	if size != 1 && size != 2 && size != 4 && size != 8 {
		return errorf(ErrIncompatible, "enable: ompd_state is %d bytes", size)
	}
	cur, err := as.readUint(addr, size, "ompd_state")
	if err != nil {
		return err
	}
	if on {
		cur |= ompdEnableBP
	} else {
		cur &^= ompdEnableBP
	}
	buf := putUint(as.mem.order, size, cur)
	if err := as.t.WriteMemory(addr, buf); err != nil {
		return wrapErr(ErrWriteFailed, err, "enable: write ompd_state at %#x", addr)
	}
	as.mem.refresh()
	return nil
}

// stateTracking reports whether the runtime tracks thread states and task
// frames (ompd_state nonzero, as OMP_DEBUG=enabled makes it).
func (as *AddressSpace) stateTracking() (bool, error) {
	if as.l.source != LayoutOMPDTables {
		return false, nil // no OMPD support: no ompd_state, no tracking for debuggers
	}
	v, err := as.global("ompd_state", 8, false)
	return v != 0, err
}

// needOMPD fails for what only a runtime built with OMPD support has.
func (as *AddressSpace) needOMPD(what string) error {
	if err := as.check(); err != nil {
		return err
	}
	if as.l.source != LayoutOMPDTables {
		return errorf(ErrUnsupported, "%s: the runtime is built without OMPD support", what)
	}
	return nil
}

// ThreadLimit returns the program-wide limit on OpenMP threads
// (ompd_get_thread_limit of the 2014 proposal; OMP_THREAD_LIMIT), the
// runtime's __kmp_cg_max_nth. Each task also has its own thread-limit-var: see
// Task.ThreadLimit.
func (as *AddressSpace) ThreadLimit() (int, error) {
	v, err := as.global("__kmp_cg_max_nth", 4, true)
	return int(v), err
}

// Device would open the address space of an offload device of this process
// (ompd_device_initialize). This package reads host runtimes only: it
// always returns an error matching ErrUnsupported.
func (as *AddressSpace) Device(kind uint64, id []byte) (*AddressSpace, error) {
	if err := as.check(); err != nil {
		return nil, err
	}
	return nil, errorf(ErrUnsupported, "device %#x: only host address spaces are supported", kind)
}
