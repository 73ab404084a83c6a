// Package omprt is the boundary between package ompd (the API) and the
// packages that read one OpenMP runtime each (internal/kmp for LLVM's
// libomp, internal/gomp for GCC's libgomp).
//
// # The model
//
// A runtime package turns the memory of one stopped program into decoded
// records, one per runtime object per stop:
//
//   - ThreadData: an OpenMP thread (its OS ids, thread number, state, the
//     innermost region and the task it is in);
//   - RegionData: one nesting level of parallel regions (level, active
//     level, team size, outlined function, id, enclosing region);
//   - TaskData: a task (kind, function, frames, id, region, generating and
//     scheduling tasks).
//
// Records name each other with small comparable values: a ThreadRef (the
// address of the runtime's thread structure and the runtime's thread id)
// or a Ref (the address of a team or task structure and a nesting level,
// since one runtime object may stand for several levels, as LLVM's serial
// teams do; -1 where no level applies). Package ompd wraps these in its
// handles (ompd.Thread, ompd.Parallel, ompd.Task), so a Ref's fields are
// what the handles' string ids are made of, and must stay stable for an
// object as long as it lives.
//
// Where a runtime cannot answer one field, the record carries the error
// for it (the field's ...Err), matching the sentinel that fits:
// ErrUnavailable when the runtime has no such thing (the outermost
// region's enclosing region), ErrUnsupported when this runtime never
// records it, ErrNeedsStateTracking, ErrCorrupt when memory breaks an
// invariant (the walk is cut there and says so). A thread whose own
// structure cannot be read has Err set and nothing else: one bad entry
// costs that thread only. Inferred values (a libgomp thread state read
// from the stack) say so (ThreadData.StateInferred).
//
// # Stops and caching
//
// A Runtime decodes each object once per stop and answers every later
// question about it from that decode; Refresh starts a new stop (the
// program ran). Every method is safe for concurrent use. Runtimes use
// Memory, the page cache, for their reads, and Cache for their decoded
// records.
//
// # Errors
//
// The sentinels are defined here and re-exported by package ompd as the
// same values. Runtime packages build errors with Errorf and Wrap, whose
// messages are formatted only when read; the common answers of a record
// about one named object ("has no generating task") come from the
// stop's ErrorStore, many to an allocation.
//
// # Stacks
//
// A runtime package also says which frames of a thread's stack are its
// own code and what a task waits in when it called one of its entry points
// (Runtime.Stack, Runtime.Wait): package ompd places the frames in tasks
// and folds the runtime's, knowing no runtime by name.
//
// # Adding a runtime
//
// A runtime package provides an Opener; package internal/runtimes lists
// the openers in one place and asks each in turn.
package omprt

import (
	"context"
	"math/bits"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/target"
)

// Opener detects one runtime in a target and returns its Runtime. A
// target that holds no runtime of this kind gives an error matching
// ErrNoRuntime; a runtime that is there but cannot be read gives
// ErrIncompatible (or ErrUnavailable when it is not initialized yet) with
// the reason.
type Opener func(t target.Target) (Runtime, error)

// LayoutSource says where a runtime package took the runtime's structure
// layout from; the values are package ompd's LayoutSource.
type LayoutSource int

// Layout sources.
const (
	// LayoutOMPDTables: the runtime's own OMPD tables.
	LayoutOMPDTables LayoutSource = iota + 1
	// LayoutDWARF: the runtime's debug information.
	LayoutDWARF
	// LayoutKnownTable: a table of known layouts built into this module,
	// chosen by the runtime library's identity (version, build-id).
	LayoutKnownTable
)

// Info says which runtime a Runtime reads.
type Info struct {
	Name    string       // e.g. "LLVM libomp", "GNU libgomp"
	Version string       // the runtime's version as it reports it, "" if unknown
	Layout  LayoutSource // where the layout came from
	// InfersStates says the runtime records no thread states and the
	// runtime package infers them (ThreadData.StateInferred).
	InfersStates bool
}

// ThreadRef names an OpenMP thread: Addr is the runtime's thread structure
// (kmp_info_t, gomp_thread), ID the runtime's thread id (LLVM's gtid;
// what a runtime without one chooses, stable for the thread's life).
type ThreadRef struct {
	Addr uint64
	ID   int32
}

// Ref names a region or a task: Addr is the runtime structure (a team, a
// task), Level the nesting level when the structure stands for several
// (a region's level; an implicit task's region level) and -1 for an
// explicit task. The zero Ref names nothing.
type Ref struct {
	Addr  uint64
	Level int32
}

// IsZero reports whether r names nothing.
func (r Ref) IsZero() bool { return r == Ref{} }

// Thread id kinds (ompd_thread_id_t), package ompd's ThreadIDKind values.
const (
	IDPthread = 0
	IDLWP     = 1
)

