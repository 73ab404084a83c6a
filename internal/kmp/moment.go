package kmp

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/unwind"
	"github.com/ompd-go/ompd/target"
)

// The runtime calls its OMPD breakpoint functions (ompd_bp_parallel_begin
// and the others) in the middle of its work, from several places, each
// with its own set of fields already updated and of fields not yet (or no
// longer) the region's. OpenMP 5.1 (5.6) binds a thread's current region
// and task at each of them: at ompd_bp_parallel_begin and _end the current
// region is the one beginning or ending and the current task the one that
// encountered it; at ompd_bp_task_begin and _end the current task is the
// one beginning or ending. A thread stopped in one of them is read as the
// place it was called from left the runtime's memory (LLVM 19's call
// sites; kmp_runtime.cpp, kmp_csupport.cpp, ompt-specific.cpp,
// kmp_tasking.cpp, kmp_gsupport.cpp):
//
//   - ompd_bp_parallel_begin in __kmp_fork_call: an active team is forked
//     but not released. The primary's th_team is the new team only when
//     the runtime reinitialized the primary into it (a hot team that grew,
//     __kmp_allocate_team -> __kmp_initialize_info), with its implicit
//     task current; otherwise th_team and the current task are still the
//     encountering ones and the new team is held by __kmp_fork_call alone.
//     The encountering task is the one whose enter frame is set (by
//     __kmpc_fork_call, as OMPT has it): it is the current task, or the
//     parent of the new implicit task.
//   - ompd_bp_parallel_begin in __ompt_lw_taskteam_link: a serialized
//     region has begun on the serial team (t_level counts it), its OMPT
//     region data swapped in, its task data not yet: the serial team's
//     implicit task still holds the encountering level's, and the lw
//     taskteam just linked the new level's (the first level of a serial
//     team links none: its data is on the runtime's stack). Called by a fork (__kmp_serial_fork_call,
//     __kmp_fork_in_teams) the serial team's t_pkfn is the region's; called
//     by __kmp_serialized_parallel (clang's if(0) code,
//     __kmpc_fork_call_if) it is whatever the team ran before.
//   - ompd_bp_parallel_end in __ompt_lw_taskteam_unlink: a nested
//     serialized region ends: its task data already swapped out (into the
//     lw taskteam at the head of the list), its region data not yet.
//   - ompd_bp_parallel_end in __kmpc_end_serialized_parallel: the
//     outermost serialized level of a serial team ends; the encountering
//     task is current again.
//   - ompd_bp_parallel_end in __kmp_join_call: an active region ends;
//     the encountering task is current again, th_team still the ending
//     team.
//   - for a parallel region closely nested in a teams construct, whose
//     team is the team of the league reused (__kmp_fork_in_teams):
//     ompd_bp_parallel_begin in __ompt_lw_taskteam_link and
//     ompd_bp_parallel_end in the __ompt_lw_taskteam_unlink
//     __kmp_join_call makes, the region current at both, its task data
//     swapped as for a nested serialized region.
//   - ompd_bp_task_begin and _end in __kmp_invoke_task: the task is
//     current. (The runtime also calls ompd_bp_task_end after each round
//     of task execution in a hierarchical barrier's wait, whether a task
//     ran or not: no task ends there.)
//   - for programs compiled with gcc (the GOMP ABI): ompd_bp_parallel_begin
//     again in __kmp_GOMP_fork_call, after the fork (the region current),
//     and ompd_bp_parallel_end again in GOMP_parallel_end (inlined into
//     GOMP_parallel) and in the __ompt_lw_taskteam_unlink __kmp_join_call
//     makes, both after the region was left (and the latter unlinking an
//     enclosing level's lw taskteam).
//
// A serial team keeps one t_pkfn for all the levels it stands for, that of
// the region that began on it last: the runtime does not put the outer
// one back when an inner serialized region ends. So the function of a
// serialized level is read where it is certain: the frame the runtime's
// invoke function (__kmp_invoke_microtask, or GOMP_parallel) called for
// that level, found on the stack of the team's thread at the level's
// implicit task's exit frame; or t_pkfn at the ompd_bp_parallel_begin of a
// fork, which has just set it.

// bpFunc is one of the runtime's OMPD breakpoint functions.
type bpFunc uint8

const (
	bpNone bpFunc = iota
	bpParallelBegin
	bpParallelEnd
	bpTaskBegin
	bpTaskEnd
	bpThreadBegin
	bpThreadEnd
)

