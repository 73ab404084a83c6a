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
// # Separate debug information
//
// Distributions ship shared libraries stripped, with their symbol tables and
// DWARF in separate debug files (a -dbg or -dbgsym package under
// /usr/lib/debug, or a debuginfod server). An object without a .symtab of
// its own, or without DWARF, finds its separate debug file with
// [debuginfo.Find] the first time it needs it, and takes from it the
// symbols (at the object's load bias) and DWARF it lacks. Where it looks is
// set by [WithDebugInfo]; without that option it searches
// debuginfo.DefaultDebugDirs and the object's .gnu_debuglink next to it,
// and asks no server. A debug file whose build-id differs from the
// object's is refused, never used: lookups then fail, and the reason is in
// their error (see [Object.DebugFile]). The dynamic symbols the object
// itself has are always used; symbols it has itself are looked up first,
// so a lookup they answer never searches.
//
// Everything here is safe for concurrent use, and malformed ELF or DWARF
// data gives errors, not panics.
package objfile

import (
	"bytes"
	"cmp"
	"context"
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ompd-go/ompd/internal/debuginfo"
	"github.com/ompd-go/ompd/internal/errjoin"
	"github.com/ompd-go/ompd/internal/regfile"
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
	opts options

	symOnce sync.Once
	syms    map[string]Symbol
	funcs   []Symbol // defined functions in table order (see sortedFuncs)
	symErr  error

	// The separate debug file, found on first need (see separate).
	dbgOnce sync.Once
	dbgFile *elf.File
	dbgFd   *os.File // the file under dbgFile
	dbgPath string
	dbgErr  error

	// The symbols of the object and of its separate debug file together,
	// for an object without a .symtab of its own (see indexFull).
	fullOnce  sync.Once
	fullDone  atomic.Bool // fullSyms is ready
	fullSyms  map[string]Symbol
	fullFuncs []Symbol
	// The separate debug file's .symtab, read (not indexed) on first
	// need; scans counts the lookups that scanned it (see scanDebug).
	dbgTabOnce sync.Once
	dbgTab     *rawSymtab
	dbgTabErr  error
	scans      atomic.Int32

	// fullFuncs sorted by address, on the first SymbolAt.
	sortOnce sync.Once
	sorted   []Symbol

	noteOnce  sync.Once
	buildID   []byte
	debugLink string
	debugCRC  uint32

	dw dwarfState

	cfi    cfiState    // call-frame information, see cfi.go
	lines  lineState   // DWARF line tables, see lines.go
	inline inlineCache // inline frames by address, see inline.go
}

// Option configures Open and NewObject.
type Option func(*options)

type options struct {
	debug  debuginfo.Options
	ctx    context.Context
	closer io.Closer
}

// WithDebugInfo sets where an object without its own symbol table or DWARF
// looks for its separate debug file (see debuginfo.Find): opts.DebugDirs
// are the global debug directories (nil means debuginfo.DefaultDebugDirs,
// an empty non-nil slice none), and opts.Fetcher the debuginfod client
// asked when the local search fails (nil means no server is asked). The
// object's .gnu_debuglink is always followed next to the object and in its
// .debug directory. Without this option an object searches as
// WithDebugInfo(debuginfo.Options{}) does.
func WithDebugInfo(opts debuginfo.Options) Option {
	return func(o *options) { o.debug = opts }
}

// WithContext sets the context that bounds the search for separate debug
// files (a debuginfod download in particular), for the object's whole life.
// Without it the search runs under context.Background, bounded only by the
// debuginfod client's timeout.
func WithContext(ctx context.Context) Option {
	return func(o *options) { o.ctx = ctx }
}

// WithCloser makes the object's Close close c too: the file under an
// *elf.File made with elf.NewFile (such as regfile.OpenELF's), which the
// *elf.File's own Close leaves open.
func WithCloser(c io.Closer) Option {
	return func(o *options) { o.closer = c }
}

// Open opens the ELF file at path as an object loaded at bias. Only a
// regular file is opened (see package regfile). The file
// stays open until Close; symbols and DWARF are read on first use, and a
// separate debug file is looked for (as the options say) when the object
// lacks its own symbol table or DWARF.
func Open(path string, bias uint64, opts ...Option) (*Object, error) {
	f, fd, err := regfile.OpenELF(path)
	if err != nil {
		return nil, fmt.Errorf("objfile: %w", err)
	}
	return NewObject(f, path, bias, append(opts, WithCloser(fd))...), nil
}

