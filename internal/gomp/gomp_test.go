package gomp_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/gomp"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/stackstate"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

// setup is one way a test reaches libgomp: a runtime the fixtures run on,
// how the core is opened, and where the layout must come from.
type setup struct {
	name   string
	info   func(t *testing.T) fixtures.RuntimeInfo
	opts   func(t *testing.T) []core.Option
	layout omprt.LayoutSource
	// globals tells whether libgomp's hidden symbols are reachable.
	globals bool
	// stock: another Debian release's libgomp1, read through the table
	// made from our build of that release's source.
	stock bool
}

func setups() []setup {
	var out []setup
	for _, v := range fixtures.GompVersions {
		out = append(out,
			setup{
				name:    "debug-" + v,
				info:    func(t *testing.T) fixtures.RuntimeInfo { return fixtures.GompRuntime(t, v) },
				opts:    func(t *testing.T) []core.Option { return nil },
				layout:  omprt.LayoutDWARF,
				globals: true,
			},
			setup{
				name: "stripped-debugfile-" + v,
				info: func(t *testing.T) fixtures.RuntimeInfo {
					return fixtures.StripRuntime(t, fixtures.GompRuntime(t, v)).RuntimeInfo
				},
				opts: func(t *testing.T) []core.Option {
					s := fixtures.StripRuntime(t, fixtures.GompRuntime(t, v))
					dir := t.TempDir()
					p := s.BuildIDPath(dir)
					require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
					require.NoError(t, os.Symlink(s.DebugFile, p))
					return []core.Option{core.WithDebugDirs(dir)}
				},
				layout:  omprt.LayoutDWARF,
				globals: true,
			},
			setup{
				name: "stripped-nodebug-" + v,
				info: func(t *testing.T) fixtures.RuntimeInfo {
					return fixtures.StripRuntime(t, fixtures.GompRuntime(t, v)).RuntimeInfo
				},
				opts:   func(t *testing.T) []core.Option { return []core.Option{core.WithDebugDirs()} },
				layout: omprt.LayoutKnownTable,
			})
	}
	// The libgomp1 of other Debian releases, stripped: GCC 10 and 14
	// (bookworm's, GCC 12, is the system's, last). sid's C library
	// guards thread stacks with guard regions (MADV_GUARD_INSTALL),
	// which gdb's gcore here cannot read: it writes the whole mapping of
	// the threads' stacks and TLS as zeros. sid's (GCC 16) is read live
	// (TestLiveAgainstTruth).
	for _, st := range fixtures.StockGompSuites {
		if st.Suite == "bookworm" || st.Suite == "sid" {
			continue
		}
		out = append(out, setup{
			name:   "stock-" + st.Suite,
			info:   func(t *testing.T) fixtures.RuntimeInfo { return fixtures.StockGomp(t, st.Suite) },
			opts:   func(t *testing.T) []core.Option { return []core.Option{core.WithDebugDirs()} },
			layout: omprt.LayoutKnownTable,
			stock:  true,
		})
	}
	return append(out, setup{
		name:   "system",
		info:   func(t *testing.T) fixtures.RuntimeInfo { return fixtures.SystemGomp(t) },
		opts:   func(t *testing.T) []core.Option { return []core.Option{core.WithDebugDirs()} },
		layout: omprt.LayoutKnownTable,
	})
}

// openCore opens a core of fixture name under setup s.
func openCore(t *testing.T, s setup, name string) (*fixtures.Stop, *core.Core, omprt.Runtime) {
	t.Helper()
	stop := fixtures.CoreWith(t, s.info(t), name)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core, s.opts(t)...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	r, err := gomp.Open(c)
	require.NoError(t, err)
	require.Equal(t, s.layout, r.Info().Layout, "layout source")
	return stop, c, r
}

// TestCoresAgainstTruth reads every gcc fixture's core on every libgomp
// setup and compares each thread with what the program recorded.
func TestCoresAgainstTruth(t *testing.T) {
	for _, s := range setups() {
		for _, name := range fixtures.GompNames() {
			t.Run(s.name+"/"+name, func(t *testing.T) {
				if !fixtures.GompRuns(s.info(t), name) {
					t.Skipf("%s calls an OpenMP API newer than this libgomp's", name)
				}
				stop, c, r := openCore(t, s, name)
				checkTruth(t, r, c, stop.Truth, s.globals)
			})
		}
	}
}