// bpFuncNames are the functions' names, in bpFunc order.
var bpFuncNames = [...]string{
	bpParallelBegin: "ompd_bp_parallel_begin", bpParallelEnd: "ompd_bp_parallel_end",
	bpTaskBegin: "ompd_bp_task_begin", bpTaskEnd: "ompd_bp_task_end",
	bpThreadBegin: "ompd_bp_thread_begin", bpThreadEnd: "ompd_bp_thread_end",
}

// site is the place a breakpoint function was called from.
type site uint8

const (
	siteUnknown        site = iota // a caller this package does not know, or none found
	siteForkActive                 // ompd_bp_parallel_begin in __kmp_fork_call
	siteLinkFork                   // ompd_bp_parallel_begin in __ompt_lw_taskteam_link, called by a fork
	siteLinkSerialized             // ompd_bp_parallel_begin in __ompt_lw_taskteam_link, called by __kmp_serialized_parallel
	siteGOMPBegin                  // ompd_bp_parallel_begin in __kmp_GOMP_fork_call
	siteUnlink                     // ompd_bp_parallel_end in __ompt_lw_taskteam_unlink, the region ending
	siteUnlinkJoin                 // ompd_bp_parallel_end in __ompt_lw_taskteam_unlink called by __kmp_join_call (see siteOn)
	siteUnlinkLate                 // ompd_bp_parallel_end in __ompt_lw_taskteam_unlink, called by __kmp_join_call after the region ended
	siteEndSerialized              // ompd_bp_parallel_end in __kmpc_end_serialized_parallel
	siteJoin                       // ompd_bp_parallel_end in __kmp_join_call
	siteGOMPEnd                    // ompd_bp_parallel_end in GOMP_parallel_end, after the join
	siteInvokeTask                 // ompd_bp_task_begin or _end in __kmp_invoke_task
	siteThread                     // ompd_bp_thread_begin or _end: nothing to bind
)

// moment says where a thread stopped in a breakpoint function is.
type moment struct {
	bp   bpFunc
	site site
	// caller names the functions the breakpoint function was called
	// from, innermost first (source-level, inlined ones included), or
	// says why they are unknown: for messages.
	caller string
}

// String describes the moment for messages, e.g. "in
// ompd_bp_parallel_end called from __kmp_join_call".
func (m moment) String() string {
	if m.bp == bpNone {
		return "in no OMPD breakpoint function"
	}
	return "in " + bpFuncNames[m.bp] + " " + m.caller
}

// bpInfo is what finding the breakpoint functions needs, found once.
type bpInfo struct {
	once    sync.Once
	entries map[uint64]bpFunc
	lo, hi  uint64 // a window holding every breakpoint function
	invoke  uint64 // __kmp_invoke_microtask, 0 if unknown
}

// bpWindow bounds a breakpoint function's code past its entry: each is
// an empty function of a few instructions.
const bpWindow = 64

func (b *bpInfo) init(rt *Runtime) {
	b.entries = map[uint64]bpFunc{}
	for f := bpParallelBegin; f <= bpThreadEnd; f++ {
		_, a, err := rt.funcSym(bpFuncNames[f])
		if err != nil || a == 0 {
			continue
		}
		b.entries[a] = f
		if b.lo == 0 || a < b.lo {
			b.lo = a
		}
		b.hi = max(b.hi, a+bpWindow)
	}
	b.invoke, _ = rt.sym("__kmp_invoke_microtask")
}

func (rt *Runtime) bps() *bpInfo {
	rt.bp.once.Do(func() { rt.bp.init(rt) })
	return &rt.bp
}

// threadStack is what one OS thread's registers and stack tell at a stop,
// each read once, when first needed.
type threadStack struct {
	mom    once[moment]
	frames once[[]omprt.StackFrame]
}

// stack returns the stack record of the OS thread lwp.
func (s *stop) stack(lwp uint64) *threadStack {
	return s.stacks.Get(lwp, func(uint64) *threadStack { return &threadStack{} })
}

// momentOf says whether the OS thread lwp is stopped in a breakpoint
// function, and called from where. A target that cannot read registers
// tells nothing: every thread is then in none.
func (s *stop) momentOf(lwp uint64) moment {
	if lwp == 0 {
		return moment{}
	}
	ts, ok := s.stacks.Load(lwp)
	if !ok {
		// Most threads are in no breakpoint function: tell that from
		// the program counter, keeping no record.
		regs, ok := s.bpRegisters(lwp)
		if !ok {
			return moment{}
		}
		ts = s.stack(lwp)
		m, _ := ts.mom.get(func() (moment, error) { return s.readMoment(regs), nil })
		return m
	}
	m, _ := ts.mom.get(func() (moment, error) {
		if regs, ok := s.bpRegisters(lwp); ok {
			return s.readMoment(regs), nil
		}
		return moment{}, nil
	})
	return m
}

