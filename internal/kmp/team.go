package kmp

import (
	"github.com/ompd-go/ompd/internal/omprt"
)

// team is a kmp_team_t decoded at one stop. The levels a team stands for
// run from first to level: one level for an active team, one per nested
// serialized region for a serial team (the runtime increments a serial
// team's t_level for each), the outermost being its parent's level + 1.
type team struct {
	addr uint64
	// err is why the team cannot be used at all (unreadable, or values
	// that break an invariant of the team itself).
	err error

	level, first, activeLevel, nproc int32
	parent                           uint64
	parentLevel                      int32
	// enclosingErr is why the walk cannot go out of the team's first
	// level although the team itself is fine: a parent that breaks the
	// invariants between the two. The walk is cut there.
	enclosingErr error

	pkfn, threads, implicit, parallelID, serialInfo uint64
	masterTid                                       int32

	// league tells that the team is the league of a host teams construct
	// (its outlined function is __kmp_teams_master, its nproc the number
	// of teams): not a parallel region, but the level each team's
	// initial thread starts from.
	league bool
	// inLeague tells that the team's parent is a host teams league: the
	// team runs one team of the league. Its primary's implicit task first
	// ran the teams region's body at the league's level (parentLevel);
	// when the parallel region closely nested in the teams region started,
	// the runtime reused the team for it (__kmp_fork_in_teams), keeping
	// that task's OMPT data in the team's lw-taskteam list. That task,
	// ompt_get_task_info's implicit task between the parallel region's and
	// the league's, is the ref {implicit, parentLevel} (teamsBody).
	inLeague bool
	// bodyOnly tells that the team of a league (inLeague) runs the teams
	// region's body and no parallel region yet: it sits at the league's
	// level and stands for no region of its own (its primary is in the
	// league's level-0 region, its workers wait in their first fork
	// barrier).
	bodyOnly bool

	// mom is the moment of the team's primary thread (teamMoment), which
	// every implicit task of the team asks for.
	mom once[moment]
}

// teamsBody returns the ref of the task that runs the teams region's body
// in a team of a league (see team.inLeague).
func (tm *team) teamsBody() omprt.Ref {
	return omprt.Ref{Addr: tm.implicit, Level: tm.parentLevel}
}

// isTeamsBody reports whether r is the task that ran the teams region's
// body in team tm of a league.
func (tm *team) isTeamsBody(r omprt.Ref) bool {
	return tm.inLeague && r == tm.teamsBody()
}

// depth is the number of nesting levels the team stands for.
func (tm *team) depth() int32 { return tm.level - tm.first + 1 }

// team returns the team at addr, decoded once per stop.
func (s *stop) team(addr uint64) *team {
	return s.teams.Get(addr, s.decodeTeam)
}

// teamFields reads the fields of one kmp_team_t, without its parent.
func (s *stop) teamFields(addr uint64, what string) (*team, error) {
	l := s.rt.l
	if addr == 0 {
		return nil, errorf(omprt.ErrCorrupt, "null %s pointer", what)
	}
	v, err := s.rt.view(addr+l.teamT, l.teamExtent, what)
	if err != nil {
		return nil, err
	}
	return &team{
		addr:        addr,
		level:       int32(v.FI(l.tLevel)),
		activeLevel: int32(v.FI(l.tActiveLevel)),
		nproc:       int32(v.FI(l.tNproc)),
		parent:      v.F(l.tParent),
		pkfn:        v.F(l.tPkfn),
		threads:     v.F(l.tThreads),
		implicit:    v.F(l.tImplicitTask),
		parallelID:  v.F(l.tParallelData),
		serialInfo:  v.F(l.tSerialInfo),
		masterTid:   int32(v.FI(l.tMasterTid)),
	}, nil
}

// teamsMaster returns the address of __kmp_teams_master, the function the
// runtime runs as the outlined function of a host teams league, or 0 if
// the runtime's symbols do not name it.
func (rt *Runtime) teamsMaster() uint64 {
	a, err := rt.sym("__kmp_teams_master")
	if err != nil {
		return 0
	}
	return a
}

// maxTeamSize bounds t_nproc by the thread table: a team's threads are
// all in it.
func (s *stop) maxTeamSize() int64 {
	if tt, err := s.table(); err == nil && tt.capacity > 0 {
		return tt.capacity
	}
	return maxThreadsCapacity
}

