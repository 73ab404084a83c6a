package omprt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ompd-go/ompd/target"
)

// PageSize is the granule of the memory cache. Mappings of real processes
// and core files are page aligned, so a page is either wholly readable or
// not; reading whole pages turns libompd's one-callback-per-field traffic
// into one target read per page of runtime structures.
const PageSize = 4096

// MaxStopBytes bounds the target memory one stop may read: the pages the
// cache keeps, the reads it hands out uncached and the copies it makes,
// counted from the last Refresh. (Strings, at most MaxString bytes a read
// and kept by no decoder in numbers, are not counted: a long session on a
// core, which never refreshes, would use the budget up re-reading them.) A cached page stays alive as long as a
// view of it does, and decoders keep their views for the whole stop, so a
// bound on what the cache holds (it once started over past a limit) bounds
// nothing: this bound is on what the stop has read, checked before each
// read allocates, never on a cache hit. 512 MiB is about 40,000 threads'
// worth of runtime structures at the 12 KB per thread a snapshot reads
// (BENCHMARKS.md: 51.6 MB at 4096 threads), and stays below the 1 GiB a
// mutated core may make the mutation harness allocate.
const MaxStopBytes = 512 << 20

// ErrStopBudget is the cause of a read refused because the stop has read
// MaxStopBytes (Memory.Budget) of target memory: corrupt counts or
// pointers that the runtime decoder did not catch, or a program larger
// than one stop may read.
var ErrStopBudget = errors.New("the target memory one stop may read is used up (corrupt runtime memory, or more runtime structures than one stop may read)")

// MaxRead bounds one read, so that a corrupt size cannot make a runtime
// package allocate without bound.
const MaxRead = 64 << 20

// MaxString bounds the runtime strings read.
const MaxString = 1 << 16

// Memory reads target memory through a page cache. Cached pages are never
// modified, only dropped (by Refresh), so slices into them can be handed to
// concurrent readers. A hit costs one map lookup under a read lock.
// Between two Refreshes it reads at most Budget bytes (see MaxStopBytes).
type Memory struct {
	T       target.Target
	Order   binary.ByteOrder
	PtrSize int
	// Budget is how many bytes of target memory one stop may read;
	// 0 means MaxStopBytes.
	Budget int64

	mu    sync.RWMutex
	pages map[uint64]*pageEntry // a nil p: the target cannot read the page whole
	used  atomic.Int64          // bytes read since Refresh, kept or handed out
	// The pages read lately, of the stop gen (Refresh starts a new one):
	// a decode reads a few pages many times over (a team, the runtime's
	// globals), and such a hit costs a few atomic loads instead of a read
	// lock and a map lookup.
	gen    atomic.Uint64
	recent [pagesRecent]atomic.Pointer[pageEntry]
	next   atomic.Uint32 // the recent slot a miss replaces
	// le says Order is little-endian (NewMemory): views then read
	// without the byte order's dynamic calls. A Memory made otherwise
	// reads through Order.
	le bool
}

// pagesRecent is how many pages Memory remembers as read lately.
const pagesRecent = 4

// pageEntry is a cached page pg of stop gen: p, nil if the target cannot
// read it whole.
type pageEntry struct {
	pg  uint64
	gen uint64
	p   []byte
}

// bytes returns e's page, nil for no entry.
func (e *pageEntry) bytes() []byte {
	if e == nil {
		return nil
	}
	return e.p
}

// NewMemory returns an empty cache over t.
func NewMemory(t target.Target) *Memory {
	order := t.ByteOrder()
	return &Memory{T: t, Order: order, PtrSize: t.Sizes().Pointer, pages: make(map[uint64]*pageEntry), le: order == binary.LittleEndian}
}

// Refresh drops every cached page.
func (m *Memory) Refresh() {
	m.mu.Lock()
	m.pages = make(map[uint64]*pageEntry)
	m.gen.Add(1)
	for i := range m.recent {
		m.recent[i].Store(nil)
	}
	m.used.Store(0)
	m.mu.Unlock()
}

