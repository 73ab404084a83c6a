package kmp

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// stop holds what was read and decoded at one stop of the program. Every
// record is decoded once and kept until Refresh replaces the stop.
type stop struct {
	rt       *Runtime
	tab      once[*threadTable]
	os       once[*osThreads]
	tracking once[bool]
	nth      once[[]int64] // __kmp_nested_nth, whole
	bind     once[[]int64] // __kmp_nested_proc_bind, whole

	threads  omprt.Cache[int32, *omprt.ThreadData] // by position in the table
	teams    omprt.Cache[uint64, *team]
	tasks    omprt.Cache[uint64, *taskRaw]
	regions  omprt.Cache[omprt.Ref, *regionRec]
	taskRecs omprt.Cache[omprt.Ref, *taskRec]
	stacks   omprt.Cache[uint64, *threadStack] // by LWP

	generating, scheduling chain
	sched                  atomic.Pointer[schedText] // run-sched-var's text, asked for last
	nthMemo, bindMemo      atomic.Pointer[listMemo]  // nthreads-var and bind-var, made last

	// Where the stop's records come from.
	threadSlab omprt.Slab[threadRec]
	taskSlab   omprt.Slab[taskRec]
	raws       omprt.Slab[taskRaw]
	errs       omprt.ErrorStore // the records' common answers
	id         uint64           // the stop's number, from 1 (omprt.ICVKey.Stop)
}

func (rt *Runtime) newStop() *stop {
	return &stop{rt: rt, id: rt.stops.Add(1),
		generating: chain{name: "td_parent", next: generatingLink, idx: 0},
		scheduling: chain{name: "scheduling", next: schedulingLink, idx: 1}}
}

// threadTable is the runtime's thread table __kmp_threads as read at one
// stop, with the kmp_info_t of every thread in it.
type threadTable struct {
	capacity int64
	refs     []omprt.ThreadRef // in gtid order
	infos    []thInfo          // what the stop reads of refs[i]'s kmp_info_t
	errs     []error           // why refs[i] cannot be read, if it cannot
	byAddr   map[uint64]int32  // kmp_info_t -> position
	byGTID   []int32           // gtid -> position + 1 (0: none)
	byPth    map[uint64]int32  // ds_thread -> position
	recs     []atomic.Pointer[threadRec]
}

// thInfo is what a stop reads of a thread's kmp_info_t: its fields,
// decoded as the table is read; the structure's bytes (584 of them on
// LLVM 19) are not kept.
type thInfo struct {
	team, current, thread, waitID uint64 // th_team, th_current_task, ds_thread, wait_id
	tid, state                    int64  // ds_tid, state
}

// threadRec is a thread decoded at one stop, with its current task's
// record (nil when it has none).
type threadRec struct {
	data omprt.ThreadData
	task *taskRec
}

// gtidPos returns the position of the thread with gtid g.
func (tt *threadTable) gtidPos(g int32) (int32, bool) {
	if g < 0 || int(g) >= len(tt.byGTID) || tt.byGTID[g] == 0 {
		return 0, false
	}
	return tt.byGTID[g] - 1, true
}

// osThreads maps the target's OS threads both ways: pthread to LWP for
// every decoded thread, LWP to pthread (0 if unknown) only once a thread
// is looked up by LWP.
type osThreads struct {
	err      error
	ths      []target.Thread
	lwpByPth map[uint64]uint64
	byLWP    once[map[uint64]uint64]
}

func (s *stop) osThreads() *osThreads {
	o, _ := s.os.get(func() (*osThreads, error) {
		o := &osThreads{}
		ths, err := s.rt.t.Threads()
		if err != nil {
			o.err = wrapErr(omprt.ErrReadFailed, err, "listing target threads")
			return o, nil
		}
		o.ths = ths
		o.lwpByPth = make(map[uint64]uint64, len(ths))
		for _, th := range ths {
			if th.Pthread != 0 {
				o.lwpByPth[th.Pthread] = th.ID
			}
		}
		return o, nil
	})
	return o
}

// pthByLWP maps every OS thread's LWP to its pthread, 0 if unknown.
func (o *osThreads) pthByLWP() map[uint64]uint64 {
	m, _ := o.byLWP.get(func() (map[uint64]uint64, error) {
		m := make(map[uint64]uint64, len(o.ths))
		for _, th := range o.ths {
			if _, ok := m[th.ID]; !ok || th.Pthread != 0 {
				m[th.ID] = th.Pthread
			}
		}
		return m, nil
	})
	return m
}

