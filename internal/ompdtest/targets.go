package ompdtest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ompd-go/ompd/target"
)

// CountingTarget counts the memory reads of the target it wraps, for
// benchmarks that report reads per operation. It keeps the optional
// interfaces ompd-go looks for (symbol names of code addresses, bit-field
// positions; reads of many ranges at once through Counting).
type CountingTarget struct {
	target.Target
	// Reads and Bytes count the ReadMemory calls and the bytes they asked
	// for.
	Reads, Bytes atomic.Uint64
}

// ReadMemory counts the read and passes it on.
func (c *CountingTarget) ReadMemory(buf []byte, addr uint64) error {
	c.Reads.Add(1)
	c.Bytes.Add(uint64(len(buf)))
	return c.Target.ReadMemory(buf, addr)
}

// Counting returns the target to read through: c, or, when the wrapped
// target reads many ranges at once (target.VectorReader), c with that
// method too, counted as one read.
func (c *CountingTarget) Counting() target.Target {
	if _, ok := c.Target.(target.VectorReader); ok {
		return countingVec{c}
	}
	return c
}

type countingVec struct{ *CountingTarget }

// ReadMemoryVec counts one read of the ranges read and passes it on.
func (c countingVec) ReadMemoryVec(buf []byte, addrs []uint64, size int) (int, error) {
	n, err := c.Target.(target.VectorReader).ReadMemoryVec(buf, addrs, size)
	c.Reads.Add(1)
	c.Bytes.Add(uint64(n * size))
	return n, err
}

// SymbolAt passes the wrapped target's answer on, if it names code
// addresses.
func (c *CountingTarget) SymbolAt(addr uint64) (string, bool) { return symbolAt(c.Target, addr) }

// BitField passes the wrapped target's answer on, if it locates bit-fields.
func (c *CountingTarget) BitField(typeName, field string) (uint64, uint64, error) {
	return bitField(c.Target, typeName, field)
}

// CachedTarget serves reads from a page cache that is never dropped: after
// a first pass every read is a map lookup and a copy, as in a debugger that
// caches target memory. Benchmarks use it to show what the library itself
// costs.
type CachedTarget struct {
	target.Target
	mu    sync.Mutex
	pages map[uint64][]byte // nil entry: the page cannot be read whole
}

// NewCachedTarget wraps t in an empty page cache.
func NewCachedTarget(t target.Target) *CachedTarget {
	return &CachedTarget{Target: t, pages: map[uint64][]byte{}}
}

// ReadMemory reads through the page cache.
func (c *CachedTarget) ReadMemory(buf []byte, addr uint64) error {
	const page = 4096
	for done := 0; done < len(buf); {
		at := addr + uint64(done)
		pg, off := at&^(page-1), int(at%page)
		n := min(len(buf)-done, page-off)
		c.mu.Lock()
		p, ok := c.pages[pg]
		c.mu.Unlock()
		if !ok {
			p = make([]byte, page)
			if err := c.Target.ReadMemory(p, pg); err != nil {
				p = nil
			}
			c.mu.Lock()
			c.pages[pg] = p
			c.mu.Unlock()
		}
		if p == nil { // a partly readable page: read exactly, uncached
			if err := c.Target.ReadMemory(buf[done:done+n], at); err != nil {
				return err
			}
		} else {
			copy(buf[done:done+n], p[off:])
		}
		done += n
	}
	return nil
}

// SymbolAt passes the wrapped target's answer on, if it names code
// addresses.
func (c *CachedTarget) SymbolAt(addr uint64) (string, bool) { return symbolAt(c.Target, addr) }

// BitField passes the wrapped target's answer on, if it locates bit-fields.
func (c *CachedTarget) BitField(typeName, field string) (uint64, uint64, error) {
	return bitField(c.Target, typeName, field)
}

func symbolAt(t target.Target, addr uint64) (string, bool) {
	if s, ok := t.(target.Symbolizer); ok {
		return s.SymbolAt(addr)
	}
	return "", false
}

func bitField(t target.Target, typeName, field string) (uint64, uint64, error) {
	if l, ok := t.(target.BitFieldLocator); ok {
		return l.BitField(typeName, field)
	}
	return 0, 0, fmt.Errorf("bit-field %s.%s: %w", typeName, field, target.ErrUnsupported)
}

// CPUTime returns the CPU time (user and system) the process has used.
// Benchmarks report it per operation besides the wall-clock ns/op, which a
// busy machine inflates.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportCPU reports the CPU time used since start per operation, as
// cpu-ns/op.
func ReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(CPUTime()-start)/float64(b.N), "cpu-ns/op")
}

// ReportReads reports target reads and bytes read per operation (reads/op,
// read-bytes/op) and the number of threads the operation covered.
func ReportReads(b *testing.B, reads, bytes uint64, threads int) {
	n := float64(b.N)
	b.ReportMetric(float64(reads)/n, "reads/op")
	b.ReportMetric(float64(bytes)/n, "read-bytes/op")
	b.ReportMetric(float64(threads), "threads")
}