// bpRegisters returns the registers of the OS thread lwp if its program
// counter is near the runtime's breakpoint functions.
func (s *stop) bpRegisters(lwp uint64) (target.Registers, bool) {
	bi := s.rt.bps()
	rr, ok := s.rt.t.(target.RegisterReader)
	if !ok || bi.lo == 0 {
		return target.Registers{}, false
	}
	regs, err := rr.ThreadRegisters(lwp)
	if err != nil {
		return target.Registers{}, false
	}
	pc, ok := regs.PC()
	return regs, ok && pc >= bi.lo && pc < bi.hi
}

// maxCallers is how many frames past the breakpoint function's own the
// callers are looked for in.
const maxCallers = 3

// readMoment tells the moment of a thread whose registers, regs, put it
// near the breakpoint functions.
func (s *stop) readMoment(regs target.Registers) moment {
	rt := s.rt
	bi := rt.bps()
	pc, _ := regs.PC()
	loc, hasLoc := rt.t.(target.CodeLocator)
	var m moment
	if hasLoc {
		if cl, err := loc.LocateCode(pc); err == nil {
			m.bp = bi.entries[cl.Entry]
		}
	} else {
		m.bp = bi.entries[pc]
	}
	switch {
	case m.bp == bpNone:
		return m
	case m.bp == bpThreadBegin || m.bp == bpThreadEnd:
		m.site = siteThread
		return m
	case !hasLoc:
		m.caller = "(the target cannot place code addresses: the caller is unknown)"
		return m
	}
	st := unwind.Walk(context.Background(), rt.t, regs, unwind.Options{MaxDepth: 1 + maxCallers})
	var names []string
	for i := 1; i < len(st.Frames); i++ {
		f := &st.Frames[i]
		if i == 1 && f.How != unwind.CFI {
			// Unwound by frame pointer from the function's entry,
			// the frame would be its caller's caller.
			break
		}
		cl, err := loc.LocateCode(f.LookupPC())
		if err != nil {
			break
		}
		if len(cl.Inline) == 0 {
			names = append(names, symbolName(cl.Name, cl.Function))
		}
		for _, in := range cl.Inline {
			names = append(names, symbolName(in.Function, ""))
		}
	}
	if len(names) == 0 {
		m.caller = fmt.Sprintf("(its caller is unknown: %v)", st.End)
		return m
	}
	m.caller = "called from " + strings.Join(names, " < ")
	m.site = classify(m.bp, names)
	return m
}

// symbolName is a function's name without what versions and aliases add
// (GOMP_parallel_end@@GOMP_1.0, __kmp_api_GOMP_parallel_end,
// __kmp_api_GOMP_parallel_end_10_alias).
func symbolName(name, sym string) string {
	if name == "" {
		name = sym
	}
	name, _, _ = strings.Cut(name, "@")
	name = strings.TrimPrefix(name, "__kmp_api_")
	if base, ok := strings.CutSuffix(name, "_alias"); ok {
		if i := strings.LastIndexByte(base, '_'); i > 0 && strings.Trim(base[i+1:], "0123456789") == "" {
			name = base[:i]
		}
	}
	return name
}

// forkers are the functions that begin a serialized region through a fork
// (setting the serial team's t_pkfn before they link its lw taskteam).
var forkers = map[string]bool{"__kmp_serial_fork_call": true, "__kmp_fork_in_teams": true, "__kmp_fork_call": true}

