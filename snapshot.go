package ompd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/internal/omprt"
)

// Snapshot is everything the runtime knows at one stop, in plain values
// ready for printing or encoding as JSON. Build it with
// AddressSpace.Snapshot.
//
// Where one answer fails (for instance a state without state tracking), the
// field holds the zero value and Errors says why; the walk goes on.
type Snapshot struct {
	// Runtime names the OpenMP runtime read ("LLVM libomp", "GNU
	// libgomp") and its version where known.
	Runtime        string `json:"runtime"`
	RuntimeVersion string `json:"runtime_version,omitempty"`
	// StatesInferred says the runtime records no thread states: each
	// thread's state was inferred from its stack (see Thread.StateInferred).
	StatesInferred bool `json:"states_inferred,omitempty"`
	// OpenMPVersion is the OpenMP version the runtime implements
	// (AddressSpace.OpenMPVersion, e.g. 201811).
	OpenMPVersion int `json:"openmp_version"`
	// LayoutSource says where the runtime's structure layout came from
	// (RuntimeInfo.Layout).
	LayoutSource LayoutSource `json:"layout_source"`
	// StateTracking says whether the runtime tracks thread states and
	// task frames (AddressSpace.StateTracking).
	StateTracking bool `json:"state_tracking"`
	// Threads are the OpenMP threads, in AddressSpace.Threads order.
	Threads []ThreadSnapshot `json:"threads"`
	// ICVs are the address-space ICVs.
	ICVs []ICVValue `json:"icvs"`
	// DisplayVars are the display control variables
	// (AddressSpace.DisplayControlVars).
	DisplayVars []ControlVar `json:"display_vars"`
	// Breakpoints are the runtime's OMPD breakpoint functions
	// (AddressSpace.Breakpoints).
	Breakpoints []Breakpoint `json:"breakpoints"`
	// Errors lists, one line each, the answers that failed while the
	// snapshot was taken; their fields hold zero values. Answers the
	// runtime cannot have (Unsupported) and answers that do not exist
	// (errors matching ErrUnavailable, such as the enclosing region of
	// level 0) are not errors and are not listed.
	Errors []string `json:"errors,omitempty"`
	// Unsupported lists, one line each, the address-space answers this
	// runtime does not support at all (errors matching ErrUnsupported):
	// libgomp and an LLVM runtime built without OMPD support have no OMPD
	// breakpoint functions, and the latter no display control variables.
	// Their fields hold zero values.
	Unsupported []string `json:"unsupported,omitempty"`
}

