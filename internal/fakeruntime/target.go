// Package fakeruntime builds synthetic OpenMP runtime memory behind an
// in-memory target.Target, for tests of what a real runtime cannot show:
// other byte orders and pointer sizes, nested serialized regions at will,
// freed tasks, corrupt tables, cycles and absurd counts; and, through the
// public package fakeomp, for the tests of tools built on package ompd.
//
// A Target is sparse memory with a symbol table, thread-local symbols, an OS
// thread list and optional debug information. A Runtime lays LLVM's runtime
// structures out in a Target with its own field offsets (deliberately not
// LLVM's), writes the OMPD layout tables that describe them, and offers
// builders and setters for threads, teams, serial teams, tasks, ICVs and
// runtime globals. A Scenario builds a typical program state in one call.
// A Gomp lays out GCC's libgomp the same way, as a loaded library with
// thread-local data and its layout as debug information.
//
// Builder methods panic on misuse (writing outside memory the builder did not
// allocate): they are for tests, where a panic is a clear failure.
package fakeruntime

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/ompd-go/ompd/target"
)

// PageSize is the alignment and size granule of page-aligned regions.
const PageSize = 4096

// Default first addresses of the bump allocator: 64-bit targets get
// addresses whose upper bytes are set, so that byte-order and pointer-size
// mistakes show.
const (
	DefaultBase64 = 0x5555_0000_0000
	DefaultBase32 = 0x0804_0000
)

// tinyArena is the span reserved at a time for tiny regions.
const tinyArena = 16 * PageSize

// Config describes a Target.
type Config struct {
	// ByteOrder is the target's byte order; nil means little-endian.
	ByteOrder binary.ByteOrder
	// Sizes are the target's primitive type sizes; the zero value means
	// target.LP64.
	Sizes target.Sizes
	// Tiny makes Alloc hand out tiny unaligned regions (see AllocTiny)
	// instead of page-aligned ones, so that no whole page of runtime
	// structures can be read at once.
	Tiny bool
	// Base is the first address the allocator hands out; 0 picks
	// DefaultBase64 or DefaultBase32 from the pointer size.
	Base uint64
}

// Name returns a short description such as "LE/LP64" or "BE/ILP32/tiny".
func (c Config) Name() string {
	order := "LE"
	if c.ByteOrder == binary.BigEndian {
		order = "BE"
	}
	sz := "LP64"
	if c.Sizes.Pointer == 4 {
		sz = "ILP32"
	}
	s := order + "/" + sz
	if c.Tiny {
		s += "/tiny"
	}
	return s
}

type region struct {
	start uint64
	data  []byte
}

func (r *region) end() uint64 { return r.start + uint64(len(r.data)) }

type function struct {
	name       string
	addr, size uint64
}

// Target is an in-memory target.Target: sparse memory regions, a symbol
// table, thread-local symbols per thread, an OS thread list and optional
// type information. It also implements target.BitFieldLocator and the
// target.Symbolizer (SymbolAt). It is safe for concurrent use.
type Target struct {
	order binary.ByteOrder
	sizes target.Sizes
	tiny  bool

	mu       sync.RWMutex
	regions  []*region // sorted by start, disjoint
	next     uint64    // bump pointer (page aligned)
	tinyNext uint64    // next tiny region
	tinyEnd  uint64    // end of the current tiny arena
	textNext uint64    // next function address
	textEnd  uint64
	syms     map[string]uint64
	tls      map[uint64]map[string]uint64
	threads  []target.Thread
	types    map[string]uint64
	fields   map[[2]string]uint64
	bits     map[[2]string][2]uint64
	funcs    []function                  // sorted by addr
	stacks   map[uint64]target.Registers // SetStack's threads' registers
	readOnly bool
	fault    func(addr uint64, size int) error
	machine  elf.Machine

	reads, bytesRead atomic.Int64
}

var (
	_ target.Target          = (*Target)(nil)
	_ target.BitFieldLocator = (*Target)(nil)
)

// NewTarget returns an empty target.
func NewTarget(cfg Config) *Target {
	t := &Target{
		order:  cfg.ByteOrder,
		sizes:  cfg.Sizes,
		tiny:   cfg.Tiny,
		next:   cfg.Base,
		syms:   make(map[string]uint64),
		tls:    make(map[uint64]map[string]uint64),
		types:  make(map[string]uint64),
		fields: make(map[[2]string]uint64),
		bits:   make(map[[2]string][2]uint64),
	}
	if t.order == nil {
		t.order = binary.LittleEndian
	}
	if t.sizes == (target.Sizes{}) {
		t.sizes = target.LP64
	}
	if t.next == 0 {
		t.next = DefaultBase64
		if t.sizes.Pointer == 4 {
			t.next = DefaultBase32
		}
	}
	t.next = alignUp(t.next, PageSize)
	return t
}

