package ompd_test

import (
	"context"
	"debug/elf"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

// libompName returns the path of the runtime library as the core names it.
func libompName(t *testing.T, stop *fixtures.Stop) string {
	t.Helper()
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	for _, o := range ompdtest.Objects(t, c) {
		if strings.HasPrefix(filepath.Base(o.Name), "libomp.so") {
			return o.Name
		}
	}
	t.Fatalf("no libomp among %+v", ompdtest.Objects(t, c))
	return ""
}

// TestBrokenRuntimeLibrary replaces the runtime library that a core names
// by broken things: the error of ompd.Open must say that the runtime
// could not be loaded and why, never that the program has none
// (ErrNoRuntime).
func TestBrokenRuntimeLibrary(t *testing.T) {
	stop := fixtures.Core(t, fixtures.Nested)
	name := libompName(t, stop)
	lib, err := os.ReadFile(stop.Runtime.LibOMP)
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(file string, data []byte) string {
		p := filepath.Join(dir, file)
		require.NoError(t, os.WriteFile(p, data, 0o644))
		return p
	}
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))

	cases := []struct {
		name, path, why string
	}{
		{"missing", filepath.Join(dir, "nowhere", "libomp.so"), "no such file"},
		{"directory", dir, "a directory"},
		{"fifo", fifo, "a FIFO"},
		{"empty", write("empty.so", nil), "not an ELF file"},
		{"text", write("text.so", []byte("INPUT(libomp.so.5)\n")), "not an ELF file"},
		{"truncated", write("truncated.so", lib[:4096]), "truncated.so"},
		{"other build", write("other.so", otherBuild(t, lib)), "build-id"},
		{"another library", stop.Exe, "does not match the core"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				c, err := core.Open(context.Background(), stop.Exe, stop.Core, core.WithFileMap(map[string]string{name: tc.path}))
				require.NoError(t, err)
				defer c.Close()
				assert.Contains(t, strings.Join(c.Warnings(), "\n"), tc.why)
				_, err = ompd.Open(c)
				require.Error(t, err)
				assert.NotErrorIs(t, err, ompd.ErrNoRuntime)
				assert.ErrorIs(t, err, ompd.ErrIncompatible)
				assert.ErrorIs(t, err, target.ErrObjectMissing)
				assert.Contains(t, err.Error(), tc.why)
				assert.Contains(t, err.Error(), name)
				assert.NotContains(t, err.Error(), "\n")
			}()
			select {
			case <-done:
			case <-time.After(time.Minute):
				t.Fatal("did not return within a minute")
			}
		})
	}
}

// otherBuild returns a copy of the ELF shared object lib with another
// build-id (its last byte changed).
func otherBuild(t *testing.T, lib []byte) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lib.so")
	require.NoError(t, os.WriteFile(p, lib, 0o644))
	f, err := elf.Open(p)
	require.NoError(t, err)
	defer f.Close()
	s := f.Section(".note.gnu.build-id")
	require.NotNil(t, s, "no build-id in the runtime")
	out := append([]byte(nil), lib...)
	out[s.Offset+s.Size-1] ^= 0xff
	return out
}

// TestCoreChangesUnderReader truncates a fixture's core after Open: the
// address space reports errors, never an empty or zeroed runtime.
func TestCoreChangesUnderReader(t *testing.T) {
	stop := fixtures.Core(t, fixtures.Nested)
	data, err := os.ReadFile(stop.Core)
	require.NoError(t, err)
	for _, size := range []int64{int64(len(data)) * 3 / 4, int64(len(data)) / 2, 0} {
		p := filepath.Join(t.TempDir(), "core")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		c, err := core.Open(context.Background(), stop.Exe, p)
		require.NoError(t, err)
		as, err := ompd.Open(c)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(p, size))
		as.Refresh()
		_, err = ompd.Collect(as.Threads())
		assert.Error(t, err, "size %d", size)
		snap, err := as.Snapshot(t.Context())
		if err == nil {
			assert.NotEmpty(t, snap.Errors, "size %d: a snapshot of a changed core without errors", size)
		}
		if !assert.NotErrorIs(t, err, ompd.ErrNoRuntime) {
			t.Log(err)
		}
		as.Close()
		c.Close()
	}
}
