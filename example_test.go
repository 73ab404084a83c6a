package ompd_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/target"
)

// stoppedProgram stands for what a debugger hands the library: a core file
// (core.Open(ctx, exe, corefile)), a live process (delve.Attach(ctx, pid)), or its own
// target.Target. Here it is a synthetic program so that the examples'
// output is fixed: an outer parallel region of 4 threads, in which thread 1
// opens an inner region of 2, whose thread 1 (gtid 2) nests three
// serialized regions and runs an untied task that runs an included final
// task; gtid 4 idles in the thread pool.
func stoppedProgram() target.Target {
	return fakeruntime.Nested(fakeruntime.Config{}).T
}

func ExampleOpen() {
	as, err := ompd.Open(stoppedProgram())
	if errors.Is(err, ompd.ErrNoRuntime) {
		fmt.Println("not an OpenMP program")
		return
	}
	if err != nil {
		fmt.Println(err)
		return
	}
	defer as.Close()
	v, _ := as.OpenMPVersion()
	n, _ := as.NumProcs()
	fmt.Println("OpenMP", v, "on", n, "processors, layout from", as.Runtime().Layout)
	// Output: OpenMP 201811 on 8 processors, layout from OMPD tables
}

func ExampleAddressSpace_Threads() {
	as, _ := ompd.Open(stoppedProgram())
	threads, _ := ompd.Collect(as.Threads())
	for _, th := range threads {
		lwp, _ := th.OSThread(ompd.LWPID)
		state, wait, err := th.State()
		num, _ := th.Num()
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Printf("gtid %d lwp %d thread_num %d %v", th.GTID(), lwp, num, state)
		if state.IsWait() {
			fmt.Printf(" (waits for %#x)", wait)
		}
		fmt.Println()
	}
	// Output:
	// gtid 0 lwp 4000 thread_num 0 work_parallel
	// gtid 1 lwp 4001 thread_num 0 wait_taskwait (waits for 0x0)
	// gtid 2 lwp 4002 thread_num 0 work_parallel
	// gtid 3 lwp 4003 thread_num 3 wait_barrier_implicit_parallel (waits for 0xb0)
	// gtid 4 lwp 4004 thread_num 0 idle
}

func ExampleThread_Regions() {
	as, _ := ompd.Open(stoppedProgram())
	th, _ := as.ThreadByOSThread(ompd.LWPID, 4002)
	// Walk the region nest outwards; serialized regions are levels too.
	// The walk ends at level 0 without an error; a real error (unreadable
	// memory, a stale handle) comes once and ends it.
	for p, err := range th.Regions() {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		level, _ := p.Level()
		active, _ := p.ActiveLevel()
		n, _ := p.NumThreads()
		fmt.Printf("level %d (active %d): %d thread(s)", level, active, n)
		if f, ferr := p.Function(); ferr == nil {
			fmt.Printf(" in %s", f.Symbol)
		}
		fmt.Println()
	}
	// Output:
	// level 5 (active 2): 1 thread(s)
	// level 4 (active 2): 1 thread(s)
	// level 3 (active 2): 1 thread(s)
	// level 2 (active 2): 2 thread(s) in main._omp_fn.1
	// level 1 (active 1): 4 thread(s) in main._omp_fn.0
	// level 0 (active 0): 1 thread(s)
}

func ExampleParallel_Threads() {
	as, _ := ompd.Open(stoppedProgram())
	th, _ := as.ThreadByOSThread(ompd.LWPID, 4002)
	// The outermost region with more than two threads.
	var outer ompd.Parallel
	for p, err := range th.Regions() {
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		if n, _ := p.NumThreads(); n > 2 {
			outer = p
		}
	}
	for member, err := range outer.Threads() {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		num, _ := member.Num()
		task, _ := outer.ImplicitTask(num)
		kind, _ := task.Kind()
		fmt.Printf("gtid %d runs its %v task\n", member.GTID(), kind)
	}
	primary, _ := outer.Primary()
	fmt.Println("primary is gtid", primary.GTID())
	// Output:
	// gtid 0 runs its implicit task
	// gtid 1 runs its implicit task
	// gtid 2 runs its implicit task
	// gtid 3 runs its implicit task
	// primary is gtid 0
}