// ThreadSnapshot is one thread in a Snapshot. Threads with the same
// region chain (the threads of a team) share the elements of their
// Parallel slices: change a copy, not the elements (appending is safe: no
// slice has room to grow into another's).
type ThreadSnapshot struct {
	// ID names the thread handle (Thread.String).
	ID string `json:"id"`
	// GTID is the runtime's global thread id (Thread.GTID).
	GTID int `json:"gtid"`
	// LWP is the kernel thread id, 0 if unknown (Thread.OSThread).
	LWP uint64 `json:"lwp,omitempty"`
	// Pthread is the thread's pthread_t (Thread.OSThread).
	Pthread uint64 `json:"pthread"`
	// Num is omp_get_thread_num in the innermost region (Thread.Num).
	Num int `json:"thread_num"`
	// NumUnknown tells that the thread has no thread number now
	// (Thread.Num failed): a worker waiting for its first region (LLVM's
	// host teams workers before their first fork barrier), one idle in
	// the hot team, a thread still starting. Num is then 0, which is no
	// answer; JSON leaves thread_num out instead (see MarshalJSON).
	NumUnknown bool `json:"-"`
	// Starting tells that the runtime is still starting the thread: it
	// has not recorded its pthread id yet.
	Starting bool `json:"starting,omitempty"`
	// TeamNum and NumTeams place the thread in a host teams league
	// (omp_get_team_num, omp_get_num_teams); zero outside any. In JSON
	// both are present inside a league (team_num even when 0) and absent
	// outside any (see MarshalJSON).
	TeamNum  int `json:"team_num,omitempty"`
	NumTeams int `json:"num_teams,omitempty"`
	// State is the thread's state (Thread.State), StateUndefined with
	// NoState set when the runtime cannot tell.
	State State `json:"state"`
	// NoState tells that the runtime cannot tell the thread's state
	// (Thread.State failed: no state tracking, for instance). JSON leaves
	// state out then (see MarshalJSON).
	NoState bool `json:"-"`
	// WaitID is what the thread waits on (a lock, a barrier), for the
	// states that wait on something.
	WaitID uint64 `json:"wait_id,omitempty"`
	// StateInferred says State was inferred (from the thread's stack,
	// for libgomp), not recorded by the runtime.
	StateInferred bool `json:"state_inferred,omitempty"`
	// StateUnknown says, in one line naming no thread, why there is no
	// state (NoState) where the runtime records no states and the thread's stack did
	// not tell; "" otherwise.
	StateUnknown string             `json:"state_unknown,omitempty"`
	Parallel     []ParallelSnapshot `json:"parallel"` // innermost first
	Tasks        []TaskSnapshot     `json:"tasks"`    // current task, then its generating ancestors
	ICVs         []ICVValue         `json:"icvs"`     // thread ICVs, then the current task's
	// Frames is the thread's backtrace, innermost first, when the
	// snapshot was taken WithBacktraces (see Thread.Backtrace).
	Frames []FrameSnapshot `json:"frames,omitempty"`
	// StackEnd says why the backtrace stopped before the thread's
	// outermost frame, "" if it did not (or was not taken).
	StackEnd string `json:"stack_end,omitempty"`
}