// Used returns how many bytes of target memory the stop has read so far.
func (m *Memory) Used() int64 { return m.used.Load() }

// Limit returns how many bytes of target memory one stop may read.
func (m *Memory) Limit() int64 {
	if m.Budget > 0 {
		return m.Budget
	}
	return MaxStopBytes
}

// reserve counts n bytes about to be read at addr against the stop's
// budget, or refuses them with a *target.ReadError wrapping ErrStopBudget.
func (m *Memory) reserve(addr uint64, n int) error {
	if m.used.Add(int64(n)) > m.Limit() {
		m.used.Add(-int64(n))
		return &target.ReadError{Addr: addr, Size: n, Err: ErrStopBudget}
	}
	return nil
}

// ReadMemory fills buf with target memory at addr through the cache, as
// target.Target's method does: Memory serves code and data readers that
// take any reader of memory.
func (m *Memory) ReadMemory(buf []byte, addr uint64) error {
	b, err := m.Read(addr, len(buf))
	if err != nil {
		return err
	}
	copy(buf, b)
	return nil
}

// Read returns n bytes of target memory at addr. The result must not be
// modified. Ranges the target cannot read in whole pages (a mapping smaller
// than a page, as synthetic targets have) are read exactly and not cached.
func (m *Memory) Read(addr uint64, n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	if n > MaxRead {
		return nil, &target.ReadError{Addr: addr, Size: n, Err: fmt.Errorf("read larger than %d bytes refused", MaxRead)}
	}
	if addr+uint64(n) < addr {
		return nil, &target.ReadError{Addr: addr, Size: n, Err: target.ErrNoMemory}
	}
	first := addr &^ (PageSize - 1)
	last := (addr + uint64(n) - 1) &^ (PageSize - 1)
	if first == last {
		p := m.page(first)
		if p == nil {
			return m.direct(addr, n)
		}
		off := addr - first
		return p[off : off+uint64(n) : off+uint64(n)], nil
	}
	off := addr - first
	m.mu.RLock()
	p := m.pages[first].bytes()
	m.mu.RUnlock()
	if uint64(cap(p)) >= off+uint64(n) {
		// The pages were read together: no copy.
		return p[off : off+uint64(n) : off+uint64(n)], nil
	}
	// Read the span as one run, even where some of its pages are cached
	// apart already: this and later reads of it then share one
	// allocation instead of a copy at each read (each would count).
	switch m.join(first, last) {
	case joined:
		m.mu.RLock()
		p = m.pages[first].bytes()
		m.mu.RUnlock()
		if uint64(cap(p)) >= off+uint64(n) {
			return p[off : off+uint64(n) : off+uint64(n)], nil
		}
	case unreadable: // as fill would find: read exactly what was asked
		return m.direct(addr, n)
	}
	if err := m.fill(first, last); err != nil {
		return m.direct(addr, n)
	}
	if err := m.reserve(addr, n); err != nil { // the copy outlives the pages
		return nil, err
	}
	out := make([]byte, 0, n)
	m.mu.RLock()
	defer m.mu.RUnlock()
	for pg := first; ; pg += PageSize {
		p := m.pages[pg].bytes()
		if p == nil { // dropped by a concurrent refresh: read again, uncached
			return m.direct(addr, n)
		}
		lo, hi := uint64(0), uint64(PageSize)
		if pg == first {
			lo = addr - first
		}
		if pg == last {
			hi = addr + uint64(n) - last
		}
		out = append(out, p[lo:hi]...)
		if pg == last {
			break
		}
	}
	return out, nil
}

// direct reads exactly [addr, addr+n) without the cache.
func (m *Memory) direct(addr uint64, n int) ([]byte, error) {
	if err := m.reserve(addr, n); err != nil {
		return nil, err
	}
	b := make([]byte, n)
	if err := m.T.ReadMemory(b, addr); err != nil {
		m.used.Add(-int64(n))
		return nil, err
	}
	return b, nil
}