// NewObject wraps an already opened ELF file as an object loaded at bias
// (see Open for the options). Close calls f.Close (which closes the
// underlying file only when f came from elf.Open).
func NewObject(f *elf.File, path string, bias uint64, opts ...Option) *Object {
	o := &Object{path: path, bias: bias, f: f}
	for _, opt := range opts {
		if opt != nil {
			opt(&o.opts)
		}
	}
	return o
}

// Path is the file the object was opened from.
func (o *Object) Path() string { return o.path }

// Bias is the object's load bias.
func (o *Object) Bias() uint64 { return o.bias }

// File is the underlying ELF file.
func (o *Object) File() *elf.File { return o.f }

// Close closes the ELF file, and the separate debug file if one was
// opened.
func (o *Object) Close() error {
	// Wait for a search under way (it reads o.f), and keep a later one
	// from opening anything.
	o.dbgOnce.Do(func() { o.dbgErr = errors.New("objfile: object closed") })
	err := o.f.Close()
	if o.opts.closer != nil {
		if cerr := o.opts.closer.Close(); err == nil {
			err = cerr
		}
	}
	if o.dbgFd != nil {
		if cerr := o.dbgFd.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// hasSection reports whether f has the named section with contents.
func hasSection(f *elf.File, names ...string) bool {
	for _, n := range names {
		if s := f.Section(n); s != nil && s.Type != elf.SHT_NOBITS && s.Size > 0 {
			return true
		}
	}
	return false
}

// ownSymtab reports whether the object has a symbol table (.symtab) of its
// own; without one only its dynamic symbols are there.
func (o *Object) ownSymtab() bool { return hasSection(o.f, ".symtab") }

// ownDWARF reports whether the object carries DWARF itself.
func (o *Object) ownDWARF() bool { return hasSection(o.f, ".debug_info", ".zdebug_info") }

// separate returns the object's separate debug file, searching for it on
// the first call (see WithDebugInfo). A file of another build is never
// returned: Find refuses it and the error says so.
func (o *Object) separate() (*elf.File, error) {
	o.dbgOnce.Do(func() {
		ctx := o.opts.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		path, err := debuginfo.Find(ctx, o.path, o.f, o.opts.debug)
		if err != nil {
			o.dbgErr = err
			return
		}
		df, fd, err := regfile.OpenELF(path)
		if err != nil {
			o.dbgErr = fmt.Errorf("debug file: %w", err)
			return
		}
		if df.Machine != o.f.Machine || df.Class != o.f.Class || df.ByteOrder != o.f.ByteOrder {
			fd.Close()
			o.dbgErr = fmt.Errorf("debug file %s is for %v %v, the object for %v %v: %w", path, df.Machine, df.Class, o.f.Machine, o.f.Class, debuginfo.ErrMismatch)
			return
		}
		o.dbgFile, o.dbgFd, o.dbgPath = df, fd, path
	})
	return o.dbgFile, o.dbgErr
}

// DebugFile reports the separate debug file of an object that lacks its own
// symbol table or DWARF: its path, or why none could be used (not found, a
// debuginfod server failing, or a candidate of another build, matching
// debuginfo.ErrNotFound, debuginfod.ErrServer or debuginfo.ErrMismatch). It
// searches if no lookup has yet. An object that has both itself returns
// "" and nil without searching.
func (o *Object) DebugFile() (string, error) {
	if o.ownSymtab() && o.ownDWARF() {
		return "", nil
	}
	if _, err := o.separate(); err != nil {
		return "", err
	}
	return o.dbgPath, nil
}

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

// hasDynamic reports whether the object has a dynamic section.
func (o *Object) hasDynamic() bool {
	_, _, ok := o.DynamicAddr()
	return ok
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
	return debuginfo.ParseBuildID(data, order)
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

// addSymbols adds the defined symbols of list to syms (the best definition
// of each name, see symRank) and the functions among them to funcs, at the
// object's bias. It returns the error of reading list, if any.
func (o *Object) addSymbols(syms map[string]Symbol, funcs *[]Symbol, list []elf.Symbol, err error, which string) error {
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
		case es.Name == "_DYNAMIC" && o.hasDynamic():
			// The linker's label of the dynamic section, which
			// some linkers (GNU ld on aarch64 and s390x) mark
			// absolute although it moves with the object: the
			// dynamic section's run-time address.
			s.Addr, _, _ = o.DynamicAddr()
		case es.Section == elf.SHN_ABS:
			s.Addr = es.Value
		default:
			s.Addr = es.Value + o.bias
		}
		if old, ok := syms[s.Name]; !ok || symRank(s) > symRank(old) {
			syms[s.Name] = s
		}
		if (typ == elf.STT_FUNC || typ == elf.STT_GNU_IFUNC) && es.Section != elf.SHN_ABS {
			*funcs = append(*funcs, s)
		}
	}
	if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return fmt.Errorf("%s: %w", which, err)
	}
	return nil
}

