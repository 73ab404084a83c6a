package omprt

import (
	"sync"
	"sync/atomic"
)

// Cache holds the records of one kind decoded at one stop, safe for
// concurrent use. Decoding happens outside the lock: two goroutines may
// decode the same object at once, and the first result stored wins, so
// every caller sees one record per key.
//
// The records asked for lately are remembered apart from the map: a walk
// asks for a few records many times over (a thread's task, then its
// parent, then the task again; the team every thread of a region is in),
// and such a hit costs a few atomic loads instead of a read lock and a map
// lookup.
type Cache[K comparable, V any] struct {
	mu     sync.RWMutex
	m      map[K]*cacheEntry[K, V]
	chunk  []cacheEntry[K, V] // where new entries go, never reallocated
	recent [cacheRecent]atomic.Pointer[cacheEntry[K, V]]
	next   atomic.Uint32 // the recent slot a miss replaces
}

// cacheRecent is how many records a Cache remembers as asked for lately.
const cacheRecent = 4

type cacheEntry[K comparable, V any] struct {
	k K
	v V
}

// cacheChunk is how many entries a Cache allocates at once.
const cacheChunk = 64

// Get returns the record for k, decoding it with decode on a miss.
func (c *Cache[K, V]) Get(k K, decode func(K) V) V {
	if e := c.lately(k); e != nil {
		return e.v
	}
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok {
		e = c.store(k, decode(k))
	}
	c.remember(e)
	return e.v
}

// lately returns the entry of k if it was asked for lately, else nil.
func (c *Cache[K, V]) lately(k K) *cacheEntry[K, V] {
	for i := range c.recent {
		if e := c.recent[i].Load(); e != nil && e.k == k {
			return e
		}
	}
	return nil
}

// remember makes e one of the entries asked for lately, in place of the
// one remembered longest.
func (c *Cache[K, V]) remember(e *cacheEntry[K, V]) {
	c.recent[c.next.Add(1)%cacheRecent].Store(e)
}

// store keeps v for k unless a record is there already, and returns the
// entry kept.
func (c *Cache[K, V]) store(k K, v V) *cacheEntry[K, V] {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok {
		return old
	}
	if c.m == nil {
		c.m = make(map[K]*cacheEntry[K, V])
	}
	if len(c.chunk) == cap(c.chunk) {
		c.chunk = make([]cacheEntry[K, V], 0, cacheChunk)
	}
	c.chunk = append(c.chunk, cacheEntry[K, V]{k, v})
	e := &c.chunk[len(c.chunk)-1]
	c.m[k] = e
	return e
}

// Reserve makes room for n records, before the first is stored: a stop
// that knows how many threads it has decodes about that many tasks, and
// growing the map record by record rehashes it again and again.
func (c *Cache[K, V]) Reserve(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil && n > 0 {
		c.m = make(map[K]*cacheEntry[K, V], n)
	}
}

// Load returns the record for k if it was decoded.
func (c *Cache[K, V]) Load(k K) (V, bool) {
	if e := c.lately(k); e != nil {
		return e.v, true
	}
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok {
		var zero V
		return zero, false
	}
	c.remember(e)
	return e.v, true
}

// Store keeps v for k unless a record is there already.
func (c *Cache[K, V]) Store(k K, v V) { c.store(k, v) }