// TestHostTeamsBody reads a host team stopped in its body, before any
// parallel region, on every setup: one thread, serial, in team 1 of 3.
func TestHostTeamsBody(t *testing.T) {
	for _, s := range setups() {
		t.Run(s.name, func(t *testing.T) {
			stop := fixtures.CoreWith(t, s.info(t), fixtures.HostTeams, "body")
			c, err := core.Open(context.Background(), stop.Exe, stop.Core, s.opts(t)...)
			require.NoError(t, err)
			t.Cleanup(func() { c.Close() })
			r, err := gomp.Open(c)
			require.NoError(t, err)
			checkTruth(t, r, c, stop.Truth, s.globals)
		})
	}
}

// checkTruth compares what r (reading tg) says of every thread, its
// regions, tasks and ICVs with the program's truth.
func checkTruth(t *testing.T, r omprt.Runtime, tg target.Target, truth *fixtures.Truth, globals bool) {
	refs, err := r.Threads()
	require.NoError(t, err)
	require.Len(t, refs, len(truth.Threads), "one OpenMP thread per program thread")
	for _, tid := range truth.Exiting {
		_, err := r.ThreadByOS(omprt.IDLWP, uint64(tid))
		assert.ErrorIs(t, err, omprt.ErrUnavailable, "thread %d left OpenMP: no OpenMP thread", tid)
	}
	for i := range truth.Threads {
		th := &truth.Threads[i]
		t.Run(fmt.Sprintf("tid%d", th.TID), func(t *testing.T) {
			ref, err := r.ThreadByOS(omprt.IDLWP, uint64(th.TID))
			require.NoError(t, err)
			d, err := r.Thread(ref)
			require.NoError(t, err)
			require.NoError(t, d.Err)
			p, _ := fixtures.ParseHex(th.Pthread)
			assert.Equal(t, p, d.Pthread)
			byPth, err := r.ThreadByOS(omprt.IDPthread, p)
			require.NoError(t, err)
			assert.Equal(t, ref, byPth)
			if th.Role == fixtures.RoleIdle {
				// Waiting in the pool: idle, in no region.
				require.NoError(t, d.StateErr)
				assert.EqualValues(t, gomp.StateIdle, d.State)
				assert.True(t, d.StateInferred)
				assert.ErrorIs(t, d.RegionErr, omprt.ErrUnavailable)
				assert.ErrorIs(t, d.TaskErr, omprt.ErrUnavailable)
				assert.ErrorIs(t, d.NumErr, omprt.ErrUnavailable)
				return
			}
			require.NoError(t, d.NumErr)
			assert.Equal(t, th.ThreadNum, d.Num, "thread number")
			require.NoError(t, d.RegionErr)
			// Its host teams league: libgomp keeps both numbers
			// in each thread's gomp_thread (GCC 9 to 11 in hidden
			// globals: without debug information, unavailable).
			if d.LeagueErr != nil && !globals && gomp.LayoutOf(r).Fields[gomp.ThreadNumTeamsField].Size == 0 {
				assert.ErrorIs(t, d.LeagueErr, omprt.ErrUnavailable)
				assert.ErrorContains(t, d.LeagueErr, "debug information")
			} else {
				require.NoError(t, d.LeagueErr)
				if truth.NumTeams > 0 {
					team, ok := truth.TeamNum(th.TID)
					require.True(t, ok)
					assert.Equal(t, team, d.TeamNum, "omp_get_team_num")
					assert.Equal(t, truth.NumTeams, d.NumTeams, "omp_get_num_teams")
				} else {
					assert.Equal(t, 0, d.TeamNum, "in no league")
					assert.Equal(t, 1, d.NumTeams, "in no league")
				}
			}

			checkState(t, tg, th, d, globals)

			// The nest, innermost first.
			reg := d.Region
			for l := th.Level; l >= 0; l-- {
				rd, err := r.Region(reg)
				require.NoError(t, err, "level %d", l)
				anc := th.Ancestors[l]
				assert.EqualValues(t, l, rd.Ref.Level, "level")
				if l > 0 {
					// The outlined function, from the stacks, with or
					// without libgomp's debug information.
					require.NoError(t, rd.FunctionErr, "function of the region at level %d", l)
					loc, err := tg.(target.CodeLocator).LocateCode(rd.Function)
					require.NoError(t, err)
					assert.Contains(t, loc.Function, "._omp_fn.", "level %d", l)
					assert.Equal(t, rd.Function, loc.Entry)
				} else {
					assert.ErrorIs(t, rd.FunctionErr, omprt.ErrUnavailable)
				}
				assert.Equal(t, anc.TeamSize, rd.TeamSize, "team size at level %d", l)
				// Every level's active level, an if(0) region's (a team
				// of 1, inactive) included: serialized and workshare
				// open such regions below and above active ones.
				// Planted (not committed): threads.go's level counting
				// a team of 1 as active (`if n >= 1`) fails icvs,
				// serialized and workshare on every setup here, the
				// truth being the team sizes the program recorded at
				// each level.
				assert.Equal(t, th.ActiveLevelAt(l), rd.ActiveLevel, "active level at level %d", l)
				if l == th.Level {
					assert.Equal(t, th.ActiveLevel, rd.ActiveLevel, "active level")
					v, err := r.ICV(omprt.ScopeRef{Kind: omprt.ScopeParallel, Ref: reg}, omprt.ICVTeamSizeVar)
					require.NoError(t, err)
					assert.EqualValues(t, th.TeamSize, v.Int)
				}
				// Member anc.ThreadNum of this team is this thread or
				// the ancestor it descends from.
				m, err := r.RegionThread(reg, anc.ThreadNum)
				require.NoError(t, err, "member %d at level %d", anc.ThreadNum, l)
				mt := truth.ThreadByTID(int(m.ID))
				require.NotNil(t, mt)
				assert.True(t, slices.Equal(th.Path()[:l], mt.Path()[:l]), "member %d at level %d descends from the same ancestors", anc.ThreadNum, l)
				if l > 0 {
					assert.Equal(t, anc.ThreadNum, mt.Ancestors[l].ThreadNum)
				}
				if l == 0 {
					assert.ErrorIs(t, rd.EnclosingErr, omprt.ErrUnavailable)
					break
				}
				require.NoError(t, rd.EnclosingErr)
				reg = rd.Enclosing
			}

			// Task ICVs, through the thread and its current task.
			require.NoError(t, d.TaskErr)
			// The list ICVs (nthreads-var, bind-var) without the debug
			// file: the first element, with ErrIncomplete.
			// GCC 10 and older keep max-active-levels-var in a hidden
			// global, not in the tasks' ICVs.
			globalMaxActive := gomp.LayoutOf(r).Fields[gomp.TaskMaxActiveField].Size == 0
			checkErr := func(id omprt.ICV, err error) bool {
				t.Helper()
				if !globals && (id == omprt.ICVNthreadsVar || id == omprt.ICVBindVar) {
					require.ErrorIs(t, err, omprt.ErrIncomplete, "ICV %d: the rest of the list needs the debug file", id)
					assert.NotErrorIs(t, err, omprt.ErrUnavailable)
					return true
				}
				if !globals && globalMaxActive && id == omprt.ICVMaxActiveLevelsVar {
					require.ErrorIs(t, err, omprt.ErrUnavailable, "a hidden global before GCC 11")
					assert.ErrorContains(t, err, "debug information")
					return false
				}
				require.NoError(t, err, "ICV %d", id)
				return true
			}
			icv := func(id omprt.ICV) omprt.Value {
				v, err := r.ICV(omprt.ScopeRef{Kind: omprt.ScopeThread, Thread: ref}, id)
				checkErr(id, err)
				return v
			}
			task := func(id omprt.ICV) omprt.Value {
				v, err := r.ICV(omprt.ScopeRef{Kind: omprt.ScopeTask, Ref: d.Task}, id)
				checkErr(id, err)
				return v
			}
			assert.EqualValues(t, th.MaxThreads, icv(omprt.ICVNthreadsVar).Int, "nthreads-var is omp_get_max_threads")
			assert.EqualValues(t, th.ThreadNum, icv(omprt.ICVThreadNumVar).Int)
			assert.Equal(t, th.InFinal, task(omprt.ICVFinalTaskVar).Int == 1, "final-task-var")
			if c := th.ICV; c != nil {
				assert.Equal(t, c.Dynamic, icv(omprt.ICVDynVar).Int == 1, "dyn-var")
				sched := task(omprt.ICVRunSchedVar)
				assert.EqualValues(t, c.ScheduleKind&0x7fffffff, sched.Int&0x7fffffff, "run-sched-var kind")
				assert.Equal(t, c.ScheduleMonotonic, sched.Int&0x80000000 != 0, "run-sched-var monotonic bit")
				// Its text is kind and chunk, as for LLVM's runtime.
				text := map[int]string{1: "static", 2: "dynamic", 3: "guided", 4: "auto"}[c.ScheduleKind&0x7fffffff] + fmt.Sprintf(",%d", c.ScheduleChunk)
				if c.ScheduleMonotonic {
					text = "monotonic:" + text
				}
				assert.True(t, sched.HasText)
				assert.Equal(t, text, sched.Text, "run-sched-var text")
				td, err := r.Task(d.Task)
				require.NoError(t, err)
				assert.Equal(t, c.ScheduleChunk, td.Schedule.Chunk, "run-sched-var chunk")
				assert.Equal(t, c.ScheduleMonotonic, td.Schedule.Monotonic)
				if v, err := r.ICV(omprt.ScopeRef{Kind: omprt.ScopeTask, Ref: d.Task}, omprt.ICVMaxActiveLevelsVar); checkErr(omprt.ICVMaxActiveLevelsVar, err) {
					assert.EqualValues(t, c.MaxActiveLevels, v.Int)
				}
				assert.EqualValues(t, c.ThreadLimit, task(omprt.ICVThreadLimitVar).Int)
				assert.EqualValues(t, c.DefaultDevice, icv(omprt.ICVDefaultDeviceVar).Int)
				assert.EqualValues(t, c.ProcBindKind, task(omprt.ICVBindVar).Int)
				global := func(id omprt.ICV) (omprt.Value, error) {
					return r.ICV(omprt.ScopeRef{Kind: omprt.ScopeAddressSpace}, id)
				}
				if globals {
					v, err := global(omprt.ICVCancelVar)
					require.NoError(t, err)
					assert.Equal(t, c.Cancellation, v.Int == 1)
					v, err = global(omprt.ICVMaxTaskPriorityVar)
					require.NoError(t, err)
					assert.EqualValues(t, c.MaxTaskPriority, v.Int)
					v, err = global(omprt.ICVAffinityFormatVar)
					require.NoError(t, err)
					assert.Equal(t, c.AffinityFormat, v.Text)
					n, err := r.NumProcs()
					require.NoError(t, err)
					assert.Equal(t, c.NumProcs, n)
					if truth.Env["OMP_STACKSIZE"] == "256K" {
						v, err = global(omprt.ICVStacksizeVar)
						require.NoError(t, err)
						assert.EqualValues(t, 256<<10, v.Int, "stacksize-var")
					}
				} else {
					// Hidden globals without debug information:
					// those a program cannot change after
					// start-up come from its start-up
					// environment, marked so.
					v, err := global(omprt.ICVCancelVar)
					require.NoError(t, err, "cancel-var from OMP_CANCELLATION")
					assert.True(t, v.FromEnv)
					assert.Equal(t, c.Cancellation, v.Int == 1)
					v, err = global(omprt.ICVMaxTaskPriorityVar)
					require.NoError(t, err)
					assert.True(t, v.FromEnv)
					assert.EqualValues(t, c.MaxTaskPriority, v.Int)
					if truth.Env["OMP_STACKSIZE"] == "256K" {
						v, err = global(omprt.ICVStacksizeVar)
						require.NoError(t, err)
						assert.True(t, v.FromEnv)
						assert.EqualValues(t, 256<<10, v.Int, "stacksize-var")
					}
					_, err = global(omprt.ICVAffinityFormatVar)
					assert.ErrorIs(t, err, omprt.ErrUnavailable, "a hidden global the program may change")
					assert.ErrorContains(t, err, "debug information")
				}
			}
			checkLevelLists(t, r, truth, th, d.Task, globals)
		})
	}
	if len(truth.Tasks) > 0 {
		checkTasks(t, r, tg, truth)
	}
	checkTeamsICVs(t, r, truth, globals)
	checkDisplay(t, r, truth, globals)
}

