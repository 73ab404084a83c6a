// Package objfile loads the ELF objects of a program (its executable and
// shared libraries) and answers what OMPD asks of them: symbol addresses
// (global and local, from .symtab and .dynsym), C type sizes and member
// offsets (from DWARF), and addresses of thread-local variables.
//
// It knows nothing of how the program's memory is reached: the thread-local
// lookup reads the dynamic linker's data through a [Memory], which a core
// file, a live process or a test can provide. target/core and target/delve
// both build on it.
//
// Everything here is safe for concurrent use, and malformed ELF or DWARF
// data gives errors, not panics.
package objfile

import (
	"bytes"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/ompd-go/ompd/target"
)

// Memory reads the memory of the program that objects are loaded in. It has
// the contract of target.Target.ReadMemory: it fills all of buf or returns
// an error.
type Memory interface {
	ReadMemory(buf []byte, addr uint64) error
}

// Symbol is a defined ELF symbol of an object.
type Symbol struct {
	Name string
	// Addr is the run-time address (st_value plus the object's load
	// bias; SHN_ABS symbols are not biased). For thread-local (STT_TLS)
	// symbols it is instead st_value, the offset of the variable in the
	// object's TLS block.
	Addr uint64
	Size uint64
	Type elf.SymType
	Bind elf.SymBind
	// Local is true for STB_LOCAL symbols.
	Local bool
}

// TLS reports whether the symbol is a thread-local variable.
func (s Symbol) TLS() bool { return s.Type == elf.STT_TLS }

// Object is one ELF file loaded at a load bias: the difference between its
// run-time addresses and the virtual addresses in the file (0 for non-PIE
// executables).
type Object struct {
	path string
	bias uint64
	f    *elf.File

	symOnce sync.Once
	syms    map[string]Symbol
	funcs   []Symbol // defined functions sorted by address (run-time)
	symErr  error

	noteOnce  sync.Once
	buildID   []byte
	debugLink string
	debugCRC  uint32

	dw dwarfState
}

// Open opens the ELF file at path as an object loaded at bias. The file
// stays open until Close; symbols and DWARF are read on first use.
func Open(path string, bias uint64) (*Object, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("objfile: %s: %w", path, err)
	}
	return NewObject(f, path, bias), nil
}

// NewObject wraps an already opened ELF file as an object loaded at bias.
// Close calls f.Close (which closes the underlying file only when f came
// from elf.Open).
func NewObject(f *elf.File, path string, bias uint64) *Object {
	return &Object{path: path, bias: bias, f: f}
}

// Path is the file the object was opened from.
func (o *Object) Path() string { return o.path }

// Bias is the object's load bias.
func (o *Object) Bias() uint64 { return o.bias }

// File is the underlying ELF file.
func (o *Object) File() *elf.File { return o.f }

// Close closes the ELF file.
func (o *Object) Close() error { return o.f.Close() }

// Range returns the run-time address range [start, end) covered by the
// object's PT_LOAD segments, or ok false if it has none.
func (o *Object) Range() (start, end uint64, ok bool) {
	for _, p := range o.f.Progs {
		if p.Type != elf.PT_LOAD || p.Memsz == 0 {
			continue
		}
		s, e := p.Vaddr+o.bias, p.Vaddr+p.Memsz+o.bias
		if e < s {
			continue
		}
		if !ok || s < start {
			start = s
		}
		if !ok || e > end {
			end = e
		}
		ok = true
	}
	return start, end, ok
}

// LowestLoad returns the p_vaddr of the object's lowest PT_LOAD segment and
// whether it has one. A shared object mapped with its file offset 0 at
// address A has load bias A - (LowestLoad rounded down to the page size).
func LowestLoad(f *elf.File) (uint64, bool) {
	var low uint64
	ok := false
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && (!ok || p.Vaddr < low) {
			low, ok = p.Vaddr, true
		}
	}
	return low, ok
}

// TLSSegment returns the object's PT_TLS program header, or nil.
func (o *Object) TLSSegment() *elf.ProgHeader {
	for _, p := range o.f.Progs {
		if p.Type == elf.PT_TLS {
			h := p.ProgHeader
			return &h
		}
	}
	return nil
}

// DynamicAddr returns the run-time address and size of the object's
// dynamic section (PT_DYNAMIC), or ok false.
func (o *Object) DynamicAddr() (addr, size uint64, ok bool) {
	for _, p := range o.f.Progs {
		if p.Type == elf.PT_DYNAMIC {
			return p.Vaddr + o.bias, p.Memsz, true
		}
	}
	return 0, 0, false
}

