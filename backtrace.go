package ompd

import (
	"context"
	"errors"
	"fmt"
)

// Frame is one call frame of a thread's backtrace, placed in the thread's
// OpenMP tasks and regions.
type Frame struct {
	// Index is the frame's number, 0 for the innermost (gdb's #N).
	Index int
	// PC is the frame's program counter: for every frame but the
	// innermost, the return address into it.
	PC uint64
	// CFA is the frame's canonical frame address, 0 if unknown.
	CFA uint64
	// Function names the function holding the code as gdb does (C++
	// names demangled, without parameters), "" if unknown.
	Function string
	// Symbol is the ELF symbol holding the code, as the object spells it
	// (mangled for C++).
	Symbol string
	// File and Line are the source position of the code (of the call
	// instruction for callers), "" and 0 without line information.
	File string
	Line int // see File
	// Object is the loaded object holding the code.
	Object string
	// Inline lists the source-level frames at the frame's code when the
	// compiler inlined calls there, innermost first (the inlined
	// function at File:Line, then each function it was inlined into, at
	// the call), as gdb shows them; empty without inlining.
	Inline []InlineFrame
	// Runtime is true for code of the OpenMP runtime library.
	Runtime bool
	// InRuntimeCall is true for a frame inside a call its task made into
	// the runtime (inner to the task's enter frame): the runtime's own
	// frames and those of the libraries it called, such as the C
	// library's futex wait.
	InRuntimeCall bool
	// TaskIndex is the position, in Backtrace.Tasks, of the task the frame
	// belongs to: the frames between a task's exit frame and its enter
	// frame (as OMPD and OMPT define them) run that task's code; those
	// inner to its enter frame, down to the next task's exit frame, are
	// the runtime called by it. -1 when the frame belongs to no task of
	// the chain (a worker's frames outside its implicit task), when the
	// tasks' frames are unknown, or when they do not tell which of two
	// tasks the frame is in (frames the runtime left pointing at a frame
	// no longer on the stack: a region the compiler serialized with
	// if(0)).
	TaskIndex int
	// Folded is the number of runtime frames this frame stands for when
	// the backtrace was made WithFoldRuntime (1 or more), 0 otherwise.
	Folded int

	// called is the runtime entry point a frame of the program called,
	// when the runtime decodes it (omprt.StackFrame.Called).
	called string
}

// InlineFrame is one source-level frame of code with inlined calls.
type InlineFrame struct {
	Function string `json:"function,omitempty"` // demangled, "" if unknown
	File     string `json:"file,omitempty"`     // source file, "" if unknown
	Line     int    `json:"line,omitempty"`     // source line, 0 if unknown
}

// BacktraceTask is one task of a thread's task chain as a backtrace places
// frames in it.
type BacktraceTask struct {
	// Task is the task: the thread's current task first, then the tasks
	// each interrupted (scheduling ancestors).
	Task Task
	// Level is the nesting level of the task's innermost parallel
	// region, -1 if unknown.
	Level int
	// Frames are the task's exit and enter frames.
	Frames Frames
	// Entered is the runtime function the task's code called and has
	// not returned from (the frame at its enter frame), "" when it runs
	// its own code.
	Entered string
	// Wait says what that call waits in: WaitTaskwait, WaitTaskgroup,
	// WaitBarrier, WaitParallel (a nested region the task started), or
	// WaitNone for other runtime calls.
	Wait WaitKind
}

// WaitKind says what a task waits in when it called the runtime
// (BacktraceTask.Wait). The runtime package behind the address space
// tells it from the function the task called. String names it, ""
// for WaitNone.
type WaitKind int

// Waits (the runtime boundary's omprt.Wait values).
const (
	WaitNone      WaitKind = iota //
	WaitTaskwait                  // taskwait
	WaitTaskgroup                 // taskgroup
	WaitBarrier                   // barrier
	WaitParallel                  // parallel
)

// Backtrace is a thread's call stack at the stop, placed in its tasks.
type Backtrace struct {
	// Thread is the OpenMP thread.
	Thread Thread
	// LWP is the kernel thread id whose registers were unwound.
	LWP uint64
	// Frames, innermost first.
	Frames []Frame
	// Tasks is the thread's task chain (see Frame.TaskIndex).
	Tasks []BacktraceTask
	// End is why the unwinding ended before the thread's outermost frame
	// (unreadable stack, depth limit, corrupt stack), nil if it reached
	// it.
	End error
	// PlaceErr says why frames could not be placed in tasks (for
	// instance without state tracking the runtime keeps no task frames),
	// nil if they were.
	PlaceErr error
}

