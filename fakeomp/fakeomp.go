// Package fakeomp lays out the memory of a stopped OpenMP program that a
// test describes, so that a tool built on package ompd can be tested
// without a compiler, an OpenMP runtime or a process: threads, the nest of
// parallel regions they are in, their explicit tasks and, for LLVM's
// runtime, their states, in the layout of LLVM's libomp or GCC's libgomp.
// Program.Target is a target.Target that ompd.Open reads as it reads a
// core file.
//
//	p := fakeomp.New(fakeomp.LLVM)          // thread 0, serial
//	r := p.Initial().Parallel(4, "compute") // a region of 4 threads
//	r.Thread(2).SetState(ompd.StateWaitBarrierExplicit, 0)
//	as, err := ompd.Open(p.Target())
//
// The memory is synthetic but complete for what it describes: the runtime
// is found as in a real process (LLVM's through its OMPD tables, which
// describe a layout of fakeomp's own; libgomp through the dynamic linker's
// list and its thread-local data, its layout given as debug information),
// and every answer comes from decoding it. What a program does not
// describe reads as a real runtime would show it: each region's implicit
// tasks, generating tasks, team sizes and levels, the default ICVs. Thread
// states are LLVM's only: libgomp records none, and the library infers
// them from the threads' stacks, which fakeomp does not lay out, so on
// libgomp's layout State answers ErrUnavailable.
//
// A Program is not safe for concurrent use while it is being built; once
// built, its Target is.
package fakeomp

import (
	"fmt"
	"sync"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/target"
)

// Runtime names an OpenMP runtime whose memory layout a Program has.
type Runtime int

// The runtimes.
const (
	// LLVM is LLVM's libomp, with OMPD support, run with
	// OMP_DEBUG=enabled: it records thread states.
	LLVM Runtime = iota + 1
	// GNU is GCC's libgomp.
	GNU
)

// String names the runtime as ompd.RuntimeInfo does.
func (r Runtime) String() string {
	switch r {
	case LLVM:
		return "LLVM libomp"
	case GNU:
		return "GNU libgomp"
	}
	return fmt.Sprintf("Runtime(%d)", int(r))
}

// Program is a stopped OpenMP program being described.
type Program struct {
	rt   Runtime
	t    *fakeruntime.Target
	llvm *fakeruntime.Runtime
	gnu  *fakeruntime.Gomp

	mu      sync.Mutex
	threads []*Thread
	root    *Region
}

// New returns a program on the given runtime with one thread, the initial
// thread, serial: in the implicit region at level 0.
func New(rt Runtime) *Program {
	p := &Program{rt: rt, t: fakeruntime.NewTarget(fakeruntime.Config{})}
	p.root = &Region{p: p}
	switch rt {
	case LLVM:
		p.llvm = fakeruntime.New(p.t)
	case GNU:
		p.gnu = fakeruntime.NewGomp(p.t)
	default:
		panic(fmt.Sprintf("fakeomp: no runtime %d", int(rt)))
	}
	th := p.newThread()
	p.root.threads = []*Thread{th}
	if p.llvm != nil {
		p.root.llvm = p.llvm.NewTeam(nil, 0, 0, 1, []*fakeruntime.Thread{th.llvm}, 0)
		th.task = &task{llvm: p.root.llvm.Implicit[0]}
	}
	return p
}

// Runtime says whose layout the program's memory has.
func (p *Program) Runtime() Runtime { return p.rt }

// Target returns the program's memory, symbols and threads as a
// target.Target for ompd.Open. It is safe for concurrent use.
func (p *Program) Target() target.Target { return p.t }

// Initial returns the initial thread.
func (p *Program) Initial() *Thread { return p.threads[0] }

// Threads returns every thread, the initial one first, in the order they
// were made.
func (p *Program) Threads() []*Thread {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*Thread(nil), p.threads...)
}

// newThread makes a thread, in no region yet.
func (p *Program) newThread() *Thread {
	p.mu.Lock()
	n := len(p.threads)
	th := &Thread{p: p, num: n, region: p.root}
	p.threads = append(p.threads, th)
	p.mu.Unlock()
	pthread, lwp := fakeruntime.PthreadOf(p.t.Sizes(), n), fakeruntime.LWPOf(n)
	if p.llvm != nil {
		th.llvm = p.llvm.NewThread(n, pthread, lwp)
	} else {
		th.gnu = p.gnu.NewThread(lwp, pthread)
	}
	return th
}

// Thread is a thread of a Program.
type Thread struct {
	p      *Program
	num    int // the order it was made in: 0 for the initial thread
	region *Region
	task   *task // its current task; nil on libgomp before any region
	llvm   *fakeruntime.Thread
	gnu    *fakeruntime.GompThread
}

// LWP returns the thread's kernel thread id: what
// ompd.AddressSpace.ThreadByOSThread(ompd.LWPID, ...) finds it by.
func (th *Thread) LWP() uint64 { return fakeruntime.LWPOf(th.num) }