// ReadVirtual reads the object's file contents at the run-time address addr,
// as its PT_LOAD segments lay them out: file bytes up to p_filesz, zeros
// from there to p_memsz. It reads what the loader mapped, not what the
// program may have written since; callers use it for read-only data. A range
// not inside one segment is a *target.ReadError wrapping target.ErrNoMemory.
func (o *Object) ReadVirtual(buf []byte, addr uint64) error {
	n := uint64(len(buf))
	for _, p := range o.f.Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		start := p.Vaddr + o.bias
		if addr < start || addr-start > p.Memsz || n > p.Memsz-(addr-start) {
			continue
		}
		off := addr - start
		clear(buf)
		if off < p.Filesz {
			m := min(n, p.Filesz-off)
			if _, err := p.ReadAt(buf[:m], int64(off)); err != nil {
				return &target.ReadError{Addr: addr, Size: len(buf), Err: fmt.Errorf("%s: %v: %w", o.path, err, target.ErrNoMemory)}
			}
		}
		return nil
	}
	return &target.ReadError{Addr: addr, Size: len(buf), Err: fmt.Errorf("%s: not inside a PT_LOAD segment: %w", o.path, target.ErrNoMemory)}
}

// BuildID returns the object's GNU build-id (the NT_GNU_BUILD_ID note), or
// nil.
func (o *Object) BuildID() []byte {
	o.readNotes()
	return o.buildID
}

// DebugLink returns the file name and CRC-32 of the object's
// .gnu_debuglink section, or ok false if it has none.
func (o *Object) DebugLink() (name string, crc uint32, ok bool) {
	o.readNotes()
	return o.debugLink, o.debugCRC, o.debugLink != ""
}

const maxNoteSize = 1 << 20

func (o *Object) readNotes() {
	o.noteOnce.Do(func() {
		for _, s := range o.f.Sections {
			if s.Type == elf.SHT_NOTE && s.Size <= maxNoteSize {
				if data, err := s.Data(); err == nil {
					if id := ParseBuildID(data, o.f.ByteOrder); id != nil {
						o.buildID = id
						break
					}
				}
			}
		}
		if o.buildID == nil {
			// Stripped section headers: look in PT_NOTE segments.
			for _, p := range o.f.Progs {
				if p.Type != elf.PT_NOTE || p.Filesz > maxNoteSize {
					continue
				}
				data := make([]byte, p.Filesz)
				if _, err := p.ReadAt(data, 0); err != nil {
					continue
				}
				if id := ParseBuildID(data, o.f.ByteOrder); id != nil {
					o.buildID = id
					break
				}
			}
		}
		if s := o.f.Section(".gnu_debuglink"); s != nil && s.Type != elf.SHT_NOBITS && s.Size <= 4096 {
			if data, err := s.Data(); err == nil {
				if i := bytes.IndexByte(data, 0); i > 0 {
					crcOff := (i + 4) &^ 3
					if crcOff+4 <= len(data) {
						o.debugLink = string(data[:i])
						o.debugCRC = o.f.ByteOrder.Uint32(data[crcOff:])
					}
				}
			}
		}
	})
}

// ParseBuildID returns the descriptor of the first NT_GNU_BUILD_ID note
// (owner "GNU") in data, a sequence of ELF notes, or nil.
func ParseBuildID(data []byte, order binary.ByteOrder) []byte {
	for len(data) >= 12 {
		namesz := uint64(order.Uint32(data[0:4]))
		descsz := uint64(order.Uint32(data[4:8]))
		typ := order.Uint32(data[8:12])
		data = data[12:]
		nameEnd := (namesz + 3) &^ 3
		if nameEnd > uint64(len(data)) {
			return nil
		}
		name := data[:namesz]
		data = data[nameEnd:]
		descEnd := (descsz + 3) &^ 3
		if descsz > uint64(len(data)) {
			return nil
		}
		desc := data[:descsz]
		if descEnd > uint64(len(data)) {
			descEnd = uint64(len(data))
		}
		data = data[descEnd:]
		if typ == ntGNUBuildID && string(bytes.TrimRight(name, "\x00")) == "GNU" && descsz > 0 {
			return append([]byte(nil), desc...)
		}
	}
	return nil
}

