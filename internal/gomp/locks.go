package gomp

import (
	"debug/elf"
	"errors"
	"strings"

	"github.com/ompd-go/ompd/internal/stackstate"
	"github.com/ompd-go/ompd/target"
)

// criticalPrefix starts the name of the lock gcc emits for a named
// critical section ("#pragma omp critical (NAME)"): a common symbol of 8
// bytes in the object that holds the section, whose address
// GOMP_critical_name_start locks (libgomp uses the pointer's own space
// as the mutex).
const criticalPrefix = ".gomp_critical_user_"

// mutexState tells what a thread waiting on the gomp_mutex_t at addr,
// entered from user code, waits for: the unnamed critical section
// (libgomp's default_lock), an atomic region (atomic_lock), a named
// critical section (a .gomp_critical_user_NAME symbol of the program), or
// else a lock of the user's (omp_set_lock). stackstate.Mutex when it cannot be
// told: a libgomp internal lock without libgomp's debug information.
func (r *Runtime) mutexState(addr uint64) int64 {
	if addr == 0 {
		return stackstate.Mutex
	}
	if a, err := r.global("default_lock"); err == nil && a == addr {
		return stackstate.Critical
	}
	if a, err := r.global("atomic_lock"); err == nil && a == addr {
		return stackstate.Atomic
	}
	obj, ok, err := r.objectAt(addr)
	switch {
	case err != nil:
		return stackstate.Mutex
	case !ok:
		// On the heap or a stack: no critical section's lock (those
		// are static), so the user's lock.
		return stackstate.Lock
	case isLibgomp(obj):
		// One of libgomp's own locks, which needs its symbols.
		return stackstate.Mutex
	}
	switch critical, ok := r.namedCritical(obj, addr); {
	case !ok:
		// The object's symbol table cannot be read (a stripped
		// program, a file not on this machine): it cannot tell a
		// named critical section from a lock.
		return stackstate.Mutex
	case critical:
		return stackstate.Critical
	}
	return stackstate.Lock
}

// objectAt is the path of the loaded object whose segments hold addr; ok
// is false for an address in no loaded object, and err says the target
// cannot tell.
func (r *Runtime) objectAt(addr uint64) (obj string, ok bool, err error) {
	loc, isLoc := r.t.(target.CodeLocator)
	if !isLoc {
		return "", false, target.ErrUnsupported
	}
	cl, err := loc.LocateCode(addr)
	switch {
	case errors.Is(err, target.ErrNotFound):
		return "", false, nil
	case err != nil:
		return "", false, err
	case cl.Object == "":
		return "", false, target.ErrNotFound
	}
	return cl.Object, true, nil
}

// namedCritical reports whether addr is the lock of a named critical
// section of object obj: the run-time address of one of its
// .gomp_critical_user_ symbols. The names come from the object's file
// (its .symtab and .dynsym), the addresses from the target. ok is false
// when the file has no symbol table to tell (stripped, or not readable
// here).
func (r *Runtime) namedCritical(obj string, addr uint64) (critical, ok bool) {
	names, ok := r.criticalNames(obj)
	if !ok {
		return false, false
	}
	for _, name := range names {
		if a, err := r.t.LookupSymbol(name); err == nil && a == addr {
			return true, true
		}
	}
	return false, true
}

// critNames are the .gomp_critical_user_ symbols of one object file; ok
// tells that the file has a full symbol table (.symtab), which lists them
// all.
type critNames struct {
	names []string
	ok    bool
}

// criticalNames lists the .gomp_critical_user_ symbols of the object file
// at p, read once per object; ok is false when the file cannot be read or
// has no .symtab.
func (r *Runtime) criticalNames(p string) ([]string, bool) {
	r.critMu.Lock()
	defer r.critMu.Unlock()
	if c, ok := r.crit[p]; ok {
		return c.names, c.ok
	}
	if r.crit == nil {
		r.crit = map[string]critNames{}
	}
	var c critNames
	if f, err := elf.Open(p); err == nil {
		seen := map[string]bool{}
		for i, read := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
			syms, err := read()
			if i == 0 {
				c.ok = err == nil
			}
			for _, s := range syms {
				if strings.HasPrefix(s.Name, criticalPrefix) && !seen[s.Name] {
					seen[s.Name] = true
					c.names = append(c.names, s.Name)
				}
			}
		}
		f.Close()
	}
	r.crit[p] = c
	return c.names, c.ok
}
