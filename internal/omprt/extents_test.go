package omprt_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// ReadEach reads structures near each other with one target read through
// short gaps and the others alone, exactly, hands each out with the
// target's bytes and no room to append, and reads the structures of a run
// it cannot read one by one, so that only those on an unmapped page fail.
func TestReadEach(t *testing.T) {
	const base, size = 0x300000, 200
	const gap = page / 2 // the most ReadEach reads through
	tg, want := pokedTarget(t, base, 8, 5)
	mem := omprt.NewMemory(tg)
	// Unsorted; a null entry left alone; the second and fifth a gap
	// apart (one read, crossing pages 0-1), the fourth and sixth next to
	// each other (one read); the first alone.
	addrs := []uint64{base + 7*page + 8, base + page - 100, 0, base + 4*page + 16, base + page + 100 + gap, base + 4*page + 16 + size}
	out := make([]omprt.View, len(addrs))
	errs := make([]error, len(addrs))
	mem.ReadEach(addrs, size, "structure", out, errs)
	assert.Equal(t, int64(3), tg.Reads(), "one read per run")
	assert.Equal(t, int64(5*size+gap), tg.BytesRead(), "the structures and the gap between two")
	assert.Equal(t, int64(5*size), mem.Used(), "only the structures kept")
	for i, a := range addrs {
		require.NoError(t, errs[i])
		if a == 0 {
			assert.Nil(t, out[i].B, "null entry")
			continue
		}
		assert.Equal(t, want[a-base:a-base+size], out[i].B)
		assert.Equal(t, size, cap(out[i].B), "the caller cannot append over the next structure")
	}

	// Two structures a byte further apart: two reads.
	tg.ResetCounters()
	mem = omprt.NewMemory(tg)
	mem.ReadEach([]uint64{base + 16, base + 16 + size + gap + 1}, size, "structure", out[:2], errs[:2])
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.Equal(t, int64(2), tg.Reads())
	assert.Equal(t, int64(2*size), tg.BytesRead())
	assert.Equal(t, want[size+gap+17:2*size+gap+17], out[1].B)

	// Structures already cached are read through the cache.
	tg.ResetCounters()
	mem.ReadEach(addrs[1:2], size, "structure", out[:1], errs[:1])
	assert.Equal(t, int64(1), tg.Reads(), "not cached: ReadEach keeps no pages")
	_, err := mem.View(addrs[3], size, "structure")
	require.NoError(t, err)
	tg.ResetCounters()
	mem.ReadEach(addrs[3:4], size, "structure", out[:1], errs[:1])
	require.NoError(t, errs[0])
	assert.Equal(t, want[4*page+16:4*page+16+size], out[0].B)
	assert.Zero(t, tg.Reads(), "cached")

	// A run that ends on a page that is not mapped: each structure is
	// read alone, and only the one on that page fails.
	mem = omprt.NewMemory(tg)
	require.True(t, tg.Unmap(base))
	require.NoError(t, tg.Map(base, 5*page))
	require.NoError(t, tg.Poke(base, want[:5*page]))
	require.NoError(t, tg.Map(base+6*page, 2*page))
	require.NoError(t, tg.Poke(base+6*page, want[6*page:]))
	addrs = []uint64{base + 5*page - 3*size, base + 6*page + 8, base + 5*page - size/2}
	mem.ReadEach(addrs, size, "structure", out[:3], errs[:3])
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.Equal(t, want[5*page-3*size:5*page-2*size], out[0].B)
	assert.Equal(t, want[6*page+8:6*page+8+size], out[1].B)
	assert.ErrorIs(t, errs[2], omprt.ErrReadFailed, "on the unmapped page")
	assert.ErrorContains(t, errs[2], "structure at 0x")

	// The extents kept count against the stop's budget; past it, the
	// structures are read one by one until it is used up.
	addrs = addrs[:2]
	mem = omprt.NewMemory(tg)
	mem.Budget = size
	mem.ReadEach(addrs, size, "structure", out[:2], errs[:2])
	require.NoError(t, errs[0], "read alone, exactly")
	assert.ErrorIs(t, errs[1], omprt.ErrStopBudget)
	mem = omprt.NewMemory(tg)
	mem.Budget = 2 * size
	mem.ReadEach(addrs, size, "structure", out[:2], errs[:2])
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.Equal(t, int64(2*size), mem.Used())
}

// Structures that follow each other in an array are read with one read
// per maxRunPages pages (64), however many there are, and the same
// structure listed twice is read once.
func TestReadEachArray(t *testing.T) {
	const base, size, n = 0x500000, 320, 2000
	tg, want := pokedTarget(t, base, 160, 7)
	mem := omprt.NewMemory(tg)
	addrs := make([]uint64, n+1)
	for i := range n {
		addrs[i] = base + uint64(n-1-i)*size
	}
	addrs[n] = addrs[5]
	out := make([]omprt.View, len(addrs))
	errs := make([]error, len(addrs))
	mem.ReadEach(addrs, size, "task", out, errs)
	assert.Equal(t, int64((n*size+64*page-1)/(64*page)), tg.Reads())
	assert.Equal(t, int64(n*size), tg.BytesRead())
	for i, a := range addrs {
		require.NoError(t, errs[i])
		assert.Equal(t, want[a-base:a-base+size], out[i].B, "%#x", a)
	}
}

