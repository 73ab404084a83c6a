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

// A Set answers a type question it answered before (a size, an offset, a
// bit-field, or that the type or member is missing) with the same answer
// and without walking the DWARF again: without allocating.
func TestSetTypesCached(t *testing.T) {
	exe, l := buildTypes(t, "-gdwarf-5")
	o, err := Open(exe, 0)
	require.NoError(t, err)
	defer o.Close()
	s := NewSet(o)
	ask := func() (size, off, bit, width uint64, errs [3]error) {
		size, _ = s.TypeSize("outer_t")
		off, _ = s.FieldOffset("struct outer", "deep")
		bit, width, _ = s.BitField("outer_t", "f2")
		_, errs[0] = s.TypeSize("struct nope")
		_, errs[1] = s.FieldOffset("struct outer", "nope")
		_, _, errs[2] = s.BitField("struct nope", "a")
		return
	}
	size, off, bit, width, errs := ask()
	assert.Equal(t, l["size_outer"], size)
	assert.Equal(t, l["deep"], off)
	assert.Equal(t, l["f2"], bit)
	assert.EqualValues(t, 5, width)
	for _, err := range errs {
		assert.ErrorIs(t, err, target.ErrNotFound)
	}
	allocs := testing.AllocsPerRun(10, func() {
		size2, off2, bit2, width2, errs2 := ask()
		if size2 != size || off2 != off || bit2 != bit || width2 != width || errs2 != errs {
			t.Errorf("second answers %d %d %d %d %v, first %d %d %d %d %v", size2, off2, bit2, width2, errs2, size, off, bit, width, errs)
		}
	})
	assert.Zero(t, allocs, "allocations of questions answered before")
}
