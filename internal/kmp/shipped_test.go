package kmp_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/kmp"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/shipped"
	"github.com/ompd-go/ompd/internal/stackstate"
)

// TestShippedCores reads every real core shipped in testdata/cores
// (internal/shipped), with nothing installed, through this package alone:
// LLVM's runtime with its OMPD tables (states as the runtime recorded
// them) and without OMPD support (through its DWARF, states inferred from
// the stacks: the runtime tracks none), each thread's number, pthread, region nest, team
// sizes and active level, and its nthreads-var, compared with what the
// program recorded; the same runtime without its debug information, which
// has nothing to read the layout from (ErrIncompatible); and libgomp's
// cores, which hold no libomp (ErrNoRuntime).
func TestShippedCores(t *testing.T) {
	shipped.Each(t, func(t *testing.T, c *shipped.Core, o shipped.Opening) {
		co, _ := c.Open(t, o.Debug)
		r, err := kmp.Open(co)
		switch {
		case c.Runtime != shipped.LLVM:
			require.ErrorIs(t, err, omprt.ErrNoRuntime)
			return
		case o.Layout == "":
			require.ErrorIs(t, err, omprt.ErrIncompatible)
			return
		}
		require.NoError(t, err)
		assert.Equal(t, o.Source(), r.Info().Layout)
		checkThreads(t, r, c.Truth, c.Tracking())
	})
}

// checkThreads compares every thread r reads with the truth; tracking says
// whether the runtime records thread states.
func checkThreads(t *testing.T, r omprt.Runtime, truth *fixtures.Truth, tracking bool) {
	refs, err := r.Threads()
	require.NoError(t, err)
	require.Len(t, refs, len(truth.Threads), "one OpenMP thread per program thread")
	for i := range truth.Threads {
		th := &truth.Threads[i]
		t.Run(fmt.Sprintf("tid%d-%s", th.TID, th.Role), func(t *testing.T) {
			ref, err := r.ThreadByOS(omprt.IDLWP, uint64(th.TID))
			require.NoError(t, err)
			d, err := r.Thread(ref)
			require.NoError(t, err)
			require.NoError(t, d.Err)
			p, err := fixtures.ParseHex(th.Pthread)
			require.NoError(t, err)
			assert.Equal(t, p, d.Pthread)
			require.NoError(t, d.NumErr)
			assert.Equal(t, th.ThreadNum, d.Num)

			// With OMPD the runtime records each thread's state; without
			// it the state is inferred from the thread's stack, where the
			// critical section's waiter is told apart from a lock's.
			require.NoError(t, d.StateErr)
			assert.Equal(t, !tracking, d.StateInferred, "inferred only where the runtime records none")
			want := map[string]int64{
				fixtures.RoleStopper: stackstate.WorkParallel, fixtures.RoleWorking: stackstate.WorkParallel,
				fixtures.RoleBarrier: stackstate.BarrierExplicit,
				// LLVM 19.1.7 records a critical section's waiter in
				// its lock acquisition's state (see ompdtest).
				fixtures.RoleLock: stackstate.Lock, fixtures.RoleCritical: stackstate.Lock,
			}[th.Role]
			if !tracking && th.Role == fixtures.RoleCritical {
				want = stackstate.Critical
			}
			require.NotZero(t, want, "role %s", th.Role)
			assert.Equal(t, want, d.State, "role %s", th.Role)

			// The nest, innermost first.
			require.NoError(t, d.RegionErr)
			reg := d.Region
			for l := th.Level; ; l-- {
				rd, err := r.Region(reg)
				require.NoError(t, err, "level %d", l)
				assert.EqualValues(t, l, rd.Ref.Level)
				assert.Equal(t, th.Ancestors[l].TeamSize, rd.TeamSize, "team size at level %d", l)
				if l == th.Level {
					assert.Equal(t, th.ActiveLevel, rd.ActiveLevel, "active level")
				}
				if l == 0 {
					assert.ErrorIs(t, rd.EnclosingErr, omprt.ErrUnavailable, "nothing encloses level 0")
					break
				}
				require.NoError(t, rd.EnclosingErr, "level %d", l)
				reg = rd.Enclosing
			}
			v, err := r.ICV(omprt.ScopeRef{Kind: omprt.ScopeThread, Thread: ref}, omprt.ICVNthreadsVar)
			require.NoError(t, err)
			assert.EqualValues(t, th.MaxThreads, v.Int, "nthreads-var is omp_get_max_threads")
		})
	}
}
