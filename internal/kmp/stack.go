package kmp

import (
	"context"

	"github.com/ompd-go/ompd/internal/omprt"
)

// waits are the names of libomp's entry points a task waits in: its
// __kmpc_* and __kmp_* functions, and the GOMP_* ones it provides for
// programs compiled by GCC.
var waits = omprt.WaitNames{
	{Sub: "taskwait", Wait: omprt.WaitTaskwait},
	{Sub: "taskgroup", Wait: omprt.WaitTaskgroup},
	{Sub: "barrier", Wait: omprt.WaitBarrier},
	{Sub: "fork_call", Wait: omprt.WaitParallel},
	{Sub: "gomp_parallel", Wait: omprt.WaitParallel},
}

// Wait says what a task waits in that called fn.
func (rt *Runtime) Wait(fn string) omprt.Wait { return waits.Of(fn) }

// Stack unwinds a thread's stack. The runtime's code is the object that
// defines its entry points.
func (rt *Runtime) Stack(ctx context.Context, lwp uint64, maxDepth int) (*omprt.Stack, error) {
	obj := rt.object()
	return omprt.Unwind(ctx, rt.t, lwp, maxDepth, func(o string) bool { return obj != "" && o == obj })
}

// object returns the loaded object holding the runtime's code, "" if the
// target cannot tell. Found once: a loaded runtime does not move.
func (rt *Runtime) object() string {
	rt.symMu.Lock()
	defer rt.symMu.Unlock()
	if rt.obj == "" {
		rt.obj = omprt.ObjectOf(rt.t, "__kmpc_fork_call", "omp_get_thread_num")
	}
	return rt.obj
}
