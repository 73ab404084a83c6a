package kmp

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/codescan"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

// stockCore opens the nested fixture's core on Debian's stock libomp5-13.
func stockCore(t *testing.T) (*core.Core, fixtures.RuntimeInfo) {
	t.Helper()
	info := fixtures.StockRuntime(t, 13)
	stop := fixtures.CoreWith(t, info, fixtures.Nested)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, info
}

// withReleases runs the test with the table of known releases rels.
func withReleases(t *testing.T, rels []*release) {
	t.Helper()
	saved := knownReleases
	knownReleases = rels
	t.Cleanup(func() { knownReleases = saved })
}

// clone returns a copy of the table's release major, to change.
func clone(t *testing.T, major int) *release {
	t.Helper()
	for _, r := range knownReleases {
		if r.major == major {
			c := *r
			c.ompdValues = slices.Clone(r.ompdValues)
			c.paths = map[string][]codescan.Path{}
			for k, v := range r.paths {
				c.paths[k] = v
			}
			return &c
		}
	}
	t.Fatalf("no known release %d", major)
	return nil
}

// checkRefused checks a refusal: ErrIncompatible (not ErrNoRuntime),
// naming the library and its build-id, with what would help.
func checkRefused(t *testing.T, err error, info fixtures.RuntimeInfo, says ...string) {
	t.Helper()
	require.Error(t, err)
	t.Log(err)
	assert.ErrorIs(t, err, omprt.ErrIncompatible)
	assert.NotErrorIs(t, err, omprt.ErrNoRuntime)
	msg := err.Error()
	assert.Contains(t, msg, info.Stock.BuildID)
	assert.Contains(t, msg, "libomp5-13-dbgsym", "the package with the debug file")
	assert.Contains(t, msg, "DEBUGINFOD_URLS")
	for _, s := range says {
		assert.Contains(t, msg, s)
	}
}

// A stripped runtime of a release no table knows is refused.
func TestStockUnknownRelease(t *testing.T) {
	c, info := stockCore(t)
	var others []*release
	for _, r := range knownReleases {
		if r.major != 13 {
			others = append(others, r)
		}
	}
	withReleases(t, others)
	_, err := Open(c)
	checkRefused(t, err, info, "of no release this package knows (its path says LLVM 13; known: LLVM 14.0.6", "/llvm-13/")
	assert.ErrorIs(t, err, target.ErrNotFound, "the target's lookup error, with what it searched")
}

// A table whose layout is not the one the runtime's own ompd_init stores
// is refused, naming the release and the entry.
func TestStockTableFails(t *testing.T) {
	c, info := stockCore(t)
	r := clone(t, 13)
	i := slices.Index(r.ompdEntries, "ompd_access__kmp_desc_base_t__ds_tid")
	require.GreaterOrEqual(t, i, 0)
	r.ompdValues[i] += 8
	withReleases(t, []*release{r})
	_, err := Open(c)
	checkRefused(t, err, info, "LLVM 13.0.1", "ompd_access__kmp_desc_base_t__ds_tid", "fits no known table")
}

// A table the threads contradict is refused before anything is answered:
// here one whose ompd_init cannot be found to check it against, with
// ds_thread one word off.
func TestStockConfirmation(t *testing.T) {
	c, info := stockCore(t)
	r, right := clone(t, 13), clone(t, 13)
	delete(r.paths, "ompd_init")
	i := slices.Index(r.ompdEntries, "ompd_access__kmp_desc_base_t__ds_thread")
	require.GreaterOrEqual(t, i, 0)
	r.ompdValues[i] += 8
	withReleases(t, []*release{r})
	_, err := Open(c)
	checkRefused(t, err, info, "read as LLVM 13.0.1", "is refused", "pthread")

	// The right table, without ompd_init to check against: the threads
	// confirm it.
	delete(right.paths, "ompd_init")
	withReleases(t, []*release{right})
	rt, err := Open(c)
	require.NoError(t, err)
	ths, err := rt.Threads()
	require.NoError(t, err)
	assert.Len(t, ths, 6)
}

// The runtime's hidden globals are found through its code: the thread
// table the same as through the runtime's own thread-local gtid, the OMPD
// tables where the runtime's ompd_init stores them.
func TestStockLookup(t *testing.T) {
	c, _ := stockCore(t)
	r, err := Open(c)
	require.NoError(t, err)
	rt := r.(*Runtime)
	require.NotNil(t, rt.stock)
	assert.Equal(t, omprt.LayoutKnownTable, rt.Info().Layout)
	assert.Equal(t, "13.0.1", rt.Info().Version)
	assert.Contains(t, rt.stock.why, "libomp5-13", "told by the build-id of Debian's package")
	for _, name := range []string{"__kmp_threads", "__kmp_threads_capacity", "ompd_state", "ompd_env_block", "__kmp_stg_table"} {
		a, err := rt.LookupHidden(name)
		require.NoError(t, err, name)
		assert.GreaterOrEqual(t, a, rt.stock.lib.base, name)
	}
	_, err = rt.LookupHidden("__kmp_no_such_global")
	assert.True(t, errors.Is(err, target.ErrNotFound))
	assert.True(t, strings.Contains(err.Error(), "knows no code that leads to it"), err)
	// A setting's print function leads to its global.
	tool, err := rt.LookupHidden("__kmp_tool")
	require.NoError(t, err)
	v, err := rt.global("__kmp_tool", 4, true)
	require.NoError(t, err)
	assert.Equal(t, int64(1), v, "OMP_TOOL is enabled by default (%#x)", tool)
}