// MarshalJSON encodes t with the field tags, except that team_num is
// present whenever num_teams is: a thread of team 0 of a league says so,
// rather than looking like a thread outside any league; thread_num is
// left out when NumUnknown: a thread with no thread number does not look
// like thread 0; and state is left out when NoState.
func (t ThreadSnapshot) MarshalJSON() ([]byte, error) {
	type plain ThreadSnapshot // without this method
	b, err := json.Marshal(plain(t))
	if err != nil {
		return b, err
	}
	if t.NumUnknown {
		b = dropKey(b, "thread_num")
	}
	if t.NoState {
		b = dropKey(b, "state")
	}
	if t.NumTeams <= 0 || t.TeamNum != 0 {
		return b, nil
	}
	// team_num, omitted as empty, goes where the field order puts it:
	// just before num_teams.
	const key = `"num_teams":`
	i := bytes.Index(b, []byte(key))
	if i < 0 {
		return b, nil
	}
	return slices.Concat(b[:i], []byte(`"team_num":0,`), b[i:]), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes: a thread without
// thread_num has NumUnknown set, one without state NoState (and
// StateUndefined).
func (t *ThreadSnapshot) UnmarshalJSON(b []byte) error {
	type plain ThreadSnapshot // without this method
	aux := struct {
		*plain
		Num   *int   `json:"thread_num"` // hides plain's
		State *State `json:"state"`      // hides plain's
	}{plain: (*plain)(t)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	t.Num, t.NumUnknown = 0, aux.Num == nil
	if aux.Num != nil {
		t.Num = *aux.Num
	}
	t.State, t.NoState = StateUndefined, aux.State == nil
	if aux.State != nil {
		t.State = *aux.State
	}
	return nil
}

// dropKey removes the member key from the JSON object b, with its value (a
// number, or a string without escapes) and the comma that separates it.
// The first `"key":` in b is that key, as the quotes inside string values
// are escaped.
func dropKey(b []byte, key string) []byte {
	i := bytes.Index(b, []byte(`"`+key+`":`))
	if i < 0 {
		return b
	}
	j := i + len(key) + 3
	if j < len(b) && b[j] == '"' {
		e := bytes.IndexByte(b[j+1:], '"')
		if e < 0 {
			return b
		}
		j += e + 2
	} else {
		for j < len(b) && b[j] != ',' && b[j] != '}' {
			j++
		}
	}
	switch {
	case j < len(b) && b[j] == ',':
		return slices.Delete(b, i, j+1)
	case i > 0 && b[i-1] == ',':
		return slices.Delete(b, i-1, j)
	}
	return slices.Delete(b, i, j)
}

// ParallelSnapshot is one region of a thread's region nest.
type ParallelSnapshot struct {
	// ID names the region handle (Parallel.String).
	ID string `json:"id"`
	// Level and ActiveLevel are omp_get_level and omp_get_active_level
	// inside the region.
	Level       int `json:"level"`
	ActiveLevel int `json:"active_level"`
	// NumThreads is the team size (omp_get_num_threads).
	NumThreads int `json:"num_threads"`
	// Function and FunctionPC are the region's outlined function
	// (Parallel.Function): its symbol ("" if unknown) and address.
	Function   string `json:"function,omitempty"`
	FunctionPC uint64 `json:"function_pc,omitempty"`
	// File and Line are the source of the function's entry, "" and 0
	// without line information.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
}

// TaskSnapshot is one task of a thread's task chain.
type TaskSnapshot struct {
	// ID names the task handle (Task.String).
	ID string `json:"id"`
	// Kind is the task's kind and properties (Task.Kind).
	Kind TaskKind `json:"kind"`
	// InFinal is omp_in_final in the task.
	InFinal bool `json:"in_final"`
	// Function and FunctionPC are the task's entry function
	// (Task.Function): its symbol ("" if unknown) and address.
	Function   string `json:"function,omitempty"`
	FunctionPC uint64 `json:"function_pc,omitempty"`
	// File and Line are the source of the function's entry, "" and 0
	// without line information.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// ExitFrame, EnterFrame and their flags are the task's frames
	// (Task.Frames), 0 when not set.
	ExitFrame  uint64     `json:"exit_frame"`
	ExitFlags  FrameFlags `json:"exit_flags"`
	EnterFrame uint64     `json:"enter_frame"`
	EnterFlags FrameFlags `json:"enter_flags"`
	// FramesUnknown tells that the runtime cannot tell the task's frames
	// (Task.Frames failed: no state tracking, for instance); the frames
	// and flags are then zero, and JSON leaves the flags out (see
	// MarshalJSON).
	FramesUnknown bool `json:"-"`
}

// MarshalJSON encodes t with the field tags, leaving the frames' flags
// out when FramesUnknown.
func (t TaskSnapshot) MarshalJSON() ([]byte, error) {
	type plain TaskSnapshot // without this method
	b, err := json.Marshal(plain(t))
	if err != nil || !t.FramesUnknown {
		return b, err
	}
	return dropKey(dropKey(b, "exit_flags"), "enter_flags"), nil
}

// UnmarshalJSON decodes what MarshalJSON encodes: a task without frame
// flags has FramesUnknown set.
func (t *TaskSnapshot) UnmarshalJSON(b []byte) error {
	type plain TaskSnapshot // without this method
	aux := struct {
		*plain
		Exit  *FrameFlags `json:"exit_flags"`  // hides plain's
		Enter *FrameFlags `json:"enter_flags"` // hides plain's
	}{plain: (*plain)(t)}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	t.ExitFlags, t.EnterFlags, t.FramesUnknown = 0, 0, aux.Exit == nil && aux.Enter == nil
	if aux.Exit != nil {
		t.ExitFlags = *aux.Exit
	}
	if aux.Enter != nil {
		t.EnterFlags = *aux.Enter
	}
	return nil
}

// ICVValue is one ICV read at one scope.
type ICVValue struct {
	ICV   ICV       `json:"name"`  // the ICV (its name in JSON)
	Scope ScopeKind `json:"scope"` // the scope it was read at
	Value string    `json:"value"` // the value as the ICV's String method prints it
	// Incomplete says Value is only the part of a list the runtime let
	// be read (ICVString's error matched ErrIncomplete): libgomp without
	// its debug file gives a list ICV's first element only.
	Incomplete bool `json:"incomplete,omitempty"`
	// Source is "environment" when the value was derived from the
	// program's start-up environment, the runtime's own state being out
	// of reach (libgomp without its debug file, for the ICVs a program
	// cannot change after start-up); "" when read from the runtime.
	Source string `json:"source,omitempty"`
}

// maxWalk bounds the region and task chains a snapshot follows per thread.
const maxWalk = 1 << 12

// snap gathers one snapshot: its error list and the ICV ids of each scope.
type snap struct {
	as       *AddressSpace
	s        *Snapshot
	tracking bool
	// inferring: the runtime infers states instead of tracking them.
	inferring bool
	// scopes are the ICVs of each scope kind.
	scopes [ScopeTask + 1]scopeICVs
	// Answers shared by many threads, worked out once per snapshot.
	funcs   map[uint64]Function
	regs    map[omprt.Ref]ParallelSnapshot
	nThICVs int // ICVs a thread and its task have, for the slice's size
	// The threads' slices and strings are carved out of shared blocks:
	// a few allocations per snapshot instead of several per thread.
	text              strings.Builder
	icvBlock          []ICVValue
	regBlock, regWalk []ParallelSnapshot
	// lastRegs is the region chain of the thread made last, which the
	// next thread shares if its own is the same.
	lastRegs            []ParallelSnapshot
	taskBlock, taskWalk []TaskSnapshot
	block               int // elements per block of regions and tasks
	// keyed is the address space's runtime if it tells when a scope's
	// ICVs are those read last (omprt.ICVKeyed), else nil.
	keyed omprt.ICVKeyed
	// batch is the address space's runtime if it reads several ICVs at
	// once, else nil.
	batch omprt.ICVBatch
	// tasksMade and regionsMade are task and region snapshots made
	// lately (see task, region).
	tasksMade   [16]madeTask
	regionsMade [16]madeRegion
}

// textBlock is the size of the blocks of snapshot strings.
const textBlock = 8 << 10

// str returns b as a string, kept with other strings of the snapshot: the
// bytes already in the builder never change, so its String's substrings
// stay valid while it grows within its capacity, and a full builder is
// replaced, not grown.
func (sn *snap) str(b []byte) string {
	if sn.text.Cap()-sn.text.Len() < len(b) {
		sn.text = strings.Builder{}
		sn.text.Grow(max(textBlock, len(b)))
	}
	n := sn.text.Len()
	sn.text.Write(b)
	return sn.text.String()[n:]
}

// icvText is icvText for an ICV whose last number and its text are in m:
// the text of a number the ICV had at the scope read before is made once
// (the threads of a team mostly share their ICVs), others in the
// snapshot's blocks.
func (sn *snap) icvText(m *icvMemo, v *omprt.Value, err error) (string, error) {
	if err != nil || v.HasText {
		return icvText(*v, err)
	}
	if v.Int >= 0 && v.Int < 100 { // strconv has those
		return strconv.Itoa(int(v.Int)), nil
	}
	if !m.ok || m.n != v.Int {
		var buf [24]byte
		*m = icvMemo{n: v.Int, text: sn.str(strconv.AppendInt(buf[:0], v.Int, 10)), ok: true}
	}
	return m.text, nil
}

// icvMemo is the text of a number an ICV had last.
type icvMemo struct {
	n    int64
	text string
	ok   bool
}

// scopeICVs are the ICVs of one scope kind, as package ompd and the
// runtime name them, with their answers at the scope read last.
type scopeICVs struct {
	ids  []ICV
	rids []omprt.ICV
	memo []icvMemo
	vals []omprt.Value
	errs []error
	// made are the ICVValues made last from answers all without error,
	// madeFrom those answers: the next scope with the same answers
	// takes a copy of made (the implicit tasks of a team mostly have
	// the same ICVs).
	made     []ICVValue
	madeFrom []omprt.Value
	key      omprt.ICVKey // of the answers read last (omprt.ICVKeyed)
}

// icvSlot returns an empty slice with room for one thread's ICVs.
func (sn *snap) icvSlot() []ICVValue {
	n := sn.nThICVs
	if cap(sn.icvBlock)-len(sn.icvBlock) < n {
		sn.icvBlock = make([]ICVValue, 0, n*sn.block)
	}
	l := len(sn.icvBlock)
	sn.icvBlock = sn.icvBlock[:l+n]
	return sn.icvBlock[l : l : l+n]
}

// carve copies s into *block (a new block of at least size elements
// when it has no room) and returns the copy, nil for an empty s. The
// copy's capacity ends with it: appending to it never writes into
// another thread's elements.
func carve[T any](block *[]T, s []T, size int) []T {
	if len(s) == 0 {
		return nil
	}
	if cap(*block)-len(*block) < len(s) {
		*block = make([]T, 0, max(size, len(s)))
	}
	l := len(*block)
	*block = append(*block, s...)
	return (*block)[l:len(*block):len(*block)]
}

// function is as.function, once per address and snapshot.
func (sn *snap) function(addr uint64) Function {
	f, ok := sn.funcs[addr]
	if !ok {
		f = sn.as.function(addr)
		sn.funcs[addr] = f
	}
	return f
}

// note records err, unless it only says that something does not exist.
// The message is built only for errors recorded.
func (sn *snap) note(id, what string, err error) {
	if err != nil && !omprt.Is(err, ErrUnavailable) {
		msg := err.Error()
		// Errors that already say what they are about keep one prefix
		// ("breakpoints: the runtime is built without OMPD support").
		if !strings.HasPrefix(msg, what+":") {
			msg = what + ": " + msg
		}
		if id == "" && errors.Is(err, ErrUnsupported) {
			// What the runtime cannot have is no failure.
			sn.s.Unsupported = append(sn.s.Unsupported, msg)
			return
		}
		if id != "" {
			msg = id + " " + msg
		}
		sn.s.Errors = append(sn.s.Errors, msg)
	}
}

// cut records that a chain was cut: memory that breaks an invariant of the
// walk (a cycle, levels that do not fall) or a chain past the walk's bound.
func (sn *snap) cut(id, what string, format string, args ...any) {
	sn.note(id, what, errorf(ErrCorrupt, format, args...))
}

// Snapshot walks the whole runtime: every thread with its state, region nest,
// task chain and ICVs, plus the address-space ICVs, display control
// variables and breakpoints. It stops early if ctx is done.
//
// Every chain is walked with a visited set and a bound; where memory makes
// a chain loop, or its levels stop falling, or the bound is reached, the
// chain is cut there and Errors says so.
//
// With the option WithBacktraces, each thread also gets its backtrace.
func (as *AddressSpace) Snapshot(ctx context.Context, opts ...SnapshotOption) (*Snapshot, error) {
	var cfg snapConfig
	for _, o := range opts {
		o(&cfg)
	}
	if err := as.check(); err != nil {
		return nil, err
	}
	info := as.rt.Info()
	s := &Snapshot{LayoutSource: LayoutSource(info.Layout), Runtime: info.Name, RuntimeVersion: info.Version, StatesInferred: info.InfersStates}
	sn := &snap{as: as, s: s, funcs: map[uint64]Function{}, regs: map[omprt.Ref]ParallelSnapshot{}}
	for id := range as.ICVs() {
		if k := id.Scope(); k >= 0 && int(k) < len(sn.scopes) {
			sc := &sn.scopes[k]
			sc.ids, sc.rids = append(sc.ids, id), append(sc.rids, omprt.ICV(id))
		}
	}
	for k := range sn.scopes {
		sc := &sn.scopes[k]
		n := len(sc.ids)
		sc.memo, sc.vals, sc.errs = make([]icvMemo, n), make([]omprt.Value, n), make([]error, n)
	}
	sn.batch, _ = as.rt.(omprt.ICVBatch)
	sn.keyed, _ = as.rt.(omprt.ICVKeyed)
	sn.nThICVs = len(sn.scopes[ScopeThread].ids) + len(sn.scopes[ScopeTask].ids)
	var err error
	s.OpenMPVersion, err = as.OpenMPVersion()
	sn.note("", "openmp version", err)
	s.StateTracking, err = as.rt.StateTracking()
	sn.note("", "state tracking", err)
	sn.tracking = s.StateTracking
	sn.inferring = info.InfersStates
	s.ICVs = sn.appendICVs(s.ICVs, ScopeAddressSpace, as.scope(), "")
	s.DisplayVars, err = as.DisplayControlVars()
	sn.note("", "display control variables", err)
	if bps, err := as.Breakpoints(); err == nil {
		s.Breakpoints = slices.Collect(bps.All())
	} else {
		sn.note("", "breakpoints", err)
	}
	refs, err := as.threadRefs()
	if err != nil {
		return nil, err
	}
	s.Threads = make([]ThreadSnapshot, 0, len(refs))
	sn.block = max(len(refs), 16)
	for _, r := range refs {
		th := Thread{as: as, ref: r}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ts := sn.thread(th)
		if cfg.backtraces {
			sn.frames(ctx, th, &ts, cfg.btOpts)
		}
		s.Threads = append(s.Threads, ts)
	}
	return s, nil
}

// appendICVs reads the ICVs of one scope straight from the runtime: the
// scope is a handle this snapshot made, so the checks of Scope.ICVString
// are not needed.
func (sn *snap) appendICVs(out []ICVValue, kind ScopeKind, sc omprt.ScopeRef, id string) []ICVValue {
	if kind < 0 || int(kind) >= len(sn.scopes) {
		return out
	}
	scope := &sn.scopes[kind]
	ids := scope.ids
	reuse := kind == ScopeTask
	same := false
	switch {
	case reuse && sn.keyed != nil:
		same = sn.keyed.ICVsAtKeyed(sc, scope.rids, scope.vals, scope.errs, &scope.key)
	case sn.batch != nil:
		sn.batch.ICVsAt(sc, scope.rids, scope.vals, scope.errs)
	default:
		icvsAt(sn.as.rt, sc, scope.rids, scope.vals, scope.errs)
	}
	// made holds the values of madeFrom, which equal the answers of the
	// last call: the answers now are those too when the runtime says
	// they are made of the same (same), or when they compare equal.
	if reuse && scope.made != nil && allNil(scope.errs) && (same || sameValues(scope.vals, scope.madeFrom)) {
		return append(out, scope.made...)
	}
	start := len(out)
	for i, icv := range ids {
		v, err := sn.icvText(&scope.memo[i], &scope.vals[i], scope.errs[i])
		incomplete := err != nil && omprt.Is(err, ErrIncomplete)
		if err != nil && !incomplete {
			sn.note(id, "ICV "+icv.Name(), err)
			continue
		}
		iv := ICVValue{ICV: icv, Scope: kind, Value: v, Incomplete: incomplete}
		if scope.vals[i].FromEnv {
			iv.Source = "environment"
		}
		out = append(out, iv)
	}
	if reuse {
		scope.made = nil
		if allNil(scope.errs) {
			scope.made = out[start:len(out):len(out)]
			scope.madeFrom = append(scope.madeFrom[:0], scope.vals...)
		}
	}
	return out
}

// sameValues reports whether a and b hold the same answers.
func sameValues(a, b []omprt.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Int != y.Int || x.HasText != y.HasText || x.IsString != y.IsString || x.FromEnv != y.FromEnv ||
			x.Text != y.Text || !slices.Equal(x.List, y.List) {
			return false
		}
	}
	return true
}

// allNil reports whether errs holds no error.
func allNil(errs []error) bool {
	for _, err := range errs {
		if err != nil {
			return false
		}
	}
	return true
}

func (sn *snap) thread(th Thread) ThreadSnapshot {
	var name [48]byte
	ts := ThreadSnapshot{ID: sn.str(omprt.ThreadName(th.ref).Append(name[:0])), GTID: th.GTID(), State: StateUndefined, NoState: true}
	d, err := th.data()
	if err != nil {
		sn.note(ts.ID, "thread", err)
		return ts
	}
	ts.Pthread, ts.LWP = d.Pthread, d.LWP
	ts.Starting = d.PthreadErr != nil
	ts.Num, ts.NumUnknown = d.Num, d.NumErr != nil
	if ts.NumUnknown {
		ts.Num = 0
	}
	sn.note(ts.ID, "thread num", d.NumErr)
	if d.LeagueErr != nil {
		// A broken team chain is reported by the region walk below.
		if !errors.Is(d.LeagueErr, ErrCorrupt) {
			sn.note(ts.ID, "teams league", d.LeagueErr)
		}
	} else if d.NumTeams > 1 {
		ts.TeamNum, ts.NumTeams = d.TeamNum, d.NumTeams
	}
	if sn.tracking || d.StateInferred || sn.inferring {
		sn.note(ts.ID, "state", d.StateErr)
		if d.StateErr != nil {
			var why *omprt.StateUnknown
			if errors.As(d.StateErr, &why) {
				ts.StateUnknown = why.Reason
			}
		} else {
			st := State(d.State)
			ts.State, ts.NoState = st, false
			ts.StateInferred = d.StateInferred
			if st.IsWait() {
				ts.WaitID = d.WaitID
			}
		}
	}
	ts.ICVs = sn.appendICVs(sn.icvSlot(), ScopeThread, th.scope(), ts.ID)
	if d.RegionErr != nil {
		sn.note(ts.ID, "parallel chain", d.RegionErr)
	} else {
		ts.Parallel = sn.regions(ts.ID, d.Region)
	}
	if d.TaskErr != nil {
		sn.note(ts.ID, "task chain", d.TaskErr)
		return ts
	}
	ts.ICVs = sn.appendICVs(ts.ICVs, ScopeTask, Task{as: sn.as, ref: d.Task}.scope(), ts.ID)
	ts.Tasks = sn.tasks(ts.ID, d.Task)
	return ts
}

// regions walks a thread's region nest from r outwards. Levels must fall
// at every step and stay >= 0, active levels must not exceed levels.
func (sn *snap) regions(id string, r omprt.Ref) []ParallelSnapshot {
	out := sn.walkRegions(id, r)
	sn.regWalk = out[:0]
	if len(out) > 0 && slices.Equal(out, sn.lastRegs) {
		return sn.lastRegs // the previous thread's: a team's threads share their chain
	}
	sn.lastRegs = carve(&sn.regBlock, out, sn.block)
	return sn.lastRegs
}

// walkRegions is regions, the chain gathered in sn.regWalk.
func (sn *snap) walkRegions(id string, r omprt.Ref) []ParallelSnapshot {
	const what = "parallel chain"
	out := sn.regWalk[:0]
	for {
		if len(out) == maxWalk {
			sn.cut(id, what, "more than %d regions", maxWalk)
			return out
		}
		d, err := sn.as.rt.Region(r)
		if err != nil {
			sn.note(id, what, err)
			return out
		}
		if r.Level < 0 || d.ActiveLevel < 0 || d.ActiveLevel > int(r.Level) {
			sn.cut(id, what, "%v: level %d, active level %d", omprt.RegionName(r), r.Level, d.ActiveLevel)
			return out
		}
		out = append(out, sn.region(r, d))
		if d.EnclosingErr != nil {
			sn.note(id, what, d.EnclosingErr)
			return out
		}
		if next := d.Enclosing; next.Level >= r.Level {
			sn.cut(id, what, "%v encloses %v: levels do not fall", omprt.RegionName(next), omprt.RegionName(r))
			return out
		}
		r = d.Enclosing
	}
}

// region returns the snapshot of region r, whose record is d, made once
// per snapshot: the threads of a team share their regions.
func (sn *snap) region(r omprt.Ref, d *omprt.RegionData) ParallelSnapshot {
	made := &sn.regionsMade[(r.Addr>>4^uint64(r.Level))%uint64(len(sn.regionsMade))]
	if made.ok && made.ref == r {
		return made.ps
	}
	ps, ok := sn.regs[r]
	if !ok {
		ps = ParallelSnapshot{ID: omprt.RegionName(r).String(), Level: int(r.Level), ActiveLevel: d.ActiveLevel, NumThreads: d.TeamSize}
		if d.FunctionErr == nil {
			f := sn.function(d.Function)
			ps.Function, ps.FunctionPC, ps.File, ps.Line = f.Symbol, f.Addr, f.File, f.Line
		}
		sn.regs[r] = ps
	}
	*made = madeRegion{ref: r, ps: ps, ok: true}
	return ps
}

// madeRegion is a region snapshot made, for sn.region.
type madeRegion struct {
	ref omprt.Ref
	ps  ParallelSnapshot
	ok  bool
}

// task returns the snapshot of task t, whose record is d: made once for
// the tasks many threads share (the ancestors of their implicit tasks),
// as the last made of those at its place in sn.tasksMade.
func (sn *snap) task(t omprt.Ref, d *omprt.TaskData) TaskSnapshot {
	made := &sn.tasksMade[(t.Addr>>4^uint64(t.Level))%uint64(len(sn.tasksMade))]
	if made.ok && made.ref == t {
		return made.ts
	}
	var name [48]byte
	tk := TaskSnapshot{ID: sn.str(omprt.TaskName(t).Append(name[:0])), Kind: TaskKind(d.Kind), InFinal: d.InFinal, FramesUnknown: true}
	if d.FunctionErr == nil {
		f := sn.function(d.Function)
		tk.Function, tk.FunctionPC, tk.File, tk.Line = f.Symbol, f.Addr, f.File, f.Line
	}
	if (sn.tracking || sn.inferring) && d.FramesErr == nil {
		tk.ExitFrame, tk.EnterFrame = d.Exit.Addr, d.Enter.Addr
		tk.ExitFlags, tk.EnterFlags = FrameFlags(d.Exit.Flags), FrameFlags(d.Enter.Flags)
		tk.FramesUnknown = false
	}
	*made = madeTask{ref: t, ts: tk, ok: true}
	return tk
}

// madeTask is a task snapshot made, for sn.task.
type madeTask struct {
	ref omprt.Ref
	ts  TaskSnapshot
	ok  bool
}

// visited reports whether task t is in the chain so far: in seen when
// the chain is long, else among refs.
func visited(refs []omprt.Ref, seen map[omprt.Ref]struct{}, t omprt.Ref) bool {
	if seen != nil {
		_, ok := seen[t]
		return ok
	}
	for _, r := range refs {
		if r == t {
			return true
		}
	}
	return false
}

// tasks walks a thread's task chain from t through its generating
// ancestors, with a visited set.
func (sn *snap) tasks(id string, t omprt.Ref) []TaskSnapshot {
	out := sn.walkTasks(id, t)
	sn.taskWalk = out[:0]
	return carve(&sn.taskBlock, out, sn.block)
}

// walkTasks is tasks, the chain gathered in sn.taskWalk.
func (sn *snap) walkTasks(id string, t omprt.Ref) []TaskSnapshot {
	const what = "task chain"
	out := sn.taskWalk[:0]
	var refs [16]omprt.Ref          // the first tasks of the chain
	var seen map[omprt.Ref]struct{} // all of them, once the chain is long
	for {
		if len(out) == maxWalk {
			sn.cut(id, what, "more than %d tasks", maxWalk)
			return out
		}
		if visited(refs[:min(len(out), len(refs))], seen, t) {
			sn.cut(id, what, "%v is its own generating ancestor", omprt.TaskName(t))
			return out
		}
		switch {
		case len(out) < len(refs):
			refs[len(out)] = t
		case seen == nil:
			seen = make(map[omprt.Ref]struct{}, 64)
			for _, r := range refs {
				seen[r] = struct{}{}
			}
			fallthrough
		default:
			seen[t] = struct{}{}
		}
		d, err := sn.as.rt.Task(t)
		if err != nil {
			sn.note(id, what, err)
			return out
		}
		out = append(out, sn.task(t, d))
		if d.GeneratingErr != nil {
			sn.note(id, what, d.GeneratingErr)
			return out
		}
		t = d.Generating
	}
}