// BacktraceOption configures Thread.Backtrace, and the backtraces of a
// Snapshot when passed to WithBacktraces. The options are WithMaxFrames and
// WithFoldRuntime.
type BacktraceOption func(*btConfig)

type btConfig struct {
	maxFrames int
	fold      bool
}

// WithMaxFrames bounds the number of frames unwound (256 by default, 65536 at
// most).
func WithMaxFrames(n int) BacktraceOption {
	return func(c *btConfig) { c.maxFrames = n }
}

// WithFoldRuntime folds each run of consecutive frames of one task that are
// runtime code or inside a runtime call (Frame.InRuntimeCall) into one
// frame: the outermost of the run (the runtime function the program
// called), with Folded counting the frames it stands for.
func WithFoldRuntime() BacktraceOption {
	return func(c *btConfig) { c.fold = true }
}

// maxTaskChain bounds the task chain a backtrace follows.
const maxTaskChain = 1 << 10

// Backtrace unwinds the thread's stack and places each frame in the task
// and region it belongs to. It needs a target that reads registers
// (target.RegisterReader; ErrUnsupported otherwise), and uses its
// call-frame information (target.FrameUnwinder) and its symbols and line
// tables (target.CodeLocator) when it has them. A stack that cannot be
// unwound to its end is not an error: the frames found are returned with
// End saying why the walk stopped.
func (t Thread) Backtrace(ctx context.Context, opts ...BacktraceOption) (*Backtrace, error) {
	if t.as == nil {
		return nil, errorf(ErrBadInput, "backtrace of the zero Thread")
	}
	var cfg btConfig
	for _, o := range opts {
		o(&cfg)
	}
	lwp, err := t.OSThread(LWPID)
	if err != nil {
		return nil, err
	}
	st, err := t.as.rt.Stack(ctx, lwp, cfg.maxFrames)
	if err != nil {
		return nil, wrapErr(ErrReadFailed, err, "%v", t)
	}
	bt := &Backtrace{Thread: t, LWP: lwp, End: st.End}
	bt.Frames = make([]Frame, len(st.Frames))
	for i, f := range st.Frames {
		fr := Frame{Index: i, PC: f.PC, CFA: f.CFA, Function: f.Function, Symbol: f.Symbol, File: f.File, Line: f.Line,
			Object: f.Object, Runtime: f.Runtime, TaskIndex: -1, called: f.Called}
		for _, in := range f.Inline {
			fr.Inline = append(fr.Inline, InlineFrame(in))
		}
		bt.Frames[i] = fr
	}
	bt.Tasks, bt.PlaceErr = t.taskChain()
	bt.place(t.as.Target().Sizes().Pointer)
	if cfg.fold {
		bt.Frames = foldRuntime(bt.Frames)
	}
	return bt, nil
}

// taskChain lists the thread's current task and its scheduling ancestors
// with their frames.
func (t Thread) taskChain() ([]BacktraceTask, error) {
	tk, err := t.CurrentTask()
	if err != nil {
		return nil, err
	}
	var out []BacktraceTask
	seen := map[Task]bool{}
	for len(out) < maxTaskChain {
		if seen[tk] {
			return out, errorf(ErrCorrupt, "%v: task chain loops at %v", t, tk)
		}
		seen[tk] = true
		bt := BacktraceTask{Task: tk, Level: -1}
		if p, err := tk.Parallel(); err == nil {
			if l, err := p.Level(); err == nil {
				bt.Level = l
			}
		}
		bt.Frames, err = tk.Frames()
		if err != nil {
			return out, err
		}
		out = append(out, bt)
		tk, err = tk.Scheduling()
		if errors.Is(err, ErrUnavailable) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
	}
	return out, errorf(ErrCorrupt, "%v: task chain longer than %d", t, maxTaskChain)
}

// cfaOf converts a task frame address to the CFA of the frame it names: a
// frame pointer (__builtin_frame_address) sits two words below its
// frame's CFA, where the call pushed the return address and the prologue
// the caller's frame pointer.
func cfaOf(fi FrameInfo, ptr int) uint64 {
	if fi.Addr == 0 {
		return 0
	}
	if fi.Flags&0x30 == FrameFramePointer {
		return fi.Addr + 2*uint64(ptr)
	}
	return fi.Addr
}

