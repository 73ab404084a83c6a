// Package pagecache holds what the live targets (target/delve,
// target/delverpc) share: the memory of one stop of a process, cached by
// page, and the lookup of a thread's thread pointer.
package pagecache

import (
	"fmt"

	"github.com/ompd-go/ompd/target"
)

// PageSize is the size of a cached page.
const PageSize = 4096

// MaxPages bounds the cache (64 MiB); beyond it the cache starts over.
const MaxPages = 16384

// Cache is the memory of one stop of a process, by page. It is not safe
// for concurrent use: the targets serialize their reads.
type Cache struct {
	pages map[uint64][]byte
	// Buffers of the runs read in this stop (see readRun), and those of
	// earlier stops to reuse, by length in pages: a stop reads megabytes,
	// which would otherwise be garbage at every Clear.
	used [][]byte
	free [maxRun + 1][][]byte
}

// ReadTarget answers a live target's ReadMemory: nothing for an empty buf;
// a *target.ReadError for a range that wraps around the address space
// (target.ErrNoMemory), for a process that cannot be read (the error of
// alive, asked only for a range that could be read), or for a failed Read.
func (c *Cache) ReadTarget(buf []byte, addr uint64, alive func() error, raw func(buf []byte, addr uint64) error) error {
	if len(buf) == 0 {
		return nil
	}
	err := target.ErrNoMemory
	if addr+uint64(len(buf)) >= addr {
		if err = alive(); err == nil {
			err = c.Read(buf, addr, raw)
		}
	}
	if err != nil {
		return &target.ReadError{Addr: addr, Size: len(buf), Err: err}
	}
	return nil
}

// Read fills buf with the memory at addr, from the cache where it can.
// Pages it lacks are read whole with raw and kept, a run of them that buf
// spans with one call; a page raw cannot read
// whole (part of it may be unmapped) is read in part, just what buf needs,
// and not kept: the error of that read is returned as is. raw must fill
// its whole buffer or fail.
func (c *Cache) Read(buf []byte, addr uint64, raw func(buf []byte, addr uint64) error) error {
	if c.pages == nil {
		c.pages = make(map[uint64][]byte)
	}
	last := (addr + uint64(len(buf)) - 1) &^ (PageSize - 1)
	for done := 0; done < len(buf); {
		a := addr + uint64(done)
		pg := a &^ (PageSize - 1)
		off := int(a - pg)
		n := min(PageSize-off, len(buf)-done)
		p, ok := c.pages[pg]
		if !ok {
			p, ok = c.readRun(pg, last, raw)
		}
		if !ok {
			p = make([]byte, PageSize)
			if err := raw(p, pg); err != nil {
				if err := raw(buf[done:done+n], a); err != nil {
					return err
				}
				done += n
				continue
			}
			c.keep(pg, p)
		}
		copy(buf[done:done+n], p[off:])
		done += n
	}
	return nil
}

// maxRun bounds the pages one raw call reads: 64 KiB, the most Delve's
// JSON-RPC ExamineMemory answers (target/delverpc).
const maxRun = 16

// readRun reads the run of uncached pages from pg up to last (at most
// maxRun) with one raw call, keeps them and returns the first; ok false if
// the run is a single page or raw cannot read it whole. A live target's
// read costs a system call or a round trip whatever its size: a runtime's
// thread table or a run of its structures read page by page cost hundreds
// of them.
func (c *Cache) readRun(pg, last uint64, raw func([]byte, uint64) error) ([]byte, bool) {
	k := 1
	for q := pg + PageSize; q > pg && q <= last && k < maxRun; q += PageSize {
		if _, ok := c.pages[q]; ok {
			break
		}
		k++
	}
	if k == 1 {
		return nil, false
	}
	var run []byte
	if n := len(c.free[k]); n > 0 {
		run, c.free[k] = c.free[k][n-1], c.free[k][:n-1]
	} else {
		run = make([]byte, k*PageSize)
	}
	if err := raw(run, pg); err != nil {
		c.free[k] = append(c.free[k], run)
		return nil, false
	}
	c.used = append(c.used, run)
	for i := range k {
		c.keep(pg+uint64(i)*PageSize, run[i*PageSize:(i+1)*PageSize:(i+1)*PageSize])
	}
	return run[:PageSize:PageSize], true
}

// keep caches page p at pg, starting over when the cache is full.
func (c *Cache) keep(pg uint64, p []byte) {
	if len(c.pages) >= MaxPages {
		clear(c.pages)
		// Not reused: pages of the run being kept stay in the map.
		c.used = nil
	}
	c.pages[pg] = p
}

// Clear drops every page.
func (c *Cache) Clear() {
	clear(c.pages)
	for _, b := range c.used {
		k := len(b) / PageSize
		c.free[k] = append(c.free[k], b)
	}
	c.used = c.used[:0]
}

// Drop drops the pages that [addr, addr+n) touches (after a write).
func (c *Cache) Drop(addr uint64, n int) {
	for pg := addr &^ (PageSize - 1); pg < addr+uint64(n); pg += PageSize {
		delete(c.pages, pg)
		if pg+PageSize < pg {
			break
		}
	}
}

// Len is the number of cached pages.
func (c *Cache) Len() int { return len(c.pages) }

// ThreadPointer returns the thread pointer of the thread with kernel id
// tid among ths: an error wrapping target.ErrNoThread if it is not there,
// target.ErrUnsupported if its pointer is unknown (0).
func ThreadPointer(ths []target.Thread, tid uint64) (uint64, error) {
	for _, th := range ths {
		if th.ID == tid {
			if th.Pointer == 0 {
				return 0, fmt.Errorf("thread %d: thread pointer unknown: %w", tid, target.ErrUnsupported)
			}
			return th.Pointer, nil
		}
	}
	return 0, fmt.Errorf("thread %d: %w", tid, target.ErrNoThread)
}
