package ompd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/kmp"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

// These tests run the fixtures on the LLVM OpenMP runtimes Debian ships
// (libomp5-13 ... libomp5-19, scripts/stock-libomp.sh): stripped, no debug
// information anywhere. They are read through the table of their release
// (internal/kmp's known releases), and must read right against the
// programs' own truth.

// stockNames are the fixtures read on every stock runtime.
var stockNames = []string{fixtures.Nested, fixtures.Serialized, fixtures.Tasks, fixtures.ICVs, fixtures.Teams, fixtures.Idle, fixtures.EndBarrier}

// checkTarget is a core whose symbol lookups also find what the checks
// need of a stripped runtime's hidden globals (the indirect locks' table,
// to tell a user lock's runtime object), found as package kmp finds
// hidden names: nothing ompd.Open reads, so that it still sees a stripped
// runtime.
type checkTarget struct {
	*core.Core
	rt *kmp.Runtime
}

func (c checkTarget) LookupSymbol(name string) (uint64, error) {
	a, err := c.Core.LookupSymbol(name)
	if err != nil && name == "__kmp_i_lock_table" && errors.Is(err, target.ErrNotFound) {
		return c.rt.LookupHidden(name)
	}
	return a, err
}

// openChecked opens the address space of a core whose runtime is read
// through a known release's table, on a checkTarget.
func openChecked(t *testing.T, c *core.Core) *ompd.AddressSpace {
	t.Helper()
	r, err := kmp.Open(c)
	require.NoError(t, err)
	as, err := ompd.Open(checkTarget{c, r.(*kmp.Runtime)})
	require.NoError(t, err)
	t.Cleanup(func() { as.Close() })
	return as
}

// openStock opens a stock runtime's core: its address space, read through
// the known table of its release.
func openStock(t *testing.T, stop *fixtures.Stop) *ompd.AddressSpace {
	t.Helper()
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	as := openChecked(t, c)
	ri := as.Runtime()
	require.Equal(t, ompd.LayoutKnownTable, ri.Layout)
	require.Equal(t, fmt.Sprint(stop.Runtime.Stock.Major), ri.Version[:len(fmt.Sprint(stop.Runtime.Stock.Major))], "the release read")
	return as
}

// TestStockRuntimes reads each fixture's core on each stock runtime, the
// program started with OMP_DEBUG=enabled: every answer, recorded thread
// states included, against the truth.
func TestStockRuntimes(t *testing.T) {
	for _, info := range fixtures.StockRuntimes(t) {
		for _, name := range stockNames {
			t.Run(fmt.Sprintf("%s-%d/%s", info.Stock.Suite, info.Stock.Major, name), func(t *testing.T) {
				stop := fixtures.CoreWith(t, info, name)
				ompdtest.CheckTruth(t, openStock(t, stop), stop.Truth)
			})
		}
	}
}

// TestStockRuntimesUntracked is TestStockRuntimes for programs started as
// most are, without OMP_DEBUG=enabled and no OMPT tool: the runtime
// records no thread states, which are read from the threads' stacks and
// must be right all the same.
func TestStockRuntimesUntracked(t *testing.T) {
	for _, info := range fixtures.StockRuntimes(t) {
		info := info.WithoutOMPDebug()
		for _, name := range stockNames {
			t.Run(fmt.Sprintf("%s-%d/%s", info.Stock.Suite, info.Stock.Major, name), func(t *testing.T) {
				stop := fixtures.CoreWith(t, info, name)
				ompdtest.CheckUntracked(t, openStock(t, stop), stop.Truth)
			})
		}
	}
}

// TestStockRuntimesWaits: on each stock runtime, programs started without
// OMP_DEBUG=enabled, every thread's state read from its stack is its
// role's: a worksharing construct's implicit barrier (for static and
// dynamic, single, sections) apart from an explicit one, a nest lock, the
// unnamed critical section, a taskgroup's end, a taskwait; and the hung
// fixture's every wait in one process (ordered and a named critical
// section too, a team a pthread started, workers idle). The waits
// fixture runs with futex locks (KMP_LOCK_KIND=futex): it waits until its
// waiters sleep in the kernel, and the runtime's default locks spin. The
// taskwaits and hung fixtures' waiters spin (LLVM's taskwait never
// sleeps): they stop once their waiters arrived and settled
// (OMPD_FIXTURE_SPIN_WAITS=1). The workshare and hung fixtures run on
// LLVM 19 only: clang 19's dynamic and ordered loops call
// __kmpc_dispatch_deinit, which older runtimes lack.
func TestStockRuntimesWaits(t *testing.T) {
	for _, info := range fixtures.StockRuntimes(t) {
		info := info.WithoutOMPDebug()
		for _, c := range []struct {
			name string
			env  []string
		}{{fixtures.Workshare, nil}, {fixtures.Waits, []string{"KMP_LOCK_KIND=futex"}},
			{fixtures.TaskWaits, []string{"OMPD_FIXTURE_SPIN_WAITS=1"}},
			{fixtures.Hung, []string{"OMPD_FIXTURE_SPIN_WAITS=1"}}} {
			if (c.name == fixtures.Workshare || c.name == fixtures.Hung) && info.Stock.Major < 19 {
				continue
			}
			t.Run(fmt.Sprintf("%s-%d/%s", info.Stock.Suite, info.Stock.Major, c.name), func(t *testing.T) {
				stop := fixtures.CoreWith(t, info.WithEnv(c.env...), c.name)
				as := openStock(t, stop)
				for i := range stop.Truth.Threads {
					tt := &stop.Truth.Threads[i]
					t.Run(fmt.Sprintf("tid%d-%s", tt.TID, tt.Role), func(t *testing.T) {
						ompdtest.CheckInferredState(t, stop.Truth, tt, ompdtest.Thread(t, as, tt))
					})
				}
			})
		}
	}
}
