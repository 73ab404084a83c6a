package debuginfo

import (
	"context"
	"debug/elf"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/target/debuginfod"
)

// requireTools fails under CI=true and skips elsewhere when a tool is
// missing.
func requireTools(t *testing.T, tools ...string) {
	t.Helper()
	fixtures.RequireTool(t, tools...)
}

func run(t *testing.T, name string, args ...string) {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	require.NoError(t, err, "%s %v: %s", name, args, out)
}

// splitLib builds a shared library with a build-id, splits its debug info
// into a separate file, strips it and adds a debuglink, as distributions
// do. It returns the stripped library and the debug file.
func splitLib(t *testing.T, dir, name, body string) (lib, dbg string) {
	t.Helper()
	src := filepath.Join(dir, name+".c")
	require.NoError(t, os.WriteFile(src, []byte(body), 0o644))
	lib = filepath.Join(dir, name+".so")
	dbg = filepath.Join(dir, name+".so.debug")
	run(t, "gcc", "-g", "-shared", "-fPIC", "-Wl,--build-id", "-o", lib, src)
	run(t, "objcopy", "--only-keep-debug", lib, dbg)
	run(t, "strip", "--strip-debug", "--strip-unneeded", lib)
	run(t, "objcopy", "--add-gnu-debuglink="+dbg, lib)
	return lib, dbg
}

