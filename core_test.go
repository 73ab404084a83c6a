package ompd_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

// openCore opens the core of a stopped fixture and its address space.
func openCore(t *testing.T, name string, args ...string) (*fixtures.Stop, *ompd.AddressSpace) {
	t.Helper()
	stop := fixtures.Core(t, name, args...)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	as, err := ompd.Open(c)
	require.NoError(t, err)
	t.Cleanup(func() { as.Close() })
	return stop, as
}

// fixtureCase is a fixture and its arguments.
type fixtureCase struct {
	name string
	args []string
}

func (c fixtureCase) String() string { return strings.Join(append([]string{c.name}, c.args...), "-") }

// fixtureCases lists every fixture, the many fixture with the given
// number of threads.
func fixtureCases(manyThreads string) []fixtureCase {
	return []fixtureCase{
		{fixtures.Nested, nil},
		{fixtures.Serialized, nil},
		{fixtures.Tasks, nil},
		{fixtures.ICVs, nil},
		{fixtures.Many, []string{manyThreads}},
		{fixtures.Workshare, nil},
	}
}

// TestFixtureCores compares every answer of the API on each fixture's core
// with what the program itself recorded at the stop, and with what the
// runtime itself answered through OMPT (frames, task kinds).
//
// Bugs planted one at a time, each in a scratch copy, to check that real
// cores catch them (bug -> the tests that fail; "TestDifferential" is the
// one in internal/compare):
//   - the exit and enter flag fields of a task frame swapped
//     (internal/kmp/task.go, taskFrames): TestFixtureCores/tasks
//     (undeferred tasks have application|framepointer on one side only)
//     and TestDifferential/tasks;
//   - the frames of the wrong serialized level (lwt(tm, j+1) instead of
//     lwt(tm, j), task.go): TestFixtureCores/serialized, serialized-deep
//     and teams (exact frames per level from OMPT), TestDifferential/serialized;
//   - the lw-taskteam parent walk one step short (lwt(tm, max(j-1, 1)),
//     task.go): TestFixtureCores/serialized-deep only, the one fixture
//     with more than two serialized levels in a row (exact exit and enter
//     frames of levels 5 and 4 from OMPT);
//   - Task.Nested with >= instead of > (icv.go): TestFixtureCores/tasks,
//     many-256, idle, teams and teams-body, where max-active-levels is 1
//     (every thread records omp_get_nested);
//   - ErrIncomplete for a one-element list (len(v.List) > 0 instead of
//     > 1, icv.go): every TestFixtureCores and TestDifferential case
//     (checkICVs: incomplete only when the list has more);
//   - one more display variable marked stale (KMP_LOCK_KIND left out of
//     internal/kmp/display.go kmpSettings): every TestFixtureCores case
//     (checkDisplay pins ompdtest.StaleDisplayVars) and every
//     TestDifferential case;
//   - final-task-var set for the implicit task of an enclosing serialized
//     level (r.Level < rec.teamLevel in internal/kmp/icv.go):
//     TestDifferential/serialized only, through the ICVs of the tasks
//     libompd skips, checked against the level records' omp_in_final();
//   - the team's t_pkfn as the entry function of an enclosing serialized
//     level (instead of the function on the stack, moment.go):
//     TestDifferential/serialized, through the level and function of the
//     regions and tasks libompd skips, and target/delve's
//     TestEventsMatchProgram;
//   - (seeded by the fixtures' OMPT chains) a chain one task short or long
//     fails "the task chain as long as OMPT's" in every fixture.
func TestFixtureCores(t *testing.T) {
	cases := append(fixtureCases("256"), fixtureCase{fixtures.Serialized, []string{"deep"}}, fixtureCase{fixtures.Teams, nil},
		fixtureCase{fixtures.Teams, []string{"body"}}, fixtureCase{fixtures.Idle, nil})
	for _, c := range cases {
		t.Run(c.String(), func(t *testing.T) {
			t.Parallel()
			stop, as := openCore(t, c.name, c.args...)
			ompdtest.CheckTruth(t, as, stop.Truth)
		})
	}
}

