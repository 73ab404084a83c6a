package ompdtest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// Event is one event a watcher of the runtime's breakpoints reported (a
// target/delve Event, a line of ompdtool events -json), reduced to what
// CheckEvents compares with the program's own records.
type Event struct {
	Kind string // "parallel-begin", "parallel-end", "task-begin", "task-end"; others are ignored
	LWP  int
	// Region is the id of the region beginning or ending, "" when the
	// event has none (Unavailable says why); Level, Size and Function
	// are its level, team size and outlined function, Function 0 when
	// NoFunction says why there is none.
	Region      string
	Level, Size int
	// Task is the id of the task beginning or ending, "" when the event
	// has none; Function is its entry.
	Task string
	// Function is the region's or task's entry function.
	Function   uint64
	NoFunction string
	// Unavailable says why the event names no region or task.
	Unavailable string
	// Exit is the exit frame of the task the event names (task events),
	// or of the task that encountered the region (parallel events), when
	// HasExit.
	Exit    uint64
	HasExit bool
	// Nthreads is the first element of nthreads-var of that same task,
	// when HasNthreads (the thread's nthreads-var at the event).
	Nthreads    int64
	HasNthreads bool
	// BindVar is that task's bind-var as text ("4,3,4"), "" if unknown.
	BindVar string
}

func (e *Event) parallel() bool { return e.Kind == "parallel-begin" || e.Kind == "parallel-end" }
func (e *Event) begin() bool    { return e.Kind == "parallel-begin" || e.Kind == "task-begin" }
func (e *Event) task() bool     { return e.Kind == "task-begin" || e.Kind == "task-end" }

func (e *Event) String() string {
	what := e.Region
	if e.task() {
		what = e.Task
	}
	if what == "" {
		what = "(" + e.Unavailable + ")"
	}
	return fmt.Sprintf("%s in %d: %s level %d size %d function %#x%s", e.Kind, e.LWP, what, e.Level, e.Size, e.Function, e.NoFunction)
}

