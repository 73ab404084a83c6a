package gomp

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/stackstate"
	"github.com/ompd-go/ompd/target"
)

// stop is what one stop's threads tell, decoded once: every OpenMP
// thread, who is member n of which team, and the region each implicit
// task belongs to.
type stop struct {
	err     error
	threads []omprt.ThreadRef
	recs    map[omprt.ThreadRef]*omprt.ThreadData
	raw     map[omprt.ThreadRef]*thread
	byLWP   map[uint64]omprt.ThreadRef
	byPth   map[uint64]omprt.ThreadRef
	members map[member]omprt.ThreadRef
	// implicit maps an implicit task's address to its region.
	implicit map[uint64]omprt.Ref
	// initialTask is the level-0 implicit task, as the threads show it.
	initialTask omprt.Ref
	// stacks holds what each thread's stack tells; fns the outlined
	// function of each region, from the stacks.
	stacks map[omprt.ThreadRef]stackInfo
	fns    map[omprt.Ref]uint64
	// taskFrames holds what the stacks tell of each task on one (nil
	// for a task two stacks claim; see taskframes.go).
	taskFrames map[omprt.Ref]*taskFrames
	// The regions and tasks decoded at this stop.
	regions omprt.Cache[omprt.Ref, *regionRec]
	tasks   omprt.Cache[omprt.Ref, *taskRec]
}

type member struct {
	region omprt.Ref
	num    int
}

// thread is a decoded gomp_thread.
type thread struct {
	os                         target.Thread
	addr                       uint64
	fn, team, task, pool       uint64
	teamID, level, activeLevel uint64
	// numTeams and teamNum place the thread in a host teams league:
	// omp_get_num_teams() - 1 and omp_get_team_num().
	numTeams, teamNum uint64
	idle              bool
	chain             []level // innermost first, down to level 1
	chainErr          error
	omp               bool // an OpenMP thread at all
}

// level is one team of a thread's nest.
type level struct {
	team   uint64
	num    int // the thread's (or its ancestor's) number in the team
	level  int
	size   int
	active int
}

// level0 is the synthetic id of the outermost (level 0) region and, when
// libgomp has created none, of the initial task: an address inside libgomp
// that names this runtime.
func (r *Runtime) level0() omprt.Ref { return omprt.Ref{Addr: r.lib.tpoffSlot, Level: 0} }

// getStop decodes the threads of this stop, once.
func (r *Runtime) getStop() *stop {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop == nil {
		r.stop = r.decodeStop()
	}
	return r.stop
}

