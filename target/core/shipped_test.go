package core_test

import (
	"context"
	"encoding/binary"
	"path"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/internal/shipped"
	"github.com/ompd-go/ompd/internal/unwind"
	"github.com/ompd-go/ompd/target"
)

// TestShippedCores reads every real core shipped in testdata/cores
// (internal/shipped), with nothing installed, and checks what the core
// target answers against the program's truth: its threads and their
// thread pointers; each object the program loaded found in the files
// given for it, the runtime's separate debug file found next to it (its
// .gnu_debuglink) exactly when it is there; the stopper stopped in stopme,
// which the program's symbols place where its registers say; every
// thread's stack unwound through the runtime's and the C library's
// call-frame information to its first frame, through main or the
// outlined function it runs, where the C library is shipped; the omp_lock_t the stopper holds, read from the core; and
// the runtime's types in its debug information exactly when that is
// there.
func TestShippedCores(t *testing.T) {
	shipped.Each(t, func(t *testing.T, c *shipped.Core, o shipped.Opening) {
		co, f := c.Open(t, o.Debug)
		ths, err := co.Threads()
		require.NoError(t, err)
		ompdtest.CheckOSThreads(t, ths, c.Truth)

		// Every object from the file given for it.
		obs, err := co.Objects()
		require.NoError(t, err)
		objects := map[string]target.Object{}
		for _, ob := range obs {
			objects[ob.Name] = ob
		}
		withLibc := false
		for name, local := range f.Map {
			ob, ok := objects[name]
			if !ok {
				continue // the path the other name of a file has
			}
			assert.Equal(t, local, ob.Path, "the file of %s", name)
			assert.NotEmpty(t, ob.BuildID, "%s", name)
			withLibc = withLibc || path.Base(name) == "libc.so.6"
			if lib := path.Base(name); lib == "libomp.so" || lib == "libgomp.so.1" {
				assert.Equal(t, o.Debug, ob.DebugFile != "", "a debug file for %s: %q (%v)", name, ob.DebugFile, ob.DebugErr)
			}
		}

		// The stopper in stopme, by its registers and the
		// program's symbols.
		stopme, err := co.LookupSymbol("stopme")
		require.NoError(t, err)
		stopper := c.Truth.Stopper()
		require.NotNil(t, stopper)
		regs, err := co.ThreadRegisters(uint64(stopper.TID))
		require.NoError(t, err)
		pc, ok := regs.PC()
		require.True(t, ok)
		loc, err := co.LocateCode(pc)
		require.NoError(t, err)
		assert.Equal(t, "stopme", loc.Function)
		assert.Equal(t, stopme, loc.Entry)

		// Every thread's stack, from its registers to its first
		// frame.
		for _, th := range c.Truth.Threads {
			st, err := unwind.Thread(context.Background(), co, uint64(th.TID), unwind.Options{})
			require.NoError(t, err)
			require.NotEmpty(t, st.Frames, "thread %d", th.TID)
			var names []string
			for _, fr := range st.Frames {
				l, err := co.LocateCode(fr.LookupPC())
				if err == nil {
					names = append(names, l.Function)
				}
			}
			if !withLibc {
				continue // the walk stops in the C library
			}
			assert.True(t, st.Complete(), "thread %d: %v (%q)", th.TID, st.End, names)
			// The initial thread's stack holds main, a
			// worker's the outlined function of its region.
			want := "main"
			if th.TID != c.Truth.PID {
				want = map[string]string{shipped.LLVM: "main.omp_outlined", shipped.GOMP: "main._omp_fn.0"}[c.Runtime]
				if th.Level == 2 && th.ThreadNum != 0 {
					want = map[string]string{shipped.LLVM: "main.omp_outlined_debug__.omp_outlined", shipped.GOMP: "main._omp_fn.1"}[c.Runtime]
				}
			}
			assert.Contains(t, names, want, "thread %d", th.TID)
		}

		// The lock the stopper holds, in the program's memory:
		// libgomp's a futex word, held; LLVM's the index of its
		// lock object in the runtime's table, shifted left.
		lock, err := fixtures.ParseHex(c.Truth.LockAddr)
		require.NoError(t, err)
		var b [4]byte
		require.NoError(t, co.ReadMemory(b[:], lock))
		word := binary.LittleEndian.Uint32(b[:])
		if c.Runtime == shipped.GOMP {
			assert.NotZero(t, word, "a held omp_lock_t")
		} else {
			assert.Zero(t, word&1, "an indirect lock's index")
		}

		// The runtime's structures, in its debug information.
		typ := map[string]string{shipped.LLVM: "kmp_info_t", shipped.GOMP: "struct gomp_thread"}[c.Runtime]
		size, err := co.TypeSize(typ)
		if o.Debug {
			require.NoError(t, err)
			assert.Positive(t, size)
		} else if len(c.DebugFiles) > 0 {
			assert.ErrorIs(t, err, target.ErrNotFound, "%s without the debug file", typ)
		}
	})
}