// checkTeamsICVs compares OpenMP 5.1's teams ICVs (gomp_nteams_var and
// gomp_teams_thread_limit_var: hidden globals) with what the program
// recorded (the icvs fixture's environment sets them): listed, and read
// with the debug information, ErrUnavailable saying so without it.
func checkTeamsICVs(t *testing.T, r omprt.Runtime, truth *fixtures.Truth, globals bool) {
	t.Helper()
	for id, want := range map[omprt.ICV]int{omprt.ICVNteamsVar: truth.MaxTeams, omprt.ICVTeamsThreadLimitVar: truth.TeamsThreadLimit} {
		assert.Contains(t, r.ICVs(), id)
		v, err := r.ICV(omprt.ScopeRef{Kind: omprt.ScopeAddressSpace}, id)
		if !globals {
			assert.ErrorIs(t, err, omprt.ErrUnavailable, "ICV %d: a hidden global", id)
			assert.ErrorContains(t, err, "debug information")
			continue
		}
		require.NoError(t, err, "ICV %d", id)
		if truth.Fixture == fixtures.ICVs {
			require.Positive(t, want, "the fixture recorded ICV %d", id)
		}
		assert.EqualValues(t, want, v.Int, "ICV %d", id)
	}
}

// checkLevelLists compares the list ICVs (nthreads-var, bind-var) of the
// implicit task of every level of th's nest, found from its current task
// up the generating chain, with what the forking task at that level said
// (Truth.TaskICV) followed by the environment's lists from the next level
// on: at level 1 under OMP_NUM_THREADS=3,2,1 the text is "2,1". Without
// the debug information the first element comes with ErrIncomplete, and
// the initial task's ICVs (gomp_global_icv) are ErrUnavailable.
func checkLevelLists(t *testing.T, r omprt.Runtime, truth *fixtures.Truth, th *fixtures.Thread, cur omprt.Ref, globals bool) {
	t.Helper()
	bind := fixtures.ProcBindNumbers(truth.Env["OMP_PROC_BIND"])
	for l := th.Level; l >= 0; {
		td, err := r.Task(cur)
		require.NoError(t, err)
		if td.Kind&gomp.FlagImplicit != 0 {
			if want := truth.TaskICV(th, l); want != nil {
				for _, c := range []struct {
					id    omprt.ICV
					first int
					env   string
				}{
					{omprt.ICVNthreadsVar, want.MaxThreads, truth.Env["OMP_NUM_THREADS"]},
					{omprt.ICVBindVar, want.ProcBindKind, bind},
				} {
					v, err := r.ICV(omprt.ScopeRef{Kind: omprt.ScopeTask, Ref: cur}, c.id)
					switch {
					case globals:
						require.NoError(t, err, "ICV %d at level %d", c.id, l)
						assert.True(t, v.HasText)
						assert.Equal(t, fixtures.EnvList(c.first, c.env, l), v.Text, "ICV %d at level %d", c.id, l)
					case l == 0 && errors.Is(err, omprt.ErrUnavailable):
						assert.ErrorContains(t, err, "debug information")
					default:
						assert.ErrorIs(t, err, omprt.ErrIncomplete, "ICV %d at level %d", c.id, l)
						assert.Equal(t, strconv.Itoa(c.first), v.Text, "ICV %d at level %d: the first element", c.id, l)
					}
				}
			}
			l--
		}
		if l < 0 {
			break
		}
		require.NoError(t, td.GeneratingErr, "the task above level %d", l+1)
		cur = td.Generating
	}
}