// table reads the runtime's thread table once per stop. An entry whose
// kmp_info_t cannot be read, or that repeats another, costs that thread
// only: it is listed, and its record says what is wrong.
func (s *stop) table() (*threadTable, error) {
	return s.tab.get(s.readTable)
}

func (s *stop) readTable() (*threadTable, error) {
	rt := s.rt
	capacity, err := rt.global("__kmp_threads_capacity", 4, true)
	if err != nil {
		return nil, err
	}
	if capacity < 0 || capacity > maxThreadsCapacity {
		return nil, errorf(omprt.ErrCorrupt, "__kmp_threads_capacity %d out of range", capacity)
	}
	allNth, err := s.checkCapacity(capacity)
	if err != nil {
		return nil, err
	}
	arr, err := rt.globalPtr("__kmp_threads")
	if err != nil {
		return nil, err
	}
	tt := &threadTable{capacity: capacity}
	if capacity == 0 || arr == 0 {
		return tt, nil
	}
	ptr := uint64(rt.mem.PtrSize)
	v, err := rt.view(arr, uint64(capacity)*ptr, "__kmp_threads array")
	if err != nil {
		return nil, err
	}
	n := 0
	for i := uint64(0); i < uint64(capacity); i++ {
		if v.Uint(i*ptr, ptr) != 0 {
			n++
		}
	}
	if err := s.checkCount(int64(n), allNth, capacity); err != nil {
		return nil, err
	}
	tt.byGTID = make([]int32, capacity)
	tt.byAddr, tt.byPth = make(map[uint64]int32, n), make(map[uint64]int32, n)
	tt.refs = make([]omprt.ThreadRef, 0, n)
	addrs := make([]uint64, 0, n) // kmp_info_t of refs[i], 0 if it repeats another
	for i := uint64(0); i < uint64(capacity); i++ {
		addr := v.Uint(i*ptr, ptr)
		if addr == 0 {
			continue
		}
		pos := int32(len(tt.refs))
		tt.refs = append(tt.refs, omprt.ThreadRef{Addr: addr, ID: int32(i)})
		tt.byGTID[i] = pos + 1
		if _, dup := tt.byAddr[addr]; dup {
			addr = 0
		} else {
			tt.byAddr[addr] = pos
		}
		addrs = append(addrs, addr)
	}
	// Read the threads' structures with as few target reads as their
	// placement allows.
	tt.infos = make([]thInfo, n)
	tt.errs = make([]error, n)
	l := rt.l
	rt.mem.ReadEachFunc(addrs, l.thExtent, "kmp_info_t of a thread", func(pos int, v view, err error) {
		if err != nil {
			tt.errs[pos] = err
			return
		}
		tt.infos[pos] = thInfo{team: v.F(l.thTeam), current: v.F(l.thCurrentTask), thread: v.F(l.thThread),
			waitID: v.F(l.thWaitID), tid: v.FI(l.thTid), state: v.FI(l.thState)}
	})
	for pos, addr := range addrs {
		if addr == 0 {
			tt.errs[pos] = errorf(omprt.ErrCorrupt, "__kmp_threads[%d] repeats thread %#x", tt.refs[pos].ID, tt.refs[pos].Addr)
			continue
		}
		if tt.errs[pos] == nil {
			if pt := tt.infos[pos].thread; pt != 0 {
				if _, dup := tt.byPth[pt]; !dup {
					tt.byPth[pt] = int32(pos)
				}
			}
		}
	}
	tt.recs = make([]atomic.Pointer[threadRec], len(tt.refs))
	// Each thread has a current task, most an implicit task of their own.
	s.tasks.Reserve(len(tt.refs))
	s.taskRecs.Reserve(len(tt.refs))
	s.readCurrentTasks(tt)
	return tt, nil
}

