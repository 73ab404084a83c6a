package ompd_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
)

// fakeICVWant is one ICV read from one scope.
type fakeICVWant struct {
	scope  ompd.Scope
	id     ompd.ICV
	val    int64
	str    string
	intErr error // the error ICV gives, for string-valued ICVs
}

func TestFakeICVs(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		ths := fakeThreads(t, as)
		t2, t0, t3 := ths[2], ths[0], ths[3]
		taskB, err := t2.CurrentTask()
		require.NoError(t, err)
		outer0, err := t0.CurrentTask()
		require.NoError(t, err)
		par, err := t2.CurrentParallel()
		require.NoError(t, err)
		par4, err := par.Enclosing()
		require.NoError(t, err)
		format := "OMP: pid %P tid %i thread %n bound to OS proc set {%A}"
		wants := []fakeICVWant{
			{as, ompd.ICVStacksizeVar, 4 << 20, "4194304", nil},
			{as, ompd.ICVCancelVar, 1, "1", nil},
			{as, ompd.ICVMaxTaskPriorityVar, 7, "7", nil},
			{as, ompd.ICVDebugVar, 1, "1", nil},
			{as, ompd.ICVDisplayAffinityVar, 1, "1", nil},
			{as, ompd.ICVAffinityFormatVar, 0, format, ompd.ErrIncompatible},
			{as, ompd.ICVToolVar, 1, "1", nil},
			{as, ompd.ICVToolLibrariesVar, 0, "libfaketool.so", ompd.ErrIncompatible},
			{as, ompd.ICVToolVerboseInitVar, 0, "disabled", ompd.ErrIncompatible},
			{as, ompd.ICVNumProcsVar, 8, "8", nil},
			{as, ompd.ICVOMPDNumProcsVar, 8, "8", nil},
			{as, ompd.ICVNteamsVar, 2, "2", nil},
			{as, ompd.ICVTeamsThreadLimitVar, 6, "6", nil},

			// Thread 2 runs task B at level 5: no list beyond its own value.
			{t2, ompd.ICVDynVar, 1, "1", nil},
			{t2, ompd.ICVNthreadsVar, 3, "3", nil},
			{t2, ompd.ICVDefaultDeviceVar, 1, "1", nil},
			{t2, ompd.ICVThreadNumVar, 0, "0", nil},
			{t2, ompd.ICVOMPDThreadNumVar, 0, "0", nil},
			// Thread 0 at level 1: its nthreads-var continues with
			// __kmp_nested_nth[2:] = 3,1.
			{t0, ompd.ICVDynVar, 0, "0", nil},
			{t0, ompd.ICVNthreadsVar, 4, "4,3,1", ompd.ErrIncomplete},
			{t3, ompd.ICVThreadNumVar, 3, "3", nil},

			{par4, ompd.ICVLevelsVar, 4, "4", nil},
			{par4, ompd.ICVActiveLevelsVar, 2, "2", nil},
			{par4, ompd.ICVTeamSizeVar, 1, "1", nil},
			{par4, ompd.ICVOMPDTeamSizeVar, 1, "1", nil},

			// Task B: static, monotonic; bind close, nothing nested below level 5.
			{taskB, ompd.ICVRunSchedVar, 1 | 0x80000000, "monotonic:static,0", nil},
			{taskB, ompd.ICVThreadLimitVar, 16, "16", nil},
			{taskB, ompd.ICVMaxActiveLevelsVar, 3, "3", nil},
			{taskB, ompd.ICVBindVar, 3, "3", nil},
			{taskB, ompd.ICVFinalTaskVar, 1, "1", nil},
			{taskB, ompd.ICVOMPDFinalVar, 1, "1", nil},
			{taskB, ompd.ICVOMPDFinalTaskVar, 1, "1", nil},
			{taskB, ompd.ICVImplicitTaskVar, 0, "0", nil},
			{taskB, ompd.ICVOMPDImplicitVar, 0, "0", nil},
			{taskB, ompd.ICVOMPDImplicitTaskVar, 0, "0", nil},
			// Thread 0's implicit task at level 1: dynamic,7; bind spread
			// then __kmp_nested_proc_bind[2:] = close.
			{outer0, ompd.ICVRunSchedVar, 2, "dynamic,7", nil},
			{outer0, ompd.ICVThreadLimitVar, 64, "64", nil},
			{outer0, ompd.ICVBindVar, 4, "4,3", ompd.ErrIncomplete},
			{outer0, ompd.ICVFinalTaskVar, 0, "0", nil},
			{outer0, ompd.ICVImplicitTaskVar, 1, "1", nil},
		}
		seen := map[ompd.ICV]bool{}
		for _, w := range wants {
			what := fmt.Sprintf("%v at %v", w.id, w.scope)
			seen[w.id] = true
			assert.Equal(t, w.id.Scope(), w.scope.ScopeKind(), what)
			v, err := w.scope.ICV(w.id)
			if w.intErr != nil {
				assert.ErrorIs(t, err, w.intErr, what)
				if w.intErr == ompd.ErrIncomplete {
					assert.Equal(t, w.val, v, "%s: the first element comes with ErrIncomplete", what)
				}
			} else {
				require.NoError(t, err, what)
				assert.Equal(t, w.val, v, what)
			}
			str, err := w.scope.ICVString(w.id)
			require.NoError(t, err, what)
			assert.Equal(t, w.str, str, what)
		}
		for id := range ompd.AllICVs() {
			assert.True(t, seen[id], "ICV %v (%d) not checked", id, int(id))
			assert.NotEmpty(t, id.Name())
			back, ok := ompd.ICVByName(id.Name())
			assert.True(t, ok)
			assert.Equal(t, id, back)
		}
		assert.Equal(t, slices.Collect(ompd.AllICVs()), slices.Collect(as.ICVs()))

		// Wrong scopes and unknown ids.
		scopes := []ompd.Scope{as, t2, par4, taskB}
		for _, sc := range scopes {
			for id := range ompd.AllICVs() {
				if id.Scope() == sc.ScopeKind() {
					continue
				}
				_, err := sc.ICV(id)
				assert.ErrorIs(t, err, ompd.ErrBadInput, "%v at %v", id, sc.ScopeKind())
				_, err = sc.ICVString(id)
				assert.ErrorIs(t, err, ompd.ErrBadInput, "%v at %v", id, sc.ScopeKind())
			}
			for _, id := range []ompd.ICV{0, -1, 999} {
				_, err := sc.ICV(id)
				assert.ErrorIs(t, err, ompd.ErrBadInput)
				_, err = sc.ICVString(id)
				assert.ErrorIs(t, err, ompd.ErrBadInput)
			}
		}

		// The typed accessors agree.
		list, err := t0.NthreadsList()
		require.NoError(t, err)
		assert.Equal(t, []int{4, 3, 1}, list)
		mt, err := t2.MaxThreads()
		require.NoError(t, err)
		assert.Equal(t, 3, mt)
		dyn, err := t2.Dynamic()
		require.NoError(t, err)
		assert.True(t, dyn)
		sched, err := taskB.Schedule()
		require.NoError(t, err)
		assert.Equal(t, ompd.Schedule{Kind: ompd.ScheduleStatic, Monotonic: true, Raw: fakeruntime.SchedStatic | fakeruntime.SchedMonotonic}, sched)
		sched, err = outer0.Schedule()
		require.NoError(t, err)
		assert.Equal(t, ompd.Schedule{Kind: ompd.ScheduleDynamic, Chunk: 7, Raw: fakeruntime.SchedDynamicChunked}, sched)
		pb, err := outer0.ProcBind()
		require.NoError(t, err)
		assert.Equal(t, []ompd.ProcBind{ompd.ProcBindSpread, ompd.ProcBindClose}, pb)
		tl, err := taskB.ThreadLimit()
		require.NoError(t, err)
		assert.Equal(t, 16, tl)
		mal, err := taskB.MaxActiveLevels()
		require.NoError(t, err)
		assert.Equal(t, 3, mal)
		nested, err := taskB.Nested()
		require.NoError(t, err)
		assert.True(t, nested)
		np, err := as.NumProcs()
		require.NoError(t, err)
		assert.Equal(t, 8, np)

		// Schedules as LLVM's libompd spells them.
		for _, c := range []struct {
			typ, chunk int
			want       string
		}{
			{fakeruntime.SchedDynamicChunked, 7, "dynamic,7"},
			{fakeruntime.SchedStatic | fakeruntime.SchedMonotonic, 0, "monotonic:static,0"},
			{fakeruntime.SchedStaticChunked, 5, "static,5"},
			{fakeruntime.SchedGuidedChunked | fakeruntime.SchedNonmonotonic, 3, "nonmonotonic:guided,3"},
			{fakeruntime.SchedAuto, 0, "auto,0"},
			{fakeruntime.SchedStaticSteal, 2, "static_steal,2"},
			{12345, 1, ""},
		} {
			icvs := s.TaskBICVs
			icvs.SchedType, icvs.SchedChunk = c.typ, c.chunk
			s.TaskB.SetICVs(icvs)
			as.Refresh()
			str, err := taskB.ICVString(ompd.ICVRunSchedVar)
			require.NoError(t, err)
			assert.Equal(t, c.want, str, "sched_type %d", c.typ)
		}

		// Without state tracking, debug-var is 0.
		s.RT.SetOMPDState(0)
		as.Refresh()
		v, err := as.ICV(ompd.ICVDebugVar)
		require.NoError(t, err)
		assert.Zero(t, v)
	})
}

