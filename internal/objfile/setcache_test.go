package objfile

import (
	"os"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/target"
)

// A Set answers a name it found before from its cache, the same address
// from every goroutine, and keeps answering a missing name with the error.
func TestSetLookupCached(t *testing.T) {
	libc, ld := "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"
	for _, p := range []string{libc, ld} {
		if _, err := os.Stat(p); err != nil {
			fixtures.Unavailable(t, "needs glibc: %v", err)
		}
	}
	ol, err := Open(ld, 0x7f1000000000)
	require.NoError(t, err)
	oc, err := Open(libc, 0x7f0000000000)
	require.NoError(t, err)
	s := NewSet(ol, oc)
	defer s.Close()
	names := []string{"_r_debug", "malloc", "free", "pthread_create"}
	want := make([]uint64, len(names))
	for i, n := range names {
		_, sym, err := s.LookupSymbol(n)
		require.NoError(t, err, n)
		want[i] = sym.Addr
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				for i, n := range names {
					a, err := s.Lookup(n)
					assert.NoError(t, err, n)
					assert.Equal(t, want[i], a, n)
				}
				_, err := s.Lookup("ompd_go_no_such_symbol")
				assert.ErrorIs(t, err, target.ErrNotFound)
			}
		}()
	}
	wg.Wait()
}
