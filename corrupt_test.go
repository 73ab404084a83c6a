package ompd_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/target"
)

func TestFakeAbsurdCounts(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		t.Run("capacity", func(t *testing.T) {
			for _, c := range []struct {
				capacity int64
				want     error
			}{
				{1 << 30, ompd.ErrCorrupt},
				{-1, ompd.ErrCorrupt},
				{1 << 20, ompd.ErrReadFailed}, // allowed, but the array is not that long
			} {
				s, as := fakeOpenNested(t, cfg)
				s.RT.SetCapacityValue(c.capacity)
				as.Refresh()
				_, err := ompd.Collect(as.Threads())
				assert.ErrorIs(t, err, c.want, "capacity %d", c.capacity)
				_, err = as.ThreadByOSThread(ompd.PthreadID, s.Threads[0].Pthread)
				assert.ErrorIs(t, err, c.want, "capacity %d", c.capacity)
			}
			// Zero capacity, as after the runtime's __kmp_cleanup (which
			// reaps every thread first): no threads, handles stale.
			s, as := fakeOpenNested(t, cfg)
			th := fakeThreads(t, as)[1]
			s.RT.SetCapacityValue(0)
			s.RT.SetGlobal("__kmp_all_nth", 0)
			as.Refresh()
			ths, err := ompd.Collect(as.Threads())
			require.NoError(t, err)
			assert.Empty(t, ths)
			_, err = th.Num()
			assert.ErrorIs(t, err, ompd.ErrStaleHandle)
		})
		t.Run("thread table", func(t *testing.T) {
			// The table agrees with what the runtime allows and counts,
			// or nothing is read from it (kmp checkCapacity, checkCount).
			threads := func(set func(s *fakeruntime.Scenario)) ([]ompd.Thread, error, *fakeruntime.Scenario) {
				s, as := fakeOpenNested(t, cfg)
				set(s)
				as.Refresh()
				ths, err := ompd.Collect(as.Threads())
				return ths, err, s
			}
			garbage := func(s *fakeruntime.Scenario, from, to int) {
				s.RT.SetThreadsCapacity(64)
				for i := from; i < to; i++ {
					s.RT.SetThreadsEntry(i, 0xdead_0000+uint64(i)*0x1000)
				}
			}
			for _, c := range []struct {
				name string
				set  func(s *fakeruntime.Scenario)
				msg  string
			}{
				{"capacity above __kmp_sys_max_nth", func(s *fakeruntime.Scenario) {
					s.RT.SetGlobal("__kmp_sys_max_nth", 3)
				}, "above __kmp_sys_max_nth 3"},
				{"__kmp_sys_max_nth 0", func(s *fakeruntime.Scenario) { s.RT.SetGlobal("__kmp_sys_max_nth", 0) }, "__kmp_sys_max_nth 0"},
				{"negative __kmp_all_nth", func(s *fakeruntime.Scenario) { s.RT.SetGlobal("__kmp_all_nth", -1) }, "__kmp_all_nth -1 threads"},
				{"__kmp_all_nth above capacity", func(s *fakeruntime.Scenario) {
					s.RT.SetGlobal("__kmp_all_nth", s.RT.Global("__kmp_threads_capacity")+1)
				}, "outside the thread table's capacity"},
				{"garbage entries", func(s *fakeruntime.Scenario) { garbage(s, 20, 22) }, "__kmp_threads holds 7 threads among its 64 entries, but __kmp_all_nth counts 5"},
			} {
				ths, err, _ := threads(c.set)
				assert.ErrorIs(t, err, ompd.ErrCorrupt, c.name)
				assert.ErrorContains(t, err, c.msg, c.name)
				assert.Empty(t, ths, c.name)
			}
			// One entry more than __kmp_all_nth, as while the runtime
			// adds or reaps a thread: it costs that thread only.
			ths, err, _ := threads(func(s *fakeruntime.Scenario) { garbage(s, 20, 21) })
			require.NoError(t, err)
			require.Len(t, ths, 6)
			_, err = ths[5].Num()
			assert.ErrorIs(t, err, ompd.ErrReadFailed, "the garbage entry")
			_, err = ths[0].Num()
			assert.NoError(t, err)
			// A large table holding few threads (OMP_NUM_THREADS sizes
			// the first one, four entries per thread): fine.
			ths, err, _ = threads(func(s *fakeruntime.Scenario) { s.RT.SetThreadsCapacity(1 << 16) })
			require.NoError(t, err)
			assert.Len(t, ths, 5)
			// A runtime whose symbols name neither count: not checked.
			ths, err, _ = threads(func(s *fakeruntime.Scenario) {
				s.T.DeleteSymbol("__kmp_all_nth")
				s.T.DeleteSymbol("__kmp_sys_max_nth")
				garbage(s, 20, 22)
			})
			require.NoError(t, err)
			assert.Len(t, ths, 7)
		})
		t.Run("nproc", func(t *testing.T) {
			for _, n := range []int{1 << 30, 0, -5} {
				s, as := fakeOpenNested(t, cfg)
				s.Outer.SetNProc(n)
				as.Refresh()
				_, err := fakeThreads(t, as)[0].CurrentParallel()
				assert.ErrorIs(t, err, ompd.ErrCorrupt, "t_nproc %d", n)
			}
			// Plausible but beyond the arrays: read the entry just past
			// Outer's 4-entry t_threads (tiny regions) or at the start of
			// the guard page after it.
			// The team size is bounded by the thread table: make room.
			s, as := fakeOpenNested(t, cfg)
			s.RT.SetThreadsCapacity(2048)
			s.Outer.SetNProc(2000)
			as.Refresh()
			p, err := fakeThreads(t, as)[0].CurrentParallel()
			require.NoError(t, err)
			idx := fakeruntime.PageSize / cfg.Sizes.Pointer
			if cfg.Tiny {
				idx = 4
			}
			_, err = p.Thread(idx)
			assert.ErrorIs(t, err, ompd.ErrReadFailed)
			assert.ErrorIs(t, err, target.ErrNoMemory)
		})
		t.Run("levels", func(t *testing.T) {
			for _, c := range []struct{ level, active int }{{-1, 0}, {1 << 20, 0}, {3, 4}, {3, -1}} {
				s, as := fakeOpenNested(t, cfg)
				s.Inner.SetLevel(c.level)
				s.Inner.SetActiveLevel(c.active)
				as.Refresh()
				_, err := fakeThreads(t, as)[1].CurrentParallel()
				assert.ErrorIs(t, err, ompd.ErrCorrupt, "level %d active %d", c.level, c.active)
			}
		})
		t.Run("nested lists", func(t *testing.T) {
			s, as := fakeOpenNested(t, cfg)
			s.RT.SetNestedUsed(false, 1<<30)
			s.RT.SetNestedUsed(true, -3)
			as.Refresh()
			th := fakeThreads(t, as)[0]
			_, err := th.ICVString(ompd.ICVNthreadsVar)
			assert.ErrorIs(t, err, ompd.ErrCorrupt)
			tk, err := th.CurrentTask()
			require.NoError(t, err)
			_, err = tk.ICVString(ompd.ICVBindVar)
			assert.ErrorIs(t, err, ompd.ErrCorrupt)
			// A plausible count beyond the array.
			s.RT.SetNestedUsed(false, 5000)
			as.Refresh()
			_, err = th.ICVString(ompd.ICVNthreadsVar)
			assert.ErrorIs(t, err, ompd.ErrReadFailed)
		})
	})
}

