package gomp_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/gomp"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/shipped"
)

// TestShippedCores reads every real core shipped in testdata/cores
// (internal/shipped), with nothing installed: libgomp's, with its debug
// information (its DWARF layout, hidden globals and internal function
// names) and without it (the known-layout table, states from the exported
// functions the program called), every thread compared with the program's
// truth as TestCoresAgainstTruth does; and the cores of LLVM's runtime,
// which hold no libgomp: ErrNoRuntime, not a misreading.
func TestShippedCores(t *testing.T) {
	shipped.Each(t, func(t *testing.T, c *shipped.Core, o shipped.Opening) {
		co, _ := c.Open(t, o.Debug)
		r, err := gomp.Open(co)
		if c.Runtime != shipped.GOMP {
			require.ErrorIs(t, err, omprt.ErrNoRuntime)
			return
		}
		require.NoError(t, err)
		assert.Equal(t, o.Source(), r.Info().Layout)
		checkTruth(t, r, co, c.Truth, o.Debug)
	})
}