// TestSerializedLevels spells out the case LLVM's libompd gets wrong: every
// nested serialized region is a level of its own.
func TestSerializedLevels(t *testing.T) {
	stop, as := openCore(t, fixtures.Serialized)
	st := stop.Truth.Stopper()
	require.NotNil(t, st)
	th := ompdtest.Thread(t, as, st)
	regions := ompdtest.Regions(t, th)
	var levels, sizes []int
	for _, p := range regions {
		l, err := p.Level()
		require.NoError(t, err)
		n, err := p.NumThreads()
		require.NoError(t, err)
		levels = append(levels, l)
		sizes = append(sizes, n)
	}
	var wantLevels, wantSizes []int
	for l := st.Level; l >= 0; l-- {
		wantLevels = append(wantLevels, l)
		wantSizes = append(wantSizes, st.Ancestors[l].TeamSize)
	}
	assert.Equal(t, wantLevels, levels)
	assert.Equal(t, wantSizes, sizes)
	serialized := 0
	for _, n := range sizes[:len(sizes)-1] {
		if n == 1 {
			serialized++
		}
	}
	assert.GreaterOrEqual(t, serialized, 3, "the fixture nests at least 3 serialized regions")
	// Handles of distinct levels differ, and are stable: walking the nest
	// again gives equal handles with the same ids.
	seen := map[string]bool{}
	for _, p := range regions {
		assert.False(t, seen[p.String()], "duplicate id %s", p)
		seen[p.String()] = true
	}
	again := ompdtest.Regions(t, th)
	require.Len(t, again, len(regions))
	for i := range regions {
		assert.True(t, again[i].Equal(regions[i]), "region %d: %v, then %v", i, regions[i], again[i])
		assert.Equal(t, regions[i].String(), again[i].String())
	}
	cur, err := th.CurrentParallel()
	require.NoError(t, err)
	assert.True(t, cur.Equal(regions[0]))
	assert.Equal(t, cur, regions[0])
}

func TestAddressSpaceOnCore(t *testing.T) {
	stop, as := openCore(t, fixtures.Nested)

	bps, err := as.Breakpoints()
	require.NoError(t, err)
	sym, ok := as.Target().(target.Symbolizer)
	require.True(t, ok, "target/core names code addresses")
	for bp := range bps.All() {
		require.NotZero(t, bp.Addr, bp.Name)
		name, ok := sym.SymbolAt(bp.Addr)
		require.True(t, ok, bp.Name)
		assert.Equal(t, bp.Name, name)
	}
	on, err := as.Enabled()
	require.NoError(t, err)
	assert.True(t, on, "OMP_DEBUG=enabled sets ompd_state")
	err = as.Enable(false)
	assert.ErrorIs(t, err, ompd.ErrWriteFailed)
	assert.ErrorIs(t, err, target.ErrReadOnly)

	dlls, err := as.DLLLocations()
	require.NoError(t, err)
	require.NotEmpty(t, dlls)
	assert.Equal(t, "libompd.so", dlls[0])
	if len(dlls) > 1 {
		assert.Equal(t, "libompd.so", filepath.Base(dlls[1]))
	}

	tl, err := as.ThreadLimit()
	require.NoError(t, err)
	assert.Greater(t, tl, 0)

	// A non-OpenMP OS thread id is unavailable, an unknown one bad input.
	_, err = as.ThreadByOSThread(ompd.LWPID, 1)
	assert.ErrorIs(t, err, ompd.ErrBadInput)
	_, err = as.ThreadByOSThread(ompd.PthreadID, 0x1234)
	assert.ErrorIs(t, err, ompd.ErrUnavailable)
	_, err = as.ThreadByOSThread(ompd.WinThreadID, 1)
	assert.ErrorIs(t, err, ompd.ErrUnsupported)

	// Snapshot walks everything without errors and encodes as JSON.
	snap, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Empty(t, snap.Errors)
	assert.True(t, snap.StateTracking)
	assert.GreaterOrEqual(t, len(snap.Threads), len(stop.Truth.Threads))
	_, err = json.Marshal(snap)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = as.Snapshot(ctx)
	assert.ErrorIs(t, err, context.Canceled)

	// Handles of another address space over the same core are not equal.
	c2, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c2.Close()
	as2, err := ompd.Open(c2)
	require.NoError(t, err)
	t1, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	t2, err := ompd.Collect(as2.Threads())
	require.NoError(t, err)
	assert.False(t, t1[0].Equal(t2[0]))
	assert.Equal(t, t1[0].String(), t2[0].String(), "string ids are stable")

	require.NoError(t, as2.Close())
	_, err = t2[0].Num()
	assert.ErrorIs(t, err, ompd.ErrStaleHandle)
}