func TestFakeNullAndUnmappedPointers(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		const wild = 0x10 // never mapped
		for _, ptr := range []uint64{0, wild} {
			// NULL where a pointer must be set is corrupt memory; a wild
			// pointer is a read error that keeps the target's cause.
			kind := ompd.ErrCorrupt
			if ptr != 0 {
				kind = ompd.ErrReadFailed
			}
			check := func(t *testing.T, err error, what string) {
				t.Helper()
				assert.ErrorIs(t, err, kind, what)
				if kind == ompd.ErrReadFailed {
					assert.ErrorIs(t, err, target.ErrNoMemory, what)
					var re *target.ReadError
					assert.ErrorAs(t, err, &re, what)
				}
			}
			t.Run(fmt.Sprintf("%#x", ptr), func(t *testing.T) {
				s, as := fakeOpenNested(t, cfg)
				th := fakeThreads(t, as)
				p1, err := th[1].CurrentParallel()
				require.NoError(t, err)
				tkB, err := th[2].CurrentTask()
				require.NoError(t, err)
				tkA, err := tkB.Generating()
				require.NoError(t, err)
				tk0, err := th[0].CurrentTask()
				require.NoError(t, err)

				s.Inner.SetThreadsAddr(ptr)
				s.Inner.SetImplicitAddr(ptr)
				s.TaskB.SetTeamAddr(ptr)
				s.TaskA.SetRoutine(ptr)
				s.Outer.Implicit[0].SetTeamAddr(ptr)
				as.Refresh()
				_, err = p1.Thread(0)
				check(t, err, "t_threads")
				it, err := p1.ImplicitTask(0)
				if ptr == 0 {
					check(t, err, "t_implicit_task_taskdata")
				} else {
					require.NoError(t, err, "the handle is made from the team alone")
					_, err = it.Kind()
					check(t, err, "implicit task")
				}
				_, err = tkB.Parallel()
				check(t, err, "td_team of an explicit task")
				f, err := tkA.Function()
				if ptr == 0 {
					assert.ErrorIs(t, err, ompd.ErrUnavailable, "a NULL routine")
				} else {
					require.NoError(t, err, "a routine is an address, not read")
					assert.Equal(t, uint64(wild), f.Addr)
				}
				_, err = tk0.Kind()
				check(t, err, "td_team of an implicit task")
				_, err = th[0].ICVString(ompd.ICVNthreadsVar)
				check(t, err, "team of the current task")

				// The enclosing team.
				s.Inner.SetParentAddr(ptr)
				as.Refresh()
				// The team itself is fine; the walk out of it is cut: an
				// inner team (level 2) must have a parent, and one that
				// cannot be read ends the walk there.
				lvl, err := p1.Level()
				require.NoError(t, err)
				assert.Equal(t, 2, lvl)
				_, err = p1.Enclosing()
				check(t, err, "t_parent")

				// Thread-level pointers: NULL means idle, not corrupt.
				s.Threads[3].SetCurrentTaskAddr(ptr)
				s.Threads[3].SetTeamAddr(ptr)
				as.Refresh()
				_, err = th[3].CurrentTask()
				if ptr == 0 {
					assert.ErrorIs(t, err, ompd.ErrUnavailable)
				} else {
					check(t, err, "th_current_task")
				}
				_, err = th[3].CurrentParallel()
				if ptr == 0 {
					assert.ErrorIs(t, err, ompd.ErrUnavailable)
				} else {
					check(t, err, "th_team")
				}
				_, err = th[3].ICV(ompd.ICVNthreadsVar)
				if ptr == 0 {
					assert.ErrorIs(t, err, ompd.ErrUnavailable)
				} else {
					check(t, err, "thread ICV")
				}

				// The thread table.
				s.RT.SetThreadsEntry(4, ptr)
				as.Refresh()
				ths, err := ompd.Collect(as.Threads())
				require.NoError(t, err)
				if ptr == 0 {
					assert.Len(t, ths, 4)
				} else {
					// One bad entry costs that thread only.
					require.Len(t, ths, 5)
					_, err = ths[4].Num()
					check(t, err, "__kmp_threads entry")
					_, err = ths[3].Num()
					require.NoError(t, err)
				}
				s.RT.SetGlobal("__kmp_threads", int64(ptr))
				as.Refresh()
				ths, err = ompd.Collect(as.Threads())
				if ptr == 0 {
					require.NoError(t, err)
					assert.Empty(t, ths)
					_, err = th[0].Num()
					assert.ErrorIs(t, err, ompd.ErrStaleHandle)
				} else {
					check(t, err, "__kmp_threads")
				}
			})
		}
		// Memory that vanishes from under a live address space.
		t.Run("unmapped structure", func(t *testing.T) {
			s, as := fakeOpenNested(t, cfg)
			th := fakeThreads(t, as)[2]
			require.True(t, s.T.Unmap(s.TaskB.Addr))
			as.Refresh()
			_, err := th.CurrentTask()
			assert.ErrorIs(t, err, ompd.ErrReadFailed)
			assert.ErrorIs(t, err, target.ErrNoMemory)
		})
	})
}

