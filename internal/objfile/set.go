package objfile

import (
	"fmt"
	"sync"

	"github.com/ompd-go/ompd/internal/errjoin"
	"github.com/ompd-go/ompd/target"
)

// Set is the ordered list of a program's loaded objects: the executable
// first, then the shared libraries in load order. It is immutable and safe
// for concurrent use.
type Set struct {
	objs []*Object

	// Addresses Lookup found: a runtime decoder opened again over the
	// same target looks up its hundred-odd symbols again, each missing
	// from the objects before the runtime's.
	mu    sync.RWMutex
	found map[string]uint64
	// Answers of TypeSize, FieldOffset and BitField, errors included:
	// the objects' DWARF does not change, and a runtime decoder opened
	// again over the same target asks the same questions again (LLVM's
	// display variables some twenty at every snapshot), each a walk of
	// debug/dwarf's types that allocates.
	types map[typeQuery]typeAnswer
	// selfBias is ThreadSelf's distance from the thread pointer to
	// glibc's struct pthread, once read (selfBiasOK).
	selfBias   int64
	selfBiasOK bool
}

// typeQuery is one question to the objects' DWARF: the size of a type,
// or the byte offset or bit position of a member.
type typeQuery struct {
	kind        typeQueryKind
	typ, member string
}

type typeQueryKind uint8

const (
	querySize typeQueryKind = iota
	queryOffset
	queryBits
)

// typeAnswer is what a typeQuery returned: a size or offset in a, a bit
// offset and width in a and b.
type typeAnswer struct {
	a, b uint64
	err  error
}

// answer returns the cached answer to q, or asks ask and caches what it
// returns.
func (s *Set) answer(q typeQuery, ask func() typeAnswer) typeAnswer {
	s.mu.RLock()
	a, ok := s.types[q]
	s.mu.RUnlock()
	if ok {
		return a
	}
	a = ask()
	s.mu.Lock()
	if s.types == nil {
		s.types = make(map[typeQuery]typeAnswer)
	}
	s.types[q] = a
	s.mu.Unlock()
	return a
}

// NewSet returns a set of the given objects, in that order. Nil objects
// are dropped.
func NewSet(objs ...*Object) *Set {
	s := &Set{}
	for _, o := range objs {
		if o != nil {
			s.objs = append(s.objs, o)
		}
	}
	return s
}

// Objects returns the objects in order. The slice is a copy.
func (s *Set) Objects() []*Object {
	return append([]*Object(nil), s.objs...)
}

