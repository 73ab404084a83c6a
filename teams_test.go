package ompd_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target/core"
)

// openStop opens the core of a fixture's stop, with opts; both are closed
// when the test ends.
func openStop(t *testing.T, stop *fixtures.Stop, opts ...core.Option) *ompd.AddressSpace {
	t.Helper()
	c, err := core.Open(context.Background(), stop.Exe, stop.Core, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	as, err := ompd.Open(c)
	require.NoError(t, err)
	t.Cleanup(func() { as.Close() })
	return as
}

// TestHostTeams reads a host teams league (2 teams of 2 threads) and
// compares each thread with what it recorded: its team number and the
// league's size, its thread number, and its region nest with the team sizes
// omp_get_team_size gives (the league is no region: level 0 is each team's
// initial region of one thread, and nothing encloses it).
func TestHostTeams(t *testing.T) {
	fixtures.Runtime(t)
	stop := fixtures.Core(t, fixtures.Teams)
	as := openStop(t, stop)
	for i := range stop.Truth.Threads {
		tt := &stop.Truth.Threads[i]
		th := leagueThread(t, as, stop.Truth, tt)
		num, err := th.Num()
		require.NoError(t, err)
		assert.Equal(t, tt.ThreadNum, num)
		in, err := th.InParallel()
		require.NoError(t, err)
		assert.Equal(t, tt.InParallel, in)

		regions := ompdtest.Regions(t, th) // ends with ErrUnavailable
		require.Len(t, regions, tt.Level+1)
		for j, p := range regions {
			level := tt.Level - j
			l, err := p.Level()
			require.NoError(t, err)
			assert.Equal(t, level, l)
			size, err := p.NumThreads()
			require.NoError(t, err)
			assert.Equal(t, tt.Ancestors[level].TeamSize, size, "omp_get_team_size(%d)", level)
			icv, err := p.ICV(ompd.ICVTeamSizeVar)
			require.NoError(t, err)
			assert.Equal(t, int64(tt.Ancestors[level].TeamSize), icv)
		}
		act, err := regions[0].ActiveLevel()
		require.NoError(t, err)
		assert.Equal(t, tt.ActiveLevel, act)
		at, err := regions[0].Thread(tt.ThreadNum)
		require.NoError(t, err)
		assert.True(t, at.Equal(th))
		checkTeamsTasks(t, th, regions)
		// The innermost teams of the two teams are different regions.
		if tt.Role == fixtures.RoleBarrier {
			st, _, err := th.State()
			require.NoError(t, err)
			assert.Equal(t, ompd.StateWaitBarrierExplicit, st)
		}
	}
	s, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Empty(t, s.Errors)
	for _, ts := range s.Threads {
		assert.Equal(t, 2, ts.NumTeams)
	}
}

// leagueThread returns the handle of truth thread tt of a league, checking
// its team number and the league's size against what it recorded.
func leagueThread(t *testing.T, as *ompd.AddressSpace, truth *fixtures.Truth, tt *fixtures.Thread) ompd.Thread {
	t.Helper()
	th := ompdtest.Thread(t, as, tt)
	team, ok := truth.TeamNum(tt.TID)
	require.True(t, ok)
	n, err := th.TeamNum()
	require.NoError(t, err)
	assert.Equal(t, team, n, "team number of %d", tt.TID)
	nt, err := th.NumTeams()
	require.NoError(t, err)
	assert.Equal(t, truth.NumTeams, nt)
	return th
}

// checkTeamsTasks checks the task chain of a thread in a parallel region
// closely nested in a team of a host teams league, as ompt_get_task_info
// gives it: the region's implicit task, the implicit task that ran the
// teams region's body (the same task memory at the league's level, its
// frames kept in the team's lw-taskteam list), the league's implicit task
// of the team's primary, and the program's initial task. The body's task
// is the one the region's implicit tasks come from; the primary's implicit
// task interrupted it.
func checkTeamsTasks(t *testing.T, th ompd.Thread, regions []ompd.Parallel) {
	t.Helper()
	tasks := ompdtest.Tasks(t, th)
	require.Len(t, tasks, 4)
	kinds := make([]ompd.TaskKind, len(tasks))
	for i, k := range tasks {
		var err error
		kinds[i], err = k.Kind()
		require.NoError(t, err)
	}
	assert.Equal(t, []ompd.TaskKind{ompd.TaskImplicit, ompd.TaskImplicit, ompd.TaskImplicit, ompd.TaskImplicit | ompd.TaskInitial}, kinds)
	body, league := tasks[1], tasks[2]
	for _, k := range []ompd.Task{body, league} {
		p, err := k.Parallel()
		require.NoError(t, err)
		assert.Equal(t, regions[1], p, "%v is at the league's level 0", k)
	}
	s, err := body.Scheduling()
	require.NoError(t, err)
	assert.Equal(t, league, s, "the body's task runs in the league's")
	_, err = body.Frames()
	require.NoError(t, err)
	s, err = tasks[0].Scheduling()
	if num, _ := th.Num(); num == 0 {
		require.NoError(t, err)
		assert.Equal(t, body, s, "the primary's implicit task interrupted the body's")
	} else {
		assert.ErrorIs(t, err, ompd.ErrUnavailable, "a worker's implicit task interrupts no task")
	}
	_, err = regions[1].ImplicitTask(0)
	assert.ErrorIs(t, err, ompd.ErrUnavailable, "the league's level 0 holds one task per team")
}

// TestIdleHotTeam reads a program serial again after a parallel region,
// its workers asleep in the hot team: they are in no active region, like
// their primary (the same level-0 region), with no thread number and no
// current task until the next region, and the snapshot has no errors.
func TestIdleHotTeam(t *testing.T) {
	fixtures.Runtime(t)
	stop := fixtures.Core(t, fixtures.Idle)
	as := openStop(t, stop)
	primary := ompdtest.Thread(t, as, stop.Truth.Stopper())
	primaryRegion, err := primary.CurrentParallel()
	require.NoError(t, err)
	st, _, err := primary.State()
	require.NoError(t, err)
	assert.Equal(t, ompd.StateWorkSerial, st)
	idle := stop.Truth.ThreadsWithRole(fixtures.RoleIdle)
	require.Len(t, idle, 2)
	for _, tt := range append(idle, stop.Truth.Stopper()) {
		th := ompdtest.Thread(t, as, tt)
		regions := ompdtest.Regions(t, th)
		require.Len(t, regions, 1, "level 0 only")
		assert.Equal(t, primaryRegion, regions[0], "the primary's region")
		in, err := th.InParallel()
		require.NoError(t, err)
		assert.Equal(t, tt.InParallel, in)
		lv, err := regions[0].Level()
		require.NoError(t, err)
		assert.Equal(t, tt.Level, lv)
		n, err := regions[0].NumThreads()
		require.NoError(t, err)
		assert.Equal(t, tt.TeamSize, n)
		if tt.Role != fixtures.RoleIdle {
			continue
		}
		_, err = th.Num()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		assert.ErrorContains(t, err, "idle in the hot team")
		_, err = th.CurrentTask()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		st, _, err := th.State()
		require.NoError(t, err)
		assert.True(t, st.IsWait(), "asleep: %v", st)
		tn, err := th.NumTeams()
		require.NoError(t, err)
		assert.Equal(t, 1, tn, "in no league")
	}
	s, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Empty(t, s.Errors)
}

// TestHostTeamsBody stops in the body of a host teams region, before any
// parallel region: each team's primary is at level 0 (the team's initial
// region, nothing enclosing it), runs the body's implicit task (generated
// by the league's task of the team), and the workers the runtime already
// forked for the teams' parallel regions wait in their first fork barrier:
// no thread number, task or ICVs yet, in their primary's region. Nothing reads
// as inconsistent memory.
func TestHostTeamsBody(t *testing.T) {
	fixtures.Runtime(t)
	stop := fixtures.Core(t, fixtures.Teams, "body")
	as := openStop(t, stop)
	for i := range stop.Truth.Threads {
		tt := &stop.Truth.Threads[i]
		th := leagueThread(t, as, stop.Truth, tt)
		regions := ompdtest.Regions(t, th)
		require.Len(t, regions, 1)
		size, err := regions[0].NumThreads()
		require.NoError(t, err)
		assert.Equal(t, 1, size, "omp_get_team_size(0)")
		tasks := ompdtest.Tasks(t, th)
		require.Len(t, tasks, 3, "body, league task, initial task")
		s, err := tasks[0].Scheduling()
		require.NoError(t, err)
		assert.Equal(t, tasks[1], s)
	}
	s, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Empty(t, s.Errors)
	waiting := 0
	for _, ts := range s.Threads {
		th, err := as.ThreadByOSThread(ompd.LWPID, ts.LWP)
		require.NoError(t, err)
		b, err := json.Marshal(ts)
		require.NoError(t, err)
		if _, ok := stop.Truth.TeamNum(int(ts.LWP)); ok {
			assert.False(t, ts.NumUnknown, "lwp %d has a thread number", ts.LWP)
			assert.Contains(t, string(b), `"thread_num":0,`)
			continue
		}
		_, err = th.Num()
		// The snapshot says the number is unknown: no thread_num in
		// JSON, rather than thread 0.
		assert.Equal(t, err != nil, ts.NumUnknown, "lwp %d: %v", ts.LWP, err)
		if errors.Is(err, ompd.ErrUnavailable) {
			waiting++
			assert.NotContains(t, string(b), `"thread_num"`)
			_, err = th.CurrentTask()
			assert.ErrorIs(t, err, ompd.ErrUnavailable)
			// Before its first fork barrier the worker's ICVs are not
			// set (its task's copy is zero): unavailable, saying why,
			// not nthreads-var 0 or an empty schedule.
			for _, id := range []ompd.ICV{ompd.ICVNthreadsVar, ompd.ICVDynVar, ompd.ICVDefaultDeviceVar} {
				_, err = th.ICV(id)
				assert.ErrorIs(t, err, ompd.ErrUnavailable, "%v of a waiting worker", id)
				_, err = th.ICVString(id)
				assert.ErrorIs(t, err, ompd.ErrUnavailable, "%v of a waiting worker", id)
			}
			_, err = th.MaxThreads()
			assert.ErrorIs(t, err, ompd.ErrUnavailable)
		}
	}
	assert.Equal(t, 2, waiting, "one worker per team waits for the first parallel region")
}

// TestTeamsICVs reads OpenMP 5.1's teams ICVs, nteams-var and
// teams-thread-limit-var, which the teams fixture set (omp_set_num_teams,
// omp_set_teams_thread_limit) to values no default has, and compares them
// with what omp_get_max_teams and omp_get_teams_thread_limit returned.
// They are address-space ICVs (OpenMP's device scope), listed by ICVs,
// found by name, in the snapshot, and refused at other scopes.
func TestTeamsICVs(t *testing.T) {
	fixtures.Runtime(t)
	stop := fixtures.Core(t, fixtures.Teams)
	truth := stop.Truth
	require.Positive(t, truth.MaxTeams, "the fixture recorded omp_get_max_teams()")
	require.Positive(t, truth.TeamsThreadLimit, "the fixture recorded omp_get_teams_thread_limit()")
	as := openStop(t, stop)
	assert.Contains(t, slices.Collect(as.ICVs()), ompd.ICVNteamsVar)
	assert.Contains(t, slices.Collect(as.ICVs()), ompd.ICVTeamsThreadLimitVar)
	for id, want := range map[ompd.ICV]int64{ompd.ICVNteamsVar: int64(truth.MaxTeams), ompd.ICVTeamsThreadLimitVar: int64(truth.TeamsThreadLimit)} {
		assert.Equal(t, ompd.ScopeAddressSpace, id.Scope())
		byName, ok := ompd.ICVByName(id.Name())
		assert.True(t, ok)
		assert.Equal(t, id, byName)
		v, err := as.ICV(id)
		require.NoError(t, err, "%v", id)
		assert.Equal(t, want, v, "%v", id)
		s, err := as.ICVString(id)
		require.NoError(t, err)
		assert.Equal(t, strconv.FormatInt(want, 10), s)
		th, err := ompd.Collect(as.Threads())
		require.NoError(t, err)
		_, err = th[0].ICV(id)
		assert.ErrorIs(t, err, ompd.ErrBadInput, "%v is not a thread ICV", id)
	}
	snap, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	assert.Contains(t, snap.ICVs, ompd.ICVValue{ICV: ompd.ICVNteamsVar, Scope: ompd.ScopeAddressSpace, Value: strconv.FormatInt(int64(truth.MaxTeams), 10)})
	assert.Contains(t, snap.ICVs, ompd.ICVValue{ICV: ompd.ICVTeamsThreadLimitVar, Scope: ompd.ScopeAddressSpace, Value: strconv.FormatInt(int64(truth.TeamsThreadLimit), 10)})
}

// TestTeamsICVsGomp reads the teams ICVs from libgomp, which keeps them
// in hidden globals (gomp_nteams_var and gomp_teams_thread_limit_var, GCC
// 12 and later), on the icvs fixture, whose environment sets them
// (OMP_NUM_TEAMS, OMP_TEAMS_THREAD_LIMIT; the teams fixture cannot run on
// libgomp, which runs a league's teams one after another on one thread).
// With libgomp's debug information they are what omp_get_max_teams and
// omp_get_teams_thread_limit returned, in the snapshot and in
// OMP_DISPLAY_ENV's lines; without it (the system's library) they are
// listed but ErrUnavailable saying the debug information is needed, like
// libgomp's other hidden globals, and the snapshot has no value for them.
func TestTeamsICVsGomp(t *testing.T) {
	for rname, info := range gompRuntimes() {
		t.Run(rname, func(t *testing.T) {
			stop := fixtures.CoreWith(t, info(t), fixtures.ICVs)
			truth := stop.Truth
			require.Positive(t, truth.MaxTeams, "the fixture recorded omp_get_max_teams()")
			require.Positive(t, truth.TeamsThreadLimit, "the fixture recorded omp_get_teams_thread_limit()")
			as := openStop(t, stop, core.WithDebugDirs())
			globals := rname != "system"
			snap, err := as.Snapshot(context.Background())
			require.NoError(t, err)
			for id, c := range map[ompd.ICV]struct {
				want int
				env  string
			}{
				ompd.ICVNteamsVar:           {truth.MaxTeams, "OMP_NUM_TEAMS"},
				ompd.ICVTeamsThreadLimitVar: {truth.TeamsThreadLimit, "OMP_TEAMS_THREAD_LIMIT"},
			} {
				want := strconv.Itoa(c.want)
				assert.Equal(t, want, truth.Env[c.env], "the environment set %v", id)
				assert.Contains(t, slices.Collect(as.ICVs()), id)
				n, err := as.ICV(id)
				s, serr := as.ICVString(id)
				if !globals {
					assert.ErrorIs(t, err, ompd.ErrUnavailable, "%v", id)
					assert.ErrorContains(t, err, "debug information")
					assert.ErrorIs(t, serr, ompd.ErrUnavailable, "%v", id)
					for _, v := range snap.ICVs {
						assert.NotEqual(t, id, v.ICV, "no value")
					}
					continue
				}
				require.NoError(t, err, "%v", id)
				assert.EqualValues(t, c.want, n, "%v", id)
				require.NoError(t, serr)
				assert.Equal(t, want, s)
				assert.Contains(t, snap.ICVs, ompd.ICVValue{ICV: id, Scope: ompd.ScopeAddressSpace, Value: want})
				found := false
				for _, d := range snap.DisplayVars {
					if d.Name == c.env {
						found = true
						assert.Equal(t, want, d.Value, "%s as OMP_DISPLAY_ENV prints it", c.env)
					}
				}
				assert.True(t, found, "%s among the display control variables", c.env)
			}
			for _, e := range snap.Errors {
				assert.NotContains(t, e, "teams")
			}
		})
	}
}
