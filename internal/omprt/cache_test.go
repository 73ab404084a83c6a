package omprt_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/omprt"
)

// Goroutines asking for many keys in different orders (past the entries
// a Cache allocates at once, and switching the record it remembers last)
// each get the one record of every key, decoded once.
func TestCacheManyKeys(t *testing.T) {
	const keys = 300
	var c omprt.Cache[int, *int]
	c.Reserve(keys / 2)
	var mu sync.Mutex
	decoded := map[int]int{}
	decode := func(k int) *int {
		mu.Lock()
		decoded[k]++
		mu.Unlock()
		v := k * 3
		return &v
	}
	got := make([][]*int, 4)
	var wg sync.WaitGroup
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[g] = make([]*int, keys)
			for i := range keys {
				k := i
				if g%2 == 1 {
					k = keys - 1 - i
				}
				got[g][k] = c.Get(k, decode)
				assert.Same(t, got[g][k], c.Get(k, decode), "asked again at once")
			}
		}()
	}
	wg.Wait()
	for k := range keys {
		require.NotNil(t, got[0][k])
		assert.Equal(t, k*3, *got[0][k])
		for g := range got {
			assert.Same(t, got[0][k], got[g][k], "key %d", k)
		}
		v, ok := c.Load(k)
		assert.True(t, ok)
		assert.Same(t, got[0][k], v)
	}
	_, ok := c.Load(keys)
	assert.False(t, ok)
	// The record of a key decoded by two goroutines at once is the first
	// stored; decoding more than once is allowed, but not per Get.
	for k, n := range decoded {
		assert.LessOrEqual(t, n, len(got), "key %d", k)
	}
}
