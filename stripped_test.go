package ompd_test

import (
	"context"
	enchex "encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
	"github.com/ompd-go/ompd/target/debuginfod"
)

// These tests recreate what users of a distribution have: the OpenMP
// runtime stripped (no .symtab, no DWARF: the ompd_* and __kmp_* symbols
// are local and gone) and its debug information shipped apart, under a
// debug directory or on a debuginfod server.

// strippedStop is a fixture stopped with the stripped copy of a runtime
// variant, and that copy.
func strippedStop(t *testing.T, v fixtures.Variant, name string) (*fixtures.Stop, *fixtures.StrippedRuntime) {
	t.Helper()
	s := fixtures.StripRuntime(t, fixtures.RuntimeVariant(t, v))
	return fixtures.CoreWith(t, s.RuntimeInfo, name), s
}

// openStripped opens the core with the options and its address space.
func openStripped(t *testing.T, stop *fixtures.Stop, opts ...core.Option) (*core.Core, *ompd.AddressSpace, error) {
	t.Helper()
	c, err := core.Open(context.Background(), stop.Exe, stop.Core, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	as, err := ompd.Open(c)
	if err == nil {
		t.Cleanup(func() { as.Close() })
	}
	return c, as, err
}

// dbgSymlink makes path a symbolic link to target, creating its directory.
func dbgSymlink(t *testing.T, target, path string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.Symlink(target, path))
}

// libompInfo returns the core's object entry of the stripped runtime.
func libompInfo(t *testing.T, c *core.Core, s *fixtures.StrippedRuntime) target.Object {
	t.Helper()
	for _, o := range ompdtest.Objects(t, c) {
		if o.Path == s.LibOMP {
			return o
		}
	}
	t.Fatalf("the core has no object %s: %+v", s.LibOMP, ompdtest.Objects(t, c))
	return target.Object{}
}

// TestStrippedRuntimeByBuildID: the debug file found by build-id under a
// debug directory, as a -dbgsym package installs it; every answer is the
// same as with the unstripped runtime. Without it, the runtime is read
// through the table of its release, every answer right too.
func TestStrippedRuntimeByBuildID(t *testing.T) {
	for _, name := range []string{fixtures.Nested, fixtures.Serialized, fixtures.Tasks, fixtures.ICVs} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			stop, s := strippedStop(t, fixtures.VariantOMPD, name)
			dir := t.TempDir()
			dbgSymlink(t, s.DebugFile, s.BuildIDPath(dir))

			// Without the debug directory, the runtime is read as the
			// known release it is a build of (another build than the
			// table's: its own ompd_init and its threads confirm it).
			c0, as0, err := openStripped(t, stop, core.WithDebugDirs())
			require.NoError(t, err)
			assert.Equal(t, ompd.LayoutKnownTable, as0.Runtime().Layout)
			assert.Equal(t, "19.1.7", as0.Runtime().Version)
			ompdtest.CheckTruth(t, openChecked(t, c0), stop.Truth)

			c, as, err := openStripped(t, stop, core.WithDebugDirs(dir))
			require.NoError(t, err)
			assert.Equal(t, ompd.LayoutOMPDTables, as.Runtime().Layout)
			ompdtest.CheckTruth(t, as, stop.Truth)

			info := libompInfo(t, c, s)
			assert.Equal(t, s.BuildIDPath(dir), info.DebugFile)
			assert.NoError(t, info.DebugErr)
			// The breakpoint functions are local symbols: they come
			// from the debug file, and name their addresses.
			bps, err := as.Breakpoints()
			require.NoError(t, err)
			sym, ok := as.Target().(target.Symbolizer)
			require.True(t, ok)
			for bp := range bps.All() {
				got, ok := sym.SymbolAt(bp.Addr)
				assert.True(t, ok, bp.Name)
				assert.Equal(t, bp.Name, got)
			}
		})
	}
}