// checkCapacity checks __kmp_threads_capacity against what the runtime
// allows (kmp_runtime.cpp): __kmp_expand_threads grows the table, doubling
// it, up to __kmp_sys_max_nth and never past it (KMP_MAX_NTH or INT_MAX
// on Linux, where _SC_THREAD_THREADS_MAX is -1), and __kmp_all_nth, the
// number of threads in the table, never exceeds it. It returns
// __kmp_all_nth, or -1 if the runtime's symbols do not name it.
func (s *stop) checkCapacity(capacity int64) (int64, error) {
	rt := s.rt
	sysMax, ok, err := rt.optGlobal("__kmp_sys_max_nth")
	switch {
	case err != nil:
		return 0, err
	case ok && sysMax < 1:
		return 0, errorf(omprt.ErrCorrupt, "__kmp_sys_max_nth %d: the runtime sets it to at least 1", sysMax)
	case ok && capacity > sysMax:
		return 0, errorf(omprt.ErrCorrupt, "__kmp_threads_capacity %d above __kmp_sys_max_nth %d, the most the runtime grows the thread table to", capacity, sysMax)
	}
	allNth, ok, err := rt.optGlobal("__kmp_all_nth")
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return -1, nil
	case allNth < 0 || allNth > capacity:
		return 0, errorf(omprt.ErrCorrupt, "__kmp_all_nth %d threads outside the thread table's capacity (__kmp_threads_capacity %d)", allNth, capacity)
	}
	return allNth, nil
}

// checkCount checks the number of entries of __kmp_threads, n, before the
// decoder reads and keeps a kmp_info_t for each: against __kmp_all_nth
// (allNth, -1 if unknown), and against the bytes one stop may read. The
// runtime sets or clears an entry next to its change of __kmp_all_nth,
// one at a time under __kmp_forkjoin_lock (__kmp_register_root,
// __kmp_allocate_thread, __kmp_reap_thread), so a stop sees at most one
// entry more than the count: one garbage entry costs its thread only, more
// are a table read past its end (a corrupt capacity) or garbage. The
// kmp_info_t extents of one table may take at most half of what a stop
// may read, leaving the rest for teams and tasks.
func (s *stop) checkCount(n, allNth, capacity int64) error {
	if allNth >= 0 && n > allNth+1 {
		return errorf(omprt.ErrCorrupt, "__kmp_threads holds %d threads among its %d entries, but __kmp_all_nth counts %d", n, capacity, allNth)
	}
	ext := s.rt.l.thExtent
	if limit := s.rt.mem.Limit() / 2; uint64(n)*ext > uint64(limit) {
		return errorf(omprt.ErrCorrupt, "__kmp_threads holds %d threads: %d bytes of kmp_info_t (%d each), more than the %d one thread table may read", n, uint64(n)*ext, ext, limit)
	}
	return nil
}

// optGlobal reads the int global name, which a runtime may lack: ok is
// false if the runtime's symbols do not name it.
func (rt *Runtime) optGlobal(name string) (v int64, ok bool, err error) {
	v, err = rt.global(name, 4, true)
	if errors.Is(err, target.ErrNotFound) {
		return 0, false, nil
	}
	return v, err == nil, err
}

// Threads lists the threads of the runtime's thread table, in gtid order.
func (rt *Runtime) Threads() ([]omprt.ThreadRef, error) {
	tt, err := rt.stop().table()
	if err != nil {
		return nil, err
	}
	return tt.refs, nil
}

// position finds a thread ref in the table; a ref the table no longer
// holds is stale.
func (tt *threadTable) position(r omprt.ThreadRef) (int32, error) {
	pos, ok := tt.gtidPos(r.ID)
	if !ok || tt.refs[pos].Addr != r.Addr {
		if r.ID >= 0 && int64(r.ID) < tt.capacity && ok {
			return 0, errorf(omprt.ErrStaleHandle, "%v: __kmp_threads[%d] is now %#x", omprt.ThreadName(r), r.ID, tt.refs[pos].Addr)
		}
		return 0, errorf(omprt.ErrStaleHandle, "%v: no longer in __kmp_threads", omprt.ThreadName(r))
	}
	return pos, nil
}

// threadAt returns the ref of the thread whose kmp_info_t is at addr.
func (s *stop) threadAt(addr uint64, what omprt.RegionName) (omprt.ThreadRef, error) {
	tt, err := s.table()
	if err != nil {
		return omprt.ThreadRef{}, err
	}
	pos, ok := tt.byAddr[addr]
	if !ok {
		return omprt.ThreadRef{}, errorf(omprt.ErrCorrupt, "%v: thread %#x is not in __kmp_threads", what, addr)
	}
	return tt.refs[pos], nil
}