// DebugLinkCRC computes the CRC-32 that .gnu_debuglink records for the
// contents of r.
func DebugLinkCRC(r io.Reader) (uint32, error) {
	h := crc32.NewIEEE()
	if _, err := io.Copy(h, r); err != nil {
		return 0, err
	}
	return h.Sum32(), nil
}

// symRank orders competing definitions of one name within an object: a
// global, weak or unique definition beats a local one.
func symRank(s Symbol) int {
	if s.Local {
		return 1
	}
	return 2
}

func (o *Object) indexSymbols() {
	o.symOnce.Do(func() {
		o.syms = make(map[string]Symbol)
		var errs []error
		add := func(list []elf.Symbol, err error, which string) {
			if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
				errs = append(errs, fmt.Errorf("%s: %w", which, err))
			}
			for _, es := range list {
				if es.Name == "" || es.Section == elf.SHN_UNDEF {
					continue
				}
				typ := elf.ST_TYPE(es.Info)
				if typ == elf.STT_SECTION || typ == elf.STT_FILE {
					continue
				}
				bind := elf.ST_BIND(es.Info)
				s := Symbol{Name: es.Name, Size: es.Size, Type: typ, Bind: bind, Local: bind == elf.STB_LOCAL}
				switch {
				case typ == elf.STT_TLS:
					s.Addr = es.Value
				case es.Section == elf.SHN_ABS:
					s.Addr = es.Value
				default:
					s.Addr = es.Value + o.bias
				}
				if old, ok := o.syms[s.Name]; !ok || symRank(s) > symRank(old) {
					o.syms[s.Name] = s
				}
				if (typ == elf.STT_FUNC || typ == elf.STT_GNU_IFUNC) && es.Section != elf.SHN_ABS {
					o.funcs = append(o.funcs, s)
				}
			}
		}
		syms, err := o.f.Symbols()
		add(syms, err, ".symtab")
		dyn, err := o.f.DynamicSymbols()
		add(dyn, err, ".dynsym")
		sort.SliceStable(o.funcs, func(i, j int) bool {
			if o.funcs[i].Addr != o.funcs[j].Addr {
				return o.funcs[i].Addr < o.funcs[j].Addr
			}
			return symRank(o.funcs[i]) > symRank(o.funcs[j])
		})
		if len(errs) > 0 {
			o.symErr = fmt.Errorf("objfile: %s: %w", o.path, errors.Join(errs...))
		}
	})
}

// Lookup returns the object's definition of the symbol called name. When
// both a global (or weak) and a local definition exist the global one wins;
// among locals of the same name the first in .symtab wins. Undefined
// symbols are ignored. A missing symbol is a *target.LookupError wrapping
// target.ErrNotFound (and mentioning a symbol table that could not be read,
// if any).
func (o *Object) Lookup(name string) (Symbol, error) {
	o.indexSymbols()
	if s, ok := o.syms[name]; ok {
		return s, nil
	}
	err := target.ErrNotFound
	if o.symErr != nil {
		err = fmt.Errorf("%w (%v)", target.ErrNotFound, o.symErr)
	}
	return Symbol{}, &target.LookupError{Kind: "symbol", Name: name, Err: err}
}

// SymbolErr reports a symbol table of the object that could not be read,
// or nil.
func (o *Object) SymbolErr() error {
	o.indexSymbols()
	return o.symErr
}

// SymbolAt returns the function symbol whose [Addr, Addr+Size) contains
// the run-time address addr (a zero-sized symbol matches only its own
// address).
func (o *Object) SymbolAt(addr uint64) (Symbol, bool) {
	o.indexSymbols()
	i := sort.Search(len(o.funcs), func(i int) bool { return o.funcs[i].Addr > addr })
	// Look back over a few candidates: functions sharing a start address
	// (aliases) or a zero-sized symbol just before a sized one.
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		s := o.funcs[j]
		if addr == s.Addr || addr-s.Addr < s.Size {
			return s, true
		}
	}
	return Symbol{}, false
}

// String describes the object for error messages.
func (o *Object) String() string {
	return fmt.Sprintf("%s@%#x", o.path, o.bias)
}

// baseName is the last element of a slash-separated path.
func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// dwarfState is an object's lazily loaded DWARF and its type index.
type dwarfState struct {
	once  sync.Once
	mu    sync.Mutex // guards data.Type, whose cache is not concurrency-safe
	data  *dwarf.Data
	index map[string]typeEntry
	err   error
}

// ntGNUBuildID is the type of the GNU build-id note.
const ntGNUBuildID = 3