// page returns the cached page pg, reading it on a miss; nil if the target
// cannot read it whole, or the stop's budget has no room for it.
func (m *Memory) page(pg uint64) []byte {
	gen := m.gen.Load()
	for i := range m.recent {
		if e := m.recent[i].Load(); e != nil && e.pg == pg && e.gen == gen {
			return e.p
		}
	}
	m.mu.RLock()
	e, ok := m.pages[pg]
	m.mu.RUnlock()
	if !ok {
		if m.reserve(pg, PageSize) != nil {
			return nil // Read's direct read says why
		}
		p := make([]byte, PageSize)
		if err := m.T.ReadMemory(p, pg); err != nil {
			m.used.Add(-PageSize)
			p = nil
		}
		e = m.store(pg, p)
	}
	m.recent[m.next.Add(1)%pagesRecent].Store(e)
	return e.p
}

// fill makes sure pages first..last are cached, reading each run of
// missing pages with one target read.
func (m *Memory) fill(first, last uint64) error {
	var missing []uint64
	m.mu.RLock()
	for pg := first; ; pg += PageSize {
		e, ok := m.pages[pg]
		if ok && e.p == nil {
			m.mu.RUnlock()
			return errBadPage
		}
		if !ok {
			missing = append(missing, pg)
		}
		if pg == last {
			break
		}
	}
	m.mu.RUnlock()
	for i := 0; i < len(missing); {
		j := i + 1
		for j < len(missing) && missing[j] == missing[j-1]+PageSize {
			j++
		}
		if err := m.reserve(missing[i], (j-i)*PageSize); err != nil {
			return err
		}
		buf := make([]byte, (j-i)*PageSize)
		if err := m.T.ReadMemory(buf, missing[i]); err != nil {
			m.used.Add(-int64(len(buf)))
			return err
		}
		for k := i; k < j; k++ {
			off := (k - i) * PageSize
			m.store(missing[k], buf[off:off+PageSize])
		}
		i = j
	}
	return nil
}

// store caches page pg as p unless it is cached already, and returns the
// entry cached.
func (m *Memory) store(pg uint64, p []byte) *pageEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.pages[pg]
	if !ok {
		e = &pageEntry{pg: pg, gen: m.gen.Load(), p: p}
		m.pages[pg] = e
	}
	return e
}

// errBadPage marks a page known not to be readable whole; reads touching it
// go to the target exactly.
var errBadPage = errors.New("page not readable whole")

// View reads size bytes at addr for decoding; what names the structure
// in errors. A null addr is ErrCorrupt, a failed read ErrReadFailed.
func (m *Memory) View(addr, size uint64, what string) (View, error) {
	if addr == 0 {
		return View{}, Errorf(ErrCorrupt, "%s: null pointer", what)
	}
	b, err := m.Read(addr, int(size))
	if err != nil {
		return View{}, Wrap(ErrReadFailed, err, "%s at %#x", what, addr)
	}
	return m.view(b), nil
}

// Uint reads an unsigned integer of size bytes at addr.
func (m *Memory) Uint(addr, size uint64, what string) (uint64, error) {
	v, err := m.View(addr, size, what)
	if err != nil {
		return 0, err
	}
	return v.Uint(0, size), nil
}

// Ptr reads a pointer at addr.
func (m *Memory) Ptr(addr uint64, what string) (uint64, error) {
	return m.Uint(addr, uint64(m.PtrSize), what)
}

// String reads the NUL-terminated string at addr (at most MaxString bytes).
func (m *Memory) String(addr uint64, what string) (string, error) {
	s, err := target.ReadString(m.T, addr, MaxString)
	if err != nil {
		return "", Wrap(ErrReadFailed, err, "%s string at %#x", what, addr)
	}
	return s, nil
}

// AllOnes is the all-ones pointer value of the target.
func (m *Memory) AllOnes() uint64 {
	if m.PtrSize == 4 {
		return 0xffffffff
	}
	return ^uint64(0)
}

// Field locates a member inside the structure a View was read from.
type Field struct {
	Off, Size uint64
}