func (r *Runtime) decodeStop() *stop {
	s := &stop{
		recs:     map[omprt.ThreadRef]*omprt.ThreadData{},
		raw:      map[omprt.ThreadRef]*thread{},
		byLWP:    map[uint64]omprt.ThreadRef{},
		byPth:    map[uint64]omprt.ThreadRef{},
		members:  map[member]omprt.ThreadRef{},
		implicit: map[uint64]omprt.Ref{},
		stacks:   map[omprt.ThreadRef]stackInfo{},
		fns:      map[omprt.Ref]uint64{},

		taskFrames: map[omprt.Ref]*taskFrames{},
	}
	osThreads, err := r.t.Threads()
	if err != nil {
		s.err = omprt.Wrap(omprt.ErrReadFailed, err, "gomp: list threads")
		return s
	}
	sort.Slice(osThreads, func(i, j int) bool { return osThreads[i].ID < osThreads[j].ID })
	l0 := r.level0()
	s.initialTask = l0
	var outside []*thread // threads libgomp has no state of
	for _, ot := range osThreads {
		th, err := r.readThread(ot)
		ref := omprt.ThreadRef{Addr: th.addr, ID: int32(ot.ID)}
		if err != nil {
			if th.addr == 0 {
				continue
			}
			s.threads = append(s.threads, ref)
			s.recs[ref] = &omprt.ThreadData{Ref: ref, Err: err}
			continue
		}
		if !th.omp {
			outside = append(outside, th)
			continue
		}
		r.addThread(s, th)
	}
	if len(s.threads) == 0 {
		// Before the program's first parallel region (or its first
		// ICV change) libgomp has no state of any thread: the thread
		// that will start it is the initial thread, serial.
		if th := r.initialThread(outside); th != nil {
			th.omp = true
			r.addThread(s, th)
		}
	}
	if s.initialTask != l0 {
		s.implicit[s.initialTask.Addr] = l0
	}
	for _, ref := range s.threads {
		th := s.raw[ref]
		if th == nil || th.idle {
			continue
		}
		si := r.readStack(th)
		// The outlined functions, innermost first, belong to the
		// thread's regions from the innermost outwards, for as long as
		// the thread is the primary thread of the inner one.
		for i, fn := range si.entries {
			if i >= len(th.chain) || (i > 0 && th.chain[i-1].num != 0) {
				break
			}
			s.fns[omprt.Ref{Addr: th.chain[i].team, Level: int32(th.chain[i].level)}] = fn
		}
		if cur, err := r.currentTask(s, th); err == nil && si.stack != nil {
			if tasks := r.stackTasks(s, th, cur, si.stack); tasks != nil {
				addTaskFrames(s, tasks, si.stack)
			}
		}
		si.stack = nil
		s.stacks[ref] = si
	}
	for _, ref := range s.threads {
		if _, ok := s.recs[ref]; !ok {
			s.recs[ref] = r.threadData(s, ref, s.raw[ref])
		}
	}
	if r.unconfirmed {
		if err := r.confirmStop(s); err != nil {
			return &stop{err: err}
		}
	}
	return s
}

// addThread adds an OpenMP thread to the stop: its memberships in its
// teams and the implicit tasks they hold.
func (r *Runtime) addThread(s *stop, th *thread) {
	ot, l0 := th.os, r.level0()
	ref := omprt.ThreadRef{Addr: th.addr, ID: int32(ot.ID)}
	s.threads = append(s.threads, ref)
	s.raw[ref] = th
	s.byLWP[ot.ID] = ref
	if ot.Pthread != 0 {
		s.byPth[ot.Pthread] = ref
	}
	if th.idle {
		return
	}
	// Memberships: the thread is member num of its innermost team,
	// and, while it is a team's primary thread (number 0), also of
	// the enclosing team, with the number the team's prev_ts keeps.
	primary := true
	for i, lv := range th.chain {
		ref := omprt.Ref{Addr: lv.team, Level: int32(lv.level)}
		if primary {
			s.members[member{ref, lv.num}] = omprt.ThreadRef{Addr: th.addr, ID: int32(ot.ID)}
		}
		primary = primary && lv.num == 0
		task := lv.team + r.lay.f(teamImplicitTask).Off + uint64(lv.num)*r.lay.size(typeTask)
		s.implicit[task] = ref
		if i == len(th.chain)-1 && lv.level == 1 {
			// The level-0 task is the parent of the primary's
			// level-1 implicit task.
			first := lv.team + r.lay.f(teamImplicitTask).Off
			if p, err := r.mem.Ptr(first+r.lay.f(taskParent).Off, "gomp_task.parent"); err == nil && p != 0 {
				s.initialTask = omprt.Ref{Addr: p, Level: 0}
			}
		}
	}
	if primary && th.chainErr == nil {
		s.members[member{l0, 0}] = omprt.ThreadRef{Addr: th.addr, ID: int32(ot.ID)}
	}
	if th.level == 0 && th.task != 0 {
		s.initialTask = omprt.Ref{Addr: th.task, Level: 0}
	}
}

