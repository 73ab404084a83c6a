package ompd_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
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
	truth, err := fixtures.LoadTruth(filepath.Join(src, "truth.json"))
	require.NoError(t, err)
	display, err := os.ReadFile(filepath.Join(src, "display.txt"))
	require.NoError(t, err)
	truth.Display = fixtures.DisplayBlock(string(display))
	require.NoError(t, truth.Validate())
	require.NotEmpty(t, truth.Display)

	c, _ := openShipped(t)
	ths, err := c.Threads()
	require.NoError(t, err)
	ompdtest.CheckOSThreads(t, ths, truth)

	as, err := ompd.Open(c)
	require.NoError(t, err)
	defer as.Close()
	assert.Equal(t, ompd.LayoutOMPDTables, as.Runtime().Layout)
	ompdtest.CheckTruth(t, as, truth)
}

// openShipped opens the shipped core, its files unpacked in a temporary
// directory, which it returns too.
func openShipped(t *testing.T) (*core.Core, string) {
	t.Helper()
	src := filepath.Join("testdata", "nested-core")
	dir := t.TempDir()
	for _, f := range []string{"nested", "libomp.so", "core"} {
		gunzip(t, filepath.Join(src, f+".gz"), filepath.Join(dir, f))
	}
	c, err := core.Open(context.Background(), filepath.Join(dir, "nested"), filepath.Join(dir, "core"),
		core.WithFileMap(map[string]string{shippedCore + "/lib/libomp.so": filepath.Join(dir, "libomp.so")}),
		// Nothing of this machine: its own libraries (another glibc,
		// perhaps) and debug files stay out.
		core.WithSysroot(t.TempDir()), core.WithDebugDirs())
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	return c, dir
}

// TestShippedSnapshotJSON: the JSON of a snapshot of the shipped core,
// with folded backtraces, is the one recorded in
// testdata/nested-core/snapshot.json, byte for byte (the directory the
// files were unpacked in reads $DIR): tools that read it see no change.
// OMPD_GO_UPDATE_GOLDEN=1 rewrites the file after a deliberate change.
func TestShippedSnapshotJSON(t *testing.T) {
	c, dir := openShipped(t)
	as, err := ompd.Open(c)
	require.NoError(t, err)
	defer as.Close()
	s, err := as.Snapshot(context.Background(), ompd.WithBacktraces(ompd.WithFoldRuntime()))
	require.NoError(t, err)
	got, err := json.MarshalIndent(s, "", "\t")
	require.NoError(t, err)
	got = append(bytes.ReplaceAll(got, []byte(dir), []byte("$DIR")), '\n')
	golden := filepath.Join("testdata", "nested-core", "snapshot.json")
	if os.Getenv("OMPD_GO_UPDATE_GOLDEN") == "1" {
		require.NoError(t, os.WriteFile(golden, got, 0o644))
	}
	want, err := os.ReadFile(golden)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))
	// And it decodes to the same snapshot.
	var back ompd.Snapshot
	require.NoError(t, json.Unmarshal(want, &back))
	again, err := json.MarshalIndent(&back, "", "\t")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(again)+"\n")
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
