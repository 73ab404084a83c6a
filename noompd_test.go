package ompd_test

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

// TestNoOMPDRuntimeCores runs the fixtures against the runtime built
// without OMPD support (still with OMP_DEBUG=enabled, which it ignores) and
// checks every answer its structures give, read through its DWARF.
func TestNoOMPDRuntimeCores(t *testing.T) {
	cases := append(fixtureCases("64"), fixtureCase{fixtures.Teams, nil},
		fixtureCase{fixtures.Teams, []string{"body"}}, fixtureCase{fixtures.Idle, nil})
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			info := fixtures.RuntimeVariant(t, fixtures.VariantNoOMPD)
			stop := fixtures.CoreWith(t, info, c.name, c.args...)
			assert.NotContains(t, stop.Stderr, "OMP_OMPD active", "the runtime has no OMPD support")
			co, err := core.Open(context.Background(), stop.Exe, stop.Core)
			require.NoError(t, err)
			t.Cleanup(func() { co.Close() })
			as, err := ompd.Open(co)
			require.NoError(t, err)
			t.Cleanup(func() { as.Close() })
			assert.Equal(t, ompd.LayoutDWARF, as.Runtime().Layout)
			ompdtest.CheckStructure(t, as, stop.Truth)
			// No state tracking: every state is read from the
			// thread's stack, or where that does not tell, State fails
			// and the state it gives with the error is undefined, not
			// work_serial.
			threads, err := ompd.Collect(as.Threads())
			require.NoError(t, err)
			for _, th := range threads {
				st, wait, err := th.State()
				inferred, _ := th.StateInferred()
				if err != nil {
					require.ErrorIs(t, err, ompd.ErrNeedsStateTracking)
					assert.Equal(t, ompd.StateUndefined, st)
					assert.False(t, inferred)
				} else {
					assert.True(t, inferred, "%v: %v inferred", th, st)
				}
				assert.Zero(t, wait)
			}
			// The snapshot says once what lacks OMPD support, apart
			// from its errors: nothing failed.
			s, err := as.Snapshot(context.Background())
			require.NoError(t, err)
			assert.Contains(t, s.Unsupported, "display control variables: the runtime is built without OMPD support: ompd: unsupported")
			assert.Contains(t, s.Unsupported, "breakpoints: the runtime is built without OMPD support: ompd: unsupported")
			for _, e := range s.Errors {
				assert.NotContains(t, e, "unsupported", "unsupported is no error")
			}
		})
	}
}