// ThreadByOS returns the OpenMP thread running on an OS thread. The rule:
// an OS thread is an OpenMP thread as soon as the runtime has registered
// it in __kmp_threads with its pthread id (see ompd.ThreadByOSThread).
func (rt *Runtime) ThreadByOS(kind int, id uint64) (omprt.ThreadRef, error) {
	s := rt.stop()
	tt, err := s.table()
	if err != nil {
		return omprt.ThreadRef{}, err
	}
	pthread := id
	switch kind {
	case omprt.IDPthread:
	case omprt.IDLWP:
		o := s.osThreads()
		if o.err != nil {
			return omprt.ThreadRef{}, o.err
		}
		pt, known := o.pthByLWP()[id]
		if !known {
			return omprt.ThreadRef{}, errorf(omprt.ErrBadInput, "no OS thread with LWP id %d in target", id)
		}
		pthread = pt
		if pthread == 0 {
			return s.threadByTLS(id)
		}
	default:
		return omprt.ThreadRef{}, errorf(omprt.ErrUnsupported, "thread id kind %d", kind)
	}
	pos, ok := tt.byPth[pthread]
	if !ok {
		return omprt.ThreadRef{}, errorf(omprt.ErrUnavailable, "OS thread %s is not an OpenMP thread", omprt.OSThreadName(kind, id))
	}
	return tt.refs[pos], nil
}

// threadByTLS finds the OpenMP thread of an OS thread whose thread pointer
// the target does not know, through the thread's __kmp_gtid.
func (s *stop) threadByTLS(lwp uint64) (omprt.ThreadRef, error) {
	rt := s.rt
	addr, err := rt.t.LookupThreadLocal(lwp, "__kmp_gtid")
	if err != nil {
		if errors.Is(err, target.ErrNoMemory) {
			return omprt.ThreadRef{}, wrapErr(omprt.ErrUnavailable, err, "thread %d has no __kmp_gtid", lwp)
		}
		return omprt.ThreadRef{}, wrapErr(omprt.ErrReadFailed, err, "thread %d: __kmp_gtid", lwp)
	}
	g, err := rt.readUint(addr, 4, "__kmp_gtid")
	if err != nil {
		return omprt.ThreadRef{}, err
	}
	gtid := int32(g)
	if gtid < 0 {
		return omprt.ThreadRef{}, errorf(omprt.ErrUnavailable, "thread %d is not an OpenMP thread (__kmp_gtid %d)", lwp, gtid)
	}
	tt, err := s.table()
	if err != nil {
		return omprt.ThreadRef{}, err
	}
	pos, ok := tt.gtidPos(gtid)
	if !ok {
		return omprt.ThreadRef{}, errorf(omprt.ErrUnavailable, "thread %d: __kmp_gtid %d not in __kmp_threads", lwp, gtid)
	}
	return tt.refs[pos], nil
}

// stateTracking reports whether the runtime tracks thread states and task
// frames (ompd_state nonzero, as OMP_DEBUG=enabled makes it).
func (s *stop) stateTracking() (bool, error) {
	return s.tracking.get(func() (bool, error) {
		if !s.rt.hasOMPD() {
			return false, nil // no OMPD support: no ompd_state, no tracking for debuggers
		}
		v, err := s.rt.global("ompd_state", 8, false)
		return v != 0, err
	})
}

// StateTracking reports whether the runtime tracks thread states.
func (rt *Runtime) StateTracking() (bool, error) { return rt.stop().stateTracking() }

// Thread returns the thread's record.
func (rt *Runtime) Thread(r omprt.ThreadRef) (*omprt.ThreadData, error) {
	rec, err := rt.stop().thread(r)
	if err != nil {
		return nil, err
	}
	return &rec.data, nil
}

// thread returns the thread's record, decoded once per stop.
func (s *stop) thread(r omprt.ThreadRef) (*threadRec, error) {
	tt, err := s.table()
	if err != nil {
		return nil, err
	}
	pos, err := tt.position(r)
	if err != nil {
		return nil, err
	}
	if rec := tt.recs[pos].Load(); rec != nil {
		return rec, nil
	}
	tt.recs[pos].CompareAndSwap(nil, s.decodeThread(tt, pos))
	return tt.recs[pos].Load(), nil
}

