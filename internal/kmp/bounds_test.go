package kmp

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/internal/omprt"
)

// The kmp_info_t extents of one thread table may take half of what a stop
// may read: a table of more threads is refused before any of them is
// read, naming the count and the bytes.
func TestThreadTableBytes(t *testing.T) {
	const fit = 200
	s := fakeruntime.Nested(fakeruntime.Config{})
	for g := 5; g < fit; g++ {
		s.RT.NewThread(g, fakeruntime.PthreadOf(s.T.Sizes(), g), 0)
	}
	r, err := Open(s.T)
	require.NoError(t, err)
	rt := r.(*Runtime)
	ext := rt.l.thExtent
	rt.mem.Budget = int64(2 * fit * ext)
	ths, err := rt.Threads()
	require.NoError(t, err)
	assert.Len(t, ths, fit)
	assert.LessOrEqual(t, rt.mem.Used(), rt.mem.Budget)

	s.RT.NewThread(fit, fakeruntime.PthreadOf(s.T.Sizes(), fit), 0)
	rt.Refresh()
	s.T.ResetCounters()
	_, err = rt.Threads()
	assert.ErrorIs(t, err, omprt.ErrCorrupt)
	assert.ErrorContains(t, err, "__kmp_threads holds 201 threads")
	assert.Less(t, s.T.BytesRead(), int64(fit*ext), "refused before reading the threads")
}
