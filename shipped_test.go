package ompd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/internal/shipped"
	"github.com/ompd-go/ompd/target/core"
)

// TestShippedCores checks every answer of the API against the truth on
// each real core shipped in testdata/cores (internal/shipped: both
// runtimes, with and without the runtime's debug information), so that
// the package's tests read real runtime memory even where nothing else is
// installed (no compiler, gdb or runtime build).
func TestShippedCores(t *testing.T) {
	shipped.Each(t, func(t *testing.T, c *shipped.Core, o shipped.Opening) {
		co, _ := c.Open(t, o.Debug)
		ths, err := co.Threads()
		require.NoError(t, err)
		ompdtest.CheckOSThreads(t, ths, c.Truth)
		as, err := ompd.Open(co)
		if o.Layout == "" {
			require.ErrorIs(t, err, ompd.ErrIncompatible, "no layout to read the runtime with")
			return
		}
		require.NoError(t, err)
		defer as.Close()
		assert.Equal(t, o.Layout, as.Runtime().Layout.String())
		switch {
		case c.Runtime == shipped.GOMP:
			checkGompAPI(t, as, c.Truth, as.Runtime().Layout)
		case c.Tracking():
			ompdtest.CheckTruth(t, as, c.Truth)
		default:
			ompdtest.CheckStructure(t, as, c.Truth)
		}
	})
}

// openShipped opens the shipped core of LLVM's runtime with OMPD support
// (testdata/cores/libomp-nested), its files unpacked in a temporary
// directory, which it returns too.
func openShipped(t *testing.T) (*core.Core, string) {
	t.Helper()
	c, f := shipped.Get(t, "libomp-nested").Open(t, false)
	return c, f.Dir
}

// TestShippedSnapshotJSON: the JSON of a snapshot of the shipped core,
// with folded backtraces, is the one recorded in
// testdata/cores/libomp-nested/snapshot.json, byte for byte (the directory the
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
	golden := filepath.Join("testdata", "cores", "libomp-nested", "snapshot.json")
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
