package main

import (
	"bytes"
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
)

// threadBlocks splits the inspector's -threads output into each thread's
// block ("Thread gtid N (lwp L, ...)" up to the next), by LWP.
func threadBlocks(t *testing.T, out string) map[int]string {
	t.Helper()
	blocks := map[int]string{}
	head := regexp.MustCompile(`(?m)^Thread gtid \d+ \(lwp (\d+),`)
	locs := head.FindAllStringSubmatchIndex(out, -1)
	for i, l := range locs {
		end := len(out)
		if i+1 < len(locs) {
			end = locs[i+1][0]
		}
		if j := strings.Index(out[l[0]:end], "\nAddress-space ICVs:"); j >= 0 {
			end = l[0] + j
		}
		lwp, err := strconv.Atoi(out[l[2]:l[3]])
		require.NoError(t, err)
		blocks[lwp] = out[l[0]:end]
	}
	return blocks
}

// TestCoreGomp: the inspector on a core of a gcc program on the system's
// libgomp (no debug package) prints every thread with its region nest and
// task ICVs as the program saw them, thread by thread; on a libgomp with
// debug information it also prints states, region functions, the
// address-space ICVs and display variables, and without it says that
// those need the debug information instead of showing empty sections.
// The table pads thread ids (gtid %-4d, which is the LWP on libgomp), so
// every pattern allows any run of spaces after an id; debug-lowtids reads
// a core whose thread ids are below 1000 (made in a fresh PID namespace).
// Planted (not committed): the row pattern back to `^  gtid \d+ lwp N`
// (one space) fails debug-lowtids ("thread 5 in the table"), the truth
// being the thread ids the program recorded (gettid).
func TestCoreGomp(t *testing.T) {
	for _, c := range []struct {
		name    string
		info    func(testing.TB) fixtures.RuntimeInfo
		debug   bool
		lowTIDs bool
	}{
		{"system", func(t testing.TB) fixtures.RuntimeInfo { return fixtures.SystemGomp(t) }, false, false},
		{"debug", func(t testing.TB) fixtures.RuntimeInfo { return fixtures.GompRuntime(t, fixtures.GompVersions[0]) }, true, false},
		{"debug-lowtids", func(t testing.TB) fixtures.RuntimeInfo { return fixtures.GompRuntime(t, fixtures.GompVersions[0]) }, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			stop := fixtures.CoreWith(t, c.info(t), fixtures.Nested)
			if c.lowTIDs {
				stop = fixtures.CoreLowTIDs(t, c.info(t), fixtures.Nested)
				for _, th := range stop.Truth.Threads {
					require.Less(t, th.TID, 1000, "a thread id below 1000")
				}
			}
			out := runTool(t, "core", "-threads", "-vars", "-breakpoints", "-debug-dir", t.TempDir(), stop.Exe, stop.Core)
			checkGompText(t, out, stop.Truth, c.debug)
		})
	}
}

// checkGompText checks what the inspector prints of a libgomp program's
// core with -threads -vars -breakpoints against its truth (see
// TestCoreGomp); debug says whether libgomp's debug information is there.
func checkGompText(t *testing.T, out string, truth *fixtures.Truth, debug bool) {
	t.Helper()
	assert.Contains(t, out, "GNU libgomp")
	assert.Contains(t, out, "states inferred from the stacks")
	more := ""
	if !debug {
		more = ",..." // the rest of the list needs the debug file
	}
	checkThreadsText(t, out, truth, "._omp_fn.", more)
	asICVs := regexp.MustCompile(`(?m)^Address-space ICVs: (.*)$`).FindStringSubmatch(out)
	require.NotNil(t, asICVs)
	icv := truth.Threads[0].ICV
	require.NotNil(t, icv)
	// Every wait named, with or without the library's debug
	// information (a barrier gcc calls GOMP_barrier for is
	// wait_barrier: explicit or a worksharing construct's).
	assert.Regexp(t, `(?m)^  2 threads wait_barrier in `, out)
	assert.Contains(t, out, "wait_lock")
	assert.Contains(t, out, "wait_critical")
	assert.NotContains(t, out, "state unknown")
	if debug {
		assert.Contains(t, out, "OMP_NUM_THREADS")
		// The affinity format as text, the others as numbers.
		assert.Contains(t, asICVs[1], "affinity-format-var="+icv.AffinityFormat+" ")
		assert.Contains(t, asICVs[1], "num-procs-var="+strconv.Itoa(icv.NumProcs))
		assert.Contains(t, asICVs[1], "max-task-priority-var="+strconv.Itoa(icv.MaxTaskPriority)+" ")
		assert.Contains(t, asICVs[1], "stacksize-var=262144 ")
		assert.NotContains(t, out, "need its debug information")
	} else {
		// The ICVs a program cannot change after start-up, from
		// its start-up environment, marked; the display
		// variables are its OMP_* variables.
		assert.Contains(t, asICVs[1], "cancel-var=0* ")
		assert.Contains(t, asICVs[1], "stacksize-var=262144* ")
		assert.Contains(t, asICVs[1], "(* from the program's start-up environment: libgomp's globals are hidden symbols")
		assert.NotContains(t, asICVs[1], "affinity-format-var", "one the program may change")
		assert.Regexp(t, `Display control variables:\n(  OMP_\S+ +\(the program's start-up environment\)\n)*  OMP_STACKSIZE='256K' +\(the program's start-up environment\)\n`, out)
	}
	assert.Regexp(t, `Breakpoints:\n  none: gomp: libgomp has no OMPD breakpoint functions`, out)
	assert.NotContains(t, out, "Errors (")
	assert.Contains(t, out, "work_parallel")
}

