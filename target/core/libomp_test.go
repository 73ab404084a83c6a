package core

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestLibompCore reads a core of an OpenMP program running on the LLVM
// runtime that scripts/build-runtime.sh builds: __kmp_gtid is a
// general-dynamic __thread variable local to libomp.so, and the runtime's
// ompd_access__* / ompd_sizeof__* tables give offsets and sizes that the
// DWARF answers must match.
func TestLibompCore(t *testing.T) {
	stop := fixtures.Core(t, "many", "4")
	c, err := Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	for _, w := range c.Warnings() {
		t.Logf("warning: %s", w)
	}

	var libomp string
	for _, o := range objectsOf(t, c) {
		if filepath.Base(o.Path) == "libomp.so" || strings.HasPrefix(filepath.Base(o.Path), "libomp.so.") {
			libomp = o.Path
		}
	}
	require.NotEmpty(t, libomp, "objects: %+v", objectsOf(t, c))

	u64 := func(addr uint64) uint64 {
		var b [8]byte
		require.NoError(t, c.ReadMemory(b[:], addr))
		return binary.LittleEndian.Uint64(b[:])
	}

	// The runtime's own offset and size tables against DWARF.
	f, err := elf.Open(libomp)
	require.NoError(t, err)
	defer f.Close()
	syms, err := f.Symbols()
	require.NoError(t, err)
	checked := 0
	for _, s := range syms {
		switch {
		case strings.HasPrefix(s.Name, "ompd_access__"):
			typ, field, ok := strings.Cut(strings.TrimPrefix(s.Name, "ompd_access__"), "__")
			require.True(t, ok, s.Name)
			addr, err := c.LookupSymbol(s.Name)
			require.NoError(t, err, s.Name)
			got, err := c.FieldOffset(typ, field)
			if assert.NoError(t, err, "%s.%s", typ, field) {
				assert.Equal(t, u64(addr), got, "%s.%s", typ, field)
				checked++
			}
		case strings.HasPrefix(s.Name, "ompd_sizeof__") && !strings.Contains(strings.TrimPrefix(s.Name, "ompd_sizeof__"), "__"):
			typ := strings.TrimPrefix(s.Name, "ompd_sizeof__")
			addr, err := c.LookupSymbol(s.Name)
			require.NoError(t, err, s.Name)
			got, err := c.TypeSize(typ)
			if err != nil {
				t.Logf("sizeof(%s): %v", typ, err) // e.g. a variable, not a type
				continue
			}
			assert.Equal(t, u64(addr), got, "sizeof(%s)", typ)
			checked++
		}
	}
	assert.Greater(t, checked, 40)

	// __kmp_gtid of every thread, and the runtime's record of the thread.
	kmpThreads, err := c.LookupSymbol("__kmp_threads")
	require.NoError(t, err)
	threadsArr := u64(kmpThreads)
	tidOff, err := c.FieldOffset("kmp_info_t", "th.th_info.ds.ds_tid")
	require.NoError(t, err)
	selfOff, err := c.FieldOffset("kmp_info_t", "th.th_info.ds.ds_thread")
	require.NoError(t, err)
	ths, err := c.Threads()
	require.NoError(t, err)
	pointers := make(map[uint64]uint64)
	for _, th := range ths {
		pointers[th.ID] = th.Pointer
	}
	seen := make(map[int32]bool)
	require.NotEmpty(t, stop.Truth.Threads)
	for _, tr := range stop.Truth.Threads {
		tid := uint64(tr.TID)
		self, err := strconv.ParseUint(tr.Pthread, 0, 64)
		require.NoError(t, err)
		assert.Equal(t, self, pointers[tid], "fs_base of %d", tid)

		addr, err := c.LookupThreadLocal(tid, "__kmp_gtid")
		require.NoError(t, err, "thread %d", tid)
		var b [4]byte
		require.NoError(t, c.ReadMemory(b[:], addr))
		gtid := int32(binary.LittleEndian.Uint32(b[:]))
		require.GreaterOrEqual(t, gtid, int32(0), "thread %d", tid)
		assert.False(t, seen[gtid], "gtid %d twice", gtid)
		seen[gtid] = true

		info := u64(threadsArr + uint64(gtid)*8)
		require.NotZero(t, info)
		require.NoError(t, c.ReadMemory(b[:], info+tidOff))
		assert.EqualValues(t, tr.ThreadNum, int32(binary.LittleEndian.Uint32(b[:])), "ds_tid of thread %d", tid)
		assert.Equal(t, self, u64(info+selfOff), "ds_thread of thread %d", tid)
	}
}

// TestGlibcThreads checks objfile's walk of glibc's thread lists (what
// target/delve uses instead of every thread's registers) against the
// registers the core recorded: every thread's struct pthread is its
// fs_base.
func TestGlibcThreads(t *testing.T) {
	for _, n := range []string{"4", "64"} {
		t.Run(n, func(t *testing.T) {
			stop := fixtures.Core(t, "many", n)
			c, err := Open(context.Background(), stop.Exe, stop.Core)
			require.NoError(t, err)
			defer c.Close()
			list, err := c.set.GlibcThreads(c.mem, 1<<16)
			require.NoError(t, err)
			got := list.Threads
			want := map[uint64]uint64{}
			for _, th := range c.d.threads {
				want[th.tid] = th.tp
			}
			assert.Equal(t, want, got)
			assert.Len(t, got, len(stop.Truth.Threads))
			for tid, pd := range got {
				var b [4]byte
				require.NoError(t, c.ReadMemory(b[:], pd+list.TIDOffset))
				assert.EqualValues(t, tid, binary.LittleEndian.Uint32(b[:]))
			}

			_, err = c.set.GlibcThreads(c.mem, 2)
			assert.ErrorContains(t, err, "more than 2 entries")
		})
	}
}