// Close closes every object.
func (s *Set) Close() error {
	var errs []error
	for _, o := range s.objs {
		if err := o.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errjoin.Join(errs...)
}

// LookupSymbol returns the first object that defines name (the executable
// first, then libraries in order; within an object, global beats local) and
// its definition. Thread-local symbols are returned too; see Symbol.TLS.
func (s *Set) LookupSymbol(name string) (*Object, Symbol, error) {
	var errs []error
	for _, o := range s.objs {
		sym, err := o.Lookup(name)
		if err == nil {
			return o, sym, nil
		}
		if se := o.SymbolErr(); se != nil {
			errs = append(errs, se)
		}
	}
	err := target.ErrNotFound
	if len(errs) > 0 {
		err = fmt.Errorf("%w (%v)", target.ErrNotFound, errjoin.Join(errs...))
	}
	return nil, Symbol{}, &target.LookupError{Kind: "symbol", Name: name, Err: err}
}

// Lookup returns the run-time address of the symbol called name, from the
// first object that defines it. A thread-local symbol has no single address:
// it is reported as not found (use LookupThreadLocal). A missing symbol is
// a *target.LookupError wrapping target.ErrNotFound.
func (s *Set) Lookup(name string) (uint64, error) {
	s.mu.RLock()
	a, ok := s.found[name]
	s.mu.RUnlock()
	if ok {
		return a, nil
	}
	a, err := s.lookup(name)
	if err == nil {
		s.mu.Lock()
		if s.found == nil {
			s.found = make(map[string]uint64)
		}
		s.found[name] = a
		s.mu.Unlock()
	}
	return a, err
}

func (s *Set) lookup(name string) (uint64, error) {
	for _, o := range s.objs {
		sym, ok := o.find(name)
		if !ok {
			continue
		}
		if sym.TLS() {
			return 0, &target.LookupError{Kind: "symbol", Name: name,
				Err: fmt.Errorf("%w: %s defines it as thread-local", target.ErrNotFound, o.path)}
		}
		return sym.Addr, nil
	}
	_, _, err := s.LookupSymbol(name)
	return 0, err
}

// SymbolAt returns the name of the function symbol containing the run-time
// address addr, in the object whose segments cover addr.
func (s *Set) SymbolAt(addr uint64) (string, bool) {
	for _, o := range s.objs {
		start, end, ok := o.Range()
		if !ok || addr < start || addr >= end {
			continue
		}
		if sym, ok := o.SymbolAt(addr); ok {
			return sym.Name, true
		}
	}
	return "", false
}

// TypeSize returns the size of the named type (see Object.TypeSize) from
// the first object whose DWARF defines it completely. An object without
// DWARF of its own takes it from its separate debug file; the error for a
// type found nowhere names the objects that have no DWARF and why.
func (s *Set) TypeSize(typeName string) (uint64, error) {
	a := s.answer(typeQuery{querySize, typeName, ""}, func() typeAnswer {
		n, err := s.typeSize(typeName)
		return typeAnswer{a: n, err: err}
	})
	return a.a, a.err
}

func (s *Set) typeSize(typeName string) (uint64, error) {
	var errs []error
	for _, o := range s.objs {
		n, ok, err := o.typeSize(typeName)
		if ok {
			return n, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return 0, notFound("type", typeName, errjoin.Join(errs...))
}

// FieldOffset returns the offset of the named member (see
// Object.FieldOffset) in the named type, from the first object whose DWARF
// has the type with that member.
func (s *Set) FieldOffset(typeName, field string) (uint64, error) {
	a := s.answer(typeQuery{queryOffset, typeName, field}, func() typeAnswer {
		off, err := s.fieldOffset(typeName, field)
		return typeAnswer{a: off, err: err}
	})
	return a.a, a.err
}

func (s *Set) fieldOffset(typeName, field string) (uint64, error) {
	var fieldErr error
	var errs []error
	for _, o := range s.objs {
		off, ok, err := o.fieldOffset(typeName, field)
		if ok && err == nil {
			return off, nil
		}
		if ok && fieldErr == nil {
			fieldErr = err
		}
		if !ok && err != nil {
			errs = append(errs, err)
		}
	}
	if fieldErr != nil {
		return 0, &target.LookupError{Kind: "field", Name: typeName + "." + field, Err: fieldErr}
	}
	return 0, notFound("type", typeName, errjoin.Join(errs...))
}

// BitField returns the bit position and width of the named member (see
// Object.BitField), from the first object whose DWARF has the type with
// that member.
func (s *Set) BitField(typeName, field string) (bitOffset, bitSize uint64, err error) {
	a := s.answer(typeQuery{queryBits, typeName, field}, func() typeAnswer {
		bo, bs, err := s.bitField(typeName, field)
		return typeAnswer{a: bo, b: bs, err: err}
	})
	return a.a, a.b, a.err
}

func (s *Set) bitField(typeName, field string) (bitOffset, bitSize uint64, err error) {
	var fieldErr error
	var errs []error
	for _, o := range s.objs {
		bo, bs, ok, err := o.bitField(typeName, field)
		if ok && err == nil {
			return bo, bs, nil
		}
		if ok && fieldErr == nil {
			fieldErr = err
		}
		if !ok && err != nil {
			errs = append(errs, err)
		}
	}
	if fieldErr != nil {
		return 0, 0, &target.LookupError{Kind: "field", Name: typeName + "." + field, Err: fieldErr}
	}
	return 0, 0, notFound("type", typeName, errjoin.Join(errs...))
}