// Config returns the configuration the target was made with (Base is the
// allocator's current position).
func (t *Target) Config() Config {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return Config{ByteOrder: t.order, Sizes: t.sizes, Tiny: t.tiny, Base: t.next}
}

func alignUp(v, a uint64) uint64 { return (v + a - 1) &^ (a - 1) }

// insert adds a zeroed region; the caller holds mu.
func (t *Target) insert(start uint64, size int) {
	r := &region{start: start, data: make([]byte, size)}
	i := sort.Search(len(t.regions), func(i int) bool { return t.regions[i].start >= start })
	t.regions = slices.Insert(t.regions, i, r)
}

// overlaps reports whether [start, start+size) meets a region; the caller
// holds mu.
func (t *Target) overlaps(start uint64, size int) bool {
	end := start + uint64(size)
	i := sort.Search(len(t.regions), func(i int) bool { return t.regions[i].end() > start })
	return i < len(t.regions) && t.regions[i].start < end
}

// Alloc maps a zeroed region of at least size bytes and returns its
// address: a tiny region if the target was configured Tiny, else a
// page-aligned one (see AllocAligned).
func (t *Target) Alloc(size int) uint64 {
	if t.tiny {
		return t.AllocTiny(size)
	}
	return t.AllocAligned(size)
}

// AllocAligned maps a zeroed, page-aligned region of size bytes rounded up
// to whole pages, followed by an unmapped guard page.
func (t *Target) AllocAligned(size int) uint64 {
	if size < 1 {
		size = 1
	}
	n := alignUp(uint64(size), PageSize)
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.next
	t.insert(a, int(n))
	t.next = a + n + PageSize
	return a
}

// AllocTiny maps a zeroed region of exactly size bytes at an address that is
// 8-byte aligned but not page aligned, with unmapped gaps before and after
// it within the same page: a read of the whole page fails, a read of exactly
// the region succeeds.
func (t *Target) AllocTiny(size int) uint64 {
	if size < 1 {
		size = 1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := uint64(size)
	if t.tinyNext == 0 || t.tinyNext+n+16 > t.tinyEnd {
		span := alignUp(n+64, PageSize)
		if span < tinyArena {
			span = tinyArena
		}
		t.tinyNext = t.next + 24
		t.tinyEnd = t.next + span
		t.next += span + PageSize
	}
	a := t.tinyNext
	t.insert(a, size)
	t.tinyNext = alignUp(a+n, 8) + 8 + 16 // an unmapped gap of at least 8 bytes
	if t.tinyNext%PageSize == 0 {
		t.tinyNext += 8
	}
	return a
}

// Map maps a zeroed region of size bytes at addr. It fails if the range
// meets a mapped region.
func (t *Target) Map(addr uint64, size int) error {
	if size < 1 || addr+uint64(size) < addr {
		return fmt.Errorf("fakeruntime: bad region %#x+%d", addr, size)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.overlaps(addr, size) {
		return fmt.Errorf("fakeruntime: region %#x+%d overlaps mapped memory", addr, size)
	}
	t.insert(addr, size)
	return nil
}

// Unmap removes the region that starts at addr. It reports whether there
// was one.
func (t *Target) Unmap(addr uint64) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, r := range t.regions {
		if r.start == addr {
			t.regions = slices.Delete(t.regions, i, i+1)
			return true
		}
	}
	return false
}

// Mapped reports whether every byte of [addr, addr+size) is mapped.
func (t *Target) Mapped(addr uint64, size int) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.span(addr, size, nil, false) == nil
}