// classify tells the call site from the callers' names, innermost first.
func classify(bp bpFunc, names []string) site {
	at := func(i int) string {
		if i < len(names) {
			return names[i]
		}
		return ""
	}
	switch bp {
	case bpParallelBegin:
		switch c := at(0); {
		case c == "__kmp_fork_call":
			return siteForkActive
		case c == "__ompt_lw_taskteam_link" && forkers[at(1)]:
			return siteLinkFork
		case c == "__ompt_lw_taskteam_link" && (at(1) == "__kmp_serialized_parallel" || at(1) == "__kmpc_serialized_parallel"):
			return siteLinkSerialized
		case c == "__kmp_GOMP_fork_call":
			return siteGOMPBegin
		}
	case bpParallelEnd:
		switch c := at(0); {
		case c == "__kmp_join_call":
			return siteJoin
		case c == "__ompt_lw_taskteam_unlink" && (forkers[at(1)] || at(1) == "__kmpc_end_serialized_parallel"):
			return siteUnlink
		case c == "__ompt_lw_taskteam_unlink" && at(1) == "__kmp_join_call":
			return siteUnlinkJoin
		case c == "__kmpc_end_serialized_parallel":
			return siteEndSerialized
		case strings.HasPrefix(c, "GOMP_parallel"):
			// GOMP_parallel_end, or GOMP_parallel (and its variants)
			// it is inlined into.
			return siteGOMPEnd
		}
	case bpTaskBegin, bpTaskEnd:
		if at(0) == "__kmp_invoke_task" {
			return siteInvokeTask
		}
	}
	return siteUnknown
}

// siteOn resolves the call site of a moment of the primary thread of
// team tm, its team: __kmp_join_call unlinks the lw taskteam of a
// parallel region closely nested in a teams construct at the region's
// end, the region still current (siteUnlink); for a region of a
// GCC-compiled program it unlinks one more after the region ended
// (siteUnlinkLate).
func (s *stop) siteOn(m moment, tm *team) site {
	if m.site != siteUnlinkJoin {
		return m.site
	}
	if tm != nil && tm.err == nil && tm.inLeague && !tm.bodyOnly && !s.rt.isGOMPWrapper(tm.pkfn) {
		return siteUnlink
	}
	return siteUnlinkLate
}

// framesOf unwinds the OS thread lwp once per stop, placing each frame's
// code.
func (s *stop) framesOf(lwp uint64) ([]omprt.StackFrame, error) {
	return s.stack(lwp).frames.get(func() ([]omprt.StackFrame, error) {
		if _, ok := s.rt.t.(target.CodeLocator); !ok {
			return nil, errors.New("the target cannot place code addresses")
		}
		st, err := s.rt.Stack(context.Background(), lwp, 0)
		if err != nil {
			return nil, fmt.Errorf("thread %d's stack cannot be read: %w", lwp, err)
		}
		return st.Frames, nil
	})
}

// lwpOf returns the OS thread of the kmp_info_t at addr, 0 if unknown.
func (s *stop) lwpOf(tt *threadTable, addr uint64) uint64 {
	pos, ok := tt.byAddr[addr]
	if !ok || tt.errs[pos] != nil {
		return 0
	}
	o := s.osThreads()
	if o.err != nil {
		return 0
	}
	pt := tt.infos[pos].thread
	if pt == 0 {
		return 0
	}
	return o.lwpByPth[pt]
}

// bindMoment binds the current region, thread number and task of a thread
// stopped in a breakpoint function as OpenMP binds them there (see the
// top of this file), from what decodeThread read: answers the runtime's
// memory does not give at that moment are unavailable, never the values
// the fields happen to hold.
func (s *stop) bindMoment(d *omprt.ThreadData) {
	if d.LWPErr != nil {
		return
	}
	m := s.momentOf(d.LWP)
	name := omprt.ThreadName(d.Ref)
	unbound := func(region, task bool, format string, args ...any) {
		err := errorf(omprt.ErrUnavailable, "%v is %v: "+format, append([]any{name, m}, args...)...)
		if region {
			d.Region, d.RegionErr = omprt.Ref{}, err
			d.Num, d.NumErr = 0, err
		}
		if task {
			d.Task, d.TaskErr = omprt.Ref{}, err
		}
	}
	switch m.bp {
	case bpNone, bpThreadBegin, bpThreadEnd:
		return
	case bpTaskBegin, bpTaskEnd:
		if m.site != siteInvokeTask {
			unbound(false, true, "no task begins or ends at this call that the runtime's memory shows")
		}
		return
	}
	var tm *team
	if d.RegionErr == nil {
		tm = s.team(d.Region.Addr)
	}
	switch s.siteOn(m, tm) {
	case siteForkActive:
		s.bindFork(d, m, unbound)
	case siteLinkFork, siteLinkSerialized, siteGOMPBegin, siteUnlink:
		// The region beginning or ending is the thread's team's
		// innermost level; its implicit task is current, or about to
		// be, and the task that encountered the region is the one
		// outside it.
		if d.RegionErr == nil && d.TaskErr == nil {
			d.Task, d.TaskErr = s.encountering(d.Region, d.Task)
		}
	case siteEndSerialized:
		// The ending region is still the thread's team, and the task
		// that encountered it current again: as read, unless the
		// serial team no longer stands for the level (LLVM 13 lowers
		// t_level before this call: the team is then at its parent's
		// level, which the team's decode finds breaks the nest).
		if tm != nil && tm.enclosingErr != nil {
			unbound(true, false, "the serial team no longer stands for the level ending (%v)", tm.enclosingErr)
		}
	case siteJoin:
		// The ending region is still the thread's team, and the task
		// that encountered it current again: as read.
	case siteUnlinkLate, siteGOMPEnd:
		unbound(true, false, "the runtime has left the region that ends already")
	default:
		unbound(true, true, "a call this library does not know what the runtime has updated at")
	}
}

