package ompd_test

import (
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target/core"
)

// shippedCore is where scripts/make-testdata-core.sh built the program and
// its runtime: the paths the core names.
const shippedCore = "/tmp/ompd-go-testdata"

// TestShippedCore checks every answer of the API against the truth on the
// real core shipped in testdata/nested-core (the nested fixture on LLVM's
// runtime 19.1.7, made by scripts/make-testdata-core.sh): so that the
// package's tests read real runtime memory even where nothing else is
// installed (no clang, gdb or runtime build).
func TestShippedCore(t *testing.T) {
	src := filepath.Join("testdata", "nested-core")
	dir := t.TempDir()
	for _, f := range []string{"nested", "libomp.so", "core"} {
		gunzip(t, filepath.Join(src, f+".gz"), filepath.Join(dir, f))
	}
	truth, err := fixtures.LoadTruth(filepath.Join(src, "truth.json"))
	require.NoError(t, err)
	display, err := os.ReadFile(filepath.Join(src, "display.txt"))
	require.NoError(t, err)
	truth.Display = fixtures.DisplayBlock(string(display))
	require.NoError(t, truth.Validate())
	require.NotEmpty(t, truth.Display)

	c, err := core.Open(filepath.Join(dir, "nested"), filepath.Join(dir, "core"),
		core.WithFileMap(map[string]string{shippedCore + "/lib/libomp.so": filepath.Join(dir, "libomp.so")}),
		// Nothing of this machine: its own libraries (another glibc,
		// perhaps) and debug files stay out.
		core.WithSysroot(t.TempDir()), core.WithDebugDirs())
	require.NoError(t, err)
	defer c.Close()
	ths, err := c.Threads()
	require.NoError(t, err)
	ompdtest.CheckOSThreads(t, ths, truth)

	as, err := ompd.Open(c)
	require.NoError(t, err)
	defer as.Close()
	assert.Equal(t, ompd.LayoutOMPDTables, as.Runtime().Layout)
	ompdtest.CheckTruth(t, as, truth)
}

func gunzip(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	require.NoError(t, err)
	defer in.Close()
	zr, err := gzip.NewReader(in)
	require.NoError(t, err)
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, zr)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}