// TestConcurrentUse walks the same address space from several goroutines
// (run with -race).
func TestConcurrentUse(t *testing.T) {
	_, as := openCore(t, fixtures.Tasks)
	want, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	as.Refresh()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := as.Snapshot(context.Background())
			if err != nil {
				errs <- err
				return
			}
			a, _ := json.Marshal(got)
			b, _ := json.Marshal(want)
			if string(a) != string(b) {
				errs <- errors.New("concurrent snapshot differs")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestEnumerations(t *testing.T) {
	states := slices.Collect(ompd.States())
	assert.Contains(t, states, ompd.StateWaitBarrierImplementation)
	assert.Contains(t, states, ompd.StateWaitBarrierTeams)
	assert.Equal(t, ompd.StateUndefined, states[0])
	names := map[string]bool{}
	for _, s := range states {
		assert.NotContains(t, s.String(), "State(")
		names[s.String()] = true
	}
	assert.Len(t, names, len(states))

	icvs := slices.Collect(ompd.AllICVs())
	assert.Len(t, icvs, 32, "every ICV of LLVM's libompd 19, then OpenMP 5.1's two teams ICVs")
	for i, id := range icvs {
		assert.Equal(t, ompd.ICV(i+1), id, "ids in libompd's order, then the teams ICVs")
		got, ok := ompd.ICVByName(id.Name())
		assert.True(t, ok)
		assert.Equal(t, id, got)
	}
	alias, ok := ompd.ICVByName("team-size")
	assert.True(t, ok)
	assert.Equal(t, ompd.ICVTeamSizeVar, alias)
	assert.Equal(t, ompd.ScopeTask, ompd.ICVRunSchedVar.Scope())
	assert.NotEmpty(t, ompd.VersionString())
}

// TestNoRuntime opens a core of a program without OpenMP.
func TestNoRuntime(t *testing.T) {
	fixtures.RequireTools(t)
	fixtures.Watchdog(t, fixtures.LiveBound())
	dir := t.TempDir()
	src := filepath.Join(dir, "plain.c")
	require.NoError(t, os.WriteFile(src, []byte("#include <stdio.h>\nvoid __attribute__((noinline)) stopme(void) { __asm__ volatile(\"\"); }\nint main(void) { stopme(); puts(\"done\"); return 0; }\n"), 0o644))
	exe := filepath.Join(dir, "plain")
	out, err := exec.Command("gcc", "-g", "-o", exe, src).CombinedOutput()
	require.NoError(t, err, string(out))
	corePath := filepath.Join(dir, "plain.core")
	out, err = exec.Command("gdb", "-nx", "-batch", "-ex", "break stopme", "-ex", "run", "-ex", "gcore "+corePath, "-ex", "kill", exe).CombinedOutput()
	require.NoError(t, err, string(out))
	c, err := core.Open(context.Background(), exe, corePath)
	require.NoError(t, err)
	defer c.Close()
	_, err = ompd.Open(c)
	require.Error(t, err)
	assert.ErrorIs(t, err, ompd.ErrNoRuntime)
	assert.ErrorIs(t, err, ompd.ErrIncompatible)
	assert.Contains(t, err.Error(), "no OpenMP runtime")
}