// place assigns each frame its task: the first task of the chain (from
// the current one outwards) whose exit frame is above the frame. A frame
// at or inside the task's enter frame is the runtime called by the task.
//
// A task whose exit frame is a runtime frame, the next task's enter frame
// (the same address) and no frame of the stack has stale frames, which
// place nothing. LLVM's runtime leaves them so for a region the compiler
// serialized itself (if(0): __kmpc_serialized_parallel sets both to its
// own frame, gone once it returns, and the program then calls the
// region's code directly). An undeferred task's two frames are rightly
// one, the application's frame that calls the task's code, and libgomp's
// (read from the stack) one, the frame of GOMP_parallel or GOMP_task that
// both the enclosing task called and calls the task's code. Past
// such an exit frame, the frames up to the next task's exit frame belong
// to one of the two tasks, which the stack does not tell: they are left in
// no task (TaskIndex -1), but for the stale task's runtime call (inside
// its own enter frame), the frame making it, and the frame the runtime
// called at the next task's exit frame.
func (bt *Backtrace) place(ptr int) {
	if len(bt.Tasks) == 0 {
		return
	}
	live := make(map[uint64]bool, len(bt.Frames))
	for _, f := range bt.Frames {
		live[f.CFA] = true
	}
	stale := func(i int) bool {
		e := bt.Tasks[i].Frames.Exit
		return e.Addr != 0 && e.Flags&FrameApplication == 0 && i+1 < len(bt.Tasks) && bt.Tasks[i+1].Frames.Enter.Addr == e.Addr &&
			!live[cfaOf(e, ptr)]
	}
	i := 0
	for k := range bt.Frames {
		f := &bt.Frames[k]
		if f.CFA == 0 {
			break
		}
		unsure := false
		for i < len(bt.Tasks) {
			exit := cfaOf(bt.Tasks[i].Frames.Exit, ptr)
			if !stale(i) {
				if exit == 0 || f.CFA < exit {
					break
				}
				i++
				continue
			}
			if enter := cfaOf(bt.Tasks[i].Frames.Enter, ptr); enter != 0 && (f.CFA <= enter || k > 0 && bt.Frames[k-1].CFA == enter) {
				break // the stale task's runtime call, or its code making it
			}
			if next := cfaOf(bt.Tasks[i+1].Frames.Exit, ptr); next != 0 {
				if f.CFA >= next {
					i += 2 // outside both
					continue
				}
				if k+1 < len(bt.Frames) && bt.Frames[k+1].CFA == next {
					i++ // the code the runtime called for the next task
					break
				}
			}
			unsure = true
			break
		}
		if i == len(bt.Tasks) {
			break
		}
		if unsure {
			continue
		}
		f.TaskIndex = i
		if (i == 0 || !stale(i-1)) && inRuntime(f.CFA, bt.Tasks[i].Frames.Enter, ptr) {
			f.InRuntimeCall = true
			// The runtime called by the task: the outermost such frame
			// is the call the task made; the task's frame that made
			// it may name an entry point this frame has no name of.
			entered := f.Function
			if entered == "" && k+1 < len(bt.Frames) {
				entered = bt.Frames[k+1].called
			}
			bt.Tasks[i].Entered = entered
			bt.Tasks[i].Wait = WaitKind(bt.Thread.as.rt.Wait(entered))
		}
	}
}

// inRuntime reports whether a frame of a task with the given enter frame
// runs the runtime the task called: a frame inner to the enter frame, or
// the enter frame itself when it is the runtime's (an enter frame flagged
// application is the task's own frame that called the runtime).
func inRuntime(cfa uint64, enter FrameInfo, ptr int) bool {
	e := cfaOf(enter, ptr)
	if e == 0 {
		return false
	}
	if enter.Flags&FrameApplication != 0 {
		return cfa < e
	}
	return cfa <= e
}

// foldRuntime folds runs of runtime frames of one task into their
// outermost frame.
func foldRuntime(frames []Frame) []Frame {
	out := frames[:0:0]
	for i := 0; i < len(frames); {
		j := i + 1
		foldable := func(f *Frame) bool { return f.Runtime || f.InRuntimeCall }
		if foldable(&frames[i]) {
			for j < len(frames) && foldable(&frames[j]) && frames[j].TaskIndex == frames[i].TaskIndex {
				j++
			}
			f := frames[j-1]
			f.Folded = j - i
			out = append(out, f)
		} else {
			out = append(out, frames[i])
		}
		i = j
	}
	return out
}

// Task returns the task the frame belongs to, and false if none.
func (bt *Backtrace) Task(f Frame) (BacktraceTask, bool) {
	if f.TaskIndex < 0 || f.TaskIndex >= len(bt.Tasks) {
		return BacktraceTask{}, false
	}
	return bt.Tasks[f.TaskIndex], true
}