// Region returns the innermost region the thread is in (the implicit
// region at level 0 for a thread in none).
func (th *Thread) Region() *Region { return th.region }

// Parallel makes the thread start a parallel region of n threads running
// the outlined function fn (a function symbol of the program, made up):
// the thread is its thread 0, and n-1 new threads are the others. With
// n 1 the region is serialized, as with if(0) or num_threads(1). On LLVM's
// layout its threads' states are work_parallel; SetState changes them. A
// serialized region directly inside another one of the same thread is not
// laid out on LLVM's layout (it panics): LLVM keeps both in the thread's
// one serial team.
func (th *Thread) Parallel(n int, fn string) *Region {
	if n < 1 {
		panic(fmt.Sprintf("fakeomp: a region of %d threads", n))
	}
	p := th.p
	parent := th.region
	r := &Region{p: p, parent: parent, level: parent.level + 1, active: parent.active, fn: fn, threads: []*Thread{th}}
	if n > 1 {
		r.active++
	}
	for len(r.threads) < n {
		r.threads = append(r.threads, p.newThread())
	}
	if p.llvm != nil {
		ths := make([]*fakeruntime.Thread, n)
		for i, t := range r.threads {
			ths[i] = t.llvm
		}
		if n == 1 {
			if parent.llvm != nil && parent.llvm.NProc == 1 && parent.level > 0 {
				panic("fakeomp: a serialized region directly inside a serialized region is not laid out on LLVM's layout")
			}
			r.llvm = p.llvm.SerialTeam(parent.llvm, th.llvm, 1, p.llvm.Function(fn))
		} else {
			r.llvm = p.llvm.NewTeam(parent.llvm, r.level, r.active, n, ths, p.llvm.Function(fn))
		}
		for i, t := range r.threads {
			t.task = &task{llvm: r.llvm.Implicit[i]}
			t.llvm.SetState(int64(ompd.StateWorkParallel), 0)
		}
	} else {
		ths := make([]*fakeruntime.GompThread, n)
		for i, t := range r.threads {
			ths[i] = t.gnu
		}
		r.gnu = p.gnu.NewTeam(ths, p.gnu.Function(fn))
		for i, t := range r.threads {
			t.task = &task{gnu: r.gnu.Implicit[i]}
		}
	}
	for _, t := range r.threads {
		t.region = r
	}
	return r
}

// Task makes the thread run an explicit task executing the function fn (a
// function symbol of the program, made up), generated by its current task
// and on top of it: the new task becomes its current task, and the next
// Task is generated by it. final makes it a final task (final(1)).
func (th *Thread) Task(fn string, final bool) {
	p := th.p
	var k *task
	if p.llvm != nil {
		flags := fakeruntime.Explicit | fakeruntime.Started | fakeruntime.Executing
		if final {
			flags |= fakeruntime.Final
		}
		k = &task{llvm: p.llvm.NewTask(th.task.llvm, th.region.llvm, flags, p.llvm.Function(fn))}
		th.llvm.SetCurrentTask(k.llvm)
	} else {
		var parent *fakeruntime.GompTask
		if th.task != nil {
			parent = th.task.gnu
		}
		k = &task{gnu: p.gnu.NewTask(th.gnu, parent, fakeruntime.GompTaskTied, final, p.gnu.Function(fn))}
	}
	th.task = k
}

// SetState sets what the thread is doing, as LLVM's runtime records it:
// its state and, for a wait, what it waits for (a lock's address, for
// instance; 0 for none). libgomp records no states: on GNU's layout
// SetState panics.
func (th *Thread) SetState(s ompd.State, wait ompd.WaitID) {
	if th.llvm == nil {
		panic("fakeomp: libgomp records no thread states (the library infers them from stacks, which fakeomp does not lay out)")
	}
	th.llvm.SetState(int64(s), uint64(wait))
}

// Region is a parallel region of a Program.
type Region struct {
	p             *Program
	parent        *Region
	level, active int
	fn            string
	threads       []*Thread
	llvm          *fakeruntime.Team
	gnu           *fakeruntime.GompTeam
}

// Level returns the region's nesting level: 0 for the implicit region of
// the initial thread, 1 for a region it starts, and so on.
func (r *Region) Level() int { return r.level }

// NumThreads returns the number of threads of its team.
func (r *Region) NumThreads() int { return len(r.threads) }

// Thread returns thread i of its team: 0 is the thread that started it.
func (r *Region) Thread(i int) *Thread { return r.threads[i] }

// Enclosing returns the region that encloses r, nil for level 0.
func (r *Region) Enclosing() *Region { return r.parent }

// task is a task in the runtime's layout.
type task struct {
	llvm *fakeruntime.Task
	gnu  *fakeruntime.GompTask
}