// readThread reads the gomp_thread of an OS thread and the nest of teams
// above it.
func (r *Runtime) readThread(ot target.Thread) (*thread, error) {
	th := &thread{os: ot}
	if ot.Pointer == 0 {
		return th, omprt.Errorf(omprt.ErrUnavailable, "gomp: thread %d: thread pointer unknown", ot.ID)
	}
	th.addr = uint64(int64(ot.Pointer) + r.lib.tpoff)
	l := r.lay
	v, err := r.mem.View(th.addr, l.size(typeThread), "gomp_thread")
	if err != nil {
		return th, omprt.Wrap(omprt.ErrReadFailed, err, "gomp: thread %d", ot.ID)
	}
	th.fn = v.F(l.f(thrFn))
	th.team = v.F(l.f(thrTeam))
	th.task = v.F(l.f(thrTask))
	th.pool = v.F(l.f(thrPool))
	th.teamID = v.F(l.f(thrTeamID))
	th.level = v.F(l.f(thrLevel))
	th.activeLevel = v.F(l.f(thrActiveLevel))
	th.numTeams = v.F(l.f(thrNumTeams))
	th.teamNum = v.F(l.f(thrTeamNum))
	th.omp = th.team != 0 || th.task != 0 || th.pool != 0
	// A thread leaving libgomp (a nested team's worker after its team
	// ended, a pool thread told to exit) clears its pool and task but
	// keeps its last team state, which names a team already freed: it is
	// no OpenMP thread any more. A team member always has a task, and a
	// starting worker sets its pool before its team state.
	if th.task == 0 && th.pool == 0 && th.team != 0 {
		th.omp = false
	}
	if !th.omp {
		return th, nil
	}
	if th.team != 0 && th.pool != 0 {
		last, err := r.mem.Ptr(th.pool+l.f(poolLastTeam).Off, "gomp_thread_pool.last_team")
		if err != nil {
			return th, omprt.Wrap(omprt.ErrReadFailed, err, "gomp: thread %d: its pool", ot.ID)
		}
		if last == th.team {
			th.idle = true
			return th, nil
		}
	}
	if th.level > maxLevel || th.activeLevel > th.level || (th.team == 0) != (th.level == 0) {
		return th, omprt.Errorf(omprt.ErrCorrupt, "gomp: thread %d: level %d, active level %d, team %#x", ot.ID, th.level, th.activeLevel, th.team)
	}
	th.chain, th.chainErr = r.chain(th.team, int(th.teamID), int(th.level))
	return th, nil
}

// chain walks the teams from the innermost (team, at level lvl, where the
// thread has number num) out to level 1, through each team's prev_ts.
func (r *Runtime) chain(team uint64, num, lvl int) ([]level, error) {
	var out []level
	for team != 0 {
		if len(out) >= maxLevel {
			return out, omprt.Errorf(omprt.ErrCorrupt, "gomp: more than %d nested teams", maxLevel)
		}
		lv, prev, prevNum, err := r.team(team, lvl)
		if err != nil {
			return out, err
		}
		if num < 0 || num >= lv.size {
			return out, omprt.Errorf(omprt.ErrCorrupt, "gomp: team %#x of %d threads has a member %d", team, lv.size, num)
		}
		lv.num = num
		out = append(out, lv)
		team, num, lvl = prev, prevNum, lvl-1
	}
	if lvl != 0 {
		return out, omprt.Errorf(omprt.ErrCorrupt, "gomp: the outermost team is at level %d, not 1", lvl+1)
	}
	return out, nil
}

// team reads a team standing at level lvl: its size and active level, and
// the enclosing team with the primary thread's number in it.
func (r *Runtime) team(team uint64, lvl int) (lv level, prev uint64, prevNum int, err error) {
	l := r.lay
	v, err := r.mem.View(team, l.f(teamImplicitTask).Off, "gomp_team")
	if err != nil {
		return lv, 0, 0, err
	}
	n := v.F(l.f(teamNthreads))
	prevLevel := v.F(l.f(teamPrevLevel))
	prevActive := v.F(l.f(teamPrevActiveLevel))
	prev = v.F(l.f(teamPrevTeam))
	if n == 0 || n > maxTeam {
		return lv, 0, 0, omprt.Errorf(omprt.ErrCorrupt, "gomp: team %#x has %d threads", team, n)
	}
	if int(prevLevel) != lvl-1 || prevActive > prevLevel || (prev == 0) != (prevLevel == 0) {
		return lv, 0, 0, omprt.Errorf(omprt.ErrStaleHandle, "gomp: team %#x does not stand at level %d (its enclosing level is %d, active %d)", team, lvl, prevLevel, prevActive)
	}
	active := int(prevActive)
	if n > 1 {
		active++
	}
	return level{team: team, level: lvl, size: int(n), active: active}, prev, int(v.F(l.f(teamPrevTeamID))), nil
}