func (s *stop) decodeTeam(addr uint64) *team {
	tm, err := s.teamFields(addr, "team")
	if err != nil {
		return &team{addr: addr, err: err}
	}
	if tm.level < 0 || tm.level > maxLevel || tm.activeLevel < 0 || tm.activeLevel > tm.level {
		tm.err = errorf(omprt.ErrCorrupt, "team %#x: level %d, active level %d", addr, tm.level, tm.activeLevel)
		return tm
	}
	if tm.nproc < 1 || int64(tm.nproc) > s.maxTeamSize() {
		tm.err = errorf(omprt.ErrCorrupt, "team %#x: t_nproc %d (the thread table holds %d)", addr, tm.nproc, s.maxTeamSize())
		return tm
	}
	// Where the team's levels start depends on its parent. Anything that
	// breaks the invariants between the two cuts the walk here: the team
	// then stands for its own level only.
	tm.first = tm.level
	if tm.pkfn != 0 && tm.pkfn == s.rt.teamsMaster() {
		// A host teams league sits at the level of the teams construct,
		// the same as its parent's: each team's initial thread starts
		// there, and nothing encloses it (omp_get_team_size(0) is 1 in
		// every team, omp_get_level() counts only the parallel regions).
		tm.league = true
		return tm
	}
	switch {
	case tm.parent == 0 && tm.level == 0:
		// The initial thread's root team: the outermost region.
	case tm.parent == 0:
		tm.enclosingErr = errorf(omprt.ErrCorrupt, "team %#x at level %d has no parent team", addr, tm.level)
	case tm.parent == addr:
		tm.enclosingErr = errorf(omprt.ErrCorrupt, "team %#x is its own parent", addr)
	default:
		p, err := s.teamFields(tm.parent, "parent team")
		switch {
		case err != nil:
			tm.enclosingErr = err
		case p.level == tm.level && p.activeLevel == tm.activeLevel && p.pkfn != 0 && p.pkfn == s.rt.teamsMaster():
			// __kmp_teams_master forked the team at the league's level
			// (kmp_runtime.cpp, __kmp_fork_call: no new level at the
			// start of a teams construct) to run the teams body.
			tm.first, tm.parentLevel = tm.level, p.level
			tm.inLeague, tm.bodyOnly = true, true
		case p.level < 0 || p.level >= tm.level:
			// Levels must fall going outwards; anything else is a
			// cycle or corrupt memory, and would make a walk endless.
			tm.enclosingErr = errorf(omprt.ErrCorrupt, "team %#x at level %d: enclosing team %#x is at level %d", addr, tm.level, tm.parent, p.level)
		case tm.nproc > 1 && p.level != tm.level-1:
			tm.enclosingErr = errorf(omprt.ErrCorrupt, "team %#x of %d threads at level %d: enclosing team %#x is at level %d (an active team stands for one level)", addr, tm.nproc, tm.level, tm.parent, p.level)
		case p.activeLevel < 0 || p.activeLevel > tm.activeLevel || tm.activeLevel-p.activeLevel > 1:
			tm.enclosingErr = errorf(omprt.ErrCorrupt, "team %#x at active level %d: enclosing team %#x is at active level %d", addr, tm.activeLevel, tm.parent, p.activeLevel)
		case tm.activeLevel > p.level+1:
			// Every level the team stands for has its active level:
			// the outermost of them, p.level+1, must not be below it.
			tm.enclosingErr = errorf(omprt.ErrCorrupt, "team %#x at active level %d stands for levels from %d", addr, tm.activeLevel, p.level+1)
		default:
			tm.first, tm.parentLevel = p.level+1, p.level
			tm.inLeague = p.pkfn != 0 && p.pkfn == s.rt.teamsMaster()
		}
	}
	return tm
}

// regionRec is a region decoded at one stop, with what its derived answers
// need.
type regionRec struct {
	data omprt.RegionData
	err  error
	tm   *team
	j    int32 // depth of the level within the team (0 = innermost)
}

// Region returns the record of the region r.
func (rt *Runtime) Region(r omprt.Ref) (*omprt.RegionData, error) {
	rec := rt.stop().region(r)
	if rec.err != nil {
		return nil, rec.err
	}
	return &rec.data, nil
}

func (s *stop) region(r omprt.Ref) *regionRec {
	return s.regions.Get(r, s.decodeRegion)
}

