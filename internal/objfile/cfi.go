package objfile

import (
	"debug/elf"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/go-delve/delve/pkg/dwarf/frame"

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
	eh     frame.FrameDescriptionEntries
	ehErr  error

	dbgOnce sync.Once
	dbg     frame.FrameDescriptionEntries
	dbgErr  error

	rows  sync.Map     // pc -> *frame.FrameContext: rows already computed
	nrows atomic.Int64 // entries in rows
}

// maxCFIRows bounds the rows an object keeps computed.
const maxCFIRows = 1 << 16

// parseCFI parses one CFI section of f (ehFrame: in .eh_frame format, at
// the section's address) with the object's bias, recovering from a panic
// of the parser on malformed data. The entries are sorted by address.
func (o *Object) parseCFI(f *elf.File, name string, ehFrame bool) (fdes frame.FrameDescriptionEntries, err error) {
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
	addr := uint64(0)
	if ehFrame {
		addr = s.Addr
		if addr == 0 {
			// Delve's parser tells the formats apart by a non-zero
			// address; an .eh_frame at 0 only occurs in relocatable
			// files, which are never loaded.
			return nil, fmt.Errorf("%s: %s at address 0", o.path, name)
		}
	}
	defer func() {
		if r := recover(); r != nil {
			fdes, err = nil, fmt.Errorf("%s: malformed %s: %v", o.path, name, r)
		}
	}()
	fdes, err = frame.Parse(data, f.ByteOrder, o.bias, ptr, addr)
	if err != nil {
		return nil, fmt.Errorf("%s: %s: %w", o.path, name, err)
	}
	sort.SliceStable(fdes, func(i, j int) bool { return fdes[i].Begin() < fdes[j].Begin() })
	return fdes, nil
}

// FDE returns the frame description entry covering the run-time address
// pc, from the object's .eh_frame, or else from its .debug_frame (its own or
// its separate debug file's). No entry is an error wrapping
// target.ErrNotFound, with the reason any section could not be read.
func (o *Object) FDE(pc uint64) (*frame.FrameDescriptionEntry, error) {
	o.cfi.ehOnce.Do(func() { o.cfi.eh, o.cfi.ehErr = o.parseCFI(o.f, ".eh_frame", true) })
	if fde, err := o.cfi.eh.FDEForPC(pc); err == nil {
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
	if fde, err := o.cfi.dbg.FDEForPC(pc); err == nil {
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
// at the same places share their rows. The returned context must not be
// modified. Malformed call-frame instructions give an error, not a panic.
func (o *Object) Row(pc uint64) (*frame.FrameContext, error) {
	if v, ok := o.cfi.rows.Load(pc); ok {
		return v.(*frame.FrameContext), nil
	}
	fde, err := o.FDE(pc)
	if err != nil {
		return nil, err
	}
	fc, err := Establish(fde, pc)
	if err != nil {
		return nil, err
	}
	if o.cfi.nrows.Load() < maxCFIRows {
		if _, loaded := o.cfi.rows.LoadOrStore(pc, fc); !loaded {
			o.cfi.nrows.Add(1)
		}
	}
	return fc, nil
}

// Establish runs the entry's CFA program up to pc, turning a panic of
// Delve's interpreter on malformed instructions into an error: the row of
// the call-frame table at pc, as Row gives it without the cache.
func Establish(fde *frame.FrameDescriptionEntry, pc uint64) (fc *frame.FrameContext, err error) {
	defer func() {
		if r := recover(); r != nil {
			fc, err = nil, fmt.Errorf("malformed call-frame instructions for %#x: %v", pc, r)
		}
	}()
	fc, err = fde.EstablishFrame(pc)
	if err != nil {
		return nil, fmt.Errorf("call-frame instructions for %#x: %w", pc, err)
	}
	return fc, nil
}

// Row returns the call-frame row at pc in the object holding pc (see
// Object.Row).
func (s *Set) Row(pc uint64) (*frame.FrameContext, error) {
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
func (s *Set) FDE(pc uint64) (*frame.FrameDescriptionEntry, error) {
	o := s.ObjectAt(pc)
	if o == nil {
		return nil, fmt.Errorf("%#x is in no loaded object: %w", pc, target.ErrNotFound)
	}
	return o.FDE(pc)
}
