package gomp

import (
	"context"

	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/stackstate"
	"github.com/ompd-go/ompd/internal/unwind"
	"github.com/ompd-go/ompd/target"
)

// waitNames are the names of libgomp's entry points a task waits in. The
// end of a worksharing construct (GOMP_loop_end, GOMP_sections_end,
// gomp_work_share_end that they call, single's copy) waits in the
// construct's implicit barrier, unless it has nowait.
var waitNames = omprt.WaitNames{
	{Sub: "taskwait", Wait: omprt.WaitTaskwait},
	{Sub: "taskgroup", Wait: omprt.WaitTaskgroup},
	{Sub: "barrier", Wait: omprt.WaitBarrier},
	{Sub: "_end_nowait", Wait: omprt.WaitNone},
	{Sub: "loop_end", Wait: omprt.WaitBarrier},
	{Sub: "sections_end", Wait: omprt.WaitBarrier},
	{Sub: "work_share_end", Wait: omprt.WaitBarrier},
	{Sub: "single_copy", Wait: omprt.WaitBarrier},
	{Sub: "gomp_parallel", Wait: omprt.WaitParallel},
}

// Wait says what a task waits in that called fn.
func (r *Runtime) Wait(fn string) omprt.Wait { return waitNames.Of(fn) }

// Stack unwinds a thread's stack; libgomp's code is the libgomp loaded.
// Each frame of the program that called libgomp says which exported
// function it called (StackFrame.Called): without libgomp's debug
// information the functions its waits end in are unnamed, reached by tail
// calls from the exported ones.
func (r *Runtime) Stack(ctx context.Context, lwp uint64, maxDepth int) (*omprt.Stack, error) {
	st, err := omprt.Unwind(ctx, r.t, lwp, maxDepth, isLibgomp)
	if err != nil {
		return nil, err
	}
	loc, ok := r.t.(target.CodeLocator)
	if !ok {
		return st, nil
	}
	// The call instructions are decoded as the target's machine makes
	// them.
	var regs target.Registers
	if a, err := omprt.Arch(r.t); err == nil {
		regs = target.NewRegisters(a.Machine)
	}
	for i := 1; i < len(st.Frames); i++ {
		f := &st.Frames[i]
		if f.Runtime || !st.Frames[i-1].Runtime {
			continue
		}
		if cl, ok := stackstate.CallTarget(r.mem, loc, &stackstate.Frame{Frame: unwind.Frame{PC: f.PC, Caller: true, Regs: regs}}); ok && isLibgomp(cl.Object) {
			f.Called = tables.Name(cl.Function)
		}
	}
	return st, nil
}
