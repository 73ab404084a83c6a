package delve

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestThreadStarting stops a real program at the moment the runtime
// starts a worker: at the entry of __kmp_create_worker for the first
// worker of the first parallel region, the runtime has registered the
// thread in __kmp_threads (__kmp_allocate_thread) but not created its OS
// thread, so it has no pthread id (ds_thread 0). Deterministic: only the
// creating thread runs, and the breakpoint is before pthread_create. The
// thread is listed, marked starting, and every answer the runtime has no
// value for yet is ErrUnavailable saying why. Earlier still, in the
// runtime's serial initialization, NumProcs is ErrUnavailable too.
func TestThreadStarting(t *testing.T) {
	r := newRun(t, fixtures.Idle)
	p := r.launch(t)
	ctx := testContext(t)
	as, err := p.OpenRuntime(ctx) // the runtime's OMPD support is ready
	require.NoError(t, err)
	defer as.Close()
	// Stopped in the runtime's serial initialization (ompd_init): it
	// has not counted the processors yet (its middle initialization
	// does), so there is no number to give, not 0.
	_, err = as.NumProcs()
	assert.ErrorIs(t, err, ompd.ErrUnavailable)
	assert.ErrorContains(t, err, "processors")
	_, err = as.ICV(ompd.ICVNumProcsVar)
	assert.ErrorIs(t, err, ompd.ErrUnavailable)

	// The first call registers the initial thread (its ds_thread set
	// from pthread_self at once), the second creates worker 1.
	stops, err := p.RunToFunction(ctx, "__kmp_create_worker")
	require.NoError(t, err)
	as.Refresh()
	ths, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	require.Len(t, ths, 1, "the initial thread, being registered")
	stops, err = p.RunToFunction(ctx, "__kmp_create_worker")
	require.NoError(t, err)
	require.Len(t, stops, 1)
	as.Refresh()
	ths, err = ompd.Collect(as.Threads())
	require.NoError(t, err)
	require.Len(t, ths, 2, "the initial thread and the worker being created")
	osThreads, err := p.Threads()
	require.NoError(t, err)
	assert.Len(t, osThreads, 1, "no OS thread for the worker yet")
	// The fork's middle initialization counted them.
	procs, err := as.NumProcs()
	require.NoError(t, err)
	assert.Positive(t, procs)

	w := ths[1]
	assert.Positive(t, w.GTID())
	_, err = w.OSThread(ompd.PthreadID)
	assert.ErrorIs(t, err, ompd.ErrUnavailable)
	assert.ErrorContains(t, err, "starting")
	_, err = w.OSThread(ompd.LWPID)
	assert.ErrorIs(t, err, ompd.ErrUnavailable)
	_, err = w.Num()
	assert.ErrorIs(t, err, ompd.ErrUnavailable)
	assert.ErrorContains(t, err, "starting")
	_, err = w.MaxThreads()
	assert.ErrorIs(t, err, ompd.ErrUnavailable)
	_, err = w.CurrentTask()
	assert.ErrorIs(t, err, ompd.ErrUnavailable)

	snap, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.Threads, 2)
	assert.False(t, snap.Threads[0].Starting)
	assert.True(t, snap.Threads[1].Starting)
	t.Logf("snapshot errors: %q", snap.Errors)

	// The primary is unaffected: it is the thread creating the worker.
	main, err := as.ThreadByOSThread(ompd.LWPID, stops[0].TID)
	require.NoError(t, err)
	assert.True(t, main.Equal(ths[0]))
	n, err := main.Num()
	require.NoError(t, err)
	assert.Zero(t, n)
}
