package libompd

/*
#include <stdlib.h>
#include "ompd_go.h"
*/
import "C"

import (
	"errors"
	"sync"
	"unsafe"

	"github.com/ompd-go/ompd/target"
)

// aspace is what an address space context stands for: the target the
// callbacks read, and the thread contexts handed out for its OS threads.
type aspace struct {
	t target.Target

	threads    []target.Thread // the target's OS threads, listed once
	threadsErr error
	listed     bool
	tctx       map[uint64]*C.ompd_thread_context_t // by LWP id, allocated in C
}

// The registry maps the id stored in each C context to its Go state.
// Callbacks only run on the library's worker thread, but the registry is
// also touched by ProcessInitialize and Release, so it has its own lock.
var registry = struct {
	sync.Mutex
	next uint64
	m    map[uint64]*aspace
}{m: make(map[uint64]*aspace)}

func register(t target.Target) (uint64, *aspace) {
	registry.Lock()
	defer registry.Unlock()
	registry.next++
	a := &aspace{t: t, tctx: make(map[uint64]*C.ompd_thread_context_t)}
	registry.m[registry.next] = a
	return registry.next, a
}

func unregister(id uint64) *aspace {
	registry.Lock()
	defer registry.Unlock()
	a := registry.m[id]
	delete(registry.m, id)
	return a
}

func lookup(ctx *C.ompd_address_space_context_t) *aspace {
	if ctx == nil {
		return nil
	}
	registry.Lock()
	defer registry.Unlock()
	return registry.m[uint64(ctx.id)]
}

// lookupFor is lookup for a callback that moves n bytes: StaleHandle for
// an unknown context, BadInput for a size past 1 GiB.
func lookupFor(ctx *C.ompd_address_space_context_t, n C.ompd_size_t) (*aspace, RC) {
	a := lookup(ctx)
	if a == nil {
		return nil, StaleHandle
	}
	if n > 1<<30 {
		return nil, BadInput
	}
	return a, OK
}

func (a *aspace) osThreads() ([]target.Thread, error) {
	if !a.listed {
		a.threads, a.threadsErr = a.t.Threads()
		a.listed = true
	}
	return a.threads, a.threadsErr
}

// rcOf maps a target error to the return code a callback reports.
func rcOf(err error, read bool) C.ompd_rc_t {
	switch {
	case err == nil:
		return C.ompd_rc_t(OK)
	case errors.Is(err, target.ErrNotFound):
		return C.ompd_rc_t(Error)
	case errors.Is(err, target.ErrNoThread):
		return C.ompd_rc_t(BadInput)
	case errors.Is(err, target.ErrUnsupported):
		return C.ompd_rc_t(Unsupported)
	case errors.Is(err, target.ErrReadOnly):
		return C.ompd_rc_t(DeviceWriteError)
	case errors.Is(err, target.ErrNoMemory) && read:
		return C.ompd_rc_t(DeviceReadError)
	case errors.Is(err, target.ErrNoMemory):
		return C.ompd_rc_t(DeviceWriteError)
	}
	return C.ompd_rc_t(Error)
}

//export ompdGoSymbolAddr
func ompdGoSymbolAddr(ctx *C.ompd_address_space_context_t, tctx *C.ompd_thread_context_t, name *C.char, out *C.ompd_addr_t) C.ompd_rc_t {
	a := lookup(ctx)
	if a == nil {
		return C.ompd_rc_t(StaleHandle)
	}
	sym := C.GoString(name)
	var addr uint64
	var err error
	if tctx != nil {
		// A thread context asks for the thread's instance of the
		// symbol; only thread-local variables have one, so a symbol
		// the target has no thread-local of is looked up globally.
		addr, err = a.t.LookupThreadLocal(uint64(tctx.lwp), sym)
		if errors.Is(err, target.ErrNotFound) {
			addr, err = a.t.LookupSymbol(sym)
		} else if errors.Is(err, target.ErrNoMemory) {
			// The thread has not allocated its thread-local storage
			// yet: it is not an OpenMP thread (yet).
			return C.ompd_rc_t(Unavailable)
		}
	} else {
		addr, err = a.t.LookupSymbol(sym)
	}
	if err != nil {
		return rcOf(err, true)
	}
	*out = C.ompd_addr_t(addr)
	return C.ompd_rc_t(OK)
}