func ExampleThread_Tasks() {
	as, _ := ompd.Open(stoppedProgram())
	th, _ := as.ThreadByOSThread(ompd.LWPID, 4002)
	// The current task, then the tasks that generated it, out to the
	// initial task.
	for task, err := range th.Tasks() {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		kind, _ := task.Kind()
		final, _ := task.InFinal()
		fmt.Printf("%-26v final=%v", kind, final)
		if f, ferr := task.Function(); ferr == nil {
			fmt.Printf(" %s", f.Symbol)
		}
		fmt.Println()
	}
	// Output:
	// explicit|included|final    final=true task_b._omp_fn
	// explicit|untied            final=false task_a._omp_fn
	// implicit                   final=false
	// implicit                   final=false
	// implicit                   final=false
	// implicit                   final=false main._omp_fn.1
	// implicit                   final=false main._omp_fn.0
	// initial|implicit           final=false
}

func ExampleTask_SchedulingAncestors() {
	as, _ := ompd.Open(stoppedProgram())
	th, _ := as.ThreadByOSThread(ompd.LWPID, 4002)
	cur, _ := th.CurrentTask()
	// The tasks the current one interrupted on this thread, nearest first.
	for task, err := range cur.SchedulingAncestors() {
		if err != nil {
			fmt.Println("error:", err)
			break
		}
		kind, _ := task.Kind()
		fmt.Println(kind)
	}
	// Output:
	// explicit|untied
	// implicit
	// implicit
	// implicit
	// implicit
}

func ExampleScope() {
	as, _ := ompd.Open(stoppedProgram())
	th, _ := as.ThreadByOSThread(ompd.LWPID, 4002)
	task, _ := th.CurrentTask()
	par, _ := th.CurrentParallel()
	// Every ICV is read from the scope it belongs to.
	for _, id := range []ompd.ICV{ompd.ICVNthreadsVar, ompd.ICVRunSchedVar, ompd.ICVBindVar, ompd.ICVLevelsVar, ompd.ICVNumProcsVar} {
		var sc ompd.Scope
		switch id.Scope() {
		case ompd.ScopeAddressSpace:
			sc = as
		case ompd.ScopeThread:
			sc = th
		case ompd.ScopeParallel:
			sc = par
		case ompd.ScopeTask:
			sc = task
		}
		v, _ := sc.ICVString(id)
		fmt.Printf("%s (%v) = %s\n", id, id.Scope(), v)
	}
	s, _ := task.Schedule()
	binds, _ := task.ProcBind()
	fmt.Println(s.Kind, s.Chunk, s.Monotonic, binds)
	// Output:
	// nthreads-var (thread) = 3
	// run-sched-var (task) = monotonic:static,0
	// bind-var (task) = 3
	// levels-var (parallel) = 5
	// num-procs-var (address_space) = 8
	// static 0 true [close]
}

func ExampleAddressSpace_Snapshot() {
	as, _ := ompd.Open(stoppedProgram())
	snap, err := as.Snapshot(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, th := range snap.Threads {
		fmt.Printf("gtid %d: %d regions, %d tasks\n", th.GTID, len(th.Parallel), len(th.Tasks))
	}
	// Output:
	// gtid 0: 2 regions, 2 tasks
	// gtid 1: 3 regions, 3 tasks
	// gtid 2: 6 regions, 8 tasks
	// gtid 3: 2 regions, 2 tasks
	// gtid 4: 0 regions, 0 tasks
}

func ExampleAddressSpace_Runtime() {
	as, err := ompd.Open(stoppedProgram())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer as.Close()
	rt := as.Runtime()
	fmt.Printf("%s, layout from %s, other runtimes loaded: %d\n", rt.Name, rt.Layout, len(rt.AlsoLoaded))
	// Output: LLVM libomp, layout from OMPD tables, other runtimes loaded: 0
}

func ExampleThread_StateInferred() {
	as, err := ompd.Open(stoppedProgram())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer as.Close()
	threads, _ := ompd.Collect(as.Threads())
	state, _, err := threads[0].State()
	if err != nil {
		// libgomp: the thread's stack did not tell.
		fmt.Println("state unknown:", err)
		return
	}
	how := "recorded by the runtime"
	if inferred, _ := threads[0].StateInferred(); inferred {
		how = "inferred from the thread's stack" // libgomp
	}
	fmt.Println(state, how)
	// Output: work_parallel recorded by the runtime
}
