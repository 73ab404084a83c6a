package ompd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target/core"
)

// TestArchCores checks every answer of the API against the truth on the
// LLVM libomp cores of the other machines (aarch64, ppc64le, s390x; the
// runtime cross-built with OMPD support), as qemu-user wrote them and as a
// kernel would have: threads with their LWPs and pthread_t, thread
// numbers, the region nest, tasks, states and what they wait for, ICVs and
// display variables.
func TestArchCores(t *testing.T) {
	fixtures.EachArchCore(t, "libomp", func(t *testing.T, ac *fixtures.ArchCore, path string) {
		c, err := core.Open(t.Context(), ac.Exe, path, core.WithSysroot(ac.Sysroot), core.WithDebugDirs())
		require.NoError(t, err)
		defer c.Close()
		as, err := ompd.Open(c)
		require.NoError(t, err)
		defer as.Close()
		assert.Equal(t, ompd.LayoutOMPDTables, as.Runtime().Layout)
		ompdtest.CheckTruth(t, as, ac.Truth)
	})
}