// sortedFuncs returns the object's functions (see indexFull) sorted by
// address, a global definition before a local one at the same address and
// otherwise in table order. It sorts on the first call only: opening a
// core looks symbols up by name in every library but asks few of them for
// the function at an address.
func (o *Object) sortedFuncs() []Symbol {
	o.indexFull()
	o.sortOnce.Do(func() {
		// In place: nothing else reads fullFuncs (or funcs, which it
		// may share) once indexFull is done.
		o.sorted = o.fullFuncs
		slices.SortStableFunc(o.sorted, func(a, b Symbol) int {
			if c := cmp.Compare(a.Addr, b.Addr); c != 0 {
				return c
			}
			return cmp.Compare(symRank(b), symRank(a))
		})
	})
	return o.sorted
}

// indexSymbols indexes the symbols the object has itself: its .symtab and
// .dynsym.
func (o *Object) indexSymbols() {
	o.symOnce.Do(func() {
		var errs []error
		syms, serr := readSymbols(o.f, elf.SHT_SYMTAB)
		dyn, derr := readSymbols(o.f, elf.SHT_DYNSYM)
		// Sized once: growing a map of thousands of symbols rehashes it
		// several times. Most .dynsym names are also in .symtab.
		o.syms = make(map[string]Symbol, max(len(syms), len(dyn)))
		if err := o.addSymbols(o.syms, &o.funcs, syms, serr, ".symtab"); err != nil {
			errs = append(errs, err)
		}
		if err := o.addSymbols(o.syms, &o.funcs, dyn, derr, ".dynsym"); err != nil {
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			o.symErr = fmt.Errorf("objfile: %s: %w", o.path, errjoin.Join(errs...))
		}
	})
}

// debugSymtab returns, for an object without a .symtab of its own, the
// .symtab of its separate debug file as it is in the file (nil for an
// object with its own), or why there is none, reading it on the first
// call.
func (o *Object) debugSymtab() (*rawSymtab, error) {
	o.dbgTabOnce.Do(func() {
		if o.ownSymtab() {
			return
		}
		df, err := o.separate()
		if err != nil {
			o.dbgTabErr = fmt.Errorf("objfile: %s has no symbol table and no usable separate debug file: %w", o.path, err)
			return
		}
		t, err := loadSymtab(df, elf.SHT_SYMTAB)
		if err != nil && !errors.Is(err, elf.ErrNoSymbols) {
			o.dbgTabErr = fmt.Errorf("objfile: %s: %s: .symtab: %w", o.path, o.dbgPath, err)
			return
		}
		o.dbgTab = t
	})
	return o.dbgTab, o.dbgTabErr
}

// indexFull indexes, for an object without a .symtab of its own, its
// symbols together with the .symtab of its separate debug file.
func (o *Object) indexFull() {
	o.indexSymbols()
	o.fullOnce.Do(func() {
		o.fullSyms = o.syms
		o.fullFuncs = o.funcs
		t, err := o.debugSymtab()
		if t == nil || err != nil {
			return
		}
		list := t.symbols()
		syms := make(map[string]Symbol, len(o.syms)+len(list))
		for k, v := range o.syms {
			syms[k] = v
		}
		funcs := append([]Symbol(nil), o.funcs...)
		o.addSymbols(syms, &funcs, list, nil, "")
		o.fullSyms, o.fullFuncs = syms, funcs
		o.fullDone.Store(true)
	})
}

// maxScans is how many lookups of names an object's own tables lack scan
// the separate debug file's table before it is indexed whole.
const maxScans = 32