// checkDisplay compares the display control variables with the block the
// program printed (OMP_DISPLAY_ENV=verbose, icvs fixture) line for line.
func checkDisplay(t *testing.T, r omprt.Runtime, truth *fixtures.Truth, globals bool) {
	vars, err := r.DisplayControlVars()
	if !globals {
		// Without the hidden globals: the OMP_* variables the program
		// started with, marked as the start-up environment's.
		require.NoError(t, err)
		got := map[string]string{}
		for _, v := range vars {
			assert.Equal(t, "environment", v.Source, "%s", v.Name)
			assert.Equal(t, v.Name+"='"+v.Value+"'", v.Raw)
			got[v.Name] = v.Value
		}
		for k, v := range truth.Env {
			if strings.HasPrefix(k, "OMP_") {
				assert.Equal(t, v, got[k], "%s from the start-up environment", k)
			}
		}
		return
	}
	require.NoError(t, err)
	if len(truth.Display) == 0 {
		return
	}
	var want, got []string
	for _, l := range truth.Display[1 : len(truth.Display)-1] {
		want = append(want, strings.TrimSpace(l))
	}
	for _, v := range vars {
		got = append(got, v.Raw)
	}
	assert.Equal(t, want, got, "OMP_DISPLAY_ENV=verbose")
}