// span copies [addr, addr+len) between memory and buf (into buf if !write).
// With buf nil it only checks the range. The caller holds mu.
func (t *Target) span(addr uint64, size int, buf []byte, write bool) error {
	if size == 0 {
		return nil
	}
	if size < 0 || addr+uint64(size) < addr {
		return target.ErrNoMemory
	}
	end := addr + uint64(size)
	cur := addr
	i := sort.Search(len(t.regions), func(i int) bool { return t.regions[i].end() > addr })
	for cur < end {
		if i >= len(t.regions) || t.regions[i].start > cur {
			return target.ErrNoMemory
		}
		r := t.regions[i]
		lo := cur - r.start
		hi := uint64(len(r.data))
		if end-r.start < hi {
			hi = end - r.start
		}
		if buf != nil {
			if write {
				copy(r.data[lo:hi], buf[cur-addr:])
			} else {
				copy(buf[cur-addr:], r.data[lo:hi])
			}
		}
		cur = r.start + hi
		i++
	}
	return nil
}

// ReadMemory implements target.Target. Unmapped memory gives a
// *target.ReadError wrapping target.ErrNoMemory.
func (t *Target) ReadMemory(buf []byte, addr uint64) error {
	t.reads.Add(1)
	t.bytesRead.Add(int64(len(buf)))
	t.mu.RLock()
	fault := t.fault
	t.mu.RUnlock()
	if fault != nil {
		if err := fault(addr, len(buf)); err != nil {
			return &target.ReadError{Addr: addr, Size: len(buf), Err: err}
		}
	}
	t.mu.RLock()
	defer t.mu.RUnlock()
	if t.span(addr, len(buf), nil, false) != nil {
		return &target.ReadError{Addr: addr, Size: len(buf), Err: target.ErrNoMemory}
	}
	_ = t.span(addr, len(buf), buf, false)
	return nil
}

// WriteMemory implements target.Target. A read-only target gives an error
// wrapping target.ErrReadOnly; unmapped memory one wrapping
// target.ErrNoMemory. A failed write writes nothing.
func (t *Target) WriteMemory(addr uint64, data []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.readOnly {
		return &target.ReadError{Addr: addr, Size: len(data), Write: true, Err: target.ErrReadOnly}
	}
	return t.poke(addr, data)
}

// poke writes data, ignoring the read-only flag; the caller holds mu.
func (t *Target) poke(addr uint64, data []byte) error {
	if t.span(addr, len(data), nil, true) != nil {
		return &target.ReadError{Addr: addr, Size: len(data), Write: true, Err: target.ErrNoMemory}
	}
	_ = t.span(addr, len(data), data, true)
	return nil
}

// Poke writes data at addr whether or not the target is read-only: it is
// how tests change (or corrupt) target memory. Unmapped memory is an error.
func (t *Target) Poke(addr uint64, data []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.poke(addr, data)
}

// Peek returns a copy of n bytes of memory at addr, without counting the
// read.
func (t *Target) Peek(addr uint64, n int) ([]byte, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	b := make([]byte, n)
	if t.span(addr, n, b, false) != nil {
		return nil, &target.ReadError{Addr: addr, Size: n, Err: target.ErrNoMemory}
	}
	return b, nil
}

// PutUint writes v in size bytes (1, 2, 4 or 8) at addr in the target's
// byte order, ignoring the read-only flag. It panics if the memory is not
// mapped or the size is odd.
func (t *Target) PutUint(addr uint64, size int, v uint64) {
	if err := t.Poke(addr, t.encode(size, v)); err != nil {
		panic(fmt.Sprintf("fakeruntime: PutUint: %v", err))
	}
}

// PutPtr writes a pointer at addr (see PutUint).
func (t *Target) PutPtr(addr, v uint64) { t.PutUint(addr, t.sizes.Pointer, v) }

// Uint reads an unsigned integer of size bytes at addr, without counting
// the read. It panics if the memory is not mapped.
func (t *Target) Uint(addr uint64, size int) uint64 {
	b, err := t.Peek(addr, size)
	if err != nil {
		panic(fmt.Sprintf("fakeruntime: Uint: %v", err))
	}
	return t.decode(b)
}

// Ptr reads a pointer at addr (see Uint).
func (t *Target) Ptr(addr uint64) uint64 { return t.Uint(addr, t.sizes.Pointer) }

func (t *Target) encode(size int, v uint64) []byte {
	b := make([]byte, size)
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		t.order.PutUint16(b, uint16(v))
	case 4:
		t.order.PutUint32(b, uint32(v))
	case 8:
		t.order.PutUint64(b, v)
	default:
		panic(fmt.Sprintf("fakeruntime: integer size %d", size))
	}
	return b
}

func (t *Target) decode(b []byte) uint64 {
	switch len(b) {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(t.order.Uint16(b))
	case 4:
		return uint64(t.order.Uint32(b))
	case 8:
		return t.order.Uint64(b)
	}
	panic(fmt.Sprintf("fakeruntime: integer size %d", len(b)))
}