// encountering returns the task that encountered region r, whose thread's
// current task (as the runtime's memory has it) is cur: the implicit task
// of the enclosing level when cur is r's own implicit task, else cur.
func (s *stop) encountering(r, cur omprt.Ref) (omprt.Ref, error) {
	tm := s.team(r.Addr)
	if cur.Level < 0 || tm.err != nil || cur != (omprt.Ref{Addr: tm.implicit, Level: r.Level}) {
		return cur, nil
	}
	switch {
	case r.Level > tm.first:
		return omprt.Ref{Addr: cur.Addr, Level: r.Level - 1}, nil
	case tm.inLeague && !tm.bodyOnly:
		return tm.teamsBody(), nil
	}
	t := s.task(cur.Addr)
	if t.err != nil {
		return omprt.Ref{}, t.err
	}
	p := t.v.F(s.rt.l.tdParent)
	if p == 0 {
		return omprt.Ref{}, errorf(omprt.ErrUnavailable, "%v: the implicit task of the region beginning or ending has no parent task", omprt.TaskName(cur))
	}
	return s.taskRef(p)
}

// bindFork binds a primary thread at the ompd_bp_parallel_begin of an
// active fork. The task that encountered the region is the one whose
// enter frame is set (__kmpc_fork_call sets it): the current task, whose
// team is then the enclosing one (the new team is not the thread's yet),
// or the parent of the current task, the new team's implicit task.
func (s *stop) bindFork(d *omprt.ThreadData, m moment, unbound func(region, task bool, format string, args ...any)) {
	l := s.rt.l
	if on, err := s.stateTracking(); err != nil || !on {
		unbound(true, true, "without state tracking the runtime keeps no task frames to tell the region beginning from the one enclosing it")
		return
	}
	if d.TaskErr != nil {
		unbound(true, false, "its current task, which would tell the region beginning from the one enclosing it, cannot be read")
		return
	}
	cur := s.task(d.Task.Addr)
	if cur.err != nil {
		unbound(true, true, "%v", cur.err)
		return
	}
	if cur.v.F(l.tdEnterFrame) != 0 {
		// The current task encountered the region, and its team is the
		// thread's: the enclosing region's.
		unbound(true, false, "the runtime has not made the team of the region beginning the thread's team yet")
		return
	}
	if d.RegionErr == nil && d.Task.Level >= 0 && cur.team == d.Region.Addr {
		if p := cur.v.F(l.tdParent); p != 0 {
			if pt := s.task(p); pt.err == nil && pt.v.F(l.tdEnterFrame) != 0 {
				d.Task, d.TaskErr = s.taskRef(p)
				return
			}
		}
	}
	unbound(true, true, "neither the current task nor its parent has the enter frame of the task that encountered the region")
}

// teamMoment returns the moment of the primary thread of team tm when tm
// is the thread's team, the zero moment otherwise.
func (s *stop) teamMoment(tm *team) moment {
	m, _ := tm.mom.get(func() (moment, error) { return s.readTeamMoment(tm), nil })
	return m
}

func (s *stop) readTeamMoment(tm *team) moment {
	if tm.threads == 0 {
		return moment{}
	}
	tt, err := s.table()
	if err != nil {
		return moment{}
	}
	p, err := s.teamPrimary(tm)
	if err != nil {
		return moment{}
	}
	pos, ok := tt.byAddr[p]
	if !ok || tt.errs[pos] != nil || tt.infos[pos].team != tm.addr {
		return moment{}
	}
	return s.momentOf(s.lwpOf(tt, p))
}