// checkState compares a thread's inferred state with its role. Every role
// is recognized, with or without libgomp's debug information: where
// libgomp's internal functions are unnamed, the exported function the
// program called (decoded at its call site, through the PLT) or the futex
// the thread sleeps on tells. A waiter on an omp_lock_t is wait_lock, on
// a critical section wait_critical, never the vaguer wait_mutex; a
// barrier the program called GOMP_barrier for is wait_barrier, since gcc
// calls it for an explicit barrier and for the implicit barrier of a
// worksharing construct alike.
func checkState(t *testing.T, tg target.Target, th *fixtures.Thread, d *omprt.ThreadData, globals bool) {
	t.Helper()
	require.NoError(t, d.StateErr, "role %s: the stack tells", th.Role)
	assert.True(t, d.StateInferred)
	switch th.Role {
	case fixtures.RoleStopper, fixtures.RoleWorking:
		want := gomp.StateWorkParallel
		if th.Level == 0 {
			want = gomp.StateWorkSerial
		}
		assert.EqualValues(t, want, d.State, "role %s", th.Role)
	case fixtures.RoleBarrier:
		assert.EqualValues(t, gomp.StateBarrier, d.State, "role %s", th.Role)
	case fixtures.RoleWorkshareBarrier:
		// Planted (not committed): stack.go's Waits mapping
		// GOMP_loop_end to stackstate.BarrierExplicit fails the
		// for_dynamic waiter of every setup's workshare core here, and
		// GOMP_barrier mapped to stackstate.BarrierExplicit its for and
		// single waiters; the truth is the construct the program waits
		// at the end of.
		switch th.Construct {
		case fixtures.ConstructFor, fixtures.ConstructSingle:
			// The program called GOMP_barrier, as for an explicit
			// barrier: implicit_workshare, or a barrier the stack
			// cannot name further, never an explicit one.
			assert.Contains(t, []int64{stackstate.BarrierImplicitWork, stackstate.Barrier}, d.State, "role %s at the end of %s: %#x", th.Role, th.Construct, d.State)
		default:
			// GOMP_loop_end and GOMP_sections_end end worksharing
			// constructs only.
			assert.EqualValues(t, stackstate.BarrierImplicitWork, d.State, "role %s at the end of %s", th.Role, th.Construct)
		}
	case fixtures.RoleLock:
		assert.EqualValues(t, gomp.StateLock, d.State, "role %s: a lock, not just a mutex", th.Role)
		lock, err := fixtures.ParseHex(th.Lock)
		require.NoError(t, err)
		assert.Equal(t, lock, d.WaitID, "the lock waited for")
	case fixtures.RoleCritical:
		assert.EqualValues(t, gomp.StateCritical, d.State, "role %s: a critical section, not just a mutex", th.Role)
		if th.Critical == "" && !globals {
			// The unnamed critical section's lock is libgomp's hidden
			// default_lock.
			loc, err := tg.(target.CodeLocator).LocateCode(d.WaitID)
			require.NoError(t, err, "the lock of the unnamed critical section")
			assert.Contains(t, loc.Object, "libgomp.so", "the unnamed critical section's lock is libgomp's")
			break
		}
		name := "default_lock" // the unnamed critical section's lock, in libgomp
		if th.Critical != "" {
			name = ".gomp_critical_user_" + th.Critical
		}
		lock, err := tg.LookupSymbol(name)
		require.NoError(t, err)
		assert.Equal(t, lock, d.WaitID, "the lock of critical section %q", th.Critical)
	case fixtures.RoleImplicitBarrier:
		assert.EqualValues(t, gomp.StateBarrierImplicit, d.State, "role %s", th.Role)
	case fixtures.RoleTaskgroup:
		assert.EqualValues(t, gomp.StateTaskgroup, d.State, "role %s", th.Role)
	case fixtures.RoleTaskwait:
		assert.EqualValues(t, gomp.StateTaskwait, d.State, "role %s", th.Role)
	case fixtures.RoleOrdered:
		assert.EqualValues(t, gomp.StateOrdered, d.State, "role %s", th.Role)
	default:
		t.Errorf("unexpected role %s", th.Role)
	}
}