func openELF(t *testing.T, path string) *elf.File {
	t.Helper()
	f, err := elf.Open(path)
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

func TestFindLocal(t *testing.T) {
	requireTools(t, "gcc", "objcopy", "strip")
	dir := t.TempDir()
	lib, dbg := splitLib(t, dir, "liba", "static int hidden = 7; int get(void) { return hidden; }\n")
	f := openELF(t, lib)
	require.False(t, HasDebugInfo(f), "stripped library still has debug info")
	id := BuildID(f)
	require.NotEmpty(t, id)
	name, _, ok := DebugLink(f)
	require.True(t, ok)
	require.Equal(t, "liba.so.debug", name)
	ctx := context.Background()

	t.Run("debuglink next to the object", func(t *testing.T) {
		got, err := Find(ctx, lib, f, Options{DebugDirs: []string{}})
		require.NoError(t, err)
		require.Equal(t, dbg, got)
		require.True(t, HasDebugInfo(openELF(t, got)))
	})

	t.Run("debuglink in .debug", func(t *testing.T) {
		d2 := t.TempDir()
		lib2 := filepath.Join(d2, "liba.so")
		copyFile(t, lib, lib2)
		require.NoError(t, os.Mkdir(filepath.Join(d2, ".debug"), 0o755))
		copyFile(t, dbg, filepath.Join(d2, ".debug", "liba.so.debug"))
		got, err := Find(ctx, lib2, openELF(t, lib2), Options{DebugDirs: []string{}})
		require.NoError(t, err)
		require.Equal(t, filepath.Join(d2, ".debug", "liba.so.debug"), got)
	})

	t.Run("build-id under a debug directory", func(t *testing.T) {
		d2 := t.TempDir()
		lib2 := filepath.Join(d2, "liba.so")
		copyFile(t, lib, lib2)
		root := t.TempDir()
		h := hex.EncodeToString(id)
		want := filepath.Join(root, ".build-id", h[:2], h[2:]+".debug")
		require.NoError(t, os.MkdirAll(filepath.Dir(want), 0o755))
		copyFile(t, dbg, want)
		got, err := Find(ctx, lib2, openELF(t, lib2), Options{DebugDirs: []string{root}})
		require.NoError(t, err)
		require.Equal(t, want, got)
	})

	t.Run("debuglink under a global debug directory", func(t *testing.T) {
		d2 := t.TempDir()
		lib2 := filepath.Join(d2, "liba.so")
		copyFile(t, lib, lib2)
		root := t.TempDir()
		want := filepath.Join(root, d2, "liba.so.debug")
		require.NoError(t, os.MkdirAll(filepath.Dir(want), 0o755))
		copyFile(t, dbg, want)
		got, err := Find(ctx, lib2, openELF(t, lib2), Options{DebugDirs: []string{root}})
		require.NoError(t, err)
		require.Equal(t, want, got)
	})

	t.Run("mismatched build-id is refused", func(t *testing.T) {
		d2 := t.TempDir()
		lib2 := filepath.Join(d2, "liba.so")
		copyFile(t, lib, lib2)
		// Another build of a library with the same name, its debug
		// file put where the debuglink points.
		d3 := t.TempDir()
		_, otherDbg := splitLib(t, d3, "liba", "int get(void) { return 8; }\n")
		copyFile(t, otherDbg, filepath.Join(d2, "liba.so.debug"))
		_, err := Find(ctx, lib2, openELF(t, lib2), Options{DebugDirs: []string{}})
		require.ErrorIs(t, err, ErrMismatch)
		require.Contains(t, err.Error(), "build-id")
	})

	t.Run("FIFOs and directories are skipped", func(t *testing.T) {
		d2 := t.TempDir()
		lib2 := filepath.Join(d2, "liba.so")
		copyFile(t, lib, lib2)
		require.NoError(t, syscall.Mkfifo(filepath.Join(d2, "liba.so.debug"), 0o600))
		root := t.TempDir()
		h := hex.EncodeToString(id)
		require.NoError(t, os.MkdirAll(filepath.Join(root, ".build-id", h[:2], h[2:]+".debug"), 0o755))
		done := make(chan error)
		go func() {
			_, err := Find(ctx, lib2, openELF(t, lib2), Options{DebugDirs: []string{root}})
			done <- err
		}()
		select {
		case err := <-done:
			require.ErrorIs(t, err, ErrNotFound)
			require.NotErrorIs(t, err, ErrMismatch)
			require.Contains(t, err.Error(), "not regular files")
		case <-time.After(10 * time.Second):
			t.Fatal("Find hangs on a FIFO")
		}
	})

	t.Run("nothing found", func(t *testing.T) {
		d2 := t.TempDir()
		lib2 := filepath.Join(d2, "liba.so")
		copyFile(t, lib, lib2)
		root := t.TempDir()
		_, err := Find(ctx, lib2, openELF(t, lib2), Options{DebugDirs: []string{root}})
		require.ErrorIs(t, err, ErrNotFound)
		// The error names every place searched, and that no server was
		// asked.
		h := hex.EncodeToString(id)
		for _, p := range []string{filepath.Join(root, ".build-id", h[:2], h[2:]+".debug"),
			filepath.Join(d2, "liba.so.debug"), filepath.Join(d2, ".debug", "liba.so.debug"),
			filepath.Join(root, d2, "liba.so.debug")} {
			assert.Contains(t, err.Error(), p)
		}
		assert.Contains(t, err.Error(), "no debuginfod server asked")
	})
}

func TestFindCRC(t *testing.T) {
	requireTools(t, "gcc", "objcopy", "strip")
	dir := t.TempDir()
	src := filepath.Join(dir, "b.c")
	require.NoError(t, os.WriteFile(src, []byte("int b(void) { return 1; }\n"), 0o644))
	lib := filepath.Join(dir, "libb.so")
	dbg := filepath.Join(dir, "libb.so.debug")
	run(t, "gcc", "-g", "-shared", "-fPIC", "-Wl,--build-id=none", "-o", lib, src)
	run(t, "objcopy", "--only-keep-debug", lib, dbg)
	run(t, "strip", "--strip-debug", lib)
	run(t, "objcopy", "--add-gnu-debuglink="+dbg, lib)
	f := openELF(t, lib)
	require.Empty(t, BuildID(f))
	got, err := Find(context.Background(), lib, f, Options{DebugDirs: []string{}})
	require.NoError(t, err)
	require.Equal(t, dbg, got)

	// Change the debug file: its CRC no longer matches the debuglink.
	data, err := os.ReadFile(dbg)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dbg, append(data, 0), 0o644))
	_, err = Find(context.Background(), lib, f, Options{DebugDirs: []string{}})
	require.ErrorIs(t, err, ErrMismatch)
	require.Contains(t, err.Error(), "CRC")
}

