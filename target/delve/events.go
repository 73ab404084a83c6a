package delve

import (
	"context"
	"errors"
	"fmt"

	"github.com/ompd-go/ompd"
)

// EventKind says what an Event reports.
type EventKind int

// Event kinds: one per OMPD breakpoint function of the runtime, plus
// Breakpoint for a stop at a breakpoint set with SetBreakpoint or BreakAt.
const (
	ParallelBegin EventKind = iota + 1 // ompd_bp_parallel_begin
	ParallelEnd                        // ompd_bp_parallel_end
	TaskBegin                          // ompd_bp_task_begin
	TaskEnd                            // ompd_bp_task_end
	ThreadBegin                        // ompd_bp_thread_begin
	ThreadEnd                          // ompd_bp_thread_end
	Breakpoint                         // another breakpoint of the Process
)

var eventKindNames = [...]string{
	ParallelBegin: "parallel-begin",
	ParallelEnd:   "parallel-end",
	TaskBegin:     "task-begin",
	TaskEnd:       "task-end",
	ThreadBegin:   "thread-begin",
	ThreadEnd:     "thread-end",
	Breakpoint:    "breakpoint",
}

// String returns the kind's name, e.g. "parallel-begin".
func (k EventKind) String() string {
	if k > 0 && int(k) < len(eventKindNames) {
		return eventKindNames[k]
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one thread stopped at a breakpoint, as WatchEvents reports it.
type Event struct {
	Kind EventKind
	// TID is the kernel id of the thread that stopped; Addr the
	// breakpoint address.
	TID  uint64
	Addr uint64
	// Thread is the OpenMP thread running on TID. For parallel events,
	// Parallel is the region beginning or ending; for task events, Task
	// is the task beginning or ending (zero values otherwise): the
	// thread's current region and task, which the breakpoint functions
	// bind so (ompd.Thread.CurrentParallel). Their answers (level, team
	// size, function) are read at the stop, and where the runtime cannot
	// tell them there they are errors, never another region's values: at
	// the begin of an active region LLVM's runtime has mostly not made the
	// new team the primary's yet (Parallel is then zero and Err says so);
	// at the end of a serialized region the serial team's function may be
	// that of a region nested in it, and its code has left the stack
	// (Parallel.Function is then unavailable). The runtime calls no
	// breakpoint function for an undeferred (if(0)) task; for a program
	// compiled with gcc it calls ompd_bp_parallel_end more than once per
	// region, and the calls after the region ended have no Parallel.
	Thread   ompd.Thread
	Parallel ompd.Parallel
	Task     ompd.Task
	// Err says why Thread, Parallel or Task could not be read, if one of
	// them could not (for instance a thread-begin event of a thread the
	// runtime has not registered yet gives an error matching
	// ompd.ErrUnavailable).
	Err error
}

// WatchEvents sets breakpoints at the runtime's OMPD breakpoint functions
// (as.Breakpoints(): parallel, task and thread begin and end), then runs
// the process, and at each stop refreshes as and calls fn once per thread
// stopped at a breakpoint (several threads can stop at once; they come in
// ascending thread id order). Stops at breakpoints set with SetBreakpoint
// come as events of kind Breakpoint.
//
// It returns nil when fn returns false (the process stays stopped there;
// events of other threads at the same stop are not reported) or when the
// program ends (see ExitStatus); ctx's error when ctx is done (the process
// is stopped); any other error otherwise. It removes the breakpoints it set
// before returning.
//
// The runtime calls its breakpoint functions only when it runs with
// OMP_DEBUG=enabled, or after as.Enable(true).
func (p *Process) WatchEvents(ctx context.Context, as *ompd.AddressSpace, fn func(Event) bool) error {
	if as == nil {
		return errors.New("delve: WatchEvents: nil address space")
	}
	bps, err := as.Breakpoints()
	if err != nil {
		return fmt.Errorf("delve: WatchEvents: %w", err)
	}
	kinds := map[uint64]EventKind{
		bps.ParallelBegin.Addr: ParallelBegin,
		bps.ParallelEnd.Addr:   ParallelEnd,
		bps.TaskBegin.Addr:     TaskBegin,
		bps.TaskEnd.Addr:       TaskEnd,
		bps.ThreadBegin.Addr:   ThreadBegin,
		bps.ThreadEnd.Addr:     ThreadEnd,
	}
	p.mu.Lock()
	var set []uint64
	for addr := range kinds {
		isNew, err := p.setBreakpointLocked(addr)
		if err != nil {
			for _, a := range set {
				_ = p.clearBreakpointLocked(a)
			}
			p.mu.Unlock()
			return fmt.Errorf("delve: WatchEvents: %w", err)
		}
		if isNew {
			set = append(set, addr)
		}
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		for _, a := range set {
			_ = p.clearBreakpointLocked(a)
		}
		p.mu.Unlock()
	}()

	for {
		err := p.ContinueAndRefresh(ctx, as)
		if errors.Is(err, ErrExited) {
			return nil
		}
		if err != nil {
			return err
		}
		for _, s := range p.Stopped() {
			ev := Event{Kind: kinds[s.Addr], TID: s.TID, Addr: s.Addr}
			if ev.Kind == 0 {
				ev.Kind = Breakpoint
			}
			ev.Thread, ev.Err = as.ThreadByOSThread(ompd.LWPID, s.TID)
			if ev.Err == nil {
				switch ev.Kind {
				case ParallelBegin, ParallelEnd:
					ev.Parallel, ev.Err = ev.Thread.CurrentParallel()
				case TaskBegin, TaskEnd:
					ev.Task, ev.Err = ev.Thread.CurrentTask()
				}
			}
			if !fn(ev) {
				return nil
			}
		}
	}
}