// taskFunctionOf maps the deferred explicit tasks of tasks.c to the C
// function whose body holds them.
var taskFunctionOf = map[string]string{"nest3": "chain", "final": "waiter"}

// checkTasks follows each thread's current task up its generating
// ancestors and compares every task with the truth.
func checkTasks(t *testing.T, r omprt.Runtime, tg target.Target, truth *fixtures.Truth) {
	for _, tk := range truth.Tasks {
		if !tk.Current {
			continue
		}
		ref, err := r.ThreadByOS(omprt.IDLWP, uint64(tk.TID))
		require.NoError(t, err)
		d, err := r.Thread(ref)
		require.NoError(t, err)
		cur := d.Task
		for want := &tk; want != nil; {
			td, err := r.Task(cur)
			require.NoError(t, err, "task %s", want.Label)
			implicit := td.Kind&gomp.FlagImplicit != 0
			assert.Equal(t, want.Kind == "implicit", implicit, "task %s kind %#x", want.Label, td.Kind)
			assert.Equal(t, want.InFinal, td.InFinal, "task %s in final", want.Label)
			assert.Equal(t, want.Undeferred, td.Kind&gomp.FlagUndeferred != 0, "task %s undeferred", want.Label)
			if want.Undeferred {
				assert.ErrorIs(t, td.FunctionErr, omprt.ErrUnavailable, "never an undeferred task's function")
			} else if !implicit {
				require.NoError(t, td.FunctionErr, "task %s", want.Label)
				// gcc outlines a task body of function F as
				// F._omp_fn.N: the task's is the fixture's.
				loc, err := tg.(target.CodeLocator).LocateCode(td.Function)
				require.NoError(t, err)
				assert.Equal(t, td.Function, loc.Entry, "task %s: a function's entry", want.Label)
				prefix, ok := taskFunctionOf[want.Label]
				require.True(t, ok, "a deferred task of tasks.c: %s", want.Label)
				assert.True(t, strings.HasPrefix(loc.Function, prefix+"._omp_fn."), "task %s runs %s, not %q", want.Label, prefix, loc.Function)
			}
			require.NoError(t, td.RegionErr)
			assert.Equal(t, d.Region, td.Region, "task %s runs in its thread's region", want.Label)
			if want.Parent == "" {
				break
			}
			require.NoError(t, td.GeneratingErr, "task %s", want.Label)
			cur = td.Generating
			want = truth.Task(want.Parent)
		}
	}
}

