package ompd

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/ompd-go/ompd/target"
)

// pageSize is the granule of the memory cache. Mappings of real processes
// and core files are page aligned, so a page is either wholly readable or
// not; reading whole pages turns libompd's one-callback-per-field traffic
// into one target read per page of runtime structures.
const pageSize = 4096

// maxCached bounds the memory cache; past it the cache starts over.
const maxCached = 256 << 20

// maxRead bounds one read, so that a corrupt size cannot make this package
// allocate without bound.
const maxRead = 64 << 20

// memory reads target memory through a page cache. Cached pages are never
// modified, only dropped (by refresh), so slices into them can be handed to
// concurrent readers.
type memory struct {
	t       target.Target
	order   binary.ByteOrder
	ptrSize int

	mu    sync.Mutex
	pages map[uint64][]byte
	bad   map[uint64]bool // pages the target could not read whole
	bytes int
}

func newMemory(t target.Target) *memory {
	return &memory{
		t:       t,
		order:   t.ByteOrder(),
		ptrSize: t.Sizes().Pointer,
		pages:   make(map[uint64][]byte),
		bad:     make(map[uint64]bool),
	}
}

// refresh drops every cached page.
func (m *memory) refresh() {
	m.mu.Lock()
	m.pages = make(map[uint64][]byte)
	m.bad = make(map[uint64]bool)
	m.bytes = 0
	m.mu.Unlock()
}

// read returns n bytes of target memory at addr. The result must not be
// modified. Ranges the target cannot read in whole pages (a mapping smaller
// than a page, as synthetic targets have) are read exactly and not cached.
func (m *memory) read(addr uint64, n int) ([]byte, error) {
	if n <= 0 {
		return nil, nil
	}
	if n > maxRead {
		return nil, &target.ReadError{Addr: addr, Size: n, Err: fmt.Errorf("read larger than %d bytes refused", maxRead)}
	}
	if addr+uint64(n) < addr {
		return nil, &target.ReadError{Addr: addr, Size: n, Err: target.ErrNoMemory}
	}
	first := addr &^ (pageSize - 1)
	last := (addr + uint64(n) - 1) &^ (pageSize - 1)
	if first == last {
		p, err := m.page(first)
		if err != nil {
			return m.direct(addr, n)
		}
		off := addr - first
		return p[off : off+uint64(n)], nil
	}
	out := make([]byte, 0, n)
	if err := m.fill(first, last); err != nil {
		return m.direct(addr, n)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for pg := first; ; pg += pageSize {
		p, ok := m.pages[pg]
		if !ok { // dropped by a concurrent refresh: read again, uncached
			m.mu.Unlock()
			b, err := m.direct(addr, n)
			m.mu.Lock()
			return b, err
		}
		lo, hi := uint64(0), uint64(pageSize)
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
func (m *memory) direct(addr uint64, n int) ([]byte, error) {
	b := make([]byte, n)
	if err := m.t.ReadMemory(b, addr); err != nil {
		return nil, err
	}
	return b, nil
}

func (m *memory) page(pg uint64) ([]byte, error) {
	m.mu.Lock()
	p, ok := m.pages[pg]
	bad := m.bad[pg]
	m.mu.Unlock()
	if ok {
		return p, nil
	}
	if bad {
		return nil, errBadPage
	}
	p = make([]byte, pageSize)
	if err := m.t.ReadMemory(p, pg); err != nil {
		m.mu.Lock()
		m.bad[pg] = true
		m.mu.Unlock()
		return nil, err
	}
	m.store(pg, p)
	return p, nil
}

// fill makes sure pages first..last are cached, reading each run of
// missing pages with one target read.
func (m *memory) fill(first, last uint64) error {
	var missing []uint64
	m.mu.Lock()
	for pg := first; ; pg += pageSize {
		if m.bad[pg] {
			m.mu.Unlock()
			return errBadPage
		}
		if _, ok := m.pages[pg]; !ok {
			missing = append(missing, pg)
		}
		if pg == last {
			break
		}
	}
	m.mu.Unlock()
	for i := 0; i < len(missing); {
		j := i + 1
		for j < len(missing) && missing[j] == missing[j-1]+pageSize {
			j++
		}
		buf := make([]byte, (j-i)*pageSize)
		if err := m.t.ReadMemory(buf, missing[i]); err != nil {
			return err
		}
		for k := i; k < j; k++ {
			off := (k - i) * pageSize
			m.store(missing[k], buf[off:off+pageSize:off+pageSize])
		}
		i = j
	}
	return nil
}

func (m *memory) store(pg uint64, p []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.bytes+len(p) > maxCached {
		m.pages = make(map[uint64][]byte)
		m.bytes = 0
	}
	if _, ok := m.pages[pg]; !ok {
		m.pages[pg] = p
		m.bytes += len(p)
	}
}

// errBadPage marks a page known not to be readable whole; reads touching it
// go to the target exactly.
var errBadPage = errors.New("page not readable whole")

// view is a decoded window onto one runtime structure.
type view struct {
	b     []byte
	order binary.ByteOrder
}

// uint returns the unsigned value of the field at off of the given size
// (1, 2, 4 or 8 bytes). Fields outside the view read as zero; layout
// validation makes that impossible for the fields this package uses.
func (v view) uint(off uint64, size uint64) uint64 {
	if off+size > uint64(len(v.b)) || off+size < off {
		return 0
	}
	b := v.b[off : off+size]
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(v.order.Uint16(b))
	case 4:
		return uint64(v.order.Uint32(b))
	case 8:
		return v.order.Uint64(b)
	}
	return 0
}

// int returns the sign-extended value of the field at off.
func (v view) int(off uint64, size uint64) int64 {
	u := v.uint(off, size)
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

func (v view) f(f field) uint64 { return v.uint(f.off, f.size) }
func (v view) fi(f field) int64 { return v.int(f.off, f.size) }
func (v view) has(f field) bool { return f.size > 0 && f.off+f.size <= uint64(len(v.b)) }
func (v view) bytes(f field) []byte {
	if !v.has(f) {
		return nil
	}
	return v.b[f.off : f.off+f.size]
}

// putUint encodes v in size bytes (1, 2, 4 or 8) in the given byte order.
func putUint(order binary.ByteOrder, size uint64, v uint64) []byte {
	b := make([]byte, size)
	switch size {
	case 1:
		b[0] = byte(v)
	case 2:
		order.PutUint16(b, uint16(v))
	case 4:
		order.PutUint32(b, uint32(v))
	case 8:
		order.PutUint64(b, v)
	}
	return b
}
