package fakeruntime_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
)

// TestGompRead: ompd.Open reads a Gomp layout as libgomp, its layout from
// the target's debug information: every thread, its number and region
// nest with team sizes and active levels, its tasks and their ICVs; and
// states unknown, since no stack says them.
func TestGompRead(t *testing.T) {
	tg := fakeruntime.NewTarget(fakeruntime.Config{})
	g := fakeruntime.NewGomp(tg)
	var ths []*fakeruntime.GompThread
	for i := range 5 {
		ths = append(ths, g.NewThread(fakeruntime.LWPOf(i), fakeruntime.PthreadOf(tg.Sizes(), i)))
	}
	outer := g.NewTeam(ths[:3], g.Function("main._omp_fn.0"))
	inner := g.NewTeam([]*fakeruntime.GompThread{ths[1], ths[3], ths[4]}, g.Function("main._omp_fn.1"))
	serial := g.NewTeam(ths[2:3], g.Function("main._omp_fn.2"))
	task := g.NewTask(ths[4], inner.Implicit[2], fakeruntime.GompTaskTied, true, g.Function("work._omp_fn.3"))
	task.SetICVs(fakeruntime.GompICVs{NThreads: 7, RunSched: 3, RunSchedChunk: 5, ThreadLimit: 9, MaxActiveLevels: 2})

	as, err := ompd.Open(tg)
	require.NoError(t, err)
	defer as.Close()
	assert.Equal(t, "GNU libgomp", as.Runtime().Name)
	assert.Equal(t, ompd.LayoutDWARF, as.Runtime().Layout)
	threads, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	require.Len(t, threads, 5)
	want := map[uint64]struct{ num, level, active, size int }{
		fakeruntime.LWPOf(0): {0, 1, 1, 3},
		fakeruntime.LWPOf(1): {0, 2, 2, 3},
		fakeruntime.LWPOf(2): {0, 2, 1, 1},
		fakeruntime.LWPOf(3): {1, 2, 2, 3},
		fakeruntime.LWPOf(4): {2, 2, 2, 3},
	}
	for _, th := range threads {
		lwp, err := th.OSThread(ompd.LWPID)
		require.NoError(t, err)
		w := want[lwp]
		n, err := th.Num()
		require.NoError(t, err)
		assert.Equal(t, w.num, n, "thread %d", lwp)
		p, err := th.CurrentParallel()
		require.NoError(t, err)
		l, _ := p.Level()
		a, _ := p.ActiveLevel()
		size, _ := p.NumThreads()
		assert.Equal(t, []int{w.level, w.active, w.size}, []int{l, a, size}, "thread %d", lwp)
		for l--; l >= 0; l-- {
			p, err = p.Enclosing()
			require.NoError(t, err)
			size, _ = p.NumThreads()
			assert.Equal(t, map[int]int{1: 3, 0: 1}[l], size, "thread %d: the team at level %d", lwp, l)
		}
		_, err = p.Enclosing()
		assert.ErrorIs(t, err, ompd.ErrUnavailable, "level 0 is the outermost")
		_, _, err = th.State()
		assert.ErrorIs(t, err, ompd.ErrUnavailable, "no stack tells")
	}
	th, err := as.ThreadByOSThread(ompd.LWPID, fakeruntime.LWPOf(4))
	require.NoError(t, err)
	k, err := th.CurrentTask()
	require.NoError(t, err)
	kind, err := k.Kind()
	require.NoError(t, err)
	assert.NotZero(t, kind&ompd.TaskExplicit)
	final, err := k.InFinal()
	require.NoError(t, err)
	assert.True(t, final)
	lim, err := k.ThreadLimit()
	require.NoError(t, err)
	assert.Equal(t, 9, lim)
	gen, err := k.Generating()
	require.NoError(t, err)
	gk, _ := gen.Kind()
	assert.NotZero(t, gk&ompd.TaskImplicit)
	_ = outer
	_ = serial
}