func (s *stop) decodeRegion(r omprt.Ref) *regionRec {
	rt := s.rt
	tm := s.team(r.Addr)
	if tm.err != nil {
		return &regionRec{err: tm.err}
	}
	if r.Level < tm.first || r.Level > tm.level {
		return &regionRec{err: errorf(omprt.ErrStaleHandle, "%v: team now stands for levels %d..%d", omprt.RegionName(r), tm.first, tm.level)}
	}
	rec := &regionRec{tm: tm, j: tm.level - r.Level}
	d := &rec.data
	d.Ref = r
	d.ActiveLevel = int(tm.activeLevel)
	d.TeamSize = int(tm.nproc)
	if rec.j > 0 {
		d.TeamSize = 1
	}
	if tm.league {
		// Seen from inside a team of the league: the team's initial
		// implicit region, one thread, the outermost.
		d.TeamSize = 1
		d.ID = tm.parallelID
		d.FunctionErr = errorf(omprt.ErrUnavailable, "%v: the level a team of a league of %d host teams starts from runs the teams region's function, which the runtime keeps per thread", omprt.RegionName(r), tm.nproc)
		d.EnclosingErr = errorf(omprt.ErrUnavailable, "%v is the outermost region of its team (a league of %d host teams)", omprt.RegionName(r), tm.nproc)
		return rec
	}
	noEntry := tm.pkfn == 0 || tm.pkfn == rt.mem.AllOnes()
	switch {
	case r.Level == 0 && noEntry:
		d.FunctionErr = s.errs.Error(omprt.ErrUnavailable, omprt.RegionN(r), " has no entry function")
	case rec.j > 0 || tm.nproc == 1:
		// A serial team's t_pkfn may be another level's (moment.go).
		d.Function, d.FunctionErr = s.serialFunction(tm, r)
	case noEntry:
		d.FunctionErr = s.errs.Error(omprt.ErrUnavailable, omprt.RegionN(r), " has no entry function")
	default:
		d.Function = rt.regionFunction(tm)
	}
	if rec.j == 0 {
		d.ID = tm.parallelID
	} else if lwt, err := s.lwt(tm, rec.j); err != nil {
		d.IDErr = err
	} else if lwt == 0 {
		d.IDErr = s.errs.Error(omprt.ErrNeedsStateTracking, omprt.RegionN(r), ": serialized region data")
	} else {
		d.ID, d.IDErr = rt.readUint(lwt+rt.l.lwParallelData.Off, rt.l.lwParallelData.Size, "lw taskteam parallel data")
	}
	switch {
	case r.Level > tm.first:
		d.Enclosing = omprt.Ref{Addr: tm.addr, Level: r.Level - 1}
	case tm.enclosingErr != nil:
		d.EnclosingErr = tm.enclosingErr
	case tm.parent == 0:
		d.EnclosingErr = s.errs.Error(omprt.ErrUnavailable, omprt.RegionN(r), " is the outermost region")
	default:
		d.Enclosing = omprt.Ref{Addr: tm.parent, Level: tm.parentLevel}
	}
	return rec
}

// lwt returns the ompt_lw_taskteam_t that keeps the OMPT data of the level
// at depth j of a serial team (j >= 1), or 0 if the runtime keeps none
// (OMPT not enabled). The runtime keeps the innermost level's data in the
// team itself and pushes the data of each enclosing serialized level on the
// team's lw-taskteam list when a nested one starts. j is below the team's
// depth, itself bounded by maxLevel.
func (s *stop) lwt(tm *team, j int32) (uint64, error) {
	cur := tm.serialInfo
	for k := int32(1); k < j && cur != 0; k++ {
		next, err := s.rt.readPtr(cur+s.rt.l.lwParent.Off, "lw taskteam parent")
		if err != nil {
			return 0, err
		}
		if next == cur {
			return 0, errorf(omprt.ErrCorrupt, "team %#x: lw taskteam %#x links to itself", tm.addr, cur)
		}
		cur = next
	}
	return cur, nil
}

// teamSize is the number of threads of region r's team at its level.
func (rec *regionRec) size() int32 {
	if rec.j > 0 || rec.tm.league {
		return 1
	}
	return rec.tm.nproc
}

// member checks that region r's team has a thread number n, whose thread
// or implicit task (what) a caller wants: not a league's, where each host
// team has its own.
func (rec *regionRec) member(r omprt.Ref, n int, what string) error {
	if rec.err != nil {
		return rec.err
	}
	size := rec.size()
	if n < 0 || n >= int(size) {
		return errorf(omprt.ErrBadInput, "%v: thread number %d out of range 0..%d", omprt.RegionName(r), n, size-1)
	}
	if rec.tm.league {
		return errorf(omprt.ErrUnavailable, "%v: each team of the league of %d host teams has its own %s at this level", omprt.RegionName(r), rec.tm.nproc, what)
	}
	return nil
}

// RegionThread returns the thread with number n in region r's team.
func (rt *Runtime) RegionThread(r omprt.Ref, n int) (omprt.ThreadRef, error) {
	s := rt.stop()
	rec := s.region(r)
	if err := rec.member(r, n, "initial thread"); err != nil {
		return omprt.ThreadRef{}, err
	}
	if rec.tm.threads == 0 {
		return omprt.ThreadRef{}, errorf(omprt.ErrCorrupt, "%v: team has no thread array", omprt.RegionName(r))
	}
	addr, err := rt.readPtr(rec.tm.threads+uint64(n)*uint64(rt.mem.PtrSize), "team thread array")
	if err != nil {
		return omprt.ThreadRef{}, err
	}
	if addr == 0 {
		return omprt.ThreadRef{}, errorf(omprt.ErrUnavailable, "%v: thread %d not set", omprt.RegionName(r), n)
	}
	return s.threadAt(addr, omprt.RegionName(r))
}

// ImplicitTask returns the implicit task of thread number n of region r.
func (rt *Runtime) ImplicitTask(r omprt.Ref, n int) (omprt.Ref, error) {
	rec := rt.stop().region(r)
	if err := rec.member(r, n, "implicit tasks"); err != nil {
		return omprt.Ref{}, err
	}
	if rec.tm.implicit == 0 {
		return omprt.Ref{}, errorf(omprt.ErrCorrupt, "%v: team has no implicit tasks", omprt.RegionName(r))
	}
	return omprt.Ref{Addr: rec.tm.implicit + uint64(n)*rt.l.taskdataSize, Level: r.Level}, nil
}
