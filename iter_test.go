package ompd_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
)

// collect gathers a walk's handles and errors.
func collect[H any](seq func(func(H, error) bool)) (hs []H, errs []error) {
	for h, err := range seq {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		hs = append(hs, h)
	}
	return hs, errs
}

// chainOf follows next from first by hand until it fails.
func chainOf[H any](first H, err error, next func(H) (H, error)) ([]H, error) {
	var out []H
	for ; err == nil && len(out) < 100; first, err = next(first) {
		out = append(out, first)
	}
	return out, err
}

// TestWalks checks each walk against the chain followed by hand: the same
// handles, in the same order, ending without an error at the top.
func TestWalks(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		_, as := fakeOpenNested(t, cfg)
		ths := fakeThreads(t, as)
		th := ths[2] // five levels deep, three of them serialized; an untied task and its included child

		p0, err := th.CurrentParallel()
		wantRegions, end := chainOf(p0, err, ompd.Parallel.Enclosing)
		require.ErrorIs(t, end, ompd.ErrUnavailable)
		regions, errs := collect(th.Regions())
		assert.Empty(t, errs)
		assert.Equal(t, wantRegions, regions)
		require.Len(t, regions, 6, "levels 5..0")
		enclosing, errs := collect(regions[0].EnclosingRegions())
		assert.Empty(t, errs)
		assert.Equal(t, regions[1:], enclosing)

		cur, err := th.CurrentTask()
		require.NoError(t, err)
		wantTasks, end := chainOf(cur, nil, ompd.Task.Generating)
		require.ErrorIs(t, end, ompd.ErrUnavailable)
		tasks, errs := collect(th.Tasks())
		assert.Empty(t, errs)
		assert.Equal(t, wantTasks, tasks)
		gen, errs := collect(cur.GeneratingAncestors())
		assert.Empty(t, errs)
		assert.Equal(t, tasks[1:], gen)

		first, err := cur.Scheduling()
		wantSched, end := chainOf(first, err, ompd.Task.Scheduling)
		require.ErrorIs(t, end, ompd.ErrUnavailable)
		require.NotEmpty(t, wantSched)
		sched, errs := collect(cur.SchedulingAncestors())
		assert.Empty(t, errs)
		assert.Equal(t, wantSched, sched)

		outer, err := ths[0].CurrentParallel()
		require.NoError(t, err)
		n, err := outer.NumThreads()
		require.NoError(t, err)
		team, errs := collect(outer.Threads())
		assert.Empty(t, errs)
		require.Len(t, team, n)
		for i, m := range team {
			want, err := outer.Thread(i)
			require.NoError(t, err)
			assert.True(t, m.Equal(want), "thread %d", i)
		}

		// Breaking out early stops the walk.
		steps := 0
		for range th.Regions() {
			steps++
			break
		}
		assert.Equal(t, 1, steps)
	})
}

// TestWalkErrors checks that a real error is yielded once, with a zero
// handle, and ends the walk, and that a cycle ends it too.
func TestWalkErrors(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		t.Run("stale", func(t *testing.T) {
			_, as := fakeOpenNested(t, cfg)
			th := fakeThreads(t, as)[2]
			p, err := th.CurrentParallel()
			require.NoError(t, err)
			k, err := th.CurrentTask()
			require.NoError(t, err)
			require.NoError(t, as.Close())
			for name, errs := range map[string][]error{
				"regions":    walkErrs(th.Regions()),
				"tasks":      walkErrs(th.Tasks()),
				"threads":    walkErrs(p.Threads()),
				"generating": walkErrs(k.GeneratingAncestors()),
				"scheduling": walkErrs(k.SchedulingAncestors()),
				"enclosing":  walkErrs(p.EnclosingRegions()),
			} {
				require.Len(t, errs, 1, name)
				assert.ErrorIs(t, errs[0], ompd.ErrStaleHandle, name)
			}
		})
		t.Run("cycle", func(t *testing.T) {
			s, as := fakeOpenNested(t, cfg)
			s.Outer.SetParentAddr(s.Inner.Addr)
			as.Refresh()
			th := fakeThreads(t, as)[1]
			var got []ompd.Parallel
			var errs []error
			fakeBounded(t, 20*time.Second, "Regions", func() { got, errs = collect(th.Regions()) })
			require.Len(t, errs, 1)
			assert.ErrorIs(t, errs[0], ompd.ErrCorrupt)
			assert.NotEmpty(t, got, "the regions before the cycle")
		})
	})
}

// walkErrs runs a walk and returns its errors, checking that each comes
// with a zero handle and is the last thing yielded.
func walkErrs[H comparable](seq func(func(H, error) bool)) []error {
	var errs []error
	var zero H
	for h, err := range seq {
		if len(errs) > 0 {
			return append(errs, errAfterErr)
		}
		if err != nil {
			if h != zero {
				return append(errs, err, errNotZero)
			}
			errs = append(errs, err)
		}
	}
	return errs
}

var (
	errAfterErr = errors.New("the walk went on after an error")
	errNotZero  = errors.New("an error came with a handle that is not zero")
)

// TestThreadsWalk: the address space's threads are a walk like the
// others: every thread once, in gtid order, stopping when the loop does;
// Collect gathers them, and a closed address space yields its error once.
func TestThreadsWalk(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		_, as := fakeOpenNested(t, cfg)
		ths, err := ompd.Collect(as.Threads())
		require.NoError(t, err)
		require.Greater(t, len(ths), 2)
		for i := 1; i < len(ths); i++ {
			assert.Less(t, ths[i-1].GTID(), ths[i].GTID())
		}
		n := 0
		for th, err := range as.Threads() {
			require.NoError(t, err)
			assert.Equal(t, ths[n], th)
			if n++; n == 2 {
				break
			}
		}
		assert.Equal(t, 2, n)

		require.NoError(t, as.Close())
		got, errs := collect(as.Threads())
		assert.Empty(t, got)
		require.Len(t, errs, 1)
		assert.ErrorIs(t, errs[0], ompd.ErrStaleHandle)
		got, err = ompd.Collect(as.Threads())
		assert.Empty(t, got)
		assert.ErrorIs(t, err, ompd.ErrStaleHandle)
	})
}

// TestCollect: Collect returns what a walk yields before an error, with
// the error.
func TestCollect(t *testing.T) {
	boom := errors.New("boom")
	seq := func(yield func(int, error) bool) {
		for i := range 3 {
			if !yield(i, nil) {
				return
			}
		}
		if yield(0, boom) {
			t.Error("Collect went on after the error")
		}
	}
	got, err := ompd.Collect(seq)
	assert.Equal(t, []int{0, 1, 2}, got)
	assert.ErrorIs(t, err, boom)
}
