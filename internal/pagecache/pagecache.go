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
}

// Read fills buf with the memory at addr, from the cache where it can.
// Pages it lacks are read whole with raw and kept; a page raw cannot read
// whole (part of it may be unmapped) is read in part, just what buf needs,
// and not kept: the error of that read is returned as is. raw must fill
// its whole buffer or fail.
func (c *Cache) Read(buf []byte, addr uint64, raw func(buf []byte, addr uint64) error) error {
	if c.pages == nil {
		c.pages = make(map[uint64][]byte)
	}
	for done := 0; done < len(buf); {
		a := addr + uint64(done)
		pg := a &^ (PageSize - 1)
		off := int(a - pg)
		n := min(PageSize-off, len(buf)-done)
		p, ok := c.pages[pg]
		if !ok {
			p = make([]byte, PageSize)
			if err := raw(p, pg); err != nil {
				if err := raw(buf[done:done+n], a); err != nil {
					return err
				}
				done += n
				continue
			}
			if len(c.pages) >= MaxPages {
				clear(c.pages)
			}
			c.pages[pg] = p
		}
		copy(buf[done:done+n], p[off:])
		done += n
	}
	return nil
}

// Clear drops every page.
func (c *Cache) Clear() { clear(c.pages) }

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
