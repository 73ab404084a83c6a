package core

import "sync"

// stackPages caches blocks of the core's memory for unwinding: a walk reads
// a few words of each frame, all from the same few blocks of the thread's
// stack, and each read of the core is a system call. The cache is bounded
// with two generations: when the young one is full it becomes the old one
// and the previous old one is dropped, and a block found in the old
// generation moves back to the young one, so a working set smaller than a
// generation is never dropped. A block that cannot be read whole is read
// word by word, uncached.
type stackPages struct {
	mu         sync.Mutex
	young, old map[uint64][]byte // nil value: not readable whole
}

const (
	stackBlockSize = 1024 // a walk reads a few words per frame
	maxStackBlocks = 4096 // per generation: 4 MiB, 8 MiB in all
)

// cachedReader reads c's memory through its stack block cache.
type cachedReader struct{ c *Core }

func (r cachedReader) ReadMemory(buf []byte, addr uint64) error {
	c := r.c
	blk := addr &^ (stackBlockSize - 1)
	off := addr - blk
	if off+uint64(len(buf)) > stackBlockSize || addr+uint64(len(buf)) < addr {
		return c.mem.ReadMemory(buf, addr)
	}
	p, ok := c.stack.get(blk)
	if !ok {
		p = make([]byte, stackBlockSize)
		if err := c.mem.ReadMemory(p, blk); err != nil {
			p = nil
		}
		c.stack.put(blk, p)
	}
	if p == nil {
		return c.mem.ReadMemory(buf, addr)
	}
	copy(buf, p[off:])
	return nil
}

func (s *stackPages) get(blk uint64) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.young[blk]; ok {
		return p, true
	}
	p, ok := s.old[blk]
	if ok {
		s.putLocked(blk, p)
	}
	return p, ok
}

func (s *stackPages) put(blk uint64, p []byte) {
	s.mu.Lock()
	s.putLocked(blk, p)
	s.mu.Unlock()
}

func (s *stackPages) putLocked(blk uint64, p []byte) {
	if s.young == nil || len(s.young) >= maxStackBlocks {
		s.old, s.young = s.young, make(map[uint64][]byte)
	}
	s.young[blk] = p
}
