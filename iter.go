package ompd

import (
	"errors"
	"iter"

	"github.com/ompd-go/ompd/internal/omprt"
)

// walk yields first and each next element until next says there is none
// (an error matching ErrUnavailable: the normal end, at the top). Any other
// error is yielded once, with the zero handle, and ends the walk; so does a
// chain longer than maxWalk, the bound Snapshot uses (ErrCorrupt).
func walk[H any](first func() (H, error), next func(H) (H, error)) iter.Seq2[H, error] {
	return func(yield func(H, error) bool) {
		var zero H
		h, err := first()
		for n := 0; ; n++ {
			if err != nil {
				if !errors.Is(err, ErrUnavailable) {
					yield(zero, err)
				}
				return
			}
			if n == maxWalk {
				yield(zero, errorf(ErrCorrupt, "a chain longer than %d elements", maxWalk))
				return
			}
			if !yield(h, nil) {
				return
			}
			h, err = next(h)
		}
	}
}

// Regions walks the thread's parallel regions from the innermost
// (CurrentParallel) out to the outermost, at level 0, one per nesting
// level, serialized ones included:
//
//	for p, err := range th.Regions() {
//		if err != nil {
//			return err // a real error; the walk ends after it
//		}
//		...
//	}
//
// The walk ends without an error at the top (where Enclosing answers
// ErrUnavailable); any other error is yielded once, with a zero Parallel,
// and ends it.
func (t Thread) Regions() iter.Seq2[Parallel, error] {
	return walk(t.CurrentParallel, Parallel.Enclosing)
}

// EnclosingRegions walks the regions enclosing p, innermost first, as
// Thread.Regions does (p itself not included).
func (p Parallel) EnclosingRegions() iter.Seq2[Parallel, error] {
	return walk(p.Enclosing, Parallel.Enclosing)
}

// Tasks walks the thread's task chain: its current task (CurrentTask), then
// each task's generating task, up to the initial task. It ends as
// Thread.Regions does: cleanly at the top, or after yielding one real
// error.
func (t Thread) Tasks() iter.Seq2[Task, error] {
	return walk(t.CurrentTask, Task.Generating)
}

// GeneratingAncestors walks the tasks that generated t, nearest first
// (Generating, repeatedly; t itself not included), up to the initial
// task. It ends as Thread.Regions does.
func (t Task) GeneratingAncestors() iter.Seq2[Task, error] {
	return walk(t.Generating, Task.Generating)
}

// SchedulingAncestors walks the tasks t interrupted, nearest first
// (Scheduling, repeatedly; t itself not included), down the thread's stack
// of scheduled tasks. It ends as Thread.Regions does.
func (t Task) SchedulingAncestors() iter.Seq2[Task, error] {
	return walk(t.Scheduling, Task.Scheduling)
}

// Threads walks the region's team, thread 0 (the primary thread) first, in
// thread numbers (Thread(0) .. Thread(NumThreads()-1)). An error (the team
// size unreadable, a thread not set) is yielded once, with a zero Thread
// and the failing thread number in its message, and ends the walk.
func (p Parallel) Threads() iter.Seq2[Thread, error] {
	return func(yield func(Thread, error) bool) {
		n, err := p.NumThreads()
		if err != nil {
			yield(Thread{}, err)
			return
		}
		for i := 0; i < n; i++ {
			th, err := p.Thread(i)
			if !yield(th, err) || err != nil {
				return
			}
		}
	}
}

// Collect gathers what a walk yields, in order (for instance every thread,
// slices.Collect's counterpart for walks that can fail):
//
//	threads, err := ompd.Collect(as.Threads())
//
// An error ends the walk; Collect returns it with the elements yielded
// before it.
func Collect[V any](seq iter.Seq2[V, error]) ([]V, error) {
	var out []V
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

// follow makes the handle (mk) of what a record links to, after the
// record's own error and the link's.
func follow[D, R, H any](d D, err error, link func(D) (R, error), mk func(R) H) (H, error) {
	var zero H
	if err != nil {
		return zero, err
	}
	r, err := link(d)
	if err != nil {
		return zero, err
	}
	return mk(r), nil
}

func (as *AddressSpace) task(r omprt.Ref) Task         { return Task{as: as, ref: r} }
func (as *AddressSpace) parallel(r omprt.Ref) Parallel { return Parallel{as: as, ref: r} }
