package fakeomp_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/fakeomp"
)

// TestRead: what a program describes is what ompd reads, on both
// runtimes' layouts: every thread, its number, the nest of its regions
// with their levels, active levels and team sizes (a serialized region
// included), its tasks, their kinds and generating tasks; LLVM's states
// and the regions' outlined functions, and on libgomp's layout states the
// library cannot tell (no stacks).
func TestRead(t *testing.T) {
	for _, rt := range []fakeomp.Runtime{fakeomp.LLVM, fakeomp.GNU} {
		t.Run(rt.String(), func(t *testing.T) {
			p := fakeomp.New(rt)
			outer := p.Initial().Parallel(3, "main._omp_fn.0")
			inner := outer.Thread(2).Parallel(2, "main._omp_fn.1")
			serial := outer.Thread(1).Parallel(1, "main._omp_fn.2")
			inner.Thread(1).Task("a._omp_fn.3", false)
			inner.Thread(1).Task("b._omp_fn.4", true)
			if rt == fakeomp.LLVM {
				outer.Thread(0).SetState(ompd.StateWaitBarrierExplicit, 0)
			} else {
				assert.Panics(t, func() { outer.Thread(0).SetState(ompd.StateWaitBarrierExplicit, 0) })
			}
			require.Len(t, p.Threads(), 4)
			assert.Equal(t, []int{1, 2, 2}, []int{outer.Level(), inner.Level(), serial.Level()})
			assert.Equal(t, outer, inner.Enclosing())

			as, err := ompd.Open(p.Target())
			require.NoError(t, err)
			defer as.Close()
			assert.Equal(t, rt.String(), as.Runtime().Name)
			threads, err := ompd.Collect(as.Threads())
			require.NoError(t, err)
			require.Len(t, threads, 4)

			// Each thread's region nest, innermost first: its number
			// there, then (level, active level, team size, function).
			type level struct {
				level, active, size int
				fn                  string
			}
			l0 := level{0, 0, 1, ""}
			l1 := level{1, 1, 3, "main._omp_fn.0"}
			want := map[*fakeomp.Thread]struct {
				num  int
				nest []level
			}{
				outer.Thread(0): {0, []level{l1, l0}},
				outer.Thread(1): {0, []level{{2, 1, 1, "main._omp_fn.2"}, l1, l0}},
				inner.Thread(0): {0, []level{{2, 2, 2, "main._omp_fn.1"}, l1, l0}},
				inner.Thread(1): {1, []level{{2, 2, 2, "main._omp_fn.1"}, l1, l0}},
			}
			for ft, w := range want {
				th, err := as.ThreadByOSThread(ompd.LWPID, ft.LWP())
				require.NoError(t, err)
				n, err := th.Num()
				require.NoError(t, err)
				assert.Equal(t, w.num, n, "thread %d", ft.LWP())
				var got []level
				for p, err := range th.Regions() {
					require.NoError(t, err)
					var l level
					l.level, _ = p.Level()
					l.active, _ = p.ActiveLevel()
					l.size, _ = p.NumThreads()
					if fn, err := p.Function(); err == nil && rt == fakeomp.LLVM {
						l.fn = fn.Symbol
					} else if l.level > 0 {
						l.fn = w.nest[len(got)].fn // libgomp's come from the stacks
					}
					got = append(got, l)
				}
				assert.Equal(t, w.nest, got, "thread %d", ft.LWP())
				st, _, err := th.State()
				switch {
				case rt == fakeomp.GNU:
					assert.ErrorIs(t, err, ompd.ErrUnavailable, "no stack tells")
				case ft == outer.Thread(0):
					assert.Equal(t, ompd.StateWaitBarrierExplicit, st)
				default:
					require.NoError(t, err)
					assert.Equal(t, ompd.StateWorkParallel, st)
				}
			}

			// The tasks of inner's thread 1: b (final) on a, a on the
			// region's implicit task.
			th, err := as.ThreadByOSThread(ompd.LWPID, inner.Thread(1).LWP())
			require.NoError(t, err)
			tasks, err := ompd.Collect(th.Tasks())
			require.NoError(t, err)
			require.GreaterOrEqual(t, len(tasks), 3)
			for i, w := range []struct {
				explicit, final bool
			}{{true, true}, {true, false}, {false, false}} {
				k, err := tasks[i].Kind()
				require.NoError(t, err)
				assert.Equal(t, w.explicit, k&ompd.TaskExplicit != 0, "task %d", i)
				final, err := tasks[i].InFinal()
				require.NoError(t, err)
				assert.Equal(t, w.final, final, "task %d", i)
			}
		})
	}
}

// TestSerializedInSerialized: LLVM keeps the serialized regions of a
// thread in one serial team, which fakeomp does not lay out twice.
func TestSerializedInSerialized(t *testing.T) {
	p := fakeomp.New(fakeomp.LLVM)
	r := p.Initial().Parallel(1, "f")
	assert.Panics(t, func() { r.Thread(0).Parallel(1, "g") })
	g := fakeomp.New(fakeomp.GNU)
	r = g.Initial().Parallel(1, "f")
	assert.Equal(t, 2, r.Thread(0).Parallel(1, "g").Level())
}
