package gomp_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/gomp"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target/core"
)

// TestArchCores reads the libgomp cores of the other machines (aarch64,
// ppc64le, s390x: Debian's stripped libgomp 12, read through its known
// layout), as qemu-user wrote them and as a kernel would have, and compares
// every thread with the program's truth as TestCoresAgainstTruth does.
func TestArchCores(t *testing.T) {
	fixtures.EachArchCore(t, "libgomp", func(t *testing.T, ac *fixtures.ArchCore, path string) {
		c, err := core.Open(t.Context(), ac.Exe, path, core.WithSysroot(ac.Sysroot), core.WithDebugDirs())
		require.NoError(t, err)
		defer c.Close()
		r, err := gomp.Open(c)
		require.NoError(t, err)
		require.Equal(t, omprt.LayoutKnownTable, r.Info().Layout)
		checkTruth(t, r, c, ac.Truth, false)
	})
}