// checkThreadsText checks every thread of the inspector's -threads output
// against the program's truth: its row of the table (its thread number),
// its region nest level by level (team sizes, the active level, an
// outlined function whose name holds fn) and its ICVs (thread-num-var,
// and nthreads-var followed by nthreadsMore).
func checkThreadsText(t *testing.T, out string, truth *fixtures.Truth, fn, nthreadsMore string) {
	t.Helper()
	blocks := threadBlocks(t, out)
	require.Len(t, blocks, len(truth.Threads), "one block per thread:\n%s", out)
	region := regexp.MustCompile(`(?m)^    level (\d+)  active level (\d+)  (\d+) threads?  (\S+)`)
	for _, th := range truth.Threads {
		b, ok := blocks[th.TID]
		require.True(t, ok, "thread %d:\n%s", th.TID, out)
		// The thread table's line: its number in its team.
		row := regexp.MustCompile(`(?m)^  gtid \d+ +lwp ` + strconv.Itoa(th.TID) + ` +thread_num (\d+) `).FindStringSubmatch(out)
		require.NotNil(t, row, "thread %d in the table", th.TID)
		assert.Equal(t, strconv.Itoa(th.ThreadNum), row[1], "thread number of %d", th.TID)
		// Its nest, innermost first, level by level.
		levels := region.FindAllStringSubmatch(b, -1)
		require.Len(t, levels, th.Level+1, "thread %d's levels:\n%s", th.TID, b)
		for i, m := range levels {
			l := th.Level - i
			assert.Equal(t, strconv.Itoa(l), m[1], "thread %d", th.TID)
			assert.Equal(t, strconv.Itoa(th.Ancestors[l].TeamSize), m[3], "thread %d: team size at level %d", th.TID, l)
			if l == th.Level {
				assert.Equal(t, strconv.Itoa(th.ActiveLevel), m[2], "thread %d: active level", th.TID)
			}
			if l > 0 {
				assert.Contains(t, m[4], fn, "thread %d: the function of level %d", th.TID, l)
			}
		}
		// Its ICVs, as the program saw them.
		icvs := regexp.MustCompile(`(?m)^  ICVs: (.*)$`).FindStringSubmatch(b)
		require.NotNil(t, icvs, "thread %d's ICVs:\n%s", th.TID, b)
		assert.Contains(t, " "+icvs[1]+" ", " thread-num-var="+strconv.Itoa(th.ThreadNum)+" ")
		assert.Contains(t, " "+icvs[1]+" ", " nthreads-var="+strconv.Itoa(th.MaxThreads)+nthreadsMore+" ", "thread %d", th.TID)
	}
}