// scanDebug looks name up in the separate debug file's .symtab with one
// pass over the table, picking the definition indexFull would (the first
// of the best rank). Until an object has been asked for many such names
// (maxScans), this is much cheaper than indexing the table: a program's
// libc, for one, has no .symtab of its own, and every lookup of a name it
// lacks (of _r_debug, which ld.so defines after it) reaches its debug
// file, 10,000 symbols. use false means the caller must look in
// indexFull's map instead; otherwise ok says whether the debug file
// defines name.
func (o *Object) scanDebug(name string) (s Symbol, ok, use bool) {
	if o.fullDone.Load() || o.scans.Add(1) > maxScans {
		return Symbol{}, false, false
	}
	t, err := o.debugSymtab()
	if err != nil || t == nil {
		return Symbol{}, false, err == nil
	}
	var one [1]elf.Symbol
	m := map[string]Symbol{}
	var none []Symbol
	for i := 1; i < t.len(); i++ {
		if !t.hasName(t.nameOff(i), name) {
			continue
		}
		one[0] = t.symbol(i)
		o.addSymbols(m, &none, one[:], nil, "")
	}
	s, ok = m[name]
	return s, ok, true
}

// lookupOwn looks name up among the symbols the object has itself, without
// searching for a separate debug file.
func (o *Object) lookupOwn(name string) (Symbol, bool) {
	o.indexSymbols()
	s, ok := o.syms[name]
	return s, ok
}

// Lookup returns the object's definition of the symbol called name. When
// both a global (or weak) and a local definition exist the global one wins;
// among locals of the same name the first in .symtab wins. Undefined
// symbols are ignored. A name the object's own symbol tables lack is looked
// up in its separate debug file when it has no .symtab (see the package
// comment). A missing symbol is a *target.LookupError wrapping
// target.ErrNotFound (and mentioning a symbol table that could not be read
// or a separate debug file that could not be found, if any).
func (o *Object) Lookup(name string) (Symbol, error) {
	if s, ok := o.find(name); ok {
		return s, nil
	}
	err := target.ErrNotFound
	if serr := o.SymbolErr(); serr != nil {
		err = fmt.Errorf("%w (%v)", target.ErrNotFound, serr)
	}
	return Symbol{}, &target.LookupError{Kind: "symbol", Name: name, Err: err}
}

// find is Lookup without the error: a Set asks every object in turn, and
// most do not define the name.
func (o *Object) find(name string) (Symbol, bool) {
	if s, ok := o.lookupOwn(name); ok {
		return s, true
	}
	if s, ok, use := o.scanDebug(name); use {
		return s, ok
	}
	o.indexFull()
	s, ok := o.fullSyms[name]
	return s, ok
}

// SymbolErr reports a symbol table of the object that could not be read,
// or, for an object without a .symtab of its own, why no separate debug
// file could give one; nil if neither. It may search for the separate
// debug file.
func (o *Object) SymbolErr() error {
	o.indexSymbols()
	_, err := o.debugSymtab()
	return errjoin.Join(o.symErr, err)
}

// SymbolAt returns the function symbol whose [Addr, Addr+Size) contains
// the run-time address addr (a zero-sized symbol matches only its own
// address), from the object's symbols and, without a .symtab of its own,
// those of its separate debug file.
func (o *Object) SymbolAt(addr uint64) (Symbol, bool) {
	funcs := o.sortedFuncs()
	i := sort.Search(len(funcs), func(i int) bool { return funcs[i].Addr > addr })
	// Look back over a few candidates: functions sharing a start address
	// (aliases) or a zero-sized symbol just before a sized one.
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		s := funcs[j]
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
	once     sync.Once
	mu       sync.Mutex  // guards data.Type (whose cache is not concurrency-safe) and everything below
	data     *dwarf.Data // over all of the DWARF; made on first use by build
	build    func(end int) (*dwarf.Data, error)
	quick    *dwarf.Data          // over the units before quickEnd, for quickField
	quickEnd int                  // offset in .debug_info where the units of quick end
	where    string               // the file the DWARF comes from
	index    map[string]typeEntry // filled by scan, or all at once by indexAll
	scan     *dieScanner          // what is left to index; nil when done
	err      error
}

// Describe returns a copy of infos, the objects a target lists
// (target.ObjectLister), each completed from its local file files[i] (nil
// when none was opened): its build-id and its separate debug file or why
// there is none (searched for now if no lookup has yet, see DebugFile).
func Describe(infos []target.Object, files []*Object) []target.Object {
	out := make([]target.Object, len(infos))
	copy(out, infos)
	for i := range out {
		if i >= len(files) || files[i] == nil {
			continue
		}
		out[i].BuildID = bytes.Clone(files[i].BuildID())
		out[i].DebugFile, out[i].DebugErr = files[i].DebugFile()
	}
	return out
}
