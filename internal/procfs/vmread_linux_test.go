package procfs

import (
	"math/rand/v2"
	"os"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// region maps pages pages of this process's memory filled with random
// bytes, unmaps those of hole, and returns the mapping's address and a
// copy of its bytes (zero in the hole).
func region(t *testing.T, pages int, hole ...int) (uint64, []byte) {
	t.Helper()
	ps := os.Getpagesize()
	m, err := unix.Mmap(-1, 0, pages*ps, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	require.NoError(t, err)
	rng := rand.New(rand.NewPCG(1, uint64(pages)))
	for i := range m {
		m[i] = byte(rng.Uint32())
	}
	base := uint64(uintptr(unsafe.Pointer(&m[0])))
	want := make([]byte, len(m))
	copy(want, m)
	for _, h := range hole {
		clear(want[h*ps : (h+1)*ps])
		_, _, e := unix.Syscall(unix.SYS_MUNMAP, uintptr(base)+uintptr(h*ps), uintptr(ps), 0)
		require.Zero(t, e)
	}
	t.Cleanup(func() { _, _, _ = unix.Syscall(unix.SYS_MUNMAP, uintptr(base), uintptr(len(want)), 0) })
	return base, want
}

// readEach checks that ReadVectored reads what each range holds, up to
// the first that it says it did not read, and returns how many it read.
func readEach(t *testing.T, base uint64, want []byte, offs []int, size int) int {
	t.Helper()
	addrs := make([]uint64, len(offs))
	for i, o := range offs {
		addrs[i] = base + uint64(o)
	}
	buf := make([]byte, len(offs)*size)
	n, err := ReadVectored(os.Getpid(), buf, addrs, size)
	require.NoError(t, err)
	for i := range n {
		require.Equal(t, want[offs[i]:offs[i]+size], buf[i*size:(i+1)*size], "range %d at offset %#x", i, offs[i])
	}
	return n
}

// ReadVectored reads ranges next to each other, a few bytes apart, a page
// apart, overlapping, out of order and more than one call takes, each
// into its slot; the ranges a page or less apart are read as one.
func TestReadVectoredJoins(t *testing.T) {
	ps := os.Getpagesize()
	base, want := region(t, 64)
	// A team's implicit tasks: next to each other, across pages.
	var offs []int
	for i := range 100 {
		offs = append(offs, 100+i*296)
	}
	assert.Equal(t, len(offs), readEach(t, base, want, offs, 296))
	var v vec
	v.plan(make([]byte, len(offs)*296), addrsAt(base, offs), 0, 296)
	assert.Len(t, v.remote, 1, "adjacent ranges as one remote range")
	assert.Len(t, v.local, 1, "adjacent slots as one local range")

	// Gaps: a few bytes, to the next page, beyond it; overlaps; a
	// range before the previous one.
	offs = []int{0, 40, 90, ps + 10, 3*ps + 1, 3*ps + 1, 3*ps + 20, 2 * ps, 6*ps - 8, 7*ps - 30}
	assert.Equal(t, len(offs), readEach(t, base, want, offs, 32))
	v.plan(make([]byte, len(offs)*32), addrsAt(base, offs), 0, 32)
	// 0, 40, 90 and ps+10 in one; 3ps+1; 3ps+1 again and 3ps+20
	// (each overlaps the one before); 2ps (before it); 6ps-8 and 7ps-30
	// (on the page where the one before ends).
	assert.Len(t, v.remote, 6)
	touched := map[int]bool{}
	for _, o := range offs {
		touched[o/ps], touched[(o+31)/ps] = true, true
	}
	for _, r := range v.remote {
		first, last := int(uint64(r.Base)-base), int(uint64(r.Base)-base)+r.Len-1
		for pg := first / ps; pg <= last/ps; pg++ {
			assert.True(t, touched[pg], "remote range %#x-%#x reads page %d, which no range touches", first, last, pg)
		}
	}

	// More ranges than one call takes, remote and local: 3,000 ranges
	// 8 bytes apart need two local iovecs each.
	offs = offs[:0]
	for i := range 3000 {
		offs = append(offs, i*24)
	}
	assert.Equal(t, len(offs), readEach(t, base, want, offs, 16))
	offs = offs[:0]
	for i := range 3000 {
		offs = append(offs, (i%60)*ps+(i/60)*16)
	}
	assert.Equal(t, len(offs), readEach(t, base, want, offs, 16))
}

// ReadVectored stops at the first range on a page that is not mapped,
// joined to the ones before it or not, and reads nothing, with an error,
// when that is the first.
func TestReadVectoredUnmapped(t *testing.T) {
	ps := os.Getpagesize()
	base, want := region(t, 8, 4)
	for _, c := range []struct {
		offs []int
		n    int
	}{
		{[]int{0, 64, 4*ps - 64, 4*ps + 8, 5 * ps}, 3},     // joined to the hole
		{[]int{0, 2 * ps, 4*ps + 100, 5*ps + 8}, 2},        // alone
		{[]int{5 * ps, 5*ps + 64, 6 * ps, 3*ps - 8, 0}, 5}, // around it
		{[]int{4*ps - 16, 0}, 0},                           // across its start
		{[]int{4*ps + 16, 0}, -1},                          // in it
	} {
		if c.n < 0 {
			_, err := ReadVectored(os.Getpid(), make([]byte, 32), addrsAt(base, c.offs), 32)
			assert.ErrorIs(t, err, unix.EFAULT)
			continue
		}
		assert.Equal(t, c.n, readEach(t, base, want, c.offs, 32), "%#x", c.offs)
	}
}

func addrsAt(base uint64, offs []int) []uint64 {
	a := make([]uint64, len(offs))
	for i, o := range offs {
		a[i] = base + uint64(o)
	}
	return a
}