// TestCoreGompHung: a hung gcc program on the system's libgomp (no debug
// information) prints every thread's wait, none "state unknown": the
// hung fixture's roles, each with the state the tool names for it. Its
// JSON marks each display variable and global ICV the start-up
// environment gave as such.
func TestCoreGompHung(t *testing.T) {
	stop := fixtures.CoreWith(t, fixtures.SystemGomp(t), fixtures.Hung)
	out := runTool(t, "-json", "core", "-debug-dir", t.TempDir(), stop.Exe, stop.Core)
	var snap struct {
		Threads []struct {
			LWP          int    `json:"lwp"`
			State        string `json:"state"`
			StateUnknown string `json:"state_unknown"`
		} `json:"threads"`
		ICVs []struct {
			Name, Value, Source string
		} `json:"icvs"`
		DisplayVars []struct {
			Name, Value, Source string
		} `json:"display_vars"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &snap), out)
	// libgomp's globals are out of reach: what the start-up environment
	// says, each value marked with its source.
	require.NotEmpty(t, snap.DisplayVars)
	for _, v := range snap.DisplayVars {
		assert.Equal(t, "environment", v.Source, "display variable %s", v.Name)
	}
	assert.Contains(t, snap.DisplayVars, struct{ Name, Value, Source string }{"OMP_STACKSIZE", "256K", "environment"})
	stack := false
	for _, v := range snap.ICVs {
		if v.Name == "stacksize-var" {
			stack = true
			assert.Equal(t, "262144", v.Value)
			assert.Equal(t, "environment", v.Source, "stacksize-var from OMP_STACKSIZE")
		}
	}
	assert.True(t, stack, "stacksize-var, derived from OMP_STACKSIZE")
	want := map[string]string{
		fixtures.RoleStopper: "work_serial", fixtures.RoleIdle: "idle", fixtures.RoleWorking: "work_parallel",
		fixtures.RoleImplicitBarrier: "wait_barrier_implicit_parallel", fixtures.RoleBarrier: "wait_barrier",
		fixtures.RoleCritical: "wait_critical", fixtures.RoleLock: "wait_lock", fixtures.RoleOrdered: "wait_ordered",
		fixtures.RoleTaskgroup: "wait_taskgroup", fixtures.RoleTaskwait: "wait_taskwait",
	}
	require.Len(t, snap.Threads, len(stop.Truth.Threads))
	for _, th := range snap.Threads {
		tr := stop.Truth.ThreadByTID(th.LWP)
		require.NotNil(t, tr, "thread %d", th.LWP)
		assert.Equal(t, want[tr.Role], th.State, "thread %d (%s)", th.LWP, tr.Role)
		assert.Empty(t, th.StateUnknown)
	}
	text := runTool(t, "core", "-debug-dir", t.TempDir(), stop.Exe, stop.Core)
	assert.NotContains(t, text, "state unknown")
}

// TestCoreGompHostTeams: threads of a host team on the system's libgomp
// say which team of the league they are in.
func TestCoreGompHostTeams(t *testing.T) {
	info := fixtures.SystemGomp(t)
	for _, args := range [][]string{nil, {"body"}} {
		stop := fixtures.CoreWith(t, info, fixtures.HostTeams, args...)
		out := runTool(t, "core", "-debug-dir", t.TempDir(), stop.Exe, stop.Core)
		groups := regexp.MustCompile(`(?m)^  \d+ threads? .*$`).FindAllString(out, -1)
		require.NotEmpty(t, groups, out)
		for _, g := range groups {
			assert.True(t, strings.HasSuffix(g, "; host team 1 of 3"), "%v: %s", args, g)
		}
	}
}

// TestEventsGomp: events on a gcc program on the system's libgomp says
// that libgomp has no breakpoint functions to stop at, not that its layout
// could not be read: the program is stopped before its first parallel
// region, where the initial thread alone reads right.
func TestEventsGomp(t *testing.T) {
	exe := fixtures.BuildWith(t, fixtures.Nested, fixtures.SystemGomp(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errOut bytes.Buffer
	err := run(ctx, []string{"events", "-debug-dir", t.TempDir(), "--", exe}, &out, &errOut)
	ptraceUnavailable(t, err)
	require.Error(t, err)
	assert.ErrorIs(t, err, ompd.ErrUnsupported)
	assert.Contains(t, err.Error(), "events: GNU libgomp has no breakpoint functions to stop at")
	assert.NotContains(t, err.Error(), "layout")
}

// TestCoreGompNames: C++ and Fortran programs on the system's libgomp
// print their backtraces' functions as gdb names them: a region outlined
// from a C++ member function keeps its suffix and does not read as the
// function that forked it; a module procedure is module::procedure, the
// main program has the program's name. (Regions and tasks name their
// functions by symbol.)
func TestCoreGompNames(t *testing.T) {
	info := fixtures.SystemGomp(t)
	for name, want := range map[string][]string{
		fixtures.Cxx:     {" in geo::Grid<double>::relax._omp_fn.0 (", " in geo::Grid<double>::relax (", " in main ("},
		fixtures.FModule: {" in run_team::__solver_MOD_run_team._omp_fn.0 (", " in solver::run_team (", " in fmodule (", " in main ("},
	} {
		stop := fixtures.CoreWith(t, info, name)
		out := runTool(t, "core", "-bt", "-threads", "-debug-dir", t.TempDir(), stop.Exe, stop.Core)
		for _, w := range want {
			assert.Contains(t, out, w, "%s", name)
		}
		_, bt, _ := strings.Cut(out, "  backtrace:\n")
		assert.NotContains(t, bt, " in _ZN", "%s: no mangled name in a backtrace", name)
		assert.NotContains(t, bt, " in __solver_MOD_run_team (", "%s", name)
		assert.NotContains(t, bt, " in MAIN__ (", "%s", name)
	}
}
