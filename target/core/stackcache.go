package core

import "sync"

// stackPages caches whole pages of the core's memory for unwinding: a walk
// reads a few words of each frame, all from the same one or two stack
// pages, and each read of the core is a system call. The cache is bounded
// (it starts over when full); a page that cannot be read whole is read
// word by word, uncached.
type stackPages struct {
	mu    sync.Mutex
	pages map[uint64][]byte // nil value: not readable whole
}

const (
	stackPageSize = 4096
	maxStackPages = 1024 // 4 MiB
)

// cachedReader reads c's memory through its stack page cache.
type cachedReader struct{ c *Core }

func (r cachedReader) ReadMemory(buf []byte, addr uint64) error {
	c := r.c
	pg := addr &^ (stackPageSize - 1)
	off := addr - pg
	if off+uint64(len(buf)) > stackPageSize || addr+uint64(len(buf)) < addr {
		return c.mem.ReadMemory(buf, addr)
	}
	c.stack.mu.Lock()
	p, ok := c.stack.pages[pg]
	c.stack.mu.Unlock()
	if !ok {
		p = make([]byte, stackPageSize)
		if err := c.mem.ReadMemory(p, pg); err != nil {
			p = nil
		}
		c.stack.mu.Lock()
		if c.stack.pages == nil || len(c.stack.pages) >= maxStackPages {
			c.stack.pages = make(map[uint64][]byte)
		}
		c.stack.pages[pg] = p
		c.stack.mu.Unlock()
	}
	if p == nil {
		return c.mem.ReadMemory(buf, addr)
	}
	copy(buf, p[off:])
	return nil
}
