package core

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/target"
)

// TestThreadRegisters: every thread of a fixture's core has its registers
// in DWARF numbering, the stack pointer in its stack and the thread
// pointer as fs_base; the stack block cache reads what the core holds,
// across block boundaries and at unreadable addresses too.
func TestThreadRegisters(t *testing.T) {
	stop := fixtures.Core(t, fixtures.Nested)
	c, err := Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	ths, err := c.Threads()
	require.NoError(t, err)
	require.Len(t, ths, len(stop.Truth.Threads))
	rng := rand.New(rand.NewPCG(1, 2))
	for _, th := range ths {
		r, err := c.ThreadRegisters(th.ID)
		require.NoError(t, err)
		pc, ok := r.PC()
		require.True(t, ok)
		assert.NotZero(t, pc)
		sp, ok := r.SP()
		require.True(t, ok)
		note, ok := c.thread(th.ID)
		require.True(t, ok)
		raw := note.regs
		require.Len(t, raw, 27)
		assert.Equal(t, raw[16], pc, "rip")
		assert.Equal(t, raw[19], sp, "rsp")
		assert.Equal(t, th.Pointer, raw[21], "fs_base")
		for i := 0; i < 2000; i++ {
			addr := sp - 4096 + uint64(rng.IntN(16384))
			n := 1 + rng.IntN(16)
			want, got := make([]byte, n), make([]byte, n)
			werr := c.ReadMemory(want, addr)
			gerr := cachedReader{c}.ReadMemory(got, addr)
			require.Equal(t, werr == nil, gerr == nil, "read of %d at %#x: %v / %v", n, addr, werr, gerr)
			if werr == nil {
				require.True(t, bytes.Equal(want, got), "read of %d at %#x", n, addr)
			} else {
				assert.True(t, errors.Is(gerr, target.ErrNoMemory))
			}
		}
	}
	_, err = c.ThreadRegisters(1)
	assert.ErrorIs(t, err, target.ErrNoThread)
}
