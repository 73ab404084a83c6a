package libompd

/*
#cgo LDFLAGS: -ldl
#include <pthread.h>
#include <stdlib.h>
#include "ompd_go.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ompd-go/ompd/target"
)

// RC is an OMPD return code (ompd_rc_t). It is an error, so that
// errors.Is(err, libompd.Unavailable) works on the errors of this package.
type RC int

// OMPD return codes (ompd_rc_t).
const (
	OK                 RC = 0
	Unavailable        RC = 1
	StaleHandle        RC = 2
	BadInput           RC = 3
	Error              RC = 4
	Unsupported        RC = 5
	NeedsStateTracking RC = 6
	Incompatible       RC = 7
	DeviceReadError    RC = 8
	DeviceWriteError   RC = 9
	NoMem              RC = 10
	Incomplete         RC = 11
	CallbackError      RC = 12
)

var rcNames = [...]string{
	"ompd_rc_ok", "ompd_rc_unavailable", "ompd_rc_stale_handle", "ompd_rc_bad_input",
	"ompd_rc_error", "ompd_rc_unsupported", "ompd_rc_needs_state_tracking",
	"ompd_rc_incompatible", "ompd_rc_device_read_error", "ompd_rc_device_write_error",
	"ompd_rc_nomem", "ompd_rc_incomplete", "ompd_rc_callback_error",
}

// String returns the C name of the code, e.g. "ompd_rc_unavailable".
func (rc RC) String() string {
	if rc >= 0 && int(rc) < len(rcNames) {
		return rcNames[rc]
	}
	return fmt.Sprintf("ompd_rc_t(%d)", int(rc))
}

// Error returns the code's name.
func (rc RC) Error() string { return "libompd: " + rc.String() }

// CallError is the failure of one OMPD call: which call, and its code.
type CallError struct {
	Op string // the OMPD function, e.g. "ompd_get_enclosing_parallel_handle"
	RC RC
}

func (e *CallError) Error() string { return fmt.Sprintf("libompd: %s: %v", e.Op, e.RC) }

// Unwrap returns the code.
func (e *CallError) Unwrap() error { return e.RC }

// Code returns the OMPD return code an error carries: OK for nil, Error for
// errors that do not come from this package.
func Code(err error) RC {
	if err == nil {
		return OK
	}
	var rc RC
	if errors.As(err, &rc) {
		return rc
	}
	return Error
}

func check(op string, rc C.ompd_rc_t) error {
	if rc == 0 {
		return nil
	}
	return &CallError{Op: op, RC: RC(rc)}
}

// Counters count the callbacks libompd made (see Library.Counters).
type Counters struct {
	Calls            uint64 // every callback
	AllocMemory      uint64
	FreeMemory       uint64
	PrintString      uint64
	SizeofType       uint64
	SymbolAddrLookup uint64
	ReadMemory       uint64 // read_memory calls
	ReadMemoryBytes  uint64 // bytes asked for by read_memory
	WriteMemory      uint64
	WriteMemoryBytes uint64
	ReadString       uint64 // read_string calls
	ReadStringBytes  uint64 // bytes of the strings read_string returned
	DeviceToHost     uint64
	HostToDevice     uint64
	GetThreadContext uint64 // get_thread_context_for_thread_id calls
}

// Reads is the number of target memory reads: read_memory and
// read_string calls.
func (c Counters) Reads() uint64 { return c.ReadMemory + c.ReadString }

// BytesRead is the number of bytes read from the target by read_memory and
// read_string.
func (c Counters) BytesRead() uint64 { return c.ReadMemoryBytes + c.ReadStringBytes }

// Sub returns c - d, field by field: the callbacks made between two
// snapshots of the counters.
func (c Counters) Sub(d Counters) Counters {
	return Counters{
		Calls: c.Calls - d.Calls, AllocMemory: c.AllocMemory - d.AllocMemory,
		FreeMemory: c.FreeMemory - d.FreeMemory, PrintString: c.PrintString - d.PrintString,
		SizeofType: c.SizeofType - d.SizeofType, SymbolAddrLookup: c.SymbolAddrLookup - d.SymbolAddrLookup,
		ReadMemory: c.ReadMemory - d.ReadMemory, ReadMemoryBytes: c.ReadMemoryBytes - d.ReadMemoryBytes,
		WriteMemory: c.WriteMemory - d.WriteMemory, WriteMemoryBytes: c.WriteMemoryBytes - d.WriteMemoryBytes,
		ReadString: c.ReadString - d.ReadString, ReadStringBytes: c.ReadStringBytes - d.ReadStringBytes,
		DeviceToHost: c.DeviceToHost - d.DeviceToHost, HostToDevice: c.HostToDevice - d.HostToDevice,
		GetThreadContext: c.GetThreadContext - d.GetThreadContext,
	}
}

// Library is the loaded libompd.so, initialized (ompd_initialize) with the
// harness's callback table.
type Library struct {
	path       string
	apiVersion int64
	version    string
	work       chan func()
	thread     C.pthread_t // the worker's OS thread
}

var (
	loadMu sync.Mutex
	loaded *Library
)

// Load loads the OMPD library at path with dlopen and initializes it
// (ompd_initialize, with the API version the library itself reports).
// Loading the same path again returns the same Library; another path fails,
// since a process can hold one libompd.
func Load(path string) (*Library, error) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if loaded != nil {
		if loaded.path != path {
			return nil, fmt.Errorf("libompd: %s already loaded, cannot load %s too", loaded.path, path)
		}
		return loaded, nil
	}
	l := &Library{path: path, work: make(chan func())}
	ready := make(chan C.pthread_t)
	go l.worker(ready)
	l.thread = <-ready
	var err error
	l.do(func() {
		cpath := C.CString(path)
		defer C.free(unsafe.Pointer(cpath))
		if msg := C.ompd_go_load(cpath); msg != nil {
			err = fmt.Errorf("libompd: %s", C.GoString(msg))
			return
		}
		var v C.ompd_word_t
		if err = check("ompd_get_api_version", C.ompd_go_get_api_version(&v)); err != nil {
			return
		}
		l.apiVersion = int64(v)
		var s *C.char
		if C.ompd_go_get_version_string(&s) == 0 && s != nil {
			l.version = C.GoString(s) // static in the library: not freed
		}
		err = check("ompd_initialize", C.ompd_go_initialize(v))
	})
	if err != nil {
		close(l.work)
		return nil, err
	}
	loaded = l
	return l, nil
}

// worker runs every call into the library, locked to one OS thread.
func (l *Library) worker(ready chan<- C.pthread_t) {
	runtime.LockOSThread() // never unlocked: the thread dies with the worker
	ready <- C.pthread_self()
	for f := range l.work {
		f()
	}
}

// do runs f on the library's thread and waits for it. Called from the
// library's thread itself (inside Do), it runs f directly.
func (l *Library) do(f func()) {
	if C.pthread_equal(C.pthread_self(), l.thread) != 0 {
		// Only the worker goroutine runs on its locked thread.
		// (pthread_self reads the thread pointer: no system call.)
		f()
		return
	}
	var p any
	done := make(chan struct{})
	l.work <- func() {
		defer func() {
			p = recover()
			close(done)
		}()
		f()
	}
	<-done
	if p != nil {
		panic(p)
	}
}

// Do runs f on the library's thread: every call f makes to the library runs
// directly, without a hand-over between threads per call. Use it to batch
// many calls (benchmarks). f must not start goroutines that call the
// library and wait for them.
func (l *Library) Do(f func()) { l.do(f) }

// Path returns the path the library was loaded from.
func (l *Library) Path() string { return l.path }

// APIVersion returns the OMPD API version the library implements
// (ompd_get_api_version).
func (l *Library) APIVersion() int64 { return l.apiVersion }

// VersionString returns the library's description (ompd_get_version_string).
func (l *Library) VersionString() string { return l.version }

// Counters returns the callback counters since the library was loaded or
// the counters were last reset.
func (l *Library) Counters() Counters {
	var c C.ompd_go_counters_t
	l.do(func() { C.ompd_go_get_counters(&c) })
	return Counters{
		Calls: uint64(c.calls), AllocMemory: uint64(c.alloc_memory), FreeMemory: uint64(c.free_memory),
		PrintString: uint64(c.print_string), SizeofType: uint64(c.sizeof_type),
		SymbolAddrLookup: uint64(c.symbol_addr_lookup),
		ReadMemory:       uint64(c.read_memory), ReadMemoryBytes: uint64(c.read_memory_bytes),
		WriteMemory: uint64(c.write_memory), WriteMemoryBytes: uint64(c.write_memory_bytes),
		ReadString: uint64(c.read_string), ReadStringBytes: uint64(c.read_string_bytes),
		DeviceToHost: uint64(c.device_to_host), HostToDevice: uint64(c.host_to_device),
		GetThreadContext: uint64(c.get_thread_context),
	}
}

// ResetCounters sets every callback counter to zero.
func (l *Library) ResetCounters() { l.do(func() { C.ompd_go_reset_counters() }) }

// ProbeReads makes n read_memory callbacks of size bytes (at most 64) at
// addr from C, through the callback table libompd uses, and returns the
// first failure. It measures what the harness adds to every callback.
func (as *AddressSpace) ProbeReads(addr uint64, size, n int) error {
	var err error
	as.l.do(func() {
		err = check("probe", C.ompd_go_probe_reads(as.ctx, C.uint64_t(addr), C.uint64_t(size), C.uint64_t(n)))
	})
	return err
}

// Scope is the kind of handle an ICV is read from (ompd_scope_t).
type Scope int

// OMPD scopes (ompd_scope_t).
const (
	ScopeGlobal       Scope = 1
	ScopeAddressSpace Scope = 2
	ScopeThread       Scope = 3
	ScopeParallel     Scope = 4
	ScopeImplicitTask Scope = 5
	ScopeTask         Scope = 6
)

// ThreadIDKind is the kind of an OS thread id (ompd_thread_id_t).
type ThreadIDKind int

// Thread id kinds.
const (
	// PthreadID is a pthread_t (on glibc, the thread pointer register).
	PthreadID ThreadIDKind = kindPthread
	// LWPID is a kernel thread id.
	LWPID ThreadIDKind = kindLWP
)

// AddressSpace is an initialized process (ompd_address_space_handle_t).
type AddressSpace struct {
	l   *Library
	t   target.Target
	id  uint64
	ctx *C.ompd_address_space_context_t
	h   *C.ompd_address_space_handle_t

	icvMu sync.Mutex
	icvs  map[string]ICVInfo // by name, from ompd_enumerate_icvs
}

// ProcessInitialize makes an address space of the program t
// (ompd_process_initialize). libompd reads the target's primitive sizes at
// its first call only, so every target of the process must have the same.
func (l *Library) ProcessInitialize(t target.Target) (*AddressSpace, error) {
	if t == nil {
		return nil, &CallError{Op: "ompd_process_initialize", RC: BadInput}
	}
	id, _ := register(t)
	as := &AddressSpace{l: l, t: t, id: id}
	sz := t.Sizes()
	var err error
	l.do(func() {
		// Never freed: see the package documentation.
		as.ctx = (*C.ompd_address_space_context_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.ompd_address_space_context_t{}))))
		as.ctx.id = C.uint64_t(id)
		as.ctx.sizes = C.ompd_device_type_sizes_t{
			sizeof_char: C.uint8_t(sz.Char), sizeof_short: C.uint8_t(sz.Short), sizeof_int: C.uint8_t(sz.Int),
			sizeof_long: C.uint8_t(sz.Long), sizeof_long_long: C.uint8_t(sz.LongLong), sizeof_pointer: C.uint8_t(sz.Pointer),
		}
		if hostLittle() != (t.ByteOrder().Uint16([]byte{1, 0}) == 1) {
			as.ctx.swap = 1
		}
		err = check("ompd_process_initialize", C.ompd_go_process_initialize(as.ctx, &as.h))
	})
	if err != nil {
		as.forget()
		return nil, err
	}
	return as, nil
}

func hostLittle() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}

// forget drops the registry entry and frees the thread contexts.
func (as *AddressSpace) forget() {
	a := unregister(as.id)
	if a == nil {
		return
	}
	as.l.do(func() {
		for _, tc := range a.tctx {
			C.free(unsafe.Pointer(tc))
		}
	})
}

// Release releases the address space (ompd_rel_address_space_handle). Its
// thread, parallel and task handles must be released before.
func (as *AddressSpace) Release() error {
	if as.h == nil {
		return &CallError{Op: "ompd_rel_address_space_handle", RC: StaleHandle}
	}
	var err error
	as.l.do(func() {
		err = check("ompd_rel_address_space_handle", C.ompd_go_rel_address_space_handle(as.h))
	})
	as.h = nil
	as.forget()
	return err
}

// Target returns the target the address space reads.
func (as *AddressSpace) Target() target.Target { return as.t }

// Library returns the library the address space belongs to.
func (as *AddressSpace) Library() *Library { return as.l }

// OMPVersion returns the runtime's OpenMP version (ompd_get_omp_version).
func (as *AddressSpace) OMPVersion() (int64, error) {
	var v C.ompd_word_t
	var err error
	as.l.do(func() { err = check("ompd_get_omp_version", C.ompd_go_get_omp_version(as.h, &v)) })
	return int64(v), err
}

// takeString copies and frees a string libompd allocated with alloc_memory.
func takeString(s *C.char) string {
	if s == nil {
		return ""
	}
	out := C.GoString(s)
	C.free(unsafe.Pointer(s))
	return out
}

// OMPVersionString returns the runtime's OpenMP version as text
// (ompd_get_omp_version_string).
func (as *AddressSpace) OMPVersionString() (string, error) {
	var s *C.char
	var err error
	var out string
	as.l.do(func() {
		err = check("ompd_get_omp_version_string", C.ompd_go_get_omp_version_string(as.h, &s))
		out = takeString(s)
	})
	return out, err
}

// ThreadHandle returns the OpenMP thread of an OS thread
// (ompd_get_thread_handle). libompd reads the thread's __kmp_gtid: a thread
// whose value is negative gives Unavailable.
func (as *AddressSpace) ThreadHandle(kind ThreadIDKind, id uint64) (*Thread, error) {
	th := &Thread{as: as}
	var err error
	as.l.do(func() {
		idp := (*C.uint64_t)(C.malloc(8))
		defer C.free(unsafe.Pointer(idp))
		*idp = C.uint64_t(id)
		size := C.ompd_size_t(8)
		if kind == LWPID {
			size = 4 // a pid_t
			*(*C.uint32_t)(unsafe.Pointer(idp)) = C.uint32_t(id)
		}
		err = check("ompd_get_thread_handle", C.ompd_go_get_thread_handle(as.h, C.ompd_thread_id_t(kind), size, unsafe.Pointer(idp), &th.h))
	})
	if err != nil {
		return nil, err
	}
	return th, nil
}

// State is one entry of ompd_enumerate_states.
type State struct {
	Value int64
	Name  string // e.g. "ompt_state_work_parallel"
}

// States enumerates the thread states libompd knows (ompd_enumerate_states).
func (as *AddressSpace) States() ([]State, error) {
	var out []State
	var err error
	as.l.do(func() {
		cur := C.ompd_word_t(0x102) // ompt_state_undefined starts the enumeration
		for i := 0; i < 1024; i++ {
			var next, more C.ompd_word_t
			var name *C.char
			if err = check("ompd_enumerate_states", C.ompd_go_enumerate_states(as.h, cur, &next, &name, &more)); err != nil {
				return
			}
			out = append(out, State{Value: int64(next), Name: takeString(name)})
			if more == 0 {
				return
			}
			cur = next
		}
		err = fmt.Errorf("libompd: ompd_enumerate_states does not end")
	})
	return out, err
}

// ICVInfo is one entry of ompd_enumerate_icvs.
type ICVInfo struct {
	ID    uint64
	Name  string
	Scope Scope
}

// ICVs enumerates the ICVs libompd knows (ompd_enumerate_icvs).
func (as *AddressSpace) ICVs() ([]ICVInfo, error) {
	var out []ICVInfo
	var err error
	as.l.do(func() {
		cur := C.ompd_icv_id_t(0) // ompd_icv_undefined
		for i := 0; i < 1024; i++ {
			var next C.ompd_icv_id_t
			var name *C.char
			var scope C.ompd_scope_t
			var more C.int
			if err = check("ompd_enumerate_icvs", C.ompd_go_enumerate_icvs(as.h, cur, &next, &name, &scope, &more)); err != nil {
				return
			}
			out = append(out, ICVInfo{ID: uint64(next), Name: takeString(name), Scope: Scope(scope)})
			if more == 0 {
				return
			}
			cur = next
		}
		err = fmt.Errorf("libompd: ompd_enumerate_icvs does not end")
	})
	return out, err
}

// ICVByName returns the id libompd gives the named ICV.
func (as *AddressSpace) ICVByName(name string) (ICVInfo, bool) {
	as.icvMu.Lock()
	defer as.icvMu.Unlock()
	if as.icvs == nil {
		list, err := as.ICVs()
		if err != nil {
			return ICVInfo{}, false
		}
		as.icvs = make(map[string]ICVInfo, len(list))
		for _, i := range list {
			as.icvs[i.Name] = i
		}
	}
	i, ok := as.icvs[name]
	return i, ok
}

// DisplayControlVars returns the display control variables, one NAME=value
// line each (ompd_get_display_control_vars, then
// ompd_rel_display_control_vars).
func (as *AddressSpace) DisplayControlVars() ([]string, error) {
	var out []string
	var err error
	as.l.do(func() {
		var vars **C.char
		if err = check("ompd_get_display_control_vars", C.ompd_go_get_display_control_vars(as.h, &vars)); err != nil {
			return
		}
		for i := 0; ; i++ {
			s := C.ompd_go_string_at(vars, C.int(i))
			if s == nil {
				break
			}
			out = append(out, C.GoString(s))
		}
		err = check("ompd_rel_display_control_vars", C.ompd_go_rel_display_control_vars(&vars))
	})
	return out, err
}

// icv reads an ICV from a handle (ompd_get_icv_from_scope). With
// Incomplete (a list ICV of more than one element) the value is the first
// element and the error is set.
func (l *Library) icv(h unsafe.Pointer, scope Scope, id uint64) (int64, error) {
	var v C.ompd_word_t
	var err error
	l.do(func() {
		err = check("ompd_get_icv_from_scope", C.ompd_go_get_icv_from_scope(h, C.ompd_scope_t(scope), C.ompd_icv_id_t(id), &v))
	})
	return int64(v), err
}

// icvString reads an ICV as text (ompd_get_icv_string_from_scope).
func (l *Library) icvString(h unsafe.Pointer, scope Scope, id uint64) (string, error) {
	var s *C.char
	var err error
	var out string
	l.do(func() {
		err = check("ompd_get_icv_string_from_scope", C.ompd_go_get_icv_string_from_scope(h, C.ompd_scope_t(scope), C.ompd_icv_id_t(id), &s))
		out = takeString(s)
	})
	return out, err
}

// ICV reads an address-space ICV (ompd_get_icv_from_scope).
func (as *AddressSpace) ICV(id uint64) (int64, error) {
	return as.l.icv(unsafe.Pointer(as.h), ScopeAddressSpace, id)
}

// ICVString reads an address-space ICV as text
// (ompd_get_icv_string_from_scope).
func (as *AddressSpace) ICVString(id uint64) (string, error) {
	return as.l.icvString(unsafe.Pointer(as.h), ScopeAddressSpace, id)
}

// Thread is an OpenMP thread handle (ompd_thread_handle_t).
type Thread struct {
	as *AddressSpace
	h  *C.ompd_thread_handle_t
}

// Addr returns the target address the handle names: the runtime's
// kmp_base_info_t (the th member of kmp_info_t), read from libompd's
// private handle layout.
func (t *Thread) Addr() uint64 { return uint64(t.h.th.address) }

// Release releases the handle (ompd_rel_thread_handle).
func (t *Thread) Release() error {
	if t == nil || t.h == nil {
		return nil
	}
	var err error
	t.as.l.do(func() { err = check("ompd_rel_thread_handle", C.ompd_go_rel_thread_handle(t.h)) })
	t.h = nil
	return err
}

// Compare compares two thread handles (ompd_thread_handle_compare): 0 when
// they name the same thread.
func (t *Thread) Compare(u *Thread) (int, error) {
	var c C.int
	var err error
	t.as.l.do(func() { err = check("ompd_thread_handle_compare", C.ompd_go_thread_handle_compare(t.h, u.h, &c)) })
	return int(c), err
}

// PthreadID returns the thread's pthread_t (ompd_get_thread_id with the
// pthread kind, the only kind libompd supports).
func (t *Thread) PthreadID() (uint64, error) {
	var v C.uint64_t
	var err error
	t.as.l.do(func() {
		err = check("ompd_get_thread_id", C.ompd_go_get_thread_id(t.h, C.ompd_thread_id_t(PthreadID), 8, unsafe.Pointer(&v)))
	})
	return uint64(v), err
}

// State returns the thread's state and wait id (ompd_get_state).
func (t *Thread) State() (state int64, waitID uint64, err error) {
	var s C.ompd_word_t
	var w C.ompd_wait_id_t
	t.as.l.do(func() { err = check("ompd_get_state", C.ompd_go_get_state(t.h, &s, &w)) })
	return int64(s), uint64(w), err
}

// CurrParallel returns the thread's innermost parallel region
// (ompd_get_curr_parallel_handle).
func (t *Thread) CurrParallel() (*Parallel, error) {
	p := &Parallel{as: t.as}
	var err error
	t.as.l.do(func() { err = check("ompd_get_curr_parallel_handle", C.ompd_go_get_curr_parallel_handle(t.h, &p.h)) })
	if err != nil {
		return nil, err
	}
	return p, nil
}

// CurrTask returns the thread's current task (ompd_get_curr_task_handle).
func (t *Thread) CurrTask() (*Task, error) {
	k := &Task{as: t.as}
	var err error
	t.as.l.do(func() { err = check("ompd_get_curr_task_handle", C.ompd_go_get_curr_task_handle(t.h, &k.h)) })
	if err != nil {
		return nil, err
	}
	return k, nil
}

// ICV reads a thread ICV (ompd_get_icv_from_scope).
func (t *Thread) ICV(id uint64) (int64, error) {
	return t.as.l.icv(unsafe.Pointer(t.h), ScopeThread, id)
}

// ICVString reads a thread ICV as text (ompd_get_icv_string_from_scope).
func (t *Thread) ICVString(id uint64) (string, error) {
	return t.as.l.icvString(unsafe.Pointer(t.h), ScopeThread, id)
}

// Parallel is a parallel region handle (ompd_parallel_handle_t).
type Parallel struct {
	as *AddressSpace
	h  *C.ompd_parallel_handle_t
}

// Addr returns the runtime's kmp_base_team_t the handle names, read from
// libompd's private handle layout.
func (p *Parallel) Addr() uint64 { return uint64(p.h.th.address) }

// LWT returns the runtime's ompt_lw_taskteam_t the handle names (a
// serialized region), or 0.
func (p *Parallel) LWT() uint64 { return uint64(p.h.lwt.address) }

// Release releases the handle (ompd_rel_parallel_handle).
func (p *Parallel) Release() error {
	if p == nil || p.h == nil {
		return nil
	}
	var err error
	p.as.l.do(func() { err = check("ompd_rel_parallel_handle", C.ompd_go_rel_parallel_handle(p.h)) })
	p.h = nil
	return err
}

// Compare compares two parallel handles (ompd_parallel_handle_compare).
func (p *Parallel) Compare(q *Parallel) (int, error) {
	var c C.int
	var err error
	p.as.l.do(func() {
		err = check("ompd_parallel_handle_compare", C.ompd_go_parallel_handle_compare(p.h, q.h, &c))
	})
	return int(c), err
}

// Enclosing returns the enclosing region (ompd_get_enclosing_parallel_handle).
func (p *Parallel) Enclosing() (*Parallel, error) {
	e := &Parallel{as: p.as}
	var err error
	p.as.l.do(func() {
		err = check("ompd_get_enclosing_parallel_handle", C.ompd_go_get_enclosing_parallel_handle(p.h, &e.h))
	})
	if err != nil {
		return nil, err
	}
	return e, nil
}

// ThreadIn returns thread number n of the region's team
// (ompd_get_thread_in_parallel). libompd leaves such handles without a
// thread context: queries that need one fail on them.
func (p *Parallel) ThreadIn(n int) (*Thread, error) {
	t := &Thread{as: p.as}
	var err error
	p.as.l.do(func() {
		err = check("ompd_get_thread_in_parallel", C.ompd_go_get_thread_in_parallel(p.h, C.int(n), &t.h))
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// TaskIn returns the implicit task of thread number n of the region
// (ompd_get_task_in_parallel).
func (p *Parallel) TaskIn(n int) (*Task, error) {
	k := &Task{as: p.as}
	var err error
	p.as.l.do(func() {
		err = check("ompd_get_task_in_parallel", C.ompd_go_get_task_in_parallel(p.h, C.int(n), &k.h))
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// ICV reads a parallel ICV (ompd_get_icv_from_scope).
func (p *Parallel) ICV(id uint64) (int64, error) {
	return p.as.l.icv(unsafe.Pointer(p.h), ScopeParallel, id)
}

// ICVString reads a parallel ICV as text (ompd_get_icv_string_from_scope).
func (p *Parallel) ICVString(id uint64) (string, error) {
	return p.as.l.icvString(unsafe.Pointer(p.h), ScopeParallel, id)
}

func (p *Parallel) named(name string) (int64, error) {
	i, ok := p.as.ICVByName(name)
	if !ok {
		return 0, &CallError{Op: "ICV " + name, RC: Unsupported}
	}
	return p.ICV(i.ID)
}

// NumThreads returns the region's team size (the team-size-var ICV).
func (p *Parallel) NumThreads() (int64, error) { return p.named("team-size-var") }

// Level returns the region's nesting level (the levels-var ICV).
func (p *Parallel) Level() (int64, error) { return p.named("levels-var") }

// ActiveLevel returns the region's active nesting level (the
// active-levels-var ICV).
func (p *Parallel) ActiveLevel() (int64, error) { return p.named("active-levels-var") }

// Task is a task handle (ompd_task_handle_t).
type Task struct {
	as *AddressSpace
	h  *C.ompd_task_handle_t
}

// Addr returns the runtime's kmp_taskdata_t the handle names, read from
// libompd's private handle layout.
func (k *Task) Addr() uint64 { return uint64(k.h.th.address) }

// LWT returns the runtime's ompt_lw_taskteam_t the handle names (the
// implicit task of a serialized region), or 0.
func (k *Task) LWT() uint64 { return uint64(k.h.lwt.address) }

// Release releases the handle (ompd_rel_task_handle).
func (k *Task) Release() error {
	if k == nil || k.h == nil {
		return nil
	}
	var err error
	k.as.l.do(func() { err = check("ompd_rel_task_handle", C.ompd_go_rel_task_handle(k.h)) })
	k.h = nil
	return err
}

// Compare compares two task handles (ompd_task_handle_compare).
func (k *Task) Compare(u *Task) (int, error) {
	var c C.int
	var err error
	k.as.l.do(func() { err = check("ompd_task_handle_compare", C.ompd_go_task_handle_compare(k.h, u.h, &c)) })
	return int(c), err
}

func (k *Task) related(op string, f func(*C.ompd_task_handle_t, **C.ompd_task_handle_t) C.ompd_rc_t) (*Task, error) {
	var h *C.ompd_task_handle_t
	var err error
	k.as.l.do(func() { err = check(op, f(k.h, &h)) })
	if err != nil {
		return nil, err
	}
	return &Task{as: k.as, h: h}, nil
}

// Generating returns the task's generating task
// (ompd_get_generating_task_handle).
func (k *Task) Generating() (*Task, error) {
	return k.related("ompd_get_generating_task_handle", func(h *C.ompd_task_handle_t, out **C.ompd_task_handle_t) C.ompd_rc_t {
		return C.ompd_go_get_generating_task_handle(h, out)
	})
}

// Scheduling returns the task's scheduling task
// (ompd_get_scheduling_task_handle).
func (k *Task) Scheduling() (*Task, error) {
	return k.related("ompd_get_scheduling_task_handle", func(h *C.ompd_task_handle_t, out **C.ompd_task_handle_t) C.ompd_rc_t {
		return C.ompd_go_get_scheduling_task_handle(h, out)
	})
}

// Parallel returns the task's parallel region (ompd_get_task_parallel_handle).
func (k *Task) Parallel() (*Parallel, error) {
	p := &Parallel{as: k.as}
	var err error
	k.as.l.do(func() {
		err = check("ompd_get_task_parallel_handle", C.ompd_go_get_task_parallel_handle(k.h, &p.h))
	})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Function returns the entry address of the task's code
// (ompd_get_task_function).
func (k *Task) Function() (uint64, error) {
	var a C.ompd_address_t
	var err error
	k.as.l.do(func() { err = check("ompd_get_task_function", C.ompd_go_get_task_function(k.h, &a)) })
	return uint64(a.address), err
}

// Frame is one frame of a task (ompd_frame_info_t).
type Frame struct {
	Addr  uint64
	Flags int64
}

// Frame returns the task's exit and enter frames (ompd_get_task_frame).
func (k *Task) Frame() (exit, enter Frame, err error) {
	var x, n C.ompd_frame_info_t
	k.as.l.do(func() { err = check("ompd_get_task_frame", C.ompd_go_get_task_frame(k.h, &x, &n)) })
	return Frame{uint64(x.frame_address.address), int64(x.frame_flag)},
		Frame{uint64(n.frame_address.address), int64(n.frame_flag)}, err
}

// ICV reads a task ICV (ompd_get_icv_from_scope).
func (k *Task) ICV(id uint64) (int64, error) { return k.as.l.icv(unsafe.Pointer(k.h), ScopeTask, id) }

// ICVString reads a task ICV as text (ompd_get_icv_string_from_scope).
func (k *Task) ICVString(id uint64) (string, error) {
	return k.as.l.icvString(unsafe.Pointer(k.h), ScopeTask, id)
}
