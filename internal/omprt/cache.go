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
// The record asked for last is remembered apart from the map: a walk asks
// for one record many times in a row (a task's ICVs one after the other,
// the team every thread of a region is in), and such a hit costs an
// atomic load instead of a read lock and a map lookup.
type Cache[K comparable, V any] struct {
	mu    sync.RWMutex
	m     map[K]*cacheEntry[K, V]
	chunk []cacheEntry[K, V] // where new entries go, never reallocated
	last  atomic.Pointer[cacheEntry[K, V]]
}

type cacheEntry[K comparable, V any] struct {
	k K
	v V
}

// cacheChunk is how many entries a Cache allocates at once.
const cacheChunk = 64

// Get returns the record for k, decoding it with decode on a miss.
func (c *Cache[K, V]) Get(k K, decode func(K) V) V {
	if e := c.last.Load(); e != nil && e.k == k {
		return e.v
	}
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok {
		e = c.store(k, decode(k))
	}
	c.last.Store(e)
	return e.v
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
	if e := c.last.Load(); e != nil && e.k == k {
		return e.v, true
	}
	c.mu.RLock()
	e, ok := c.m[k]
	c.mu.RUnlock()
	if !ok {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Store keeps v for k unless a record is there already.
func (c *Cache[K, V]) Store(k K, v V) { c.store(k, v) }
