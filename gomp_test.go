package ompd_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/target/core"
)

// TestGompThroughAPI reads gcc programs on libgomp through the public API,
// as the README's first example does: on the debug builds (DWARF) and on
// the system's libgomp1 (no debug information: the known-layout table).
// internal/gomp's own tests check every answer in depth.
func TestGompThroughAPI(t *testing.T) {
	runtimes := map[string]func(testing.TB) fixtures.RuntimeInfo{
		"system": func(t testing.TB) fixtures.RuntimeInfo { return fixtures.SystemGomp(t) },
	}
	for _, v := range fixtures.GompVersions {
		runtimes["debug-"+v] = func(t testing.TB) fixtures.RuntimeInfo { return fixtures.GompRuntime(t, v) }
	}
	for rname, info := range runtimes {
		for _, name := range fixtures.GompNames() {
			t.Run(rname+"/"+name, func(t *testing.T) {
				stop := fixtures.CoreWith(t, info(t), name)
				c, err := core.Open(stop.Exe, stop.Core, core.WithDebugDirs())
				require.NoError(t, err)
				defer c.Close()
				as, err := ompd.Open(c)
				require.NoError(t, err)
				defer as.Close()
				rt := as.Runtime()
				assert.Equal(t, "GNU libgomp", rt.Name)
				if rname == "system" {
					assert.Equal(t, ompd.LayoutKnownTable, rt.Layout)
				} else {
					assert.Equal(t, ompd.LayoutDWARF, rt.Layout)
				}
				threads, err := as.Threads()
				require.NoError(t, err)
				require.Len(t, threads, len(stop.Truth.Threads))
				for _, th := range threads {
					lwp, err := th.OSThread(ompd.LWPID)
					require.NoError(t, err)
					want := stop.Truth.ThreadByTID(int(lwp))
					require.NotNil(t, want, "thread %d", lwp)
					if want.Role == fixtures.RoleIdle {
						state, _, err := th.State()
						require.NoError(t, err)
						assert.Equal(t, ompd.StateIdle, state)
						inferred, err := th.StateInferred()
						require.NoError(t, err)
						assert.True(t, inferred)
						_, err = th.CurrentParallel()
						assert.ErrorIs(t, err, ompd.ErrUnavailable)
						continue
					}
					n, err := th.Num()
					require.NoError(t, err)
					assert.Equal(t, want.ThreadNum, n)
					in, err := th.InParallel()
					require.NoError(t, err)
					assert.Equal(t, want.InParallel, in)
					level := want.Level
					p, err := th.CurrentParallel()
					for ; err == nil; p, err = p.Enclosing() {
						l, err := p.Level()
						require.NoError(t, err)
						assert.Equal(t, level, l)
						size, err := p.NumThreads()
						require.NoError(t, err)
						assert.Equal(t, want.Ancestors[l].TeamSize, size, "team size at level %d", l)
						level--
					}
					assert.ErrorIs(t, err, ompd.ErrUnavailable)
					assert.Equal(t, -1, level, "every level down to 0")
					task, err := th.CurrentTask()
					require.NoError(t, err)
					final, err := task.InFinal()
					require.NoError(t, err)
					assert.Equal(t, want.InFinal, final)
				}
				snap, err := as.Snapshot(context.Background())
				require.NoError(t, err)
				require.Len(t, snap.Threads, len(stop.Truth.Threads))
				_, err = json.Marshal(snap)
				require.NoError(t, err)
			})
		}
	}
}

// TestGCCProgramOnLLVM: a gcc-compiled program on LLVM's runtime (which
// serves GCC's ABI) shows the user's outlined functions (main._omp_fn.N)
// for its regions and implicit tasks, not the runtime's wrapper.
func TestGCCProgramOnLLVM(t *testing.T) {
	stop := fixtures.CoreWith(t, fixtures.GCCOnLLVM(t), fixtures.Nested)
	c, err := core.Open(stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	as, err := ompd.Open(c)
	require.NoError(t, err)
	defer as.Close()
	assert.Equal(t, "LLVM libomp", as.Runtime().Name)
	threads, err := as.Threads()
	require.NoError(t, err)
	require.Len(t, threads, len(stop.Truth.Threads))
	for _, th := range threads {
		p, err := th.CurrentParallel()
		require.NoError(t, err)
		var names []string
		for ; err == nil; p, err = p.Enclosing() {
			if l, _ := p.Level(); l == 0 {
				break
			}
			fn, err := p.Function()
			require.NoError(t, err)
			assert.Contains(t, fn.Symbol, "main._omp_fn.", "not the runtime's wrapper")
			names = append(names, fn.Symbol)
		}
		require.Len(t, names, 2)
		assert.NotEqual(t, names[0], names[1], "each level has its own outlined function")
		task, err := th.CurrentTask()
		require.NoError(t, err)
		fn, err := task.Function()
		require.NoError(t, err)
		assert.Equal(t, names[0], fn.Symbol, "the implicit task runs its region's function")
	}
}

// TestBothRuntimesLoaded: a program that loads LLVM's and GCC's runtimes
// is read through the one its threads use, and the other is named.
func TestBothRuntimesLoaded(t *testing.T) {
	gomp, llvm := fixtures.GompRuntime(t, fixtures.GompVersions[0]), fixtures.Runtime(t)
	for _, c := range []struct {
		info        fixtures.RuntimeInfo
		used, other string
	}{
		{fixtures.BothRuntimes(gomp, llvm), "GNU libgomp", "LLVM libomp"},
		{fixtures.BothRuntimes(llvm, gomp), "LLVM libomp", "GNU libgomp"},
	} {
		t.Run(c.used, func(t *testing.T) {
			stop := fixtures.CoreWith(t, c.info, fixtures.Nested)
			cr, err := core.Open(stop.Exe, stop.Core)
			require.NoError(t, err)
			defer cr.Close()
			as, err := ompd.Open(cr)
			require.NoError(t, err)
			defer as.Close()
			rt := as.Runtime()
			assert.Equal(t, c.used, rt.Name)
			require.Len(t, rt.AlsoLoaded, 1)
			assert.Contains(t, rt.AlsoLoaded[0], c.other)
			threads, err := as.Threads()
			require.NoError(t, err)
			assert.Len(t, threads, len(stop.Truth.Threads))
		})
	}
}