// TestUnknownLibrary: a libgomp without debug information whose identity
// matches no known layout is refused with a clear error.
func TestUnknownLibrary(t *testing.T) {
	s := setups()[len(setups())-1]
	stop := fixtures.CoreWith(t, s.info(t), fixtures.Nested)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core, s.opts(t)...)
	require.NoError(t, err)
	defer c.Close()
	saved := gomp.KnownLayouts()
	t.Cleanup(func() { gomp.SetKnownLayouts(saved) })
	gomp.SetKnownLayouts(nil)
	_, err = gomp.Open(c)
	require.ErrorIs(t, err, omprt.ErrIncompatible)
	checkUnknownLibraryError(t, err)
}

// checkUnknownLibraryError checks the error of a libgomp with neither
// debug information nor a known layout: it names the library, its GCC
// release and symbol version, and what was searched once, not once per
// structure member looked up.
func checkUnknownLibraryError(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	assert.Contains(t, msg, "libgomp.so.1")
	assert.Contains(t, msg, "GCC 12: newest symbol version GOMP_5.1")
	assert.Contains(t, msg, "no known layout")
	assert.Contains(t, msg, "libgomp1-dbgsym", "which package gives the debug file")
	assert.Regexp(t, `build-id [0-9a-f]{40}`, msg)
	assert.Contains(t, msg, "missing struct gomp_thread, struct gomp_team, struct gomp_task, struct gomp_thread_pool, struct gomp_task_icv")
	assert.Equal(t, 1, strings.Count(msg, "libgomp.so.1.0.0: no DWARF debug information"), "what was searched, once")
	assert.Equal(t, 1, strings.Count(msg, "struct gomp_thread,"), "each structure once")
	assert.Less(t, len(msg), 2500, "%s", msg)
}

