package ompd_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
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

// TestRuntimeFileMissing opens the cores of the other machines with an
// empty sysroot, as with a wrong -sysroot: their runtime's file cannot be
// loaded and the core does not hold its pages. The error names what the
// program really uses: for libgomp, that it uses GNU libgomp, which file
// the target could not load and where it looked, and how to point it at
// the machine's files, never LLVM's symbols; for libomp, that LLVM's
// runtime was not found among the objects loaded. Both match
// ErrIncompatible and target.ErrObjectMissing, not ErrNoRuntime.
func TestRuntimeFileMissing(t *testing.T) {
	fixtures.EachArchCore(t, "", func(t *testing.T, ac *fixtures.ArchCore, path string) {
		root := t.TempDir()
		c, err := core.Open(t.Context(), ac.Exe, path, core.WithSysroot(root), core.WithDebugDirs())
		require.NoError(t, err)
		defer c.Close()
		_, err = ompd.Open(c)
		require.Error(t, err)
		assert.ErrorIs(t, err, ompd.ErrIncompatible)
		assert.ErrorIs(t, err, target.ErrObjectMissing)
		assert.NotErrorIs(t, err, ompd.ErrNoRuntime)
		msg := err.Error()
		assert.NotContains(t, msg, "\n")
		if ac.Runtime != "libgomp" {
			assert.Contains(t, msg, "__kmp_threads")
			assert.NotContains(t, msg, "libgomp")
			return
		}
		var lib string
		for _, o := range c.MissingObjects() {
			if strings.HasPrefix(filepath.Base(o.Name), "libgomp.so") {
				lib = o.Name
			}
		}
		require.NotEmpty(t, lib, "libgomp is not among the missing objects: %v", c.Warnings())
		assert.Contains(t, msg, "uses GNU libgomp ("+lib+")")
		assert.Contains(t, msg, lib+": cannot open: open "+filepath.Join(root, lib)+": no such file or directory")
		assert.Contains(t, msg, "sysroot")
		assert.NotContains(t, msg, "__kmp")
	})
}