// fakeWalkAll reads everything the address space offers, following chains for
// at most limit steps, then takes a Snapshot, and returns a transcript of
// the answers. Errors are part of the transcript; nothing may panic or loop.
func fakeWalkAll(as *ompd.AddressSpace, limit int) []string {
	out, _ := fakeWalk(as, limit, nil)
	return append(out, fakeSnapshotLine(as))
}

// fakeSnapshotLine takes a Snapshot and sums it up.
func fakeSnapshotLine(as *ompd.AddressSpace) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	snap, err := as.Snapshot(ctx)
	if err != nil {
		return fmt.Sprintf("snapshot %v", err)
	}
	return fmt.Sprintf("snapshot %d threads %d errors", len(snap.Threads), len(snap.Errors))
}

// fakeWalk is fakeWalkAll without the Snapshot that also hands every error to
// onErr (if not nil). long reports whether some chain was cut at limit.
func fakeWalk(as *ompd.AddressSpace, limit int, onErr func(what string, err error)) (out []string, long bool) {
	rec := func(format string, args ...any) {
		line := fmt.Sprintf(format, args...)
		out = append(out, line)
		if onErr == nil {
			return
		}
		for _, a := range args {
			if err, ok := a.(error); ok && err != nil {
				onErr(line, err)
			}
		}
	}
	scope := func(sc ompd.Scope) {
		for id := range ompd.AllICVs() {
			if id.Scope() != sc.ScopeKind() {
				continue
			}
			v, err := sc.ICV(id)
			str, err2 := sc.ICVString(id)
			rec("icv %v %d %v %q %v", id, v, err, str, err2)
		}
	}
	v, err := as.OpenMPVersion()
	rec("version %d %v", v, err)
	scope(as)
	dv, err := as.DisplayControlVars()
	rec("display %v %v", dv, err)
	dll, err := as.DLLLocations()
	rec("dlls %q %v", dll, err)
	bp, err := as.Breakpoints()
	rec("breakpoints %v %v", bp, err)
	en, err := as.Enabled()
	rec("enabled %v %v", en, err)
	lim, err := as.ThreadLimit()
	rec("thread limit %d %v", lim, err)
	np, err := as.NumProcs()
	rec("num procs %d %v", np, err)
	ths, err := ompd.Collect(as.Threads())
	rec("threads %d %v", len(ths), err)
	visitTask := func(tk ompd.Task) {
		k, err := tk.Kind()
		rec("  task %v kind %v %v", tk, k, err)
		fin, err := tk.InFinal()
		rec("  final %v %v", fin, err)
		p, err := tk.Parallel()
		rec("  parallel %v %v", p, err)
		f, err := tk.Function()
		rec("  function %v %v", f, err)
		fr, err := tk.Frames()
		rec("  frame %+v %v", fr, err)
		id, err := tk.ID()
		rec("  id %d %v", id, err)
		sch, err := tk.Schedule()
		rec("  schedule %v %v", sch, err)
		pb, err := tk.ProcBind()
		rec("  proc bind %v %v", pb, err)
		nested, err := tk.Nested()
		rec("  nested %v %v", nested, err)
		scope(tk)
		sp, err := tk.Scheduling()
		for i := 0; err == nil; i++ {
			if i == limit {
				long = true
				break
			}
			rec("  scheduling %v", sp)
			sp, err = sp.Scheduling()
		}
		rec("  scheduling end %v", err)
	}
	for i, th := range ths {
		if i >= limit {
			break
		}
		rec("thread %v", th)
		st, w, err := th.State()
		rec(" state %v %d %v", st, w, err)
		n, err := th.Num()
		rec(" num %d %v", n, err)
		in, err := th.InParallel()
		rec(" in parallel %v %v", in, err)
		for _, kind := range []ompd.ThreadIDKind{ompd.PthreadID, ompd.LWPID} {
			id, err := th.OSThread(kind)
			rec(" os %v %d %v", kind, id, err)
			if err == nil {
				back, err := as.ThreadByOSThread(kind, id)
				rec(" back %v %v %v", back, back.Equal(th), err)
			}
		}
		scope(th)
		list, err := th.NthreadsList()
		rec(" nthreads %v %v", list, err)
		p, err := th.CurrentParallel()
		for k := 0; err == nil; k++ {
			if k == limit {
				long = true
				break
			}
			lvl, err1 := p.Level()
			act, err2 := p.ActiveLevel()
			nt, err3 := p.NumThreads()
			id, err4 := p.ID()
			f, err5 := p.Function()
			rec(" parallel %v %d %d %d %d %v %v %v %v %v %v %v", p, lvl, act, nt, id, f, err1, err2, err3, err4, err5, p.Addr())
			scope(p)
			for j := -1; j <= min(nt, 4); j++ {
				pt, err := p.Thread(j)
				rec("  thread %d %v %v", j, pt, err)
				it, err := p.ImplicitTask(j)
				rec("  implicit %d %v %v", j, it, err)
				if err == nil && j == 0 {
					visitTask(it)
				}
			}
			p, err = p.Enclosing()
		}
		rec(" parallel end %v", err)
		tk, err := th.CurrentTask()
		for k := 0; err == nil; k++ {
			if k == limit {
				long = true
				break
			}
			visitTask(tk)
			tk, err = tk.Generating()
		}
		rec(" task end %v", err)
	}
	return out, long
}

func TestFakeWalkAll(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		_, as := fakeOpenNested(t, cfg)
		out := fakeWalkAll(as, 64)
		text := strings.Join(out, "\n")
		assert.NotContains(t, text, "panic")
		assert.Contains(t, text, "snapshot 5 threads 0 errors")
	})
}