// End is the offset just past the field.
func (f Field) End() uint64 { return f.Off + f.Size }

// View is a decoded window onto one runtime structure.
type View struct {
	B     []byte
	Order binary.ByteOrder
	// le says Order is little-endian, which Uint then reads without
	// the byte order's dynamic calls: the hottest path of every decode.
	le bool
}

// view makes the View of bytes b read from m's target.
func (m *Memory) view(b []byte) View {
	return View{B: b, Order: m.Order, le: m.le}
}

// Uint returns the unsigned value of the field at off of the given size
// (1, 2, 4 or 8 bytes). Fields outside the view read as zero; layout
// validation makes that impossible for the fields runtime packages use.
func (v View) Uint(off uint64, size uint64) uint64 {
	if off+size > uint64(len(v.B)) || off+size < off {
		return 0
	}
	b := v.B[off : off+size]
	if v.le {
		switch size {
		case 1:
			return uint64(b[0])
		case 2:
			return uint64(binary.LittleEndian.Uint16(b))
		case 4:
			return uint64(binary.LittleEndian.Uint32(b))
		case 8:
			return binary.LittleEndian.Uint64(b)
		}
		return 0
	}
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(v.Order.Uint16(b))
	case 4:
		return uint64(v.Order.Uint32(b))
	case 8:
		return v.Order.Uint64(b)
	}
	return 0
}

// Int returns the sign-extended value of the field at off.
func (v View) Int(off uint64, size uint64) int64 {
	u := v.Uint(off, size)
	switch size {
	case 1:
		return int64(int8(u))
	case 2:
		return int64(int16(u))
	case 4:
		return int64(int32(u))
	}
	return int64(u)
}

// F returns the unsigned value of field f.
func (v View) F(f Field) uint64 { return v.Uint(f.Off, f.Size) }

// FI returns the signed value of field f.
func (v View) FI(f Field) int64 { return v.Int(f.Off, f.Size) }

// Has reports whether field f lies within the view.
func (v View) Has(f Field) bool { return f.Size > 0 && f.Off+f.Size <= uint64(len(v.B)) }

// Bytes returns the bytes of field f, nil if it is outside the view.
func (v View) Bytes(f Field) []byte {
	if !v.Has(f) {
		return nil
	}
	return v.B[f.Off : f.Off+f.Size]
}

// PutUint encodes x in size bytes (1, 2, 4 or 8) in the given byte order.
func PutUint(order binary.ByteOrder, size uint64, x uint64) []byte {
	b := make([]byte, size)
	switch size {
	case 1:
		b[0] = byte(x)
	case 2:
		order.PutUint16(b, uint16(x))
	case 4:
		order.PutUint32(b, uint32(x))
	case 8:
		order.PutUint64(b, x)
	}
	return b
}

// join reads pages first..last with one target read and caches them as
// one run, in place of any of them cached apart. A page holds the same
// bytes however it was read (the target is stopped), so readers of the
// old slices are unaffected.
func (m *Memory) join(first, last uint64) joinResult {
	n := int(last-first) + PageSize
	if n > MaxRead {
		return notJoined
	}
	m.mu.RLock()
	for pg := first; ; pg += PageSize {
		if e, ok := m.pages[pg]; ok && e.p == nil {
			m.mu.RUnlock()
			return unreadable // a page known not to be readable whole
		}
		if pg == last {
			break
		}
	}
	m.mu.RUnlock()
	if m.reserve(first, n) != nil {
		return notJoined // the copy's reservation says why
	}
	buf := make([]byte, n)
	if err := m.T.ReadMemory(buf, first); err != nil {
		m.used.Add(-int64(n))
		return unreadable
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	gen := m.gen.Load()
	for pg := first; ; pg += PageSize {
		off := pg - first
		m.pages[pg] = &pageEntry{pg: pg, gen: gen, p: buf[off : off+PageSize]}
		if pg == last {
			return joined
		}
	}
}

type joinResult int

const (
	joined     joinResult = iota
	notJoined             // too long, or past the stop's budget
	unreadable            // not readable as whole pages
)