// ThreadData is an OpenMP thread decoded at one stop.
type ThreadData struct {
	Ref ThreadRef
	// Err, when set, is why the thread's structure could not be read;
	// every other field is then zero.
	Err error

	Pthread    uint64 // pthread_t, 0 if unknown
	PthreadErr error  // why Pthread is unknown (a thread still starting)
	LWP        uint64 // kernel thread id, 0 if unknown
	LWPErr     error  // why LWP is unknown

	Num    int // thread number in the innermost team
	NumErr error

	State         int64  // ompt_state_t
	WaitID        uint64 // for wait states
	StateErr      error
	StateInferred bool // the state was inferred (from the stack), not recorded by the runtime

	Region    Ref // innermost region; zero with RegionErr set when none
	RegionErr error
	Task      Ref // current task; zero with TaskErr set when none
	TaskErr   error

	// TeamNum and NumTeams place the thread in a host teams league, as
	// omp_get_team_num and omp_get_num_teams do: 0 and 1 outside any.
	// NumTeams 0 with LeagueErr nil means the runtime package does not
	// decode leagues.
	TeamNum, NumTeams int
	LeagueErr         error
}

// RegionData is one nesting level of parallel regions decoded at one stop.
type RegionData struct {
	Ref         Ref // Ref.Level is the region's level
	ActiveLevel int
	TeamSize    int

	Function    uint64 // entry of the outlined function
	FunctionErr error

	ID    uint64 // OMPT parallel data
	IDErr error

	// Enclosing is the enclosing region; zero when EnclosingErr says why
	// (ErrUnavailable for the outermost region, ErrCorrupt for a cut).
	Enclosing    Ref
	EnclosingErr error
}

// Frame is one frame address with its ompt_frame_flag_t flags.
type Frame struct {
	Addr  uint64
	Flags uint32
}

// Schedule is a run-sched-var value as omp_get_schedule reports it; Kind
// is an omp_sched_t value without the monotonic bit (0 when unknown).
type Schedule struct {
	Kind                    int
	Chunk                   int
	Monotonic, Nonmonotonic bool
	Raw                     int // the runtime's own encoding
}

// ScheduleNames names the schedule kinds (omp_sched_t, and LLVM's
// trapezoidal and static_steal).
var ScheduleNames = map[int]string{1: "static", 2: "dynamic", 3: "guided", 4: "auto", 101: "trapezoidal", 102: "static_steal"}

// String writes a schedule as run-sched-var's text, the same for every
// runtime: "[monotonic:|nonmonotonic:]kind,chunk", e.g. "dynamic,7".
func (s Schedule) String() string {
	var b strings.Builder
	if s.Monotonic {
		b.WriteString("monotonic:")
	} else if s.Nonmonotonic {
		b.WriteString("nonmonotonic:")
	}
	if n, ok := ScheduleNames[s.Kind]; ok {
		b.WriteString(n)
	} else {
		b.WriteString("ScheduleKind(" + strconv.Itoa(s.Kind) + ")")
	}
	b.WriteByte(',')
	b.WriteString(strconv.Itoa(s.Chunk))
	return b.String()
}

// TaskData is a task decoded at one stop.
type TaskData struct {
	Ref Ref

	Kind    uint32 // ompt_task_flag_t bits
	InFinal bool

	Function    uint64
	FunctionErr error

	Exit, Enter Frame
	FramesErr   error

	ID    uint64 // OMPT task data
	IDErr error

	Region    Ref
	RegionErr error

	Generating    Ref
	GeneratingErr error
	Scheduling    Ref
	SchedulingErr error

	Schedule    Schedule
	ScheduleErr error
}

// ScopeRef names the handle an ICV is read from: the address space, a
// thread, a region or a task.
type ScopeRef struct {
	Kind   ScopeKind
	Thread ThreadRef // ScopeThread
	Ref    Ref       // ScopeParallel, ScopeTask
}

// ControlVar is a display control variable; see ompd.ControlVar.
type ControlVar struct {
	Name, Value, Raw string
	Corrected        bool
	RuntimeRaw       string
	Stale            bool
	Source           string
}

// Breakpoint is a runtime function a debugger can stop in.
type Breakpoint struct {
	Name string
	Addr uint64
}