// decodeThread decodes the kmp_info_t of the thread at pos in the table.
func (s *stop) decodeThread(tt *threadTable, pos int32) *threadRec {
	r := tt.refs[pos]
	rec := s.threadSlab.New()
	rec.data.Ref = r
	d := &rec.data
	if err := tt.errs[pos]; err != nil {
		d.Err = err
		return rec
	}
	v := &tt.infos[pos]
	s.threadOSIDs(d, v)
	d.Num = int(v.tid)
	infer := s.threadState(rec, v)
	if d.Pthread == 0 {
		threadStarting(d)
		if infer {
			d.StateErr = s.errs.Error(omprt.ErrNeedsStateTracking, omprt.ThreadN(r), ": state")
		}
		return rec
	}
	// The innermost region: the thread's team, at its innermost level.
	team := v.team
	idle := s.threadRegion(tt, rec, team)
	if td := v.current; idle {
		// TaskErr says why (threadRegion).
	} else if td == 0 {
		d.TaskErr = s.errs.Error(omprt.ErrUnavailable, omprt.ThreadN(r), " has no current task")
	} else {
		d.Task, d.TaskErr = s.taskRef(td)
	}
	d.TeamNum, d.NumTeams, d.LeagueErr = s.league(team, int(v.tid))
	if !idle {
		s.bindMoment(d)
	}
	if infer {
		// Work in a teams league's body is work in parallel, as the
		// runtime records it (__kmp_fork_call sets work_parallel for
		// it): the body is the implicit task of __kmp_teams_master.
		parallel := d.RegionErr == nil && d.Region.Level > 0 || d.LeagueErr == nil && d.NumTeams > 1
		d.State, d.StateErr = s.inferState(r, d.LWP, parallel, team == 0 || idle)
		d.StateInferred = d.StateErr == nil
	}
	if d.TaskErr == nil {
		rec.task = s.taskRec(d.Task)
	}
	return rec
}

// threadOSIDs fills the thread's pthread and LWP from its kmp_info_t v.
func (s *stop) threadOSIDs(d *omprt.ThreadData, v *thInfo) {
	r := d.Ref
	d.Pthread = v.thread
	if d.Pthread == 0 {
		d.PthreadErr = errorf(omprt.ErrUnavailable, "%v is starting: the runtime has not recorded its pthread id yet", omprt.ThreadName(r))
	}
	if o := s.osThreads(); o.err != nil {
		d.LWPErr = o.err
	} else if lwp, ok := o.lwpByPth[d.Pthread]; ok && d.Pthread != 0 {
		d.LWP = lwp
	} else {
		d.LWPErr = errorf(omprt.ErrUnavailable, "%v: pthread %#x matches no OS thread of the target", omprt.ThreadName(r), d.Pthread)
	}
}

// threadState fills the thread's state and wait id from its kmp_info_t
// v, where the runtime tracks them; infer says it does not, and the state
// is to be read from the thread's stack once its place is known.
func (s *stop) threadState(rec *threadRec, v *thInfo) (infer bool) {
	d := &rec.data
	if on, err := s.stateTracking(); err != nil {
		d.StateErr = err
	} else if !on {
		return true
	} else {
		d.State, d.WaitID = v.state, v.waitID
	}
	return false
}

// threadStarting fills what a thread the runtime is still starting (no
// pthread id recorded yet) has not: a number, a region, a task, a league.
func threadStarting(d *omprt.ThreadData) {
	// The creating thread stores ds_thread right after
	// pthread_create (z_Linux_util.cpp, __kmp_create_worker); until
	// then the OS thread may not exist and the team being forked
	// for it is not set up (its levels and parent are written after
	// __kmp_allocate_team returns). The worker joins the team at its
	// first fork barrier: no number, region or task before that.
	name := omprt.ThreadName(d.Ref)
	d.Num = 0
	d.NumErr = errorf(omprt.ErrUnavailable, "%v is starting: it has not joined a team yet", name)
	d.RegionErr = errorf(omprt.ErrUnavailable, "%v is starting: it is in no region yet", name)
	d.TaskErr = errorf(omprt.ErrUnavailable, "%v is starting: it has no current task yet", name)
	d.LeagueErr = errorf(omprt.ErrUnavailable, "%v is starting: it is in no league yet", name)
}

