// Package liveobj answers the lookups of a live target (target/delve,
// target/delverpc) from the object files loaded at its current stop:
// symbols, C types, thread-local storage, call-frame unwinding and source
// lines. Both targets hold their lock for a lookup and wrap a failure to
// list the objects the same way; this package is that one place.
package liveobj

import (
	"encoding/binary"
	"sync"

	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/internal/unwind"
	"github.com/ompd-go/ompd/target"
)

// Lookups answers lookups for one target. Its functions run with Mu held.
type Lookups struct {
	// Mu guards the target.
	Mu sync.Locker
	// Objects returns the objects loaded at this stop.
	Objects func() (*objfile.Set, error)
	// Memory reads the target's memory (through the stop's page cache).
	Memory objfile.Memory
	// ThreadPointer returns the thread pointer (fs_base) of thread tid.
	ThreadPointer func(tid uint64) (uint64, error)
}

// LookupSymbol is target.Target's LookupSymbol.
func (l *Lookups) LookupSymbol(name string) (uint64, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	return l.LookupSymbolLocked(name)
}

// LookupSymbolLocked is LookupSymbol with Mu already held.
func (l *Lookups) LookupSymbolLocked(name string) (uint64, error) {
	s, err := l.Objects()
	if err != nil {
		return 0, &target.LookupError{Kind: "symbol", Name: name, Err: err}
	}
	return s.Lookup(name)
}

// LookupThreadLocal is target.Target's LookupThreadLocal (see
// objfile.Set.LookupThreadLocal).
func (l *Lookups) LookupThreadLocal(tid uint64, name string) (uint64, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	tp, err := l.ThreadPointer(tid)
	if err != nil {
		return 0, &target.LookupError{Kind: "thread-local symbol", Name: name, Err: err}
	}
	s, err := l.Objects()
	if err != nil {
		return 0, &target.LookupError{Kind: "thread-local symbol", Name: name, Err: err}
	}
	return s.LookupThreadLocal(l.Memory, tp, name)
}

// TypeSize is target.Target's TypeSize.
func (l *Lookups) TypeSize(typeName string) (uint64, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	s, err := l.Objects()
	if err != nil {
		return 0, &target.LookupError{Kind: "type", Name: typeName, Err: err}
	}
	return s.TypeSize(typeName)
}

// FieldOffset is target.Target's FieldOffset.
func (l *Lookups) FieldOffset(typeName, field string) (uint64, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	s, err := l.Objects()
	if err != nil {
		return 0, &target.LookupError{Kind: "field", Name: typeName + "." + field, Err: err}
	}
	return s.FieldOffset(typeName, field)
}

// BitField is target.BitFieldLocator's BitField.
func (l *Lookups) BitField(typeName, field string) (bitOffset, bitSize uint64, err error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	s, err := l.Objects()
	if err != nil {
		return 0, 0, &target.LookupError{Kind: "field", Name: typeName + "." + field, Err: err}
	}
	return s.BitField(typeName, field)
}

// SymbolAt is target.Symbolizer's SymbolAt.
func (l *Lookups) SymbolAt(addr uint64) (string, bool) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	s, err := l.Objects()
	if err != nil {
		return "", false
	}
	return s.SymbolAt(addr)
}

// UnwindFrame is target.FrameUnwinder's UnwindFrame, for a little-endian
// target.
func (l *Lookups) UnwindFrame(regs target.Registers, caller bool) (target.Registers, uint64, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	s, err := l.Objects()
	if err != nil {
		return target.Registers{}, 0, err
	}
	return unwind.Step(s, l.Memory, binary.LittleEndian, regs, caller)
}

// LocateCode is target.CodeLocator's LocateCode.
func (l *Lookups) LocateCode(pc uint64) (target.CodeLocation, error) {
	l.Mu.Lock()
	defer l.Mu.Unlock()
	s, err := l.Objects()
	if err != nil {
		return target.CodeLocation{}, err
	}
	return s.LocateCode(pc)
}
