package delve

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestRegionStops stops the regions workload at every
// ompd_bp_parallel_begin and ompd_bp_parallel_end and at its regions_mark,
// while the other threads fork, join, and move between teams and the
// thread pool, under the default hot teams, nested ones, ones that keep
// their extra threads, and with workers that sleep at once. At every stop
// the snapshot has no errors, and every thread's number is below the size
// of its current region's team, whose thread of that number it is, or
// ErrUnavailable saying why: never ErrCorrupt. The runtime's moments that
// look inconsistent are not:
//   - at ompd_bp_parallel_end the primary's ds_tid already holds its
//     number in the enclosing team (__kmp_join_call), while its team is
//     still the ending one: it is that team's thread 0;
//   - a team of a teams construct keeps the threads a parallel region
//     inside it does not use (regions_mark), and with
//     KMP_HOT_TEAMS_MODE=1 a hot team keeps those it no longer needs:
//     numbers beyond the team's size, outside its current region;
//   - a nested hot team kept idle holds the parent and levels of its last
//     region, which the runtime may have reused since, and its primary
//     may work in another team meanwhile.
//
// Each configuration runs the workload more than once: what the other
// threads are doing at a stop varies from run to run.
func TestRegionStops(t *testing.T) {
	const runs = 2
	for _, c := range []struct {
		name string
		env  []string
	}{
		{"default", nil},
		{"nested hot teams", []string{"KMP_HOT_TEAMS_MAX_LEVEL=2"}},
		{"hot teams kept", []string{"KMP_HOT_TEAMS_MODE=1", "KMP_HOT_TEAMS_MAX_LEVEL=2"}},
		{"workers sleep at once", []string{"KMP_BLOCKTIME=0"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			for i := 0; i < runs; i++ {
				regionStops(t, c.env)
			}
		})
	}
}

func regionStops(t *testing.T, env []string) {
	r := newRun(t, fixtures.Regions, env...)
	p := r.launch(t)
	ctx := testContext(t)
	as, err := p.OpenRuntime(ctx)
	require.NoError(t, err)
	defer as.Close()
	bps := map[uint64]string{}
	for _, name := range []string{"ompd_bp_parallel_begin", "ompd_bp_parallel_end", "regions_mark"} {
		addr, err := p.BreakAt(name)
		require.NoError(t, err)
		bps[addr] = name
	}
	hits := map[string]int{}
	beyond := 0
	for n := 0; ; n++ {
		err := p.Continue(ctx)
		if errors.Is(err, ErrExited) {
			break
		}
		require.NoError(t, err)
		require.Less(t, n, 2000, "stops")
		as.Refresh()
		stops := p.Stopped()
		require.NotEmpty(t, stops)
		at := make(map[uint64]string)
		mark := false
		for _, s := range stops {
			at[s.TID] = bps[s.Addr]
			hits[bps[s.Addr]]++
			mark = mark || bps[s.Addr] == "regions_mark"
		}
		what := fmt.Sprintf("stop %d at %v", n, at)
		snap, err := as.Snapshot(ctx)
		require.NoError(t, err, what)
		assert.Empty(t, snap.Errors, what)

		ths, err := ompd.Collect(as.Threads())
		require.NoError(t, err, what)
		for _, th := range ths {
			if checkThreadNum(t, th, what) && mark {
				beyond++
			}
		}
		for _, s := range stops {
			if bps[s.Addr] != "ompd_bp_parallel_end" {
				continue
			}
			// The ending region is the current one: its primary is
			// the thread stopped there.
			th, err := as.ThreadByOSThread(ompd.LWPID, s.TID)
			require.NoError(t, err, what)
			num, err := th.Num()
			require.NoError(t, err, "%s: %v", what, th)
			assert.Zero(t, num, "%s: %v at the end of its region", what, th)
			par, err := th.CurrentParallel()
			require.NoError(t, err, what)
			if pt, err := par.Thread(0); err == nil {
				assert.True(t, pt.Equal(th), "%s: %v is thread 0 of %v", what, th, par)
			} else {
				assert.ErrorIs(t, err, ompd.ErrUnavailable, "%s: %v", what, par) // a league's level 0
			}
		}
	}
	code, ok := p.ExitStatus()
	require.True(t, ok)
	require.Zero(t, code, "the workload's exit status")
	assert.Positive(t, hits["ompd_bp_parallel_begin"])
	assert.GreaterOrEqual(t, hits["ompd_bp_parallel_end"], hits["ompd_bp_parallel_begin"], "serialized regions end at a breakpoint too")
	assert.Positive(t, hits["regions_mark"])
	assert.GreaterOrEqual(t, beyond, hits["regions_mark"], "a team's third thread waits outside its 2-thread region at each mark")
	t.Logf("stops: %v; threads beyond their team's size at the marks: %d", hits, beyond)
}

// checkThreadNum checks th's number against its current region and
// reports whether the thread is outside its team's current region, beyond
// the team's size.
func checkThreadNum(t *testing.T, th ompd.Thread, what string) bool {
	t.Helper()
	num, err := th.Num()
	if err != nil {
		assert.ErrorIs(t, err, ompd.ErrUnavailable, "%s: %v", what, th)
		return strings.Contains(err.Error(), "beyond")
	}
	par, err := th.CurrentParallel()
	if err != nil {
		assert.ErrorIs(t, err, ompd.ErrUnavailable, "%s: %v", what, th)
		return false
	}
	size, err := par.NumThreads()
	require.NoError(t, err, "%s: %v in %v", what, th, par)
	assert.Less(t, num, size, "%s: %v in %v", what, th, par)
	if pt, err := par.Thread(num); err == nil {
		assert.True(t, pt.Equal(th), "%s: %v is thread %d of %v, not %v", what, th, num, par, pt)
	} else {
		// Not set yet in the team being forked, or a league's level 0.
		assert.ErrorIs(t, err, ompd.ErrUnavailable, "%s: %v in %v", what, th, par)
	}
	return false
}