// TestLayoutFailsSanity: a known layout that does not fit the live data
// (GCC 14's applied to GCC 12's library) is refused, not used.
func TestLayoutFailsSanity(t *testing.T) {
	s := setups()[len(setups())-1]
	stop := fixtures.CoreWith(t, s.info(t), fixtures.Tasks)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core, s.opts(t)...)
	require.NoError(t, err)
	defer c.Close()
	saved := gomp.KnownLayouts()
	t.Cleanup(func() { gomp.SetKnownLayouts(saved) })
	var l14 gomp.Layout
	for _, l := range saved {
		if l.Node == "GOMP_5.1.2" {
			l14 = *l
		}
	}
	require.NotEmpty(t, l14.GCC)
	// Make GCC 14's layout claim GCC 12's identity, and shift the task
	// kind far off, as a wrong table would.
	l14.Node, l14.BuildID = "GOMP_5.1", ""
	l14.Fields[gomp.TaskKindField].Off = 0
	gomp.SetKnownLayouts([]*gomp.Layout{&l14})
	_, err = gomp.Open(c)
	require.ErrorIs(t, err, omprt.ErrIncompatible)
	assert.ErrorContains(t, err, "fails its checks")
}

// TestNoLibgomp: a program on LLVM's runtime has no libgomp.
func TestNoLibgomp(t *testing.T) {
	stop := fixtures.Core(t, fixtures.Nested)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	_, err = gomp.Open(c)
	require.ErrorIs(t, err, omprt.ErrNoRuntime)
	var te *target.LookupError
	_ = errors.As(err, &te)
}

// teamJunkCore is a real core in which one thread's team pointer reads as
// the address of its own gomp_thread: a thread caught between states, as a
// worker is while it copies its team state.
type teamJunkCore struct {
	*core.Core
	at uint64 // the address of the thread's ts.team
}

func (c *teamJunkCore) ReadMemory(buf []byte, addr uint64) error {
	if err := c.Core.ReadMemory(buf, addr); err != nil {
		return err
	}
	for i := uint64(0); i < 8; i++ {
		if a := c.at + i; a >= addr && a < addr+uint64(len(buf)) {
			buf[a-addr] = byte((c.at - 16) >> (8 * i))
		}
	}
	return nil
}

// TestOneThreadInTransit: on the known-layout path, one thread whose team
// state does not decode gets its own error; the layout is still confirmed
// by the others, which answer.
func TestOneThreadInTransit(t *testing.T) {
	s := setups()[len(setups())-1]
	stop := fixtures.CoreWith(t, s.info(t), fixtures.NestedExit)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core, s.opts(t)...)
	require.NoError(t, err)
	defer c.Close()
	r, err := gomp.Open(c)
	require.NoError(t, err)
	refs, err := r.Threads()
	require.NoError(t, err)
	require.Len(t, refs, len(stop.Truth.Threads))
	bad := refs[len(refs)-1]
	off := gomp.KnownLayouts()[0].Fields[gomp.ThreadTeamField].Off
	require.EqualValues(t, 16, off, "the junk written is the thread's own address")
	jc := &teamJunkCore{Core: c, at: bad.Addr + off}
	r, err = gomp.Open(jc)
	require.NoError(t, err, "one thread in transit does not refuse the layout")
	require.Equal(t, omprt.LayoutKnownTable, r.Info().Layout)
	for _, ref := range refs {
		d, err := r.Thread(ref)
		require.NoError(t, err)
		if ref == bad {
			assert.ErrorIs(t, d.RegionErr, omprt.ErrCorrupt, "the thread in transit")
			continue
		}
		require.NoError(t, d.Err)
		assert.NoError(t, d.RegionErr, "thread %d", ref.ID)
		assert.NoError(t, d.NumErr, "thread %d", ref.ID)
	}
}

// TestKnownLayoutsMatchDWARF: the known-layout table's entry of each
// release the tests build with debug information is what that build's
// DWARF says (the table is generated from such builds of every release;
// regenerating it needs them all: scripts/test.sh with OMPD_GO_GOMP_ALL=1).
func TestKnownLayoutsMatchDWARF(t *testing.T) {
	for _, s := range setups() {
		if s.layout != omprt.LayoutDWARF || !strings.HasPrefix(s.name, "debug-") {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			_, _, r := openCore(t, s, fixtures.Nested)
			fromDWARF := gomp.LayoutOf(r)
			version := strings.TrimPrefix(s.name, "debug-")
			var table *gomp.Layout
			for _, l := range gomp.KnownLayouts() {
				if l.GCC == version {
					table = l
				}
			}
			require.NotNil(t, table, "GCC %s in the table", version)
			assert.Equal(t, table.Fields, fromDWARF.Fields, "members")
			assert.Equal(t, table.Sizes, fromDWARF.Sizes, "structure sizes")
			assert.Equal(t, table.Node, fromDWARF.Node, "newest symbol version")
		})
	}
}