// threadRegion fills the thread's innermost region and its number there
// from its team (th_team), and reports whether the thread is idle: in no
// region of that team (TaskErr then says why it has no current task).
func (s *stop) threadRegion(tt *threadTable, rec *threadRec, team uint64) (idle bool) {
	d, r := &rec.data, rec.data.Ref
	if team == 0 {
		d.RegionErr = s.errs.Error(omprt.ErrUnavailable, omprt.ThreadN(r), " is in no team (idle in the thread pool)")
		d.NumErr = s.errs.Error(omprt.ErrUnavailable, omprt.ThreadN(r), " is in no team (idle in the thread pool, or not started)")
		d.Num = 0
	} else if tm := s.team(team); tm.err != nil {
		d.RegionErr = tm.err
	} else if why := s.outsideRegion(tt, r, tm, d.Num); why != "" {
		// A worker kept in a hot team whose region ended, or in a team
		// whose current region does not count it: it is in no region
		// of that team until the team's next fork.
		idle = true
		name := omprt.ThreadName(r)
		d.NumErr = errorf(omprt.ErrUnavailable, "%v %s, waiting for its next parallel region", name, why)
		d.Num = 0
		d.TaskErr = errorf(omprt.ErrUnavailable, "%v %s: no current task until its next parallel region", name, why)
		switch {
		case tm.enclosingErr != nil && errors.Is(tm.enclosingErr, omprt.ErrCorrupt):
			// The runtime sets a team's parent and levels when it
			// forks the team. A nested hot team kept idle by its
			// primary (KMP_HOT_TEAMS_MAX_LEVEL above 1) holds those
			// of its last region, whose enclosing team the runtime
			// may have reused since at another level.
			d.RegionErr = errorf(omprt.ErrUnavailable, "%v %s, whose enclosing team %#x has changed since the team's last region", name, why, tm.parent)
		case tm.enclosingErr != nil:
			d.RegionErr = tm.enclosingErr
		case tm.parent == 0:
			d.RegionErr = errorf(omprt.ErrUnavailable, "%v is idle in the hot team %#x, which has no enclosing region", name, team)
		default:
			d.Region = omprt.Ref{Addr: tm.parent, Level: tm.parentLevel}
		}
	} else if tm.bodyOnly {
		// The primary of a league's team running the teams body: in
		// the league's level-0 region (its workers are idle, above),
		// where it is the initial thread of its team. At the end of
		// the teams region (__kmp_join_call) its ds_tid already holds
		// its team number.
		d.Region = omprt.Ref{Addr: tm.parent, Level: tm.parentLevel}
		d.Num = 0
	} else {
		d.Region = omprt.Ref{Addr: team, Level: tm.level}
		switch {
		case tm.league:
			// In a teams region outside any parallel region: the
			// initial thread of its team (ds_tid is its team number).
			d.Num = 0
		case d.Num < 0 || int64(d.Num) >= s.maxTeamSize():
			// No team is larger than the thread table.
		case d.Num != 0:
			// The team's primary while the runtime moves it between
			// the team and the enclosing one: ds_tid already (or
			// still) holds its number there, t_master_tid. From
			// __kmp_join_call restoring ds_tid until it sets th_team
			// to the parent team after __kmp_free_team (the region
			// ending, ompd_bp_parallel_end on the way, where the
			// current region is the ending one), and in
			// __kmpc_serialized_parallel from setting th_team to the
			// serial team until it zeroes ds_tid. The team's thread
			// array names it its primary: thread 0. (Other threads
			// beyond the team's size are outside its region, above.)
			if p, err := s.teamPrimary(tm); err != nil {
				d.NumErr, d.Num = err, 0
			} else if p == r.Addr {
				d.Num = 0
			}
		}
		// Thread numbers are bounded by the team's size.
		if d.NumErr == nil && (d.Num < 0 || d.Num >= int(tm.nproc)) {
			d.NumErr = errorf(omprt.ErrCorrupt, "%v: thread number %d in a team of %d", omprt.ThreadName(r), d.Num, tm.nproc)
			d.Num = 0
		}
	}
	return idle
}

// teamPrimary returns the kmp_info_t of the team's primary thread, the
// first entry of its thread array.
func (s *stop) teamPrimary(tm *team) (uint64, error) {
	if tm.threads == 0 {
		return 0, errorf(omprt.ErrCorrupt, "team %#x has no thread array", tm.addr)
	}
	return s.rt.readPtr(tm.threads, "team thread array")
}