// AllocString maps a NUL-terminated copy of s in a page-aligned region
// (strings are read in chunks that a tiny region would not hold) and
// returns its address.
func (t *Target) AllocString(s string) uint64 {
	a := t.AllocAligned(len(s) + 1)
	if err := t.Poke(a, append([]byte(s), 0)); err != nil {
		panic(err)
	}
	return a
}

// SetSymbol defines (or moves) the symbol name at addr.
func (t *Target) SetSymbol(name string, addr uint64) {
	t.mu.Lock()
	t.syms[name] = addr
	t.mu.Unlock()
}

// DeleteSymbol removes the symbol name; it reports whether it existed.
func (t *Target) DeleteSymbol(name string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, ok := t.syms[name]
	delete(t.syms, name)
	return ok
}

// Symbols returns a copy of the symbol table.
func (t *Target) Symbols() map[string]uint64 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make(map[string]uint64, len(t.syms))
	for k, v := range t.syms {
		out[k] = v
	}
	return out
}

// LookupSymbol implements target.Target. A missing symbol gives a
// *target.LookupError wrapping target.ErrNotFound.
func (t *Target) LookupSymbol(name string) (uint64, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if a, ok := t.syms[name]; ok {
		return a, nil
	}
	return 0, &target.LookupError{Kind: "symbol", Name: name, Err: target.ErrNotFound}
}

// SetThreadLocal sets the address of thread-local variable name in the OS
// thread whose LWP id is thread.
func (t *Target) SetThreadLocal(thread uint64, name string, addr uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	m := t.tls[thread]
	if m == nil {
		m = make(map[string]uint64)
		t.tls[thread] = m
	}
	m[name] = addr
}

// DeleteThreadLocal removes the thread-local variable name of thread.
func (t *Target) DeleteThreadLocal(thread uint64, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.tls[thread], name)
}

// LookupThreadLocal implements target.Target. A thread not in the OS thread
// list wraps target.ErrNoThread; a variable set for some other thread but not
// this one wraps target.ErrNoMemory (storage not allocated yet); a variable
// set for no thread wraps target.ErrNotFound.
func (t *Target) LookupThreadLocal(thread uint64, name string) (uint64, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	known := false
	for _, th := range t.threads {
		if th.ID == thread {
			known = true
			break
		}
	}
	if !known {
		return 0, &target.LookupError{Kind: "thread-local symbol", Name: name, Err: target.ErrNoThread}
	}
	if a, ok := t.tls[thread][name]; ok {
		return a, nil
	}
	for _, m := range t.tls {
		if _, ok := m[name]; ok {
			return 0, &target.LookupError{Kind: "thread-local symbol", Name: name, Err: target.ErrNoMemory}
		}
	}
	return 0, &target.LookupError{Kind: "thread-local symbol", Name: name, Err: target.ErrNotFound}
}

// AddThread adds an OS thread to the thread list, replacing one with the
// same ID. A thread without a pthread_t (Pthread 0) gets its thread
// pointer as one, as on x86-64.
func (t *Target) AddThread(th target.Thread) {
	if th.Pthread == 0 {
		th.Pthread = th.Pointer
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range t.threads {
		if t.threads[i].ID == th.ID {
			t.threads[i] = th
			return
		}
	}
	t.threads = append(t.threads, th)
}

// RemoveThread removes the OS thread with the given LWP id.
func (t *Target) RemoveThread(id uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.threads = slices.DeleteFunc(t.threads, func(th target.Thread) bool { return th.ID == id })
}

// SetThreads replaces the OS thread list.
func (t *Target) SetThreads(ths []target.Thread) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.threads = slices.Clone(ths)
}

// Threads implements target.Target.
func (t *Target) Threads() ([]target.Thread, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return slices.Clone(t.threads), nil
}

// SetTypeSize records the size of a type for TypeSize.
func (t *Target) SetTypeSize(typeName string, size uint64) {
	t.mu.Lock()
	t.types[typeName] = size
	t.mu.Unlock()
}

// SetFieldOffset records the offset of a member for FieldOffset.
func (t *Target) SetFieldOffset(typeName, field string, off uint64) {
	t.mu.Lock()
	t.fields[[2]string{typeName, field}] = off
	t.mu.Unlock()
}