// threadData builds a thread's record.
func (r *Runtime) threadData(s *stop, ref omprt.ThreadRef, th *thread) *omprt.ThreadData {
	d := &omprt.ThreadData{Ref: ref, Pthread: th.os.Pthread, LWP: th.os.ID}
	if th.idle {
		d.State, d.StateInferred = stateIdle, true
		why := omprt.Errorf(omprt.ErrUnavailable, "gomp: thread %d is idle in the thread pool", th.os.ID)
		d.NumErr, d.RegionErr, d.TaskErr, d.LeagueErr = why, why, why, why
		return d
	}
	d.TeamNum, d.NumTeams, d.LeagueErr = r.league(th)
	si := s.stacks[ref]
	d.State, d.WaitID, d.StateErr, d.StateInferred = si.state, si.waitID, si.stateErr, si.stateErr == nil
	if th.level == 0 {
		d.Num, d.Region = 0, r.level0()
	} else if th.chainErr != nil && len(th.chain) == 0 {
		d.NumErr, d.RegionErr = th.chainErr, th.chainErr
	} else {
		d.Num = int(th.teamID)
		d.Region = omprt.Ref{Addr: th.team, Level: int32(th.level)}
	}
	d.Task, d.TaskErr = r.currentTask(s, th)
	return d
}

// currentTask names a thread's current task.
func (r *Runtime) currentTask(s *stop, th *thread) (omprt.Ref, error) {
	switch {
	case th.task != 0:
		return r.taskRef(s, th.task), nil
	case th.level == 0:
		return s.initialTask, nil
	}
	return omprt.Ref{}, omprt.Errorf(omprt.ErrCorrupt, "gomp: thread %d at level %d has no task", th.os.ID, th.level)
}

// league places a thread in its host teams league: GOMP_teams_reg runs
// the league's teams one after another in the thread that met the teams
// construct, keeping the team's number and the league's size less one in
// its gomp_thread, and gomp_team_start copies both into the threads of
// each team it starts. Outside a league both are 0. GCC 9 to 11 keep the
// two numbers in globals of teams.c instead, the same for every thread
// (hidden: they need libgomp's debug information).
func (r *Runtime) league(th *thread) (teamNum, numTeams int, err error) {
	num, team := th.numTeams, th.teamNum
	if r.lay.f(thrNumTeams).Size == 0 {
		n, err := r.globalInt("gomp_num_teams", 4)
		if err != nil {
			return 0, 0, err
		}
		t, err := r.globalInt("gomp_team_num", 4)
		if err != nil {
			return 0, 0, err
		}
		if n.Int == 0 {
			return 0, 0, omprt.Errorf(omprt.ErrCorrupt, "gomp: a league of no teams")
		}
		num, team = uint64(n.Int)-1, uint64(t.Int)
	}
	if num >= maxTeam || team > num {
		return 0, 0, omprt.Errorf(omprt.ErrCorrupt, "gomp: thread %d: team %d of a league of %d", th.os.ID, team, num+1)
	}
	return int(team), int(num) + 1, nil
}

// taskRef names the task at addr: an implicit task with its level, an
// explicit one with level -1.
func (r *Runtime) taskRef(s *stop, addr uint64) omprt.Ref {
	if reg, ok := s.implicit[addr]; ok {
		return omprt.Ref{Addr: addr, Level: reg.Level}
	}
	kind, err := r.mem.Uint(addr+r.lay.f(taskKind).Off, 4, "gomp_task.kind")
	if err == nil && kind == kindImplicit {
		return omprt.Ref{Addr: addr, Level: 0}
	}
	return omprt.Ref{Addr: addr, Level: -1}
}