// TestFakeICVsNotSet: a worker's implicit task before its first fork
// barrier has zero ICVs (the runtime copies them at that barrier): its
// ICVs and schedule are ErrUnavailable, not an empty schedule and 0
// threads. And an OS thread that is no OpenMP thread is named with its LWP
// in decimal.
func TestFakeICVsNotSet(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s, as := fakeOpenNested(t, cfg)
		s.Outer.Implicit[3].SetICVs(fakeruntime.ICVs{})
		as.Refresh()
		th := fakeThreads(t, as)[3]
		for _, id := range []ompd.ICV{ompd.ICVNthreadsVar, ompd.ICVDynVar} {
			_, err := th.ICV(id)
			assert.ErrorIs(t, err, ompd.ErrUnavailable, "%v", id)
			assert.ErrorContains(t, err, "not set yet")
		}
		k, err := th.CurrentTask()
		require.NoError(t, err)
		for _, id := range []ompd.ICV{ompd.ICVRunSchedVar, ompd.ICVMaxActiveLevelsVar, ompd.ICVThreadLimitVar} {
			_, err := k.ICV(id)
			assert.ErrorIs(t, err, ompd.ErrUnavailable, "%v", id)
		}
		_, err = k.Schedule()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		// Its neighbour, whose ICVs are set, still answers.
		n, err := fakeThreads(t, as)[1].ICVString(ompd.ICVNthreadsVar)
		require.NoError(t, err)
		assert.NotEmpty(t, n)

		_, err = as.ThreadByOSThread(ompd.LWPID, s.Foreign.ID)
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		assert.ErrorContains(t, err, fmt.Sprintf("OS thread lwp %d is not an OpenMP thread", s.Foreign.ID))
	})
}