// TestStrippedRuntimeByDebugLink: the debug file found through the
// library's .gnu_debuglink, under a global debug directory (as
// /usr/lib/debug/<the library's directory>/<link>) and next to the
// library.
func TestStrippedRuntimeByDebugLink(t *testing.T) {
	stop, s := strippedStop(t, fixtures.VariantOMPD, fixtures.Nested)
	t.Run("global", func(t *testing.T) {
		dir := t.TempDir()
		want := filepath.Join(dir, s.LibDir, s.DebugLink)
		dbgSymlink(t, s.DebugFile, want)
		c, as, err := openStripped(t, stop, core.WithDebugDirs(dir))
		require.NoError(t, err)
		ompdtest.CheckTruth(t, as, stop.Truth)
		assert.Equal(t, want, libompInfo(t, c, s).DebugFile)
	})
	t.Run("next-to-library", func(t *testing.T) {
		// The library at another place (as a sysroot or a file map
		// gives it), its debug file beside it.
		dir := t.TempDir()
		lib := filepath.Join(dir, "libomp.so")
		dbgSymlink(t, s.LibOMP, lib)
		dbgSymlink(t, s.DebugFile, filepath.Join(dir, s.DebugLink))
		c, as, err := openStripped(t, stop, core.WithDebugDirs(), core.WithFileMap(map[string]string{s.LibOMP: lib}))
		require.NoError(t, err)
		ompdtest.CheckTruth(t, as, stop.Truth)
		var found bool
		for _, o := range ompdtest.Objects(t, c) {
			if o.Path == lib {
				found = true
				assert.Equal(t, filepath.Join(dir, s.DebugLink), o.DebugFile)
			}
		}
		assert.True(t, found, "the core loaded %s", lib)
	})
}

// TestStrippedRuntimeMismatch: a debug file of another build at the
// build-id's place is refused, and the object's debug error says so (the
// runtime is read without it, through its release's table).
func TestStrippedRuntimeMismatch(t *testing.T) {
	stop, s := strippedStop(t, fixtures.VariantOMPD, fixtures.Nested)
	other := fixtures.StripRuntime(t, fixtures.RuntimeVariant(t, fixtures.VariantNoOMPD))
	require.NotEqual(t, s.BuildID, other.BuildID)
	dir := t.TempDir()
	dbgSymlink(t, other.DebugFile, s.BuildIDPath(dir))
	c, as, err := openStripped(t, stop, core.WithDebugDirs(dir))
	require.NoError(t, err)
	assert.Equal(t, ompd.LayoutKnownTable, as.Runtime().Layout, "read without the refused file")
	info := libompInfo(t, c, s)
	assert.Empty(t, info.DebugFile)
	assert.ErrorIs(t, info.DebugErr, target.ErrDebugMismatch)
	assert.Contains(t, info.DebugErr.Error(), enchex.EncodeToString(other.BuildID), "the error names the refused file's build-id")
}

// debuginfodServer serves the debug files of the given build-ids as a
// debuginfod server does (GET /buildid/HEX/debuginfo), 404 for others, and
// counts the requests for each build-id.
type debuginfodServer struct {
	*httptest.Server
	mu    sync.Mutex
	files map[string]string
	hits  map[string]int
}

func newDebuginfod(t *testing.T, files map[string]string) *debuginfodServer {
	d := &debuginfodServer{files: files, hits: map[string]int{}}
	d.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := strings.CutPrefix(r.URL.Path, "/buildid/")
		id, ok2 := strings.CutSuffix(id, "/debuginfo")
		d.mu.Lock()
		d.hits[id]++
		path, found := d.files[id]
		d.mu.Unlock()
		if !ok || !ok2 || !found {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, path)
	}))
	t.Cleanup(d.Close)
	return d
}

func (d *debuginfodServer) count(id []byte) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hits[enchex.EncodeToString(id)]
}

// TestStrippedRuntimeDebuginfod: the debug file fetched from a debuginfod
// server (a local test server), once, then from the client's cache.
func TestStrippedRuntimeDebuginfod(t *testing.T) {
	stop, s := strippedStop(t, fixtures.VariantOMPD, fixtures.Tasks)
	srv := newDebuginfod(t, map[string]string{enchex.EncodeToString(s.BuildID): s.DebugFile})
	client := &debuginfod.Client{URLs: []string{srv.URL}, CacheDir: t.TempDir(), Timeout: 30 * time.Second}

	c, as, err := openStripped(t, stop, core.WithDebugDirs(), core.WithDebuginfod(client))
	require.NoError(t, err)
	ompdtest.CheckTruth(t, as, stop.Truth)
	assert.Equal(t, 1, srv.count(s.BuildID), "one download")
	info := libompInfo(t, c, s)
	assert.True(t, strings.HasPrefix(info.DebugFile, client.CacheDir), "%s in the client's cache", info.DebugFile)

	// A second core opened with the same client uses the cache.
	_, as2, err := openStripped(t, stop, core.WithDebugDirs(), core.WithDebuginfod(client))
	require.NoError(t, err)
	_, err = ompd.Collect(as2.Threads())
	require.NoError(t, err)
	assert.Equal(t, 1, srv.count(s.BuildID), "the second open reads the cache")

	// The environment's way: DEBUGINFOD_URLS and DEBUGINFOD_CACHE_PATH.
	t.Setenv("DEBUGINFOD_URLS", srv.URL)
	t.Setenv("DEBUGINFOD_CACHE_PATH", t.TempDir())
	_, as3, err := openStripped(t, stop, core.WithDebugDirs(), core.WithDebuginfodFromEnv())
	require.NoError(t, err)
	_, err = ompd.Collect(as3.Threads())
	require.NoError(t, err)
	assert.Equal(t, 2, srv.count(s.BuildID), "a new cache downloads again")
}