// A structure in the top page of the address space (a corrupt pointer)
// gives an error, and no loop past the last page.
func TestReadEachTopPage(t *testing.T) {
	tg := fakeruntime.NewTarget(fakeruntime.Config{})
	mem := omprt.NewMemory(tg)
	top := ^uint64(0) &^ (page - 1)
	addrs := []uint64{top + 16, top, top - page}
	out := make([]omprt.View, len(addrs))
	errs := make([]error, len(addrs))
	done := make(chan struct{})
	go func() {
		defer close(done)
		mem.ReadEach(addrs, 584, "structure", out, errs)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("ReadEach of the top page did not return")
	}
	for i := range addrs {
		assert.Error(t, errs[i], "%#x", addrs[i])
	}
}

// vecTarget reads ranges at once as a target.VectorReader does, stopping
// at the first it cannot read; unsupported makes it refuse all.
type vecTarget struct {
	*fakeruntime.Target
	calls       int
	unsupported bool
}

func (v *vecTarget) ReadMemoryVec(buf []byte, addrs []uint64, size int) (int, error) {
	v.calls++
	if v.unsupported {
		return 0, fmt.Errorf("no: %w", target.ErrUnsupported)
	}
	for i, a := range addrs {
		if _, err := v.Peek(a, size); err != nil {
			return i, nil
		}
		b, _ := v.Peek(a, size)
		copy(buf[i*size:], b)
	}
	return len(addrs), nil
}

// A target that reads many ranges at once reads the structures with one
// call and no pages around them; the structures after one it cannot read
// are read as runs, and only the unreadable one fails.
func TestReadEachVector(t *testing.T) {
	const base, size = 0x400000, 200
	tg := fakeruntime.NewTarget(fakeruntime.Config{})
	require.NoError(t, tg.Map(base, 3*page))
	require.NoError(t, tg.Map(base+4*page, 4*page))
	want := make([]byte, 8*page)
	for i := range want {
		want[i] = byte(i*3 + i/page)
	}
	require.NoError(t, tg.Poke(base, want[:3*page]))
	require.NoError(t, tg.Poke(base+4*page, want[4*page:]))
	vt := &vecTarget{Target: tg}
	mem := omprt.NewMemory(vt)
	addrs := []uint64{base + 6*page + 8, base + page - 100, base + 2*page}
	out := make([]omprt.View, 4)
	errs := make([]error, 4)
	mem.ReadEach(addrs, size, "structure", out[:3], errs[:3])
	assert.Equal(t, 1, vt.calls)
	assert.Zero(t, tg.Reads(), "no other read")
	for i, a := range addrs {
		require.NoError(t, errs[i])
		assert.Equal(t, want[a-base:a-base+size], out[i].B)
		assert.Equal(t, size, cap(out[i].B))
	}
	assert.Equal(t, int64(3*size), mem.Used(), "the structures count against the budget, no more")

	// Page 3 is not mapped.
	vt.calls = 0
	mem = omprt.NewMemory(vt)
	addrs = []uint64{base + 5*page, base + 3*page + 8, base + 16, base + 6*page}
	mem.ReadEach(addrs, size, "structure", out, errs)
	assert.Equal(t, 1, vt.calls)
	assert.ErrorIs(t, errs[1], omprt.ErrReadFailed)
	for _, i := range []int{0, 2, 3} {
		require.NoError(t, errs[i], "%#x", addrs[i])
		assert.Equal(t, want[addrs[i]-base:addrs[i]-base+size], out[i].B)
	}

	// A wrapper around a target that reads no ranges at once.
	vt.unsupported = true
	tg.ResetCounters()
	mem = omprt.NewMemory(vt)
	addrs = []uint64{base + 16, base + 2*page}
	mem.ReadEach(addrs, size, "structure", out[:2], errs[:2])
	require.NoError(t, errs[0])
	require.NoError(t, errs[1])
	assert.Equal(t, want[2*page:2*page+size], out[1].B)
	assert.Equal(t, int64(2), tg.Reads(), "each alone: more than a gap apart")
	assert.Equal(t, int64(2*size), mem.Used())
}

// ReadEachFunc hands each structure to its decoder as ReadEach would give
// it, the unreadable ones with their error, and no null entry; a second
// call (which may reuse the first one's buffer) reads its own bytes.
func TestReadEachFunc(t *testing.T) {
	const base, size = 0x300000, 200
	tg, want := pokedTarget(t, base, 4, 7)
	mem := omprt.NewMemory(tg)
	addrs := []uint64{base + 3*page, 0, base + 16, base + 16 + size, base + 8*page}
	got := map[int][]byte{}
	mem.ReadEachFunc(addrs, size, "structure", func(i int, v omprt.View, err error) {
		if addrs[i] == base+8*page {
			assert.Error(t, err, "unmapped")
			return
		}
		require.NoError(t, err)
		got[i] = append([]byte(nil), v.B...)
	})
	require.Len(t, got, 3, "the null entry is not decoded")
	for i, b := range got {
		assert.Equal(t, want[addrs[i]-base:addrs[i]-base+size], b, "structure %d", i)
	}
	n := 0
	omprt.NewMemory(tg).ReadEachFunc(addrs[:1], size, "structure", func(i int, v omprt.View, err error) {
		require.NoError(t, err)
		assert.Equal(t, want[3*page:3*page+size], v.B)
		n++
	})
	assert.Equal(t, 1, n)
}

// pokedTarget returns a fake target with pages pages mapped at base and
// the bytes written there: byte i is i*mul + i/page, so that every offset
// and page tells itself apart.
func pokedTarget(t *testing.T, base uint64, pages, mul int) (*fakeruntime.Target, []byte) {
	t.Helper()
	tg := fakeruntime.NewTarget(fakeruntime.Config{})
	require.NoError(t, tg.Map(base, pages*page))
	want := make([]byte, pages*page)
	for i := range want {
		want[i] = byte(i*mul + i/page)
	}
	require.NoError(t, tg.Poke(base, want))
	return tg, want
}