// CheckEvents checks a run's events of the events fixture against the
// constructs the program recorded (tr.Constructs, placed in their
// functions by fns, fixtures.Truth.ConstructFunctions):
//
//   - on each thread, events pair up begin with end as constructs nest;
//     the k-th pair of parallel events of a thread is the k-th region the
//     thread recorded as its thread 0, the k-th pair of task events the
//     k-th task it ran (undeferred tasks have no events: the runtime
//     calls no breakpoint for them);
//   - an end event names its region or task, with the level, team size
//     and function the construct recorded, or says the function is
//     unavailable; a begin event names the same region or task with the
//     same answers, or says it is unavailable. Only an active region's
//     begin may lack the region (the runtime makes its team current after
//     the breakpoint), and only an if(0) region's begin and a serialized
//     region's end its function (the serial team keeps one function, of
//     the region begun last, and the region's code is not running
//     there);
//   - the exit frame an event shows (of its task, or of the task that
//     encountered its region) is the one the construct (or the construct
//     it is nested in, run by the same thread) recorded through OMPT, and
//     so is the task's nthreads-var (omp_get_max_threads), and its
//     bind-var continues with the environment's list from its level on.
func CheckEvents(t *testing.T, tr *fixtures.Truth, fns []fixtures.ConstructFunction, events []Event) {
	t.Helper()
	require.Len(t, fns, len(tr.Constructs))
	// Pairs of begin and end events, per thread and kind, in the order
	// the constructs began.
	type pair struct{ b, e *Event }
	var regions, tasks = map[int][]*pair{}, map[int][]*pair{}
	open := map[int][]*pair{}
	for i := range events {
		ev := &events[i]
		if !ev.parallel() && !ev.task() {
			continue
		}
		if ev.begin() {
			p := &pair{b: ev}
			open[ev.LWP] = append(open[ev.LWP], p)
			if ev.parallel() {
				regions[ev.LWP] = append(regions[ev.LWP], p)
			} else {
				tasks[ev.LWP] = append(tasks[ev.LWP], p)
			}
			continue
		}
		st := open[ev.LWP]
		if !assert.NotEmpty(t, st, "%v ends nothing begun", ev) {
			continue
		}
		p := st[len(st)-1]
		open[ev.LWP] = st[:len(st)-1]
		assert.Equal(t, p.b.parallel(), ev.parallel(), "%v ends %v", ev, p.b)
		p.e = ev
	}
	for lwp, st := range open {
		assert.Empty(t, st, "thread %d: events begun and never ended", lwp)
	}

	byLabel := map[string][]int{} // label -> constructs, by tid below
	for i, c := range tr.Constructs {
		byLabel[c.Label] = append(byLabel[c.Label], i)
	}
	// recordOf is the record of the construct label ran by tid, exitOf its
	// exit frame.
	recordOf := func(label string, tid int) (fixtures.Construct, bool) {
		for _, i := range byLabel[label] {
			if c := tr.Constructs[i]; c.TID == tid {
				return c, true
			}
		}
		return fixtures.Construct{}, false
	}
	exitOf := func(label string, tid int) (uint64, bool) {
		c, ok := recordOf(label, tid)
		x, err := fixtures.ParseHex(c.Exit)
		return x, ok && err == nil && x != 0
	}
	next := map[int]map[string]int{} // tid -> kind -> pairs matched so far
	beganRegion, beganFunction, endedFunction, nthreads := 0, 0, 0, 0
	if0Child := map[string]bool{} // parent and tid of the if(0) regions begun so far
	for i, c := range tr.Constructs {
		if c.Undeferred {
			continue
		}
		if next[c.TID] == nil {
			next[c.TID] = map[string]int{}
		}
		k := next[c.TID][c.Kind]
		next[c.TID][c.Kind]++
		pairs := regions[c.TID]
		if c.Kind == fixtures.ConstructTask {
			pairs = tasks[c.TID]
		}
		where := fmt.Sprintf("%s (%s %d of thread %d, %s at %#x)", c.Label, c.Kind, k, c.TID, fns[i].Name, fns[i].Entry)
		if !assert.Less(t, k, len(pairs), "%s: no events", where) {
			continue
		}
		b, e := pairs[k].b, pairs[k].e
		if e == nil {
			continue // reported above
		}
		where += fmt.Sprintf(": begin %v, end %v", b, e)
		// The end event names the construct.
		if c.Kind == fixtures.ConstructRegion {
			if assert.NotEmpty(t, e.Region, where) {
				assert.Equal(t, c.Level, e.Level, "level: %s", where)
				assert.Equal(t, c.TeamSize, e.Size, "team size: %s", where)
			}
		} else {
			assert.NotEmpty(t, e.Task, where)
		}
		checkFunction(t, e, fns[i].Entry, where)
		if e.Function == 0 {
			assert.True(t, c.Kind == fixtures.ConstructRegion && c.TeamSize == 1, "only a serialized region's end lacks its function: %s", where)
		} else {
			endedFunction++
		}
		// The begin event names it too, or says it cannot.
		switch {
		case c.Kind == fixtures.ConstructTask:
			assert.Equal(t, e.Task, b.Task, "the task begun is the task ending: %s", where)
		case b.Region == "":
			assert.NotEmpty(t, b.Unavailable, where)
			assert.Greater(t, c.TeamSize, 1, "only an active region's begin lacks the region: %s", where)
		default:
			beganRegion++
			assert.Equal(t, e.Region, b.Region, "the region begun is the region ending: %s", where)
			assert.Equal(t, c.Level, b.Level, "level at the begin: %s", where)
			assert.Equal(t, c.TeamSize, b.Size, "team size at the begin: %s", where)
		}
		if b.Region != "" || b.Task != "" {
			checkFunction(t, b, fns[i].Entry, where)
			if b.Function == 0 {
				assert.True(t, c.If0, "only an if(0) region's begin lacks its function: %s", where)
			} else {
				beganFunction++
			}
		}
		// The exit frames: of the task itself, or of the task that
		// encountered the region, when the same thread recorded it and
		// the runtime has not overwritten it since: from the begin of
		// an if(0) region on, the encountering implicit task's exit
		// frame is the frame of the runtime's __kmp_serialized_parallel
		// (kmp_runtime.cpp stores it there before it links the new
		// level; OMPT shows the same).
		if rec, ok := recordOf(c.Label, c.TID); ok {
			if c.Kind == fixtures.ConstructRegion {
				rec, ok = recordOf(c.Parent, c.TID)
			}
			for _, ev := range []*Event{b, e} {
				if ok && ev.HasNthreads {
					nthreads++
					assert.Equal(t, int64(rec.MaxThreads), ev.Nthreads, "nthreads-var at %s (%s recorded %d): %s", ev.Kind, rec.Label, rec.MaxThreads, where)
				}
				if ok && ev.BindVar != "" {
					// The task's own value, then the list from the
					// next level on.
					want := fixtures.EnvList(rec.ProcBind, fixtures.ProcBindNumbers(tr.Env["OMP_PROC_BIND"]), rec.Level)
					assert.Equal(t, want, ev.BindVar, "bind-var at %s (%s recorded %d at level %d): %s", ev.Kind, rec.Label, rec.ProcBind, rec.Level, where)
				}
			}
		}
		want, ok := exitOf(c.Label, c.TID)
		if c.Kind == fixtures.ConstructRegion {
			want, ok = exitOf(c.Parent, c.TID)
			if c.If0 || if0Child[c.Parent+"\x00"+fmt.Sprint(c.TID)] {
				ok = false
			}
			if c.If0 {
				if0Child[c.Parent+"\x00"+fmt.Sprint(c.TID)] = true
			}
		}
		for _, ev := range []*Event{b, e} {
			if ok && ev.HasExit {
				assert.Equal(t, fmt.Sprintf("%#x", want), fmt.Sprintf("%#x", ev.Exit), "exit frame at %s: %s", ev.Kind, where)
			}
		}
	}
	for tid, n := range next {
		assert.Len(t, regions[tid], n[fixtures.ConstructRegion], "thread %d: parallel event pairs", tid)
		assert.Len(t, tasks[tid], n[fixtures.ConstructTask], "thread %d: task event pairs", tid)
	}
	for tid := range regions {
		assert.Contains(t, next, tid, "thread %d has events but recorded nothing", tid)
	}
	// Not vacuous: serialized regions begun by a fork, and one active
	// region (the first, whose hot team the runtime grows into its
	// primary thread), name themselves and their functions at their
	// begin; active regions and tasks at their end.
	assert.Positive(t, beganRegion)
	assert.Positive(t, beganFunction)
	assert.Positive(t, endedFunction)
	if hasNthreads(events) {
		assert.Positive(t, nthreads)
	}
	t.Logf("%d constructs; %d begin events name their region, %d their function; %d end events their function; %d nthreads-var compared", len(tr.Constructs), beganRegion, beganFunction, endedFunction, nthreads)
}

// checkFunction checks an event's function: the construct's, or none with
// a reason.
func checkFunction(t *testing.T, ev *Event, want uint64, where string) {
	t.Helper()
	if ev.Function == 0 {
		assert.NotEmpty(t, ev.NoFunction, "no function and no reason at %s: %s", ev.Kind, where)
		return
	}
	assert.Equal(t, fmt.Sprintf("%#x", want), fmt.Sprintf("%#x", ev.Function), "function at %s: %s", ev.Kind, where)
}

// hasNthreads reports whether the events carry nthreads-var.
func hasNthreads(events []Event) bool {
	for _, ev := range events {
		if ev.HasNthreads {
			return true
		}
	}
	return false
}
