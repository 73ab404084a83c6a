package ompd

import (
	"context"
	"errors"
	"fmt"
)

// Snapshot is everything the runtime knows at one stop, in plain values
// ready for printing or encoding as JSON. Build it with
// AddressSpace.Snapshot.
//
// Where one answer fails (for instance a state without state tracking), the
// field holds the zero value and Errors says why; the walk goes on.
type Snapshot struct {
	OpenMPVersion int              `json:"openmp_version"`
	LayoutSource  string           `json:"layout_source"`
	StateTracking bool             `json:"state_tracking"`
	Threads       []ThreadSnapshot `json:"threads"`
	ICVs          []ICVValue       `json:"icvs"` // address-space ICVs
	DisplayVars   []ControlVar     `json:"display_vars"`
	Breakpoints   []Breakpoint     `json:"breakpoints"`
	Errors        []string         `json:"errors,omitempty"`
}

// ThreadSnapshot is one thread in a Snapshot.
type ThreadSnapshot struct {
	ID       string             `json:"id"`
	GTID     int                `json:"gtid"`
	LWP      uint64             `json:"lwp,omitempty"`
	Pthread  uint64             `json:"pthread"`
	Num      int                `json:"thread_num"`
	State    string             `json:"state,omitempty"`
	WaitID   uint64             `json:"wait_id,omitempty"`
	Parallel []ParallelSnapshot `json:"parallel"` // innermost first
	Tasks    []TaskSnapshot     `json:"tasks"`    // current task, then its generating ancestors
	ICVs     []ICVValue         `json:"icvs"`     // thread ICVs, then the current task's
}

// ParallelSnapshot is one region of a thread's region nest.
type ParallelSnapshot struct {
	ID          string `json:"id"`
	Level       int    `json:"level"`
	ActiveLevel int    `json:"active_level"`
	NumThreads  int    `json:"num_threads"`
	Function    string `json:"function,omitempty"`
	FunctionPC  uint64 `json:"function_pc,omitempty"`
}

// TaskSnapshot is one task of a thread's task chain.
type TaskSnapshot struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	InFinal    bool   `json:"in_final"`
	Function   string `json:"function,omitempty"`
	FunctionPC uint64 `json:"function_pc,omitempty"`
	ExitFrame  uint64 `json:"exit_frame"`
	ExitFlags  string `json:"exit_flags,omitempty"`
	EnterFrame uint64 `json:"enter_frame"`
	EnterFlags string `json:"enter_flags,omitempty"`
}

// ICVValue is one ICV read at one scope.
type ICVValue struct {
	Name  string `json:"name"`
	Scope string `json:"scope"`
	Value string `json:"value"`
}

// maxWalk bounds the region and task chains a snapshot follows per thread.
const maxWalk = 1 << 12

// Snapshot walks the whole runtime: every thread with its state, region nest,
// task chain and ICVs, plus the address-space ICVs, display control
// variables and breakpoints. It stops early if ctx is done.
func (as *AddressSpace) Snapshot(ctx context.Context) (*Snapshot, error) {
	if err := as.check(); err != nil {
		return nil, err
	}
	s := &Snapshot{LayoutSource: as.l.source.String()}
	note := func(what string, err error) {
		if err != nil && !errors.Is(err, ErrUnavailable) {
			s.Errors = append(s.Errors, fmt.Sprintf("%s: %v", what, err))
		}
	}
	var err error
	s.OpenMPVersion, err = as.OpenMPVersion()
	note("openmp version", err)
	s.StateTracking, err = as.stateTracking()
	note("state tracking", err)
	for _, id := range ICVs() {
		if id.Scope() == ScopeAddressSpace {
			s.ICVs = appendICV(s.ICVs, as, id, note)
		}
	}
	s.DisplayVars, err = as.DisplayControlVars()
	note("display control variables", err)
	if bps, err := as.Breakpoints(); err == nil {
		s.Breakpoints = bps.All()
	} else {
		note("breakpoints", err)
	}
	threads, err := as.Threads()
	if err != nil {
		return nil, err
	}
	// One OS thread list for the whole snapshot.
	lwps := map[uint64]uint64{}
	if ths, err := as.t.Threads(); err == nil {
		for _, th := range ths {
			if th.Pointer != 0 {
				lwps[th.Pointer] = th.ID
			}
		}
	}
	for _, th := range threads {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		s.Threads = append(s.Threads, as.snapshotThread(th, lwps, s.StateTracking, note))
	}
	return s, nil
}

func appendICV(out []ICVValue, sc Scope, id ICV, note func(string, error)) []ICVValue {
	v, err := sc.ICVString(id)
	if err != nil {
		note(fmt.Sprintf("ICV %s", id), err)
		return out
	}
	return append(out, ICVValue{Name: id.Name(), Scope: id.Scope().String(), Value: v})
}

func (as *AddressSpace) snapshotThread(th Thread, lwps map[uint64]uint64, tracking bool, note func(string, error)) ThreadSnapshot {
	ts := ThreadSnapshot{ID: th.String(), GTID: th.GTID()}
	var err error
	ts.Pthread, err = th.OSThread(PthreadID)
	note(ts.ID+" pthread", err)
	ts.LWP = lwps[ts.Pthread]
	ts.Num, err = th.Num()
	note(ts.ID+" thread num", err)
	if tracking {
		st, w, err := th.State()
		note(ts.ID+" state", err)
		if err == nil {
			ts.State = st.String()
			if st.IsWait() {
				ts.WaitID = uint64(w)
			}
		}
	}
	for _, id := range ICVs() {
		if id.Scope() == ScopeThread {
			ts.ICVs = appendICV(ts.ICVs, th, id, note)
		}
	}
	p, err := th.CurrentParallel()
	for i := 0; err == nil && i < maxWalk; i++ {
		ps := ParallelSnapshot{ID: p.String()}
		ps.Level, _ = p.Level()
		ps.ActiveLevel, _ = p.ActiveLevel()
		ps.NumThreads, _ = p.NumThreads()
		if f, ferr := p.Function(); ferr == nil {
			ps.Function, ps.FunctionPC = f.Symbol, f.Addr
		}
		ts.Parallel = append(ts.Parallel, ps)
		p, err = p.Enclosing()
	}
	note(ts.ID+" parallel chain", err)
	t, err := th.CurrentTask()
	if err == nil {
		for _, id := range ICVs() {
			if id.Scope() == ScopeTask {
				ts.ICVs = appendICV(ts.ICVs, t, id, note)
			}
		}
	}
	for i := 0; err == nil && i < maxWalk; i++ {
		tk := TaskSnapshot{ID: t.String()}
		if k, kerr := t.Kind(); kerr == nil {
			tk.Kind = k.String()
		}
		tk.InFinal, _ = t.InFinal()
		if f, ferr := t.Function(); ferr == nil {
			tk.Function, tk.FunctionPC = f.Symbol, f.Addr
		}
		if tracking {
			if fr, ferr := t.Frame(); ferr == nil {
				tk.ExitFrame, tk.EnterFrame = fr.Exit.Addr, fr.Enter.Addr
				tk.ExitFlags, tk.EnterFlags = fr.Exit.Flags.String(), fr.Enter.Flags.String()
			}
		}
		ts.Tasks = append(ts.Tasks, tk)
		t, err = t.Generating()
	}
	note(ts.ID+" task chain", err)
	return ts
}