// outsideRegion tells why the thread r, with number num in team tm (its
// th_team), is in none of the team's regions: "" if it is in the current
// one. That is a worker of the team when
//   - it is kept in a hot team after its region ended: the team's primary
//     is no longer in the team nor in any team nested in it;
//   - it is a worker of a league's team that runs the teams body only:
//     workers wait in their first fork barrier until the body starts a
//     parallel region;
//   - its number is not below the team's size, t_nproc: the runtime keeps
//     it in the team beyond the threads of the current region. A hot team
//     that shrank keeps its extra threads with KMP_HOT_TEAMS_MODE=1
//     (__kmp_allocate_team); a teams construct's team keeps them while a
//     parallel region inside it runs with fewer (__kmp_fork_in_teams,
//     __kmp_join_call); and a team the runtime grows names its new
//     threads' team and number (__kmp_allocate_thread,
//     __kmp_initialize_info) before it updates t_nproc
//     (__kmp_initialize_team). Numbers beyond the thread table's size,
//     and the primary's, are not this: see decodeThread.
func (s *stop) outsideRegion(tt *threadTable, r omprt.ThreadRef, tm *team, num int) string {
	if num <= 0 || tm.league || tm.threads == 0 || int64(num) >= s.maxTeamSize() {
		return ""
	}
	primary, err := s.teamPrimary(tm)
	if err != nil || primary == r.Addr {
		return ""
	}
	if tm.bodyOnly {
		return fmt.Sprintf("is idle in the hot team %#x", tm.addr)
	}
	if num >= int(tm.nproc) {
		return fmt.Sprintf("is number %d in team %#x, beyond the %d threads of the team's current region (kept for a larger team, or being added to one)", num, tm.addr, tm.nproc)
	}
	if tm.nproc <= 1 {
		return ""
	}
	ppos, ok := tt.byAddr[primary]
	if !ok || tt.errs[ppos] != nil {
		return ""
	}
	// The primary runs the team's current region if it is in the team
	// or in a team nested in it, which it is the primary of too (it
	// forked it, or serialized it). As a worker of another team it has
	// left the team: a nested hot team's primary, freed to the pool
	// when its own team shrank, may be taken into another hot team.
	cur := tt.infos[ppos].team
	for i := 0; cur != 0; i++ {
		if cur == tm.addr {
			return ""
		}
		c := s.team(cur)
		if i > maxLevel || c.err != nil {
			return "" // cannot tell: not idle
		}
		if p, err := s.teamPrimary(c); err != nil {
			return ""
		} else if p != primary {
			break
		}
		if c.enclosingErr != nil {
			return ""
		}
		cur = c.parent
	}
	return fmt.Sprintf("is idle in the hot team %#x", tm.addr)
}

// league returns the team number and the number of teams of a thread in
// the given team whose own number there is tid, as omp_get_team_num and
// omp_get_num_teams answer them (__kmp_aux_get_team_info): the league is
// the nearest enclosing team that is one, the team number the thread
// number of the thread's team's primary in it; 0 and 1 outside leagues.
func (s *stop) league(teamAddr uint64, tid int) (int, int, error) {
	if teamAddr == 0 {
		return 0, 1, nil
	}
	var child *team
	cur := teamAddr
	for i := 0; i <= maxLevel+1; i++ {
		tm := s.team(cur)
		if tm.err != nil {
			return 0, 0, tm.err
		}
		if tm.league {
			if child == nil {
				return tid, int(tm.nproc), nil
			}
			if child.masterTid < 0 || child.masterTid >= tm.nproc {
				return 0, 0, errorf(omprt.ErrCorrupt, "team %#x: primary's number %d in a league of %d teams", child.addr, child.masterTid, tm.nproc)
			}
			return int(child.masterTid), int(tm.nproc), nil
		}
		if tm.parent == 0 {
			return 0, 1, nil
		}
		if tm.enclosingErr != nil {
			return 0, 0, tm.enclosingErr
		}
		child, cur = tm, tm.parent
	}
	return 0, 0, errorf(omprt.ErrCorrupt, "team %#x: more than %d enclosing teams", teamAddr, maxLevel)
}