// SetBitField records the position of a bit-field member for BitField.
func (t *Target) SetBitField(typeName, field string, bitOffset, bitSize uint64) {
	t.mu.Lock()
	t.bits[[2]string{typeName, field}] = [2]uint64{bitOffset, bitSize}
	t.mu.Unlock()
}

// ClearTypes forgets every type size, field offset and bit-field.
func (t *Target) ClearTypes() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.types = make(map[string]uint64)
	t.fields = make(map[[2]string]uint64)
	t.bits = make(map[[2]string][2]uint64)
}

// TypeSize implements target.Target from the sizes set with SetTypeSize.
func (t *Target) TypeSize(typeName string) (uint64, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if s, ok := t.types[typeName]; ok {
		return s, nil
	}
	return 0, &target.LookupError{Kind: "type", Name: typeName, Err: target.ErrNotFound}
}

// FieldOffset implements target.Target from the offsets set with
// SetFieldOffset.
func (t *Target) FieldOffset(typeName, field string) (uint64, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if o, ok := t.fields[[2]string{typeName, field}]; ok {
		return o, nil
	}
	return 0, &target.LookupError{Kind: "field", Name: typeName + "." + field, Err: target.ErrNotFound}
}

// BitField implements target.BitFieldLocator from the positions set with
// SetBitField.
func (t *Target) BitField(typeName, field string) (uint64, uint64, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	if b, ok := t.bits[[2]string{typeName, field}]; ok {
		return b[0], b[1], nil
	}
	return 0, 0, &target.LookupError{Kind: "field", Name: typeName + "." + field, Err: target.ErrNotFound}
}

// AddFunction defines a function symbol of size bytes in the target's text
// and returns its address. SymbolAt names addresses inside it. Function code
// is not readable memory.
func (t *Target) AddFunction(name string, size int) uint64 {
	if size < 1 {
		size = 1
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := alignUp(uint64(size), 16)
	if t.textNext == 0 || t.textNext+n > t.textEnd {
		span := alignUp(n, 16*PageSize)
		t.textNext = t.next
		t.textEnd = t.next + span
		t.next += span + PageSize
	}
	a := t.textNext
	t.textNext += n
	f := function{name: name, addr: a, size: uint64(size)}
	i := sort.Search(len(t.funcs), func(i int) bool { return t.funcs[i].addr >= a })
	t.funcs = slices.Insert(t.funcs, i, f)
	t.syms[name] = a
	return a
}

// SymbolAt returns the name of the function (added with AddFunction)
// containing addr. It implements the target.Symbolizer.
func (t *Target) SymbolAt(addr uint64) (string, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	i := sort.Search(len(t.funcs), func(i int) bool { return t.funcs[i].addr > addr })
	if i == 0 {
		return "", false
	}
	f := t.funcs[i-1]
	if addr < f.addr+f.size {
		return f.name, true
	}
	return "", false
}

// SetReadOnly makes WriteMemory fail (with target.ErrReadOnly) or work.
func (t *Target) SetReadOnly(ro bool) {
	t.mu.Lock()
	t.readOnly = ro
	t.mu.Unlock()
}

// SetReadFault installs a function called before every ReadMemory; an error
// it returns fails the read (wrapped in a *target.ReadError). nil removes it.
func (t *Target) SetReadFault(f func(addr uint64, size int) error) {
	t.mu.Lock()
	t.fault = f
	t.mu.Unlock()
}

// SetMachine sets the ELF machine Machine reports.
func (t *Target) SetMachine(m elf.Machine) {
	t.mu.Lock()
	t.machine = m
	t.mu.Unlock()
}

// Machine reports the ELF machine of the target's program, as target/core
// does: EM_NONE (unknown) unless SetMachine said otherwise.
func (t *Target) Machine() elf.Machine {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.machine
}

// ByteOrder implements target.Target.
func (t *Target) ByteOrder() binary.ByteOrder { return t.order }

// Sizes implements target.Target.
func (t *Target) Sizes() target.Sizes { return t.sizes }

// Reads returns the number of ReadMemory calls so far.
func (t *Target) Reads() int64 { return t.reads.Load() }

// BytesRead returns the number of bytes asked for by ReadMemory calls so
// far, failed ones included.
func (t *Target) BytesRead() int64 { return t.bytesRead.Load() }

// ResetCounters sets Reads and BytesRead to zero.
func (t *Target) ResetCounters() {
	t.reads.Store(0)
	t.bytesRead.Store(0)
}