// Threads lists the OpenMP threads, ordered by OS thread id.
func (r *Runtime) Threads() ([]omprt.ThreadRef, error) {
	s := r.getStop()
	if s.err != nil {
		return nil, s.err
	}
	return append([]omprt.ThreadRef(nil), s.threads...), nil
}

// ThreadByOS finds the OpenMP thread of an OS thread.
func (r *Runtime) ThreadByOS(kind int, id uint64) (omprt.ThreadRef, error) {
	s := r.getStop()
	if s.err != nil {
		return omprt.ThreadRef{}, s.err
	}
	var m map[uint64]omprt.ThreadRef
	switch kind {
	case omprt.IDLWP:
		m = s.byLWP
	case omprt.IDPthread:
		m = s.byPth
	default:
		return omprt.ThreadRef{}, omprt.Errorf(omprt.ErrUnsupported, "gomp: thread id kind %d", kind)
	}
	ref, ok := m[id]
	if !ok {
		return omprt.ThreadRef{}, omprt.Errorf(omprt.ErrUnavailable, "gomp: OS thread %s is not an OpenMP thread", omprt.OSThreadName(kind, id))
	}
	return ref, nil
}

// Thread returns a thread's record.
func (r *Runtime) Thread(ref omprt.ThreadRef) (*omprt.ThreadData, error) {
	s := r.getStop()
	if s.err != nil {
		return nil, s.err
	}
	d, ok := s.recs[ref]
	if !ok {
		return nil, omprt.Errorf(omprt.ErrStaleHandle, "gomp: no OpenMP thread %d at %#x in this stop", ref.ID, ref.Addr)
	}
	return d, nil
}

// confirmStop checks a table layout on the live threads of stop s. A
// thread confirms it when libgomp's own cross-links, which a wrong layout
// cannot fake, hold for it: for a team member, its nest and task decode
// consistently and its innermost team's ordered_release slot points back
// at it; for an idle worker, its pool's threads array holds it at its
// team number and its last team's ordered_release slot points back at
// it; for a serial thread, its pool's threads[0] is itself and its task's
// ICVs (if it has a task) are in range. A thread that does not decode
// contradicts it. One thread caught between states (a worker copying its
// team state, say) must not refuse the runtime, so the layout fails when
// more threads contradict than confirm it; the others keep their own
// errors. Once a stop confirms it, the layout is used without checks.
// While no thread has any state (a program before its first parallel
// region, whose gomp_thread is all zeros under any layout) nothing read
// needs the layout: it stays unconfirmed. A stop with state that neither
// confirms nor contradicts it fails, with errUnconfirmed: a table layout
// is used only once live data confirmed it. Called with r.mu held.
func (r *Runtime) confirmStop(s *stop) error {
	confirmed, failed, first := r.confirmationsOf(s)
	switch {
	case failed > 0 && failed >= confirmed:
		return omprt.Wrap(omprt.ErrIncompatible, fmt.Errorf("%d of %d threads contradict it, %d confirm it; %w", failed, len(s.threads), confirmed, first),
			"gomp: %s (%s): the known layout of %s fails its checks on live data", r.lib.name, r.lib.identity(), r.lay)
	case confirmed > 0:
		r.unconfirmed = false
		return nil
	}
	for _, th := range s.raw {
		if th.team != 0 || th.task != 0 || th.pool != 0 {
			return omprt.Wrap(omprt.ErrIncompatible, fmt.Errorf("%w: %d OpenMP threads, none with state that could confirm it", errUnconfirmed, len(s.threads)),
				"gomp: %s (%s): the known layout of %s could not be confirmed on live data; until the program has started a parallel region or set an ICV it needs the library's debug file", r.lib.name, r.lib.identity(), r.lay)
		}
	}
	return nil
}