// TestFakeTeamsICVsOldRuntime: a runtime without __kmp_nteams and
// __kmp_teams_thread_limit (LLVM before 12) does not list the teams ICVs
// and answers ErrUnsupported for them; the snapshot has no error for them.
func TestFakeTeamsICVsOldRuntime(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		s := fakeruntime.Nested(cfg)
		s.RT.DropSymbol("__kmp_nteams")
		s.RT.DropSymbol("__kmp_teams_thread_limit")
		as, err := ompd.Open(s.T)
		require.NoError(t, err)
		defer as.Close()
		assert.Len(t, slices.Collect(as.ICVs()), len(slices.Collect(ompd.AllICVs()))-2)
		for _, id := range []ompd.ICV{ompd.ICVNteamsVar, ompd.ICVTeamsThreadLimitVar} {
			assert.NotContains(t, slices.Collect(as.ICVs()), id)
			_, err := as.ICV(id)
			assert.ErrorIs(t, err, ompd.ErrUnsupported, "%v", id)
			_, err = as.ICVString(id)
			assert.ErrorIs(t, err, ompd.ErrUnsupported, "%v", id)
		}
		snap, err := as.Snapshot(context.Background())
		require.NoError(t, err)
		for _, e := range snap.Errors {
			assert.NotContains(t, e, "teams")
		}
	})
}
