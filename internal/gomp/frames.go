package gomp

import (
	"context"

	"github.com/ompd-go/ompd/internal/omprt"
)

// waitNames are the names of libgomp's entry points a task waits in.
var waitNames = omprt.WaitNames{
	{Sub: "taskwait", Wait: omprt.WaitTaskwait},
	{Sub: "taskgroup", Wait: omprt.WaitTaskgroup},
	{Sub: "barrier", Wait: omprt.WaitBarrier},
	{Sub: "gomp_parallel", Wait: omprt.WaitParallel},
}

// Wait says what a task waits in that called fn.
func (r *Runtime) Wait(fn string) omprt.Wait { return waitNames.Of(fn) }

// Stack unwinds a thread's stack; libgomp's code is the libgomp loaded.
func (r *Runtime) Stack(ctx context.Context, lwp uint64, maxDepth int) (*omprt.Stack, error) {
	return omprt.Unwind(ctx, r.t, lwp, maxDepth, isLibgomp)
}
