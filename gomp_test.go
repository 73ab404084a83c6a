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
	runtimes := map[string]func() fixtures.RuntimeInfo{
		"system": func() fixtures.RuntimeInfo { return fixtures.SystemGomp(t) },
	}
	for _, v := range fixtures.GompVersions {
		runtimes["debug-"+v] = func() fixtures.RuntimeInfo { return fixtures.GompRuntime(t, v) }
	}
	for rname, info := range runtimes {
		for _, name := range fixtures.GompNames() {
			t.Run(rname+"/"+name, func(t *testing.T) {
				stop := fixtures.CoreWith(t, info(), name)
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