// TestStrippedRuntimeDebuginfodFails: a server without the file (404), and
// one that never answers (cut by the client's timeout), give a clear debug
// error in time, not a hang; the runtime is read through its release's
// table all the same.
func TestStrippedRuntimeDebuginfodFails(t *testing.T) {
	stop, s := strippedStop(t, fixtures.VariantOMPD, fixtures.Nested)
	t.Run("404", func(t *testing.T) {
		srv := newDebuginfod(t, nil)
		client := &debuginfod.Client{URLs: []string{srv.URL}, CacheDir: t.TempDir(), Timeout: 30 * time.Second}
		c, as, err := openStripped(t, stop, core.WithDebugDirs(), core.WithDebuginfod(client))
		require.NoError(t, err, "read through the known table")
		assert.Equal(t, ompd.LayoutKnownTable, as.Runtime().Layout)
		derr := libompInfo(t, c, s).DebugErr
		t.Logf("server answering 404: %v", derr)
		assert.ErrorIs(t, derr, target.ErrNoDebugFile)
		assert.Contains(t, derr.Error(), "404")
		assert.Equal(t, 1, srv.count(s.BuildID), "asked once")
	})
	t.Run("hang", func(t *testing.T) {
		release := make(chan struct{})
		var asked atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			asked.Add(1)
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}))
		t.Cleanup(srv.Close)
		t.Cleanup(func() { close(release) })
		client := &debuginfod.Client{URLs: []string{srv.URL}, CacheDir: t.TempDir(), Timeout: 300 * time.Millisecond}
		start := time.Now()
		c, as, err := openStripped(t, stop, core.WithDebugDirs(), core.WithDebuginfod(client))
		elapsed := time.Since(start)
		require.NoError(t, err, "read through the known table")
		assert.Equal(t, ompd.LayoutKnownTable, as.Runtime().Layout)
		assert.Less(t, elapsed, 30*time.Second, "each stripped object waits one timeout at most")
		assert.Positive(t, asked.Load())
		derr := libompInfo(t, c, s).DebugErr
		t.Logf("server not answering (%v): %v", elapsed, derr)
		assert.Contains(t, derr.Error(), "debuginfod")
		assert.ErrorIs(t, derr, target.ErrDebugServer)
		assert.False(t, errors.Is(derr, target.ErrNoDebugFile), "a server failing is not a missing file: %v", derr)
	})
}

// TestStrippedNoOMPDRuntime: a runtime without OMPD support, stripped, read
// through the DWARF of its separate debug file.
func TestStrippedNoOMPDRuntime(t *testing.T) {
	stop, s := strippedStop(t, fixtures.VariantNoOMPD, fixtures.Nested)
	dir := t.TempDir()
	dbgSymlink(t, s.DebugFile, s.BuildIDPath(dir))
	// Without its debug file: read as LLVM 19.1.7, through the table of
	// a build with OMPD support (the structures are the same), confirmed
	// by the threads (it has no ompd_init to check the table against).
	c0, as0, err := openStripped(t, stop, core.WithDebugDirs())
	require.NoError(t, err)
	assert.Equal(t, ompd.LayoutKnownTable, as0.Runtime().Layout)
	ompdtest.CheckStructure(t, openChecked(t, c0), stop.Truth)

	_, as, err := openStripped(t, stop, core.WithDebugDirs(dir))
	require.NoError(t, err)
	assert.Equal(t, ompd.LayoutDWARF, as.Runtime().Layout)
	ompdtest.CheckStructure(t, as, stop.Truth)
}
