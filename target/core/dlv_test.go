package core_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target/core"
)

// TestDlvDump opens a core that dlv's own "dump" command wrote (notes
// without owner names after Delve's header note, no NT_FILE, every
// readable mapping in the core) and checks every answer against the
// fixture's truth, as for gdb's cores.
func TestDlvDump(t *testing.T) {
	stop := fixtures.DlvDump(t, fixtures.Nested)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	assert.Empty(t, c.Warnings())

	ths, err := c.Threads()
	require.NoError(t, err)
	ompdtest.CheckOSThreads(t, ths, stop.Truth)

	var libomp bool
	objs, err := c.Objects()
	require.NoError(t, err)
	for _, o := range objs {
		libomp = libomp || o.Path == stop.Runtime.LibOMP
	}
	assert.True(t, libomp, "libomp found through the dynamic linker's list")

	as, err := ompd.Open(c)
	require.NoError(t, err)
	defer as.Close()
	ompdtest.CheckTruth(t, as, stop.Truth)
}