//export ompdGoReadMemory
func ompdGoReadMemory(ctx *C.ompd_address_space_context_t, tctx *C.ompd_thread_context_t, addr C.uint64_t, n C.ompd_size_t, buf unsafe.Pointer) C.ompd_rc_t {
	a, rc := lookupFor(ctx, n)
	if rc != OK {
		return C.ompd_rc_t(rc)
	}
	b := unsafe.Slice((*byte)(buf), int(n))
	return rcOf(a.t.ReadMemory(b, uint64(addr)), true)
}

//export ompdGoWriteMemory
func ompdGoWriteMemory(ctx *C.ompd_address_space_context_t, tctx *C.ompd_thread_context_t, addr C.uint64_t, n C.ompd_size_t, buf unsafe.Pointer) C.ompd_rc_t {
	a, rc := lookupFor(ctx, n)
	if rc != OK {
		return C.ompd_rc_t(rc)
	}
	b := append([]byte(nil), unsafe.Slice((*byte)(buf), int(n))...)
	return rcOf(a.t.WriteMemory(uint64(addr), b), false)
}

// ompdGoReadString reads a NUL-terminated string of at most n bytes at
// addr into buf. As OMPD specifies, a string with no NUL in its first n
// bytes is returned unterminated (n bytes). Reads do not cross page
// boundaries, so a string near the end of a mapping is still found.
//
//export ompdGoReadString
func ompdGoReadString(ctx *C.ompd_address_space_context_t, tctx *C.ompd_thread_context_t, addr C.uint64_t, n C.ompd_size_t, buf unsafe.Pointer, got *C.ompd_size_t) C.ompd_rc_t {
	a, rc := lookupFor(ctx, n)
	if rc != OK {
		return C.ompd_rc_t(rc)
	}
	out := unsafe.Slice((*byte)(buf), int(n))
	const page = 4096
	done := 0
	for done < len(out) {
		at := uint64(addr) + uint64(done)
		chunk := min(len(out)-done, int(page-at%page))
		if err := a.t.ReadMemory(out[done:done+chunk], at); err != nil {
			*got = C.ompd_size_t(done)
			return rcOf(err, true)
		}
		for i := done; i < done+chunk; i++ {
			if out[i] == 0 {
				*got = C.ompd_size_t(i + 1)
				return C.ompd_rc_t(OK)
			}
		}
		done += chunk
	}
	*got = C.ompd_size_t(done)
	return C.ompd_rc_t(OK)
}

// Thread id kinds of OMPD (ompd_thread_id_t).
const (
	kindPthread = 0
	kindLWP     = 1
)

//export ompdGoThreadContext
func ompdGoThreadContext(ctx *C.ompd_address_space_context_t, kind C.ompd_thread_id_t, id C.uint64_t, out **C.ompd_thread_context_t) C.ompd_rc_t {
	a := lookup(ctx)
	if a == nil {
		return C.ompd_rc_t(StaleHandle)
	}
	ths, err := a.osThreads()
	if err != nil {
		return rcOf(err, true)
	}
	var lwp uint64
	found := false
	for _, th := range ths {
		switch kind {
		case kindPthread:
			found = th.Pthread != 0 && th.Pthread == uint64(id)
		case kindLWP:
			found = th.ID == uint64(id)
		default:
			return C.ompd_rc_t(Unsupported)
		}
		if found {
			lwp = th.ID
			break
		}
	}
	if !found {
		return C.ompd_rc_t(BadInput)
	}
	tc, ok := a.tctx[lwp]
	if !ok {
		tc = (*C.ompd_thread_context_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.ompd_thread_context_t{}))))
		if tc == nil {
			return C.ompd_rc_t(NoMem)
		}
		tc.aspace = ctx.id
		tc.lwp = C.uint64_t(lwp)
		a.tctx[lwp] = tc
	}
	*out = tc
	return C.ompd_rc_t(OK)
}
