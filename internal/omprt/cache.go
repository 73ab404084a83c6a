package omprt

import "sync"

// Cache holds the records of one kind decoded at one stop, safe for
// concurrent use. Decoding happens outside the lock: two goroutines may
// decode the same object at once, and the first result stored wins, so
// every caller sees one record per key.
type Cache[K comparable, V any] struct {
	mu sync.RWMutex
	m  map[K]V
}

// Get returns the record for k, decoding it with decode on a miss.
func (c *Cache[K, V]) Get(k K, decode func(K) V) V {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return v
	}
	v = decode(k)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[k]; ok {
		return old
	}
	if c.m == nil {
		c.m = make(map[K]V)
	}
	c.m[k] = v
	return v
}

// Load returns the record for k if it was decoded.
func (c *Cache[K, V]) Load(k K) (V, bool) {
	c.mu.RLock()
	v, ok := c.m[k]
	c.mu.RUnlock()
	return v, ok
}

// Store keeps v for k unless a record is there already.
func (c *Cache[K, V]) Store(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[K]V)
	}
	if _, ok := c.m[k]; !ok {
		c.m[k] = v
	}
}