// Runtime is one OpenMP runtime in one target, as a runtime package reads
// it. Every method is safe for concurrent use. Methods a runtime cannot
// support return an error matching ErrUnsupported.
type Runtime interface {
	// Info says which runtime this is and where its layout came from.
	Info() Info
	// Refresh drops everything decoded or cached from target memory.
	Refresh()

	// Threads lists the OpenMP threads, in the runtime's order.
	Threads() ([]ThreadRef, error)
	// ThreadByOS finds the OpenMP thread of an OS thread (kind IDPthread
	// or IDLWP); not an OpenMP thread is ErrUnavailable.
	ThreadByOS(kind int, id uint64) (ThreadRef, error)
	// Thread, Region and Task return the record of an object; a ref
	// whose object is gone gives ErrStaleHandle.
	Thread(ThreadRef) (*ThreadData, error)
	Region(Ref) (*RegionData, error)
	Task(Ref) (*TaskData, error)
	// RegionThread and ImplicitTask return the thread with number n in
	// a region's team and its implicit task there.
	RegionThread(r Ref, n int) (ThreadRef, error)
	ImplicitTask(r Ref, n int) (Ref, error)

	// ICVs lists the ICVs this runtime has.
	ICVs() []ICV
	// ICV reads one ICV at a scope; the scope's kind matches the ICV's
	// (package ompd checks).
	ICV(s ScopeRef, id ICV) (Value, error)

	StateTracking() (bool, error)
	OpenMPVersion() (int, error)
	NumProcs() (int, error)
	ThreadLimit() (int, error)
	DisplayControlVars() ([]ControlVar, error)
	DLLLocations() ([]string, error)
	// Breakpoints lists ParallelBegin, ParallelEnd, TaskBegin, TaskEnd,
	// ThreadBegin, ThreadEnd and DLLLocationsValid, in that order.
	Breakpoints() ([]Breakpoint, error)
	Enabled() (bool, error)
	Enable(on bool) error

	// Stack unwinds the stack of the OS thread lwp, at most maxDepth
	// frames (0 for the default), and marks the frames of the runtime's
	// own code (StackFrame.Runtime). Runtime packages answer it with
	// Unwind, saying which objects are theirs.
	Stack(ctx context.Context, lwp uint64, maxDepth int) (*Stack, error)
	// Wait says what a task waits in that called the runtime function
	// fn (a frame's Function) and has not returned from it.
	Wait(fn string) Wait
}

// ThreadName formats a thread ref as package ompd's Thread.String does,
// "thread/GTID@ADDR"; as a value in error arguments it is formatted only
// when the message is.
type ThreadName ThreadRef

// String is "thread/GTID@ADDR".
func (n ThreadName) String() string {
	var buf [48]byte
	return string(n.Append(buf[:0]))
}

// Append appends String's text to b.
func (n ThreadName) Append(b []byte) []byte {
	b = append(b, "thread/"...)
	b = strconv.AppendInt(b, int64(n.ID), 10)
	b = append(b, "@0x"...)
	return appendHex(b, n.Addr)
}

// appendHex appends x in lower-case hexadecimal, as strconv.AppendUint(b,
// x, 16) does, a few times faster: every handle id of a snapshot has one
// or two.
func appendHex(b []byte, x uint64) []byte {
	const digits = "0123456789abcdef"
	n := max(1, (bits.Len64(x)+3)/4)
	var buf [16]byte
	for i := n - 1; i >= 0; i-- {
		buf[i] = digits[x&0xf]
		x >>= 4
	}
	return append(b, buf[:n]...)
}

// RegionName formats a region ref as ompd's Parallel.String does,
// "parallel/TEAM/LLEVEL".
type RegionName Ref

// String is "parallel/TEAM/LLEVEL".
func (n RegionName) String() string {
	var buf [48]byte
	return string(n.Append(buf[:0]))
}

// Append appends String's text to b.
func (n RegionName) Append(b []byte) []byte {
	b = append(b, "parallel/0x"...)
	b = appendHex(b, n.Addr)
	b = append(b, "/L"...)
	return strconv.AppendInt(b, int64(n.Level), 10)
}

// TaskName formats a task ref as ompd's Task.String does: "task/ADDR" for
// explicit tasks, "task/ADDR/LLEVEL" for implicit ones.
type TaskName Ref

// String is "task/ADDR" or "task/ADDR/LLEVEL".
func (n TaskName) String() string {
	var buf [48]byte
	return string(n.Append(buf[:0]))
}

// Append appends String's text to b.
func (n TaskName) Append(b []byte) []byte {
	b = append(b, "task/0x"...)
	b = appendHex(b, n.Addr)
	if n.Level >= 0 {
		b = append(b, "/L"...)
		b = strconv.AppendInt(b, int64(n.Level), 10)
	}
	return b
}

// IDKindName names a thread id kind as ompd.ThreadIDKind does.
type IDKindName int

// String is "pthread", "lwp" or "winthread".
func (k IDKindName) String() string {
	switch k {
	case IDPthread:
		return "pthread"
	case IDLWP:
		return "lwp"
	case 2:
		return "winthread"
	}
	return "ThreadIDKind(" + strconv.Itoa(int(k)) + ")"
}

// OSThreadName writes an OS thread id of a kind as messages show it
// everywhere: an LWP in decimal ("lwp 19440", as ps and gdb show it),
// other ids in hexadecimal ("pthread 0x7ffff7ca8740").
func OSThreadName(kind int, id uint64) string {
	if kind == IDLWP {
		return "lwp " + strconv.FormatUint(id, 10)
	}
	return IDKindName(kind).String() + " " + "0x" + strconv.FormatUint(id, 16)
}