// String formats the frame as gdb does: "#N  0xPC in function (file:line)".
func (f Frame) String() string {
	fn := f.Function
	if fn == "" {
		fn = "??"
	}
	s := fmt.Sprintf("#%-2d 0x%016x in %s", f.Index, f.PC, fn)
	if f.File != "" {
		s += fmt.Sprintf(" (%s:%d)", f.File, f.Line)
	} else if f.Object != "" {
		s += " from " + f.Object
	}
	return s
}

// SnapshotOption configures AddressSpace.Snapshot. The option is
// WithBacktraces, which takes the BacktraceOptions for the snapshot's
// backtraces.
type SnapshotOption func(*snapConfig)

type snapConfig struct {
	backtraces bool
	btOpts     []BacktraceOption
}

// WithBacktraces makes a snapshot unwind every thread's stack, with the
// given backtrace options, into ThreadSnapshot.Frames. Without it a
// snapshot reads no stacks.
func WithBacktraces(opts ...BacktraceOption) SnapshotOption {
	return func(c *snapConfig) {
		c.backtraces = true
		c.btOpts = append([]BacktraceOption(nil), opts...)
	}
}

// FrameSnapshot is one frame of a thread's backtrace in a Snapshot (see
// Frame).
type FrameSnapshot struct {
	// Index, PC and CFA are Frame's: the frame's position (0 innermost),
	// code address and canonical frame address (0 if unknown).
	Index int    `json:"index"`
	PC    uint64 `json:"pc"`
	CFA   uint64 `json:"cfa,omitempty"`
	// Function is the demangled function name, "" if unknown.
	Function string `json:"function,omitempty"`
	// Symbol is the mangled ELF symbol when it differs from Function.
	Symbol string `json:"symbol,omitempty"`
	// File and Line are the source position, "" and 0 if unknown.
	File string `json:"file,omitempty"`
	Line int    `json:"line,omitempty"`
	// Object is the loaded object holding the code.
	Object string `json:"object,omitempty"`
	// Inline are the source-level frames when calls were inlined there
	// (see Frame.Inline).
	Inline []InlineFrame `json:"inline,omitempty"`
	// Runtime and InRuntimeCall are Frame's: code of the OpenMP
	// runtime, and a frame inside a call its task made into the runtime.
	Runtime       bool `json:"runtime"`
	InRuntimeCall bool `json:"in_runtime_call,omitempty"`
	// Task is the id of the task the frame belongs to (as in
	// TaskSnapshot.ID), "" if none.
	Task string `json:"task,omitempty"`
	// Level is the nesting level of that task's region, -1 if unknown.
	Level int `json:"level"`
	// Wait is what the frame's task waits in (BacktraceTask.Wait), on
	// the task's frames only.
	Wait WaitKind `json:"wait,omitempty"`
	// Folded is the number of runtime frames this frame stands for when
	// the backtrace was folded (WithFoldRuntime), 0 otherwise.
	Folded int `json:"folded,omitempty"`
}

// frames fills ts with th's backtrace.
func (sn *snap) frames(ctx context.Context, th Thread, ts *ThreadSnapshot, opts []BacktraceOption) {
	bt, err := th.Backtrace(ctx, opts...)
	if err != nil {
		sn.note(ts.ID, "backtrace", err)
		return
	}
	if bt.End != nil {
		ts.StackEnd = bt.End.Error()
	}
	// A runtime that records no task frames (libomp without state
	// tracking) is no error of this thread's, nor a task no stack shows
	// (libgomp's, read from the stacks: ErrUnavailable, which note
	// leaves out).
	if bt.PlaceErr != nil && !errors.Is(bt.PlaceErr, ErrNeedsStateTracking) && !errors.Is(bt.PlaceErr, ErrUnsupported) {
		sn.note(ts.ID, "backtrace task placement", bt.PlaceErr)
	}
	ts.Frames = bt.snapshotFrames()
}

// snapshotFrames returns the backtrace's frames in their Snapshot form
// (ThreadSnapshot.Frames).
func (bt *Backtrace) snapshotFrames() []FrameSnapshot {
	out := make([]FrameSnapshot, len(bt.Frames))
	for i, f := range bt.Frames {
		fs := FrameSnapshot{Index: f.Index, PC: f.PC, CFA: f.CFA, Function: f.Function, File: f.File, Line: f.Line,
			Object: f.Object, Inline: f.Inline, Runtime: f.Runtime, InRuntimeCall: f.InRuntimeCall, Level: -1, Folded: f.Folded}
		if f.Symbol != f.Function {
			fs.Symbol = f.Symbol
		}
		if tk, ok := bt.Task(f); ok {
			fs.Task, fs.Level, fs.Wait = tk.Task.String(), tk.Level, tk.Wait
		}
		out[i] = fs
	}
	return out
}
