package ompd_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fakeruntime"
)

func TestFakeSnapshot(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		_, as := fakeOpenNested(t, cfg)
		snap, err := as.Snapshot(context.Background())
		require.NoError(t, err)
		assert.Empty(t, snap.Errors)
		require.Len(t, snap.Threads, 5)
		assert.Len(t, snap.Threads[2].Parallel, 6)
		assert.Len(t, snap.Threads[2].Tasks, 8)
		assert.Equal(t, "wait_barrier_implicit_parallel", snap.Threads[3].State)
		assert.Equal(t, uint64(0xb0), snap.Threads[3].WaitID)
		assert.Equal(t, fakeruntime.LWPOf(3), snap.Threads[3].LWP)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = as.Snapshot(ctx)
		assert.ErrorIs(t, err, context.Canceled)
	})
}

// ---- robustness: corrupt runtime memory ----

// Eight goroutines walk everything at once, against one address space,
// and must all see what one walk alone sees.
func TestFakeConcurrent(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		_, as := fakeOpenNested(t, cfg)
		want := fakeWalkAll(as, 64)
		as.Refresh()
		var wg sync.WaitGroup
		results := make([][]string, 8)
		for g := range results {
			wg.Add(1)
			go func(g int) {
				defer wg.Done()
				for i := 0; i < 3; i++ {
					if g%4 == 0 {
						as.Refresh() // drop the caches under the others' feet
					}
					results[g] = fakeWalkAll(as, 64)
				}
			}(g)
		}
		wg.Wait()
		for g, got := range results {
			assert.Equal(t, want, got, "goroutine %d", g)
		}
	})
}
