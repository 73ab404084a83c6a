package delve

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
)

// TestEventsMatchProgram watches the events fixture from start to end:
// nested serialized regions (if(0) and num_threads(1)), nested active
// regions and tasks. Every region and task has its begin and end events,
// which name it with the level, team size and function the program
// recorded in it, or say why they cannot (ompdtest.CheckEvents): never
// another region's function, as a serial team's leftover t_pkfn would
// give. At every event, a snapshot agrees with the event.
func TestEventsMatchProgram(t *testing.T) {
	r := newRun(t, fixtures.Events)
	p := r.launch(t)
	ctx := testContext(t)
	as, err := p.OpenRuntime(ctx)
	require.NoError(t, err)
	defer as.Close()

	var events []ompdtest.Event
	err = p.WatchEvents(ctx, as, func(ev Event) bool {
		events = append(events, observeEvent(ctx, t, as, ev))
		return !t.Failed()
	})
	require.NoError(t, err)
	status, ok := p.ExitStatus()
	require.True(t, ok, "WatchEvents ran to the program's end")
	require.Equal(t, 0, status)

	tr := r.truth(t)
	fns, err := tr.ConstructFunctions(r.exe)
	require.NoError(t, err)
	ompdtest.CheckEvents(t, tr, fns, events)
}

// observeEvent reduces an event to what CheckEvents compares, and checks
// that a snapshot taken at the event agrees with it: the stopped thread's
// innermost region (parallel events) or current task (task events) is the
// one the event names, with the same answers, or the snapshot has none
// when the event has none.
func observeEvent(ctx context.Context, t *testing.T, as *ompd.AddressSpace, ev Event) ompdtest.Event {
	t.Helper()
	o := ompdtest.Event{Kind: ev.Kind.String(), LWP: int(ev.TID)}
	what := fmt.Sprintf("%s in thread %d", ev.Kind, ev.TID)
	if ev.Err != nil {
		o.Unavailable = ev.Err.Error()
		assert.ErrorIs(t, ev.Err, ompd.ErrUnavailable, what)
	}
	var fn ompd.Function
	var fnErr error
	switch {
	case ev.Parallel.AddressSpace() != nil:
		o.Region = ev.Parallel.String()
		var err error
		o.Level, err = ev.Parallel.Level()
		assert.NoError(t, err, what)
		o.Size, err = ev.Parallel.NumThreads()
		assert.NoError(t, err, what)
		fn, fnErr = ev.Parallel.Function()
	case ev.Task.AddressSpace() != nil:
		o.Task = ev.Task.String()
		fn, fnErr = ev.Task.Function()
		if fr, err := ev.Task.Frames(); err == nil {
			o.Exit, o.HasExit = fr.Exit.Addr, true
		}
	}
	if fnErr != nil {
		o.NoFunction = fnErr.Error()
		assert.ErrorIs(t, fnErr, ompd.ErrUnavailable, what)
	}
	o.Function = fn.Addr
	if ev.Thread.AddressSpace() != nil && (o.Region != "" || o.Task != "" || o.Kind == "parallel-begin") {
		// The thread's nthreads-var: the current task's, which the
		// event binds.
		n, err := ev.Thread.ICV(ompd.ICVNthreadsVar)
		if err == nil || errors.Is(err, ompd.ErrIncomplete) { // a list: its first element
			o.Nthreads, o.HasNthreads = n, true
		} else {
			assert.ErrorIs(t, err, ompd.ErrUnavailable, "%s: nthreads-var", what)
		}
		if tk, err := ev.Thread.CurrentTask(); err == nil {
			if s, err := tk.ICVString(ompd.ICVBindVar); err == nil {
				o.BindVar = s
			} else {
				assert.ErrorIs(t, err, ompd.ErrUnavailable, "%s: bind-var", what)
			}
		}
	}
	if ev.Kind == ParallelBegin || ev.Kind == ParallelEnd {
		// The task that encountered the region is current.
		if tk, err := ev.Thread.CurrentTask(); err == nil {
			if fr, err := tk.Frames(); err == nil {
				o.Exit, o.HasExit = fr.Exit.Addr, true
			}
		}
	}

	snap, err := as.Snapshot(ctx)
	require.NoError(t, err, what)
	assert.Empty(t, snap.Errors, what)
	var ts *ompd.ThreadSnapshot
	for i := range snap.Threads {
		if snap.Threads[i].LWP == ev.TID {
			ts = &snap.Threads[i]
		}
	}
	if ev.Thread.AddressSpace() == nil {
		return o
	}
	if !assert.NotNil(t, ts, "%s: the snapshot has the thread", what) {
		return o
	}
	switch {
	case ev.Kind == ParallelBegin || ev.Kind == ParallelEnd:
		if o.Region == "" {
			assert.Empty(t, ts.Parallel, "%s: no region in the event, none in the snapshot", what)
			break
		}
		if assert.NotEmpty(t, ts.Parallel, what) {
			ps := ts.Parallel[0]
			assert.Equal(t, o.Region, ps.ID, what)
			assert.Equal(t, o.Level, ps.Level, what)
			assert.Equal(t, o.Size, ps.NumThreads, what)
			assert.Equal(t, o.Function, ps.FunctionPC, what)
		}
	case ev.Kind == TaskBegin || ev.Kind == TaskEnd:
		if o.Task == "" {
			assert.Empty(t, ts.Tasks, "%s: no task in the event, none in the snapshot", what)
			break
		}
		if assert.NotEmpty(t, ts.Tasks, what) {
			tk := ts.Tasks[0]
			assert.Equal(t, o.Task, tk.ID, what)
			assert.Equal(t, o.Function, tk.FunctionPC, what)
			if o.HasExit {
				assert.Equal(t, o.Exit, tk.ExitFrame, what)
			}
		}
	}
	if o.HasExit && o.Kind != "task-begin" && o.Kind != "task-end" && assert.NotEmpty(t, ts.Tasks, what) {
		assert.Equal(t, o.Exit, ts.Tasks[0].ExitFrame, "%s: the encountering task", what)
	}
	return o
}
