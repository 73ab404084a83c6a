package gomp_test

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/gomp"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target/core"
)

// patchCore is a real core with some of its memory replaced.
type patchCore struct {
	*core.Core
	patches []memPatch
}

type memPatch struct {
	addr uint64
	data []byte
}

func (c *patchCore) ReadMemory(buf []byte, addr uint64) error {
	if err := c.Core.ReadMemory(buf, addr); err != nil {
		return err
	}
	end := addr + uint64(len(buf))
	for _, p := range c.patches {
		if lo, hi := max(addr, p.addr), min(end, p.addr+uint64(len(p.data))); lo < hi {
			copy(buf[lo-addr:hi-addr], p.data[lo-p.addr:hi-p.addr])
		}
	}
	return nil
}

// OMP_PLACES is read within bounds of what libgomp allows: the size of a
// cpu set, the bytes of all sets, and the length of the text, each an
// ErrCorrupt naming the variables when a real core's are corrupted.
func TestPlacesBounds(t *testing.T) {
	stop := fixtures.CoreWith(t, fixtures.GompRuntime(t, fixtures.GompVersions[1]), fixtures.ICVs)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	places := func(patches ...memPatch) (string, error) {
		r, err := gomp.Open(&patchCore{Core: c, patches: patches})
		require.NoError(t, err)
		vars, err := r.DisplayControlVars()
		if err != nil {
			return "", err
		}
		for _, v := range vars {
			if v.Name == "OMP_PLACES" {
				return v.Value, nil
			}
		}
		t.Fatal("no OMP_PLACES")
		return "", nil
	}
	clean, err := places()
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(clean, "{"), "the fixture binds threads, so libgomp made places: %q", clean)

	le := binary.LittleEndian
	sym := func(name string) uint64 {
		a, err := c.LookupSymbol(name)
		require.NoError(t, err, name)
		return a
	}
	word := func(name string, v uint64) memPatch { return memPatch{sym(name), le.AppendUint64(nil, v)} }
	var b [8]byte
	require.NoError(t, c.ReadMemory(b[:], sym("gomp_places_list")))
	list := le.Uint64(b[:])
	require.NoError(t, c.ReadMemory(b[:], list))
	set0 := le.Uint64(b[:])

	for _, tc := range []struct {
		name    string
		patches []memPatch
		msg     string
	}{
		{"a cpu set of 8193 bytes", []memPatch{word("gomp_cpuset_size", 8193)}, "gomp_places_list_len"},
		{"64 MiB of sets", []memPatch{word("gomp_cpuset_size", 8192), word("gomp_places_list_len", 8192)}, "8192 places of gomp_cpuset_size 8192 bytes"},
		{"text past 1 MiB", func() []memPatch {
			// Eight places, each the first place's set grown to 8192
			// bytes of every other CPU: 32768 ranges a place.
			// (The list may lie within the grown set: its patches last.)
			ps := []memPatch{word("gomp_cpuset_size", 8192), word("gomp_places_list_len", 8),
				{set0, []byte(strings.Repeat("\x55", 8192))}}
			for i := uint64(0); i < 8; i++ {
				ps = append(ps, memPatch{list + 8*i, le.AppendUint64(nil, set0)})
			}
			return ps
		}(), "longer than 1048576 bytes"},
	} {
		_, err := places(tc.patches...)
		assert.ErrorIs(t, err, omprt.ErrCorrupt, tc.name)
		assert.ErrorContains(t, err, tc.msg, tc.name)
	}
}
