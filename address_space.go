package ompd

import (
	"iter"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/runtimes"
	"github.com/ompd-go/ompd/target"
)

// AddressSpace is the OpenMP runtime of one process (ompd_address_space_handle_t),
// seen through a target.Target. Create it with Open.
type AddressSpace struct {
	t      target.Target
	rt     omprt.Runtime
	others []string // the other runtimes loaded, not read
	closed atomic.Bool
	// refreshed is set by the first Refresh: until then every handle
	// was made from the memory read now (see unchanged).
	refreshed atomic.Bool

	icvsOnce sync.Once
	icvs     [icvEnd]bool // the ICVs the runtime has (hasICV)
}

// Open detects the OpenMP runtime in t (LLVM's libomp or GCC's libgomp),
// reads its layout and returns its address space
// (ompd_process_initialize). When the target holds both, it reads the one
// whose threads the program uses and names the other in
// Runtime().AlsoLoaded.
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
// the target's reason (target.ErrObjectMissing), not ErrNoRuntime; so
// does a program on libgomp whose core lacks the library's pages and
// whose file the target could not load, and the error says that the
// program uses libgomp and which file is missing.
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
	rt, others, err := runtimes.Open(t)
	if err != nil {
		return nil, err
	}
	as := newAddressSpace(t, rt)
	as.others = others
	return as, nil
}

// Close releases the address space (ompd_rel_address_space_handle, the
// drafts' ompd_release_address_space_handle). Handles
// made from it fail with ErrStaleHandle afterwards. It does not close the
// target.
func (as *AddressSpace) Close() error {
	as.closed.Store(true)
	as.rt.Refresh()
	return nil
}

// Target returns the target the address space reads.
func (as *AddressSpace) Target() target.Target { return as.t }

// RuntimeInfo says which OpenMP runtime an address space reads.
type RuntimeInfo struct {
	Name    string       // "LLVM libomp", "GNU libgomp"
	Version string       // the runtime's version where it records one, else ""
	Layout  LayoutSource // where its structure layout came from
	// AlsoLoaded names the other OpenMP runtimes the target holds, which
	// this address space does not read: when a program loads two, Open
	// reads the one whose threads it uses. One that could not be read
	// (for instance never initialized) says why in parentheses.
	AlsoLoaded []string
}

// Runtime says which OpenMP runtime the address space reads and where its
// layout came from.
func (as *AddressSpace) Runtime() RuntimeInfo {
	i := as.rt.Info()
	return RuntimeInfo{Name: i.Name, Version: i.Version, Layout: LayoutSource(i.Layout), AlsoLoaded: append([]string(nil), as.others...)}
}

