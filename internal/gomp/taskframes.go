package gomp

import (
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/internal/stackstate"
	"github.com/ompd-go/ompd/target"
)

// libgomp records no task frames and not which task a thread set aside to
// run another, but a thread's stack shows both: each task's code starts
// at a frame of the program that libgomp called (the outlined function of
// a region, called by GOMP_parallel in the primary thread and by
// gomp_thread_start in a worker; a task's function, called by whatever
// runs tasks: GOMP_task for an undeferred task, a barrier, a taskwait),
// and the thread's tasks lie on its stack one above the other, the
// innermost being its current task. The frames OMPT would give are then:
// the exit frame, the CFA of the libgomp frame that called the task's
// code; the enter frame, the CFA of the outermost libgomp frame of the
// call the task's code made into libgomp (none while it runs its own
// code). Both are CFAs of libgomp's frames (ompt_frame_cfa, runtime).

// taskFrames is what the stacks tell of a task.
type taskFrames struct {
	exit, enter omprt.Frame
	// sched is the task the thread set aside to run this one: the next
	// task outwards on its stack; none for the stack's outermost task.
	sched    omprt.Ref
	hasSched bool
}

// frameCFA is ompt_frame_cfa, with ompt_frame_runtime (0).
const frameCFA = 0x10

// stackTask is one task on a thread's stack: its part of the stack runs
// from the frame after the inner task's exit frame (the innermost frame
// for the current task) to the frame before its own exit frame, exit.
type stackTask struct {
	ref omprt.Ref
	// exit is the index of the libgomp frame that called the task's code
	// (its exit frame); -1 for the stack's root task, whose code no
	// libgomp frame called (the initial task: main) or none of whose
	// code is on the stack (a worker past its region's body). A primary
	// thread past its region's body has no frame of the region's implicit
	// task either: GOMP_parallel, once the outlined function returned,
	// tail-called GOMP_parallel_end. Its exit is then the outermost
	// frame of that call, which the enclosing task's code made.
	exit int
}

// stackTasks places the tasks of thread th (its current task cur) on its
// stack, innermost first. It returns nil when the stack does not match
// what libgomp's records say (a thread caught between states): no frames
// are then inferred for its tasks.
func (r *Runtime) stackTasks(s *stop, th *thread, cur omprt.Ref, st *stackstate.Stack) []stackTask {
	fr := st.Frames
	var out []stackTask
	level := int(th.level) // the level of the next implicit task outwards
	worker := false
	implicit := func(exit int) bool {
		ref, ok := r.implicitAt(th, level)
		if !ok || th.chain[int(th.level)-level].num != 0 {
			return false
		}
		out = append(out, stackTask{ref: ref, exit: exit})
		level--
		return true
	}
	for i := 0; i < len(fr) && !worker; i++ {
		f := fr[i]
		if f.Where != stackstate.User {
			continue
		}
		if i > 0 && fr[i-1].Where == stackstate.Runtime {
			// f called libgomp: a region starter gone by the tail
			// call to GOMP_parallel_end leaves the region's implicit
			// task no frame of its code.
			if r.calledStarter(fr, i) && !implicit(i-1) {
				return nil
			}
		}
		if i+1 == len(fr) || fr[i+1].Where != stackstate.Runtime {
			continue
		}
		caller := fr[i+1]
		switch {
		case primaryStarter(caller.Function):
			// The outlined function of the region at level, which the
			// thread forked: it is the region's primary thread.
			if !implicit(i + 1) {
				return nil
			}
		case caller.Function == "gomp_thread_start" || caller.Function == "" && st.ReachesStart(i+2):
			// A worker's outlined function: the region it joined.
			ref, ok := r.implicitAt(th, level)
			if !ok {
				return nil
			}
			out = append(out, stackTask{ref: ref, exit: i + 1})
			worker = true
		default:
			// An explicit task's function: the current task first,
			// then each one's generating task, which the inner one's
			// code ran above (an undeferred task, a taskwait or
			// taskgroup running its children).
			ref, ok := r.explicitAt(s, cur, out, f, caller)
			if !ok {
				return nil
			}
			out = append(out, stackTask{ref: ref, exit: i + 1})
		}
	}
	if !worker {
		// The root task: a worker's implicit task in the region it
		// joined, none of whose code is on the stack (it is past its
		// body); or the initial task of a thread that started outside
		// libgomp.
		root, ok := r.rootTask(s, th, level)
		if !ok {
			return nil
		}
		out = append(out, stackTask{ref: root, exit: -1})
	}
	if out[0].ref != cur {
		return nil
	}
	return out
}

// calledStarter reports whether the program's frame fr[i] called a
// region starter that is no frame any more: the call it made decodes to a
// starter, and no starter is among the libgomp frames right below it.
func (r *Runtime) calledStarter(fr []stackstate.Frame, i int) bool {
	for j := i - 1; j >= 0 && fr[j].Where == stackstate.Runtime; j-- {
		if primaryStarter(fr[j].Function) {
			return false
		}
	}
	loc, ok := r.t.(target.CodeLocator)
	if !ok {
		return false
	}
	cl, ok := stackstate.CallTarget(r.mem, loc, &fr[i])
	return ok && primaryStarter(tables.Name(cl.Function))
}

