package objfile

import (
	"debug/elf"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ompd-go/ompd/internal/cfi"
	"github.com/ompd-go/ompd/target"
)

// maxCFISection bounds the size of a .eh_frame or .debug_frame section
// that is parsed (libc's .eh_frame is about 100 KiB).
const maxCFISection = 64 << 20

// cfiState is an object's call-frame information, parsed on first use:
// .eh_frame from the object itself, .debug_frame (from the object or its
// separate debug file) only for a PC that .eh_frame does not cover.
type cfiState struct {
	ehOnce sync.Once
	eh     cfi.Table
	ehErr  error

	dbgOnce sync.Once
	dbg     cfi.Table
	dbgErr  error

	rows  sync.Map     // pc -> *cfi.Row: rows already computed
	nrows atomic.Int64 // entries in rows
}

// maxCFIRows bounds the rows an object keeps computed.
const maxCFIRows = 1 << 16

// parseCFI parses one CFI section of f (ehFrame: in .eh_frame format, at
// the section's address) with the object's bias. The entries are sorted
// by address.
func (o *Object) parseCFI(f *elf.File, name string, ehFrame bool) (cfi.Table, error) {
	s := f.Section(name)
	if s == nil || s.Type == elf.SHT_NOBITS || s.Size == 0 {
		return nil, nil
	}
	if s.Size > maxCFISection {
		return nil, fmt.Errorf("%s: %s of %d bytes is larger than the %d supported", o.path, name, s.Size, maxCFISection)
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", o.path, name, err)
	}
	ptr := 8
	if f.Class == elf.ELFCLASS32 {
		ptr = 4
	}
	sec := cfi.Section{Order: f.ByteOrder, PtrSize: ptr, EH: ehFrame, Bias: o.bias}
	if ehFrame {
		sec.Addr = s.Addr
	}
	fdes, err := cfi.Parse(data, sec)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", o.path, name, err)
	}
	return fdes, nil
}

// FDE returns the frame description entry covering the run-time address
// pc, from the object's .eh_frame, or else from its .debug_frame (its own or
// its separate debug file's). No entry is an error wrapping
// target.ErrNotFound, with the reason any section could not be read.
func (o *Object) FDE(pc uint64) (*cfi.FDE, error) {
	o.cfi.ehOnce.Do(func() { o.cfi.eh, o.cfi.ehErr = o.parseCFI(o.f, ".eh_frame", true) })
	if fde := o.cfi.eh.Lookup(pc); fde != nil {
		return fde, nil
	}
	o.cfi.dbgOnce.Do(func() {
		f := o.f
		if !hasSection(f, ".debug_frame") {
			df, err := o.separate()
			if err != nil || !hasSection(df, ".debug_frame") {
				return
			}
			f = df
		}
		o.cfi.dbg, o.cfi.dbgErr = o.parseCFI(f, ".debug_frame", false)
	})
	if fde := o.cfi.dbg.Lookup(pc); fde != nil {
		return fde, nil
	}
	err := fmt.Errorf("%s: no call-frame information for %#x: %w", o.path, pc, target.ErrNotFound)
	if o.cfi.ehErr != nil || o.cfi.dbgErr != nil {
		err = fmt.Errorf("%w (%v)", err, joinErrs(o.cfi.ehErr, o.cfi.dbgErr))
	}
	return nil, err
}

func joinErrs(errs ...error) error {
	var out error
	for _, e := range errs {
		if e == nil {
			continue
		}
		if out == nil {
			out = e
		} else {
			out = fmt.Errorf("%v; %v", out, e)
		}
	}
	return out
}

// Row returns the row of the call-frame table at pc (the CFA and register
// rules there), computing it on first use and keeping it: threads stopped
// at the same places share their rows. The returned row must not be
// modified. Malformed call-frame instructions give an error.
func (o *Object) Row(pc uint64) (*cfi.Row, error) {
	if v, ok := o.cfi.rows.Load(pc); ok {
		return v.(*cfi.Row), nil
	}
	fde, err := o.FDE(pc)
	if err != nil {
		return nil, err
	}
	row, err := fde.Row(pc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", o.path, err)
	}
	if o.cfi.nrows.Load() < maxCFIRows {
		if _, loaded := o.cfi.rows.LoadOrStore(pc, row); !loaded {
			o.cfi.nrows.Add(1)
		}
	}
	return row, nil
}

// Row returns the call-frame row at pc in the object holding pc (see
// Object.Row).
func (s *Set) Row(pc uint64) (*cfi.Row, error) {
	o := s.ObjectAt(pc)
	if o == nil {
		return nil, fmt.Errorf("%#x is in no loaded object: %w", pc, target.ErrNotFound)
	}
	return o.Row(pc)
}

// ObjectAt returns the object whose PT_LOAD segments cover the run-time
// address addr, or nil.
func (s *Set) ObjectAt(addr uint64) *Object {
	for _, o := range s.objs {
		start, end, ok := o.Range()
		if ok && addr >= start && addr < end {
			return o
		}
	}
	return nil
}

// FDE returns the frame description entry covering pc in the object that
// holds pc (see Object.FDE). An address in no object wraps
// target.ErrNotFound.
func (s *Set) FDE(pc uint64) (*cfi.FDE, error) {
	o := s.ObjectAt(pc)
	if o == nil {
		return nil, fmt.Errorf("%#x is in no loaded object: %w", pc, target.ErrNotFound)
	}
	return o.FDE(pc)
}