// confirmations counts the threads of this stop that confirm the layout
// and those that contradict it.
func (r *Runtime) confirmations() (confirmed, failed int, err error) {
	s := r.getStop()
	if s.err != nil {
		return 0, 0, s.err
	}
	confirmed, failed, _ = r.confirmationsOf(s)
	return confirmed, failed, nil
}

// confirmationsOf counts the threads of stop s that confirm the layout
// and those that contradict it, with the first contradiction.
func (r *Runtime) confirmationsOf(s *stop) (confirmed, failed int, first error) {
	for _, ref := range s.threads {
		err := r.confirm(s, ref)
		switch {
		case err == nil:
			confirmed++
		case errors.Is(err, errNothingToConfirm):
		default:
			failed++
			if first == nil {
				first = fmt.Errorf("thread %d: %w", ref.ID, err)
			}
		}
	}
	return confirmed, failed, first
}

// errNothingToConfirm: the thread holds no state to check the layout by.
var errNothingToConfirm = errors.New("nothing to confirm")

// errUnconfirmed: no thread confirmed the layout.
var errUnconfirmed = errors.New("no live data confirms the layout")

// Bounds of a task's ICVs, as libgomp keeps them: nthreads-var is at
// least 1 (omp_set_num_threads and OMP_NUM_THREADS turn smaller values
// into 1) and omp_get_max_threads returns it as an int; bind-var is an
// omp_proc_bind_t (false, true, primary, close, spread).
const (
	maxNthreadsVar = 1<<31 - 1
	maxBindVar     = 4
)

// confirm checks one thread against the layout.
func (r *Runtime) confirm(s *stop, ref omprt.ThreadRef) error {
	if d := s.recs[ref]; d.Err != nil {
		return d.Err
	}
	th := s.raw[ref]
	if th.idle {
		return r.confirmPool(th)
	}
	if th.chainErr != nil {
		return th.chainErr
	}
	if th.task != 0 {
		kind, err := r.mem.Uint(th.task+r.lay.f(taskKind).Off, 4, "gomp_task.kind")
		if err != nil {
			return err
		}
		if kind > kindDetached {
			return fmt.Errorf("task %#x of kind %d", th.task, kind)
		}
	}
	if th.team == 0 {
		return r.confirmSerial(th)
	}
	return r.confirmTeam(th)
}

// confirmTeam checks that the ordered_release slot of th's team for its
// team number is the thread's release semaphore (the team's own, for
// number 0): gomp_team_start and gomp_thread_start set it.
func (r *Runtime) confirmTeam(th *thread) error {
	l := r.lay
	slots, err := r.mem.Ptr(th.team+l.f(teamOrderedRelease).Off, "gomp_team.ordered_release")
	if err != nil {
		return err
	}
	slot, err := r.mem.Ptr(slots+th.teamID*8, "gomp_team.ordered_release[]")
	if err != nil {
		return err
	}
	want := th.addr + l.f(thrRelease).Off
	if th.teamID == 0 {
		want = th.team + l.f(teamMasterRelease).Off
	}
	if slot != want {
		return fmt.Errorf("team %#x: ordered_release[%d] is %#x, not the thread's release semaphore %#x", th.team, th.teamID, slot, want)
	}
	return nil
}

// confirmPool checks an idle worker against its pool and its last team:
// gomp_thread_start stores the worker at its team number in the pool's
// threads array, below threads_used, and the team's ordered_release slot
// names its release semaphore.
func (r *Runtime) confirmPool(th *thread) error {
	threads, used, err := r.pool(th.pool)
	if err != nil {
		return err
	}
	if th.teamID == 0 || th.teamID >= used {
		return fmt.Errorf("pool %#x of %d threads: an idle worker numbered %d", th.pool, used, th.teamID)
	}
	p, err := r.mem.Ptr(threads+th.teamID*8, "gomp_thread_pool.threads[]")
	if err != nil {
		return err
	}
	if p != th.addr {
		return fmt.Errorf("pool %#x: threads[%d] is %#x, not the idle worker %#x", th.pool, th.teamID, p, th.addr)
	}
	return r.confirmTeam(th)
}