// implicitAt is thread th's implicit task in its region at level (1 to
// th.level).
func (r *Runtime) implicitAt(th *thread, level int) (omprt.Ref, bool) {
	i := int(th.level) - level
	if level < 1 || i < 0 || i >= len(th.chain) {
		return omprt.Ref{}, false
	}
	lv := th.chain[i]
	addr := lv.team + r.lay.f(teamImplicitTask).Off + uint64(lv.num)*r.lay.size(typeTask)
	return omprt.Ref{Addr: addr, Level: int32(level)}, true
}

// explicitAt is the explicit task whose function frame f is, called by
// libgomp's frame caller, the tasks found inwards being in: the current
// task for the innermost one, else the generating task of the task found
// last. A deferred task's function must be f's; an undeferred one (whose
// function libgomp does not keep) must be run by GOMP_task, when libgomp's
// names tell.
func (r *Runtime) explicitAt(s *stop, cur omprt.Ref, in []stackTask, f, caller stackstate.Frame) (omprt.Ref, bool) {
	addr := cur.Addr
	if len(in) > 0 {
		p, err := r.mem.Ptr(in[len(in)-1].ref.Addr+r.lay.f(taskParent).Off, "gomp_task.parent")
		if err != nil || p == 0 {
			return omprt.Ref{}, false
		}
		addr = p
	}
	ref := r.taskRef(s, addr)
	if ref.Level >= 0 {
		return omprt.Ref{}, false
	}
	v, err := r.mem.View(addr, r.lay.size(typeTask), "gomp_task")
	if err != nil {
		return omprt.Ref{}, false
	}
	if v.F(r.lay.f(taskKind)) == kindUndeferred {
		return ref, caller.Function == "" || caller.Function == "GOMP_task"
	}
	return ref, f.Entry != 0 && v.F(r.lay.f(taskFn)) == f.Entry
}

// rootTask is the outermost task of a thread's stack: for a worker
// (a thread whose number in the region it joined is not 0), its implicit
// task at that level; for a thread that started outside libgomp, the task
// it had before its first region (the generating task of its level-1
// implicit task), or its current one at level 0.
func (r *Runtime) rootTask(s *stop, th *thread, level int) (omprt.Ref, bool) {
	if level > 0 {
		ref, ok := r.implicitAt(th, level)
		if !ok || th.chain[int(th.level)-level].num == 0 {
			return omprt.Ref{}, false
		}
		return ref, true
	}
	if th.level == 0 {
		if th.task != 0 {
			return r.taskRef(s, th.task), true
		}
		return s.initialTask, true
	}
	first, ok := r.implicitAt(th, 1)
	if !ok {
		return omprt.Ref{}, false
	}
	p, err := r.mem.Ptr(first.Addr+r.lay.f(taskParent).Off, "gomp_task.parent")
	if err != nil {
		return omprt.Ref{}, false
	}
	if p == 0 {
		return r.level0(), true
	}
	return r.taskRef(s, p), true
}

// addTaskFrames records the frames of the tasks on one thread's stack in
// s.taskFrames. A task two threads' stacks claim (the synthetic initial
// task of two threads started outside libgomp) gets none.
func addTaskFrames(s *stop, tasks []stackTask, st *stackstate.Stack) {
	fr := st.Frames
	lo := 0 // the innermost frame of the task's part of the stack
	for k, tk := range tasks {
		var tf taskFrames
		hi := len(fr) - 1
		if tk.exit >= 0 {
			hi = tk.exit - 1
			tf.exit = omprt.Frame{Addr: fr[tk.exit].CFA, Flags: frameCFA}
		}
		// The task's code runs from its innermost frame of the program
		// in [lo, hi]; the libgomp frames right below it are the call
		// it made into libgomp.
		u := lo
		for u <= hi && fr[u].Where != stackstate.User {
			u++
		}
		switch {
		case u > hi:
			// None of its code on the stack: all of it is libgomp's.
			for j := hi; j >= lo; j-- {
				if fr[j].Where == stackstate.Runtime {
					tf.enter = omprt.Frame{Addr: fr[j].CFA, Flags: frameCFA}
					break
				}
			}
		case u > lo && fr[u-1].Where == stackstate.Runtime:
			tf.enter = omprt.Frame{Addr: fr[u-1].CFA, Flags: frameCFA}
		}
		if k+1 < len(tasks) {
			tf.sched, tf.hasSched = tasks[k+1].ref, true
		}
		if _, seen := s.taskFrames[tk.ref]; seen {
			s.taskFrames[tk.ref] = nil
		} else {
			s.taskFrames[tk.ref] = &tf
		}
		lo = hi + 1
	}
}