func TestDebuginfod(t *testing.T) {
	requireTools(t, "gcc", "objcopy", "strip")
	dir := t.TempDir()
	lib, dbg := splitLib(t, dir, "libc1", "int c1(void) { return 3; }\n")
	debugData, err := os.ReadFile(dbg)
	require.NoError(t, err)
	// Only the stripped library is left where the debuglink would look.
	require.NoError(t, os.Remove(dbg))
	f := openELF(t, lib)
	id := hex.EncodeToString(BuildID(f))

	var hits atomic.Int32
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/buildid/"+id+"/debuginfo" {
			http.NotFound(w, r)
			return
		}
		w.Write(debugData)
	}))
	defer good.Close()
	missing := httptest.NewServer(http.NotFoundHandler())
	defer missing.Close()
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer hang.Close()
	ctx := context.Background()

	t.Run("served after a 404 server", func(t *testing.T) {
		c := &debuginfod.Client{URLs: []string{missing.URL, good.URL}, CacheDir: t.TempDir(), Timeout: 5 * time.Second}
		got, err := Find(ctx, lib, f, Options{DebugDirs: []string{}, Fetcher: c})
		require.NoError(t, err)
		require.True(t, HasDebugInfo(openELF(t, got)))
		// A second lookup is served from the cache.
		before := hits.Load()
		got2, err := Find(ctx, lib, f, Options{DebugDirs: []string{}, Fetcher: c})
		require.NoError(t, err)
		require.Equal(t, got, got2)
		require.Equal(t, before, hits.Load())
	})

	t.Run("every server 404", func(t *testing.T) {
		c := &debuginfod.Client{URLs: []string{missing.URL}, CacheDir: t.TempDir()}
		_, err := Find(ctx, lib, f, Options{DebugDirs: []string{}, Fetcher: c})
		require.ErrorIs(t, err, ErrNotFound)
		require.Contains(t, err.Error(), "404")
	})

	t.Run("server hangs", func(t *testing.T) {
		c := &debuginfod.Client{URLs: []string{hang.URL}, CacheDir: t.TempDir(), Timeout: 300 * time.Millisecond}
		start := time.Now()
		_, err := Find(ctx, lib, f, Options{DebugDirs: []string{}, Fetcher: c})
		require.ErrorIs(t, err, debuginfod.ErrServer)
		require.Less(t, time.Since(start), 5*time.Second)
	})

	t.Run("server down", func(t *testing.T) {
		down := httptest.NewServer(http.NotFoundHandler())
		url := down.URL
		down.Close()
		c := &debuginfod.Client{URLs: []string{url}, CacheDir: t.TempDir(), Timeout: time.Second}
		_, err := Find(ctx, lib, f, Options{DebugDirs: []string{}, Fetcher: c})
		require.ErrorIs(t, err, debuginfod.ErrServer)
		require.Contains(t, err.Error(), url)
	})

	t.Run("server gives another build", func(t *testing.T) {
		d3 := t.TempDir()
		_, other := splitLib(t, d3, "libc1", "int c1(void) { return 4; }\n")
		otherData, err := os.ReadFile(other)
		require.NoError(t, err)
		liar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(otherData) }))
		defer liar.Close()
		c := &debuginfod.Client{URLs: []string{liar.URL}, CacheDir: t.TempDir()}
		_, err = Find(ctx, lib, f, Options{DebugDirs: []string{}, Fetcher: c})
		require.ErrorIs(t, err, ErrMismatch)
	})
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(dst, data, 0o644))
}