// confirmSerial checks a thread in no team: its team number is 0 (its
// team state is its initial one again); its task, if it has one (libgomp
// gives a serial thread one when it sets an ICV or runs an undeferred
// task), has ICVs in range; the pool it owns, if it ever started a team,
// holds it as threads[0] (gomp_team_start puts the primary thread there).
// A thread with neither task nor started pool has nothing to check.
func (r *Runtime) confirmSerial(th *thread) error {
	if th.teamID != 0 {
		return fmt.Errorf("a thread in no team numbered %d", th.teamID)
	}
	checked := false
	if th.task != 0 {
		if err := r.confirmICVs(th.task); err != nil {
			return err
		}
		checked = true
	}
	if th.pool != 0 {
		threads, _, err := r.pool(th.pool)
		if err != nil {
			return err
		}
		if threads != 0 {
			p, err := r.mem.Ptr(threads, "gomp_thread_pool.threads[0]")
			if err != nil {
				return err
			}
			if p != th.addr {
				return fmt.Errorf("pool %#x: threads[0] is %#x, not its primary thread %#x", th.pool, p, th.addr)
			}
			checked = true
		}
	}
	if !checked {
		return errNothingToConfirm
	}
	return nil
}

// pool reads a thread pool's threads array and threads_used.
func (r *Runtime) pool(pool uint64) (threads, used uint64, err error) {
	l := r.lay
	threads, err = r.mem.Ptr(pool+l.f(poolThreads).Off, "gomp_thread_pool.threads")
	if err != nil {
		return 0, 0, err
	}
	used, err = r.mem.Uint(pool+l.f(poolThreadsUsed).Off, 4, "gomp_thread_pool.threads_used")
	if err != nil {
		return 0, 0, err
	}
	if used > maxTeam {
		return 0, 0, fmt.Errorf("pool %#x of %d threads", pool, used)
	}
	if used > 0 && threads == 0 {
		return 0, 0, fmt.Errorf("pool %#x of %d threads has no threads array", pool, used)
	}
	return threads, used, nil
}

// confirmICVs checks that a task's ICVs are in the ranges libgomp keeps
// them in: nthreads-var and thread-limit-var at least 1, dyn-var a bool,
// bind-var an omp_proc_bind_t.
func (r *Runtime) confirmICVs(task uint64) error {
	l := r.lay
	v, err := r.mem.View(task, l.size(typeTask), "gomp_task")
	if err != nil {
		return err
	}
	n := v.F(l.f(taskNthreads))
	limit := v.F(l.f(taskThreadLimit))
	dyn := v.F(l.f(taskDyn))
	bind := v.F(l.f(taskBind))
	if n < 1 || n > maxNthreadsVar || limit < 1 || dyn > 1 || bind > maxBindVar {
		return fmt.Errorf("task %#x: ICVs out of range (nthreads-var %d, thread-limit-var %d, dyn-var %d, bind-var %d)", task, n, limit, dyn, bind)
	}
	return nil
}

// initialThread picks, among the threads libgomp has no state of, the
// program's initial thread, before its first parallel region: the only
// thread of the program, or the one whose stack holds the program's start
// (main, the C library's __libc_start_main); nil when that is not one
// thread.
func (r *Runtime) initialThread(outside []*thread) *thread {
	var fresh []*thread
	for _, th := range outside {
		if th.team == 0 && th.task == 0 && th.pool == 0 && th.level == 0 {
			fresh = append(fresh, th)
		}
	}
	if len(fresh) == 1 && len(outside) == 1 {
		return fresh[0]
	}
	var found *thread
	for _, th := range fresh {
		st, err := stackstate.Read(context.Background(), r.t, th.os.ID, tables, maxFrames)
		if err != nil {
			continue
		}
		for _, f := range st.Frames {
			if f.Function == "main" || strings.HasPrefix(f.Function, "__libc_start_") {
				if found != nil {
					return nil
				}
				found = th
				break
			}
		}
	}
	return found
}