// serialFunction returns the outlined function of region r of a serial
// team tm (or of any level of a team of one thread): from the stack of
// the team's thread, or, at the ompd_bp_parallel_begin of a fork, which
// has just set it, the team's t_pkfn.
func (s *stop) serialFunction(tm *team, r omprt.Ref) (uint64, error) {
	fn, why := s.stackFunction(tm, r.Level)
	if fn != 0 {
		return fn, nil
	}
	if r.Level == tm.level {
		// GCC-compiled regions run through a wrapper whose argument a
		// serialized region does not store in the team.
		if m := s.teamMoment(tm); m.site == siteLinkFork && tm.pkfn != 0 && tm.pkfn != s.rt.mem.AllOnes() && !s.rt.isGOMPWrapper(tm.pkfn) {
			return tm.pkfn, nil
		}
	}
	return 0, errorf(omprt.ErrUnavailable, "%v: a serial team keeps one entry function, that of the region that began on it last (the runtime does not restore it when a nested region ends), and %s", omprt.RegionName(r), why)
}

// stackFunction finds the outlined function of the level of team tm on
// the stack of the team's primary thread: the function called by the
// frame at the exit frame of the level's implicit task, which must be one
// of the runtime's functions that invoke regions. It returns 0 and why
// when it does not find it.
func (s *stop) stackFunction(tm *team, level int32) (uint64, string) {
	if on, err := s.stateTracking(); err != nil || !on {
		return 0, "without state tracking the runtime keeps no task frames to find the level's code on the stack by"
	}
	tt, err := s.table()
	if err != nil {
		return 0, err.Error()
	}
	p, err := s.teamPrimary(tm)
	if err != nil {
		return 0, err.Error()
	}
	lwp := s.lwpOf(tt, p)
	if lwp == 0 {
		return 0, fmt.Sprintf("the team's thread %#x has no known OS thread whose stack would show the level's code", p)
	}
	t := s.task(tm.implicit)
	if t.err != nil {
		return 0, t.err.Error()
	}
	name := omprt.TaskN(omprt.Ref{Addr: tm.implicit, Level: level})
	exit, _, err := s.implicitData(tm, t.v, level, name).frames(s.rt.l)
	if err != nil {
		return 0, err.Error()
	}
	if exit.Addr == 0 {
		return 0, "the level's implicit task has no exit frame: its code is not running"
	}
	cfa := exit.Addr
	if exit.Flags&0x30 == 0x20 { // a frame pointer: two words below the CFA
		cfa += 2 * uint64(s.rt.mem.PtrSize)
	}
	frames, err := s.framesOf(lwp)
	if err != nil {
		return 0, err.Error()
	}
	bi := s.rt.bps()
	for i, f := range frames {
		if f.CFA != cfa {
			continue
		}
		name := symbolName(f.Function, f.Symbol)
		if !bi.invokes(f, name) {
			return 0, fmt.Sprintf("the frame at the level's exit frame (CFA %#x) is in %q, no function of the runtime that runs a region's code", cfa, name)
		}
		for k := i - 1; k >= 0; k-- {
			c := frames[k]
			switch {
			case c.Entry == 0:
				return 0, fmt.Sprintf("the code the runtime's %s called (CFA %#x) is in no known function", name, c.CFA)
			case s.rt.isGOMPWrapper(c.Entry):
				continue // the user's function is the wrapper's callee
			case c.Runtime:
				// A region's code is the program's: the frame is
				// no longer the level's (a call at the same depth
				// since).
				return 0, fmt.Sprintf("the runtime's %s at the level's exit frame calls the runtime's %s, not a region's code", name, symbolName(c.Function, c.Symbol))
			}
			return c.Entry, ""
		}
		return 0, fmt.Sprintf("the runtime's %s at the level's exit frame has called nothing", name)
	}
	return 0, fmt.Sprintf("the level's code is not on the stack of thread %d (no frame at the exit frame of its implicit task, CFA %#x)", lwp, cfa)
}

// invokes reports whether a frame is in one of the runtime's functions
// that call a region's outlined function for a level: its invoke function,
// or the GOMP ABI's entry points that run a region's code in the primary
// thread (GOMP_parallel and its variants).
func (b *bpInfo) invokes(f omprt.StackFrame, name string) bool {
	if f.Entry != 0 && f.Entry == b.invoke {
		return true
	}
	return f.Runtime && strings.HasPrefix(name, "GOMP_parallel") && name != "GOMP_parallel_start" && name != "GOMP_parallel_end"
}
