package pagecache

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/target"
)

// memory is mapped from 0x1000 to 0x2800: the page at 0x2000 is partly
// unmapped.
func memory(calls *int) func([]byte, uint64) error {
	return func(buf []byte, addr uint64) error {
		*calls++
		if addr < 0x1000 || addr+uint64(len(buf)) > 0x2800 {
			return errors.New("unmapped")
		}
		for i := range buf {
			buf[i] = byte(addr + uint64(i))
		}
		return nil
	}
}

func TestRead(t *testing.T) {
	var c Cache
	calls := 0
	raw := memory(&calls)
	buf := make([]byte, 0x20)
	require.NoError(t, c.Read(buf, 0x1ff0, raw))
	for i, b := range buf {
		assert.Equal(t, byte(0x1ff0+i), b)
	}
	assert.Equal(t, 1, c.Len(), "the whole page 0x1000 is kept, 0x2000 is not")
	n := calls
	require.NoError(t, c.Read(buf[:8], 0x1100, raw))
	assert.Equal(t, n, calls, "served from the cache")
	assert.Error(t, c.Read(buf, 0x27f0, raw), "past the mapping")
	c.Drop(0x1fff, 2)
	assert.Equal(t, 0, c.Len())
	require.NoError(t, c.Read(buf[:1], 0x1000, raw))
	c.Clear()
	assert.Equal(t, 0, c.Len())
}

func TestThreadPointer(t *testing.T) {
	ths := []target.Thread{{ID: 1, Pointer: 0x7000}, {ID: 2}}
	tp, err := ThreadPointer(ths, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x7000), tp)
	_, err = ThreadPointer(ths, 2)
	assert.ErrorIs(t, err, target.ErrUnsupported)
	_, err = ThreadPointer(ths, 3)
	assert.ErrorIs(t, err, target.ErrNoThread)
}

// TestReadRun checks that a read spanning uncached pages fetches them with
// one call, and that a run raw cannot read whole falls back to pages.
func TestReadRun(t *testing.T) {
	var c Cache
	calls := 0
	// Mapped: 0x1000-0x47ff (pages 0x1000-0x3000 whole, 0x4000 in part).
	raw := func(buf []byte, addr uint64) error {
		calls++
		if addr < 0x1000 || addr+uint64(len(buf)) > 0x4800 {
			return errors.New("unmapped")
		}
		for i := range buf {
			buf[i] = byte(addr + uint64(i))
		}
		return nil
	}
	check := func(buf []byte, addr uint64) {
		t.Helper()
		require.NoError(t, c.Read(buf, addr, raw))
		for i, b := range buf {
			require.Equal(t, byte(addr+uint64(i)), b, "byte %#x", addr+uint64(i))
		}
	}
	buf := make([]byte, 0x3000)
	check(buf[:0x10], 0x1ff8)
	assert.Equal(t, 1, calls, "0x1ff8-0x2007: one call for both pages")
	assert.Equal(t, 2, c.Len())
	check(buf[:0x800], 0x1400)
	assert.Equal(t, 1, calls, "served from the cache")

	// Pages 0x1000 and 0x2000 are cached: 0x3000-0x3fff is read alone,
	// as a page.
	check(buf[:0x3000], 0x1000)
	assert.Equal(t, 2, calls)
	assert.Equal(t, 3, c.Len())

	// A run into the partly mapped page fails whole, then goes page by
	// page: 0x3000 (kept), 0x4000 (in part, not kept).
	c.Clear()
	calls = 0
	check(buf[:0x1400], 0x3400)
	assert.Equal(t, 4, calls, "the run, page 0x3000, page 0x4000, its part")
	assert.Equal(t, 1, c.Len())
}

// TestReuseAfterClear checks that the buffers of one stop's runs serve the
// next stop without showing the old memory.
func TestReuseAfterClear(t *testing.T) {
	var c Cache
	gen := byte(0)
	raw := func(buf []byte, addr uint64) error {
		for i := range buf {
			buf[i] = byte(addr+uint64(i)) + gen
		}
		return nil
	}
	buf := make([]byte, 0x3000)
	for stop := range 3 {
		gen = byte(stop * 7)
		require.NoError(t, c.Read(buf, 0x10000, raw))
		require.NoError(t, c.Read(buf[:0x2000], 0x20000, raw))
		for i, b := range buf[:0x2000] {
			require.Equal(t, byte(0x20000+i)+gen, b, "stop %d byte %#x", stop, i)
		}
		require.NoError(t, c.Read(buf, 0x10000, raw))
		for i, b := range buf {
			require.Equal(t, byte(0x10000+i)+gen, b, "stop %d byte %#x", stop, i)
		}
		c.Clear()
	}
	assert.Len(t, c.free[3], 1)
	assert.Len(t, c.free[2], 1)
}

// TestReadTarget checks the answers a live target's ReadMemory gets: the
// process's liveness is asked only for a range that could be read, and
// every failure is a *target.ReadError naming the range.
func TestReadTarget(t *testing.T) {
	var c Cache
	calls, asked := 0, 0
	raw := memory(&calls)
	gone := errors.New("process gone")
	var dead error
	alive := func() error { asked++; return dead }

	require.NoError(t, c.ReadTarget(nil, 0x1000, alive, raw))
	assert.Zero(t, asked, "an empty read asks nothing")

	var re *target.ReadError
	err := c.ReadTarget(make([]byte, 0x10), ^uint64(0)-4, alive, raw)
	require.ErrorAs(t, err, &re)
	assert.ErrorIs(t, err, target.ErrNoMemory)
	assert.Equal(t, ^uint64(0)-4, re.Addr)
	assert.Zero(t, asked, "a range past the end of the address space asks nothing")

	buf := make([]byte, 8)
	require.NoError(t, c.ReadTarget(buf, 0x1100, alive, raw))
	assert.Equal(t, byte(0x00), buf[0])
	assert.Equal(t, 1, asked)

	err = c.ReadTarget(buf, 0x2900, alive, raw)
	require.ErrorAs(t, err, &re)
	assert.Equal(t, 8, re.Size)

	dead = gone
	n := calls
	err = c.ReadTarget(buf, 0x1100, alive, raw)
	require.ErrorAs(t, err, &re)
	assert.ErrorIs(t, err, gone)
	assert.Equal(t, n, calls, "a dead process is not read")
}