// Refresh drops everything cached from target memory, the target's own
// caches too (target.Refresher). Call it after a live target ran and
// stopped again; a stopped target or a core never needs it.
// Handles stay usable: they are checked against the new memory and fail with
// ErrStaleHandle where the runtime shows their object is gone.
func (as *AddressSpace) Refresh() {
	as.refreshed.Store(true)
	if r, ok := as.t.(target.Refresher); ok {
		r.Refresh()
	}
	as.rt.Refresh()
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

// checkHandle is check for the address space of a handle of the given
// kind ("Thread", ScopeParallel, ...): a zero handle has none.
func (as *AddressSpace) checkHandle(kind any) error {
	if as == nil {
		return errorf(ErrBadInput, "zero %v handle", kind)
	}
	return as.check()
}

// OpenMPVersion returns the OpenMP version the runtime implements, as the
// value of _OPENMP (ompd_get_omp_version), e.g. 201611.
func (as *AddressSpace) OpenMPVersion() (int, error) {
	if err := as.check(); err != nil {
		return 0, err
	}
	return as.rt.OpenMPVersion()
}

// DLLLocations returns the names of the OMPD libraries the runtime
// advertises (its variable ompd_dll_locations), in its order.
func (as *AddressSpace) DLLLocations() ([]string, error) {
	if err := as.check(); err != nil {
		return nil, err
	}
	return as.rt.DLLLocations()
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
	RuntimeRaw string `json:"runtime_raw,omitempty"` // see Corrected
	// Stale tells that the value is the runtime's start-up text, which
	// no runtime state confirms: the program may run with another value
	// (the runtime recorded it before reading the environment).
	Stale bool `json:"stale"`
	// Source is "environment" when the variable is the program's
	// start-up environment's, not read from the runtime (GCC's libgomp
	// without its debug information); "" when read from the runtime.
	Source string `json:"source,omitempty"`
}

// String returns the variable's line, NAME='value' (Raw).
func (c ControlVar) String() string { return c.Raw }

// DisplayControlVars returns the display control variables
// (ompd_get_display_control_vars, the 2014 proposal's
// ompd_display_control_vars): what OMP_DISPLAY_ENV=verbose prints,
// NAME=value, in the runtime's order.
//
// LLVM's runtime records them at start-up before it reads the environment,
// so its record shows the defaults (LLVM's libompd reports those), and
// leaves OMP_WAIT_POLICY and KMP_LIBRARY out. Each variable's value is
// read from the runtime state the runtime's own print function for it reads
// (schedule, thread counts, binding, places, levels, limits, teams,
// cancellation, priority, affinity format and display, OMP_DISPLAY_ENV,
// stack sizes, default device, dynamic, wait policy and library, block
// time, the OMP_TOOL variables, barrier settings, lock kind, affinity and
// every KMP_* tuning variable) and replaces the start-up text (Corrected
// is set when it differs); the missing ones are added. A variable whose
// state cannot be read keeps the start-up text and is marked Stale: on a
// runtime without its DWARF, OMP_DYNAMIC, KMP_DYNAMIC_MODE, KMP_AFFINITY
// and KMP_HIDDEN_HELPER_AFFINITY (kept in structures only the DWARF
// describes).
func (as *AddressSpace) DisplayControlVars() ([]ControlVar, error) {
	if err := as.check(); err != nil {
		return nil, err
	}
	vars, err := as.rt.DisplayControlVars()
	if err != nil {
		return nil, err
	}
	out := make([]ControlVar, len(vars))
	for i, v := range vars {
		out[i] = ControlVar(v)
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

// All enumerates the breakpoints, in declaration order.
func (b Breakpoints) All() iter.Seq[Breakpoint] {
	return slices.Values([]Breakpoint{b.ParallelBegin, b.ParallelEnd, b.TaskBegin, b.TaskEnd, b.ThreadBegin, b.ThreadEnd, b.DLLLocationsValid})
}

// Breakpoints returns the addresses of the runtime's breakpoint functions
// (ompd_get_breakpoints).
func (as *AddressSpace) Breakpoints() (Breakpoints, error) {
	var b Breakpoints
	if err := as.check(); err != nil {
		return b, err
	}
	bps, err := as.rt.Breakpoints()
	if err != nil {
		return b, err
	}
	dst := []*Breakpoint{&b.ParallelBegin, &b.ParallelEnd, &b.TaskBegin, &b.TaskEnd, &b.ThreadBegin, &b.ThreadEnd, &b.DLLLocationsValid}
	if len(bps) != len(dst) {
		return Breakpoints{}, errorf(ErrIncompatible, "the runtime lists %d breakpoints, not %d", len(bps), len(dst))
	}
	for i, bp := range bps {
		*dst[i] = Breakpoint(bp)
	}
	return b, nil
}

// Enabled reports whether the runtime calls its breakpoint functions
// (ompd_state has OMPD_ENABLE_BP set).
func (as *AddressSpace) Enabled() (bool, error) {
	if err := as.check(); err != nil {
		return false, err
	}
	return as.rt.Enabled()
}

// Enable turns the runtime's calls to its breakpoint functions on or off
// (ompd_enable) by writing ompd_state in the target. A read-only target,
// such as a core file, gives an error matching ErrWriteFailed and
// target.ErrReadOnly.
//
// Enabling at run time does not turn on the runtime's thread-state and
// frame tracking; only OMP_DEBUG=enabled at start-up does that.
func (as *AddressSpace) Enable(on bool) error {
	if err := as.check(); err != nil {
		return err
	}
	return as.rt.Enable(on)
}

// ThreadLimit returns the program-wide limit on OpenMP threads
// (ompd_get_thread_limit of the 2014 proposal; OMP_THREAD_LIMIT), the
// runtime's __kmp_cg_max_nth. Each task also has its own thread-limit-var: see
// Task.ThreadLimit.
func (as *AddressSpace) ThreadLimit() (int, error) {
	if err := as.check(); err != nil {
		return 0, err
	}
	return as.rt.ThreadLimit()
}
