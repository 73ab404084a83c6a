package gomp

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ompd-go/ompd/internal/omprt"
)

// TestWait: the entry points of libgomp a task waits in. The ends of
// worksharing constructs wait in their implicit barriers (libgomp's
// work.c: gomp_work_share_end calls gomp_team_barrier_wait), but with
// nowait (gomp_work_share_end_nowait waits for no one).
func TestWait(t *testing.T) {
	var r Runtime
	for fn, want := range map[string]omprt.Wait{
		"GOMP_taskwait": omprt.WaitTaskwait, "GOMP_taskgroup_end": omprt.WaitTaskgroup,
		"GOMP_barrier": omprt.WaitBarrier, "gomp_team_barrier_wait_end": omprt.WaitBarrier,
		"GOMP_parallel": omprt.WaitParallel, "GOMP_parallel_end": omprt.WaitParallel,
		"__kmpc_fork_call": omprt.WaitNone, "GOMP_critical_start": omprt.WaitNone,
		"GOMP_loop_end": omprt.WaitBarrier, "GOMP_loop_end_cancel": omprt.WaitBarrier,
		"GOMP_sections_end": omprt.WaitBarrier, "GOMP_sections_end_cancel": omprt.WaitBarrier,
		"gomp_work_share_end": omprt.WaitBarrier, "GOMP_single_copy_start": omprt.WaitBarrier,
		"GOMP_loop_end_nowait": omprt.WaitNone, "GOMP_sections_end_nowait": omprt.WaitNone,
		"gomp_work_share_end_nowait": omprt.WaitNone, "GOMP_taskwait_depend_nowait": omprt.WaitTaskwait,
		"GOMP_parallel_loop_dynamic": omprt.WaitParallel,
	} {
		assert.Equal(t, want, r.Wait(fn), fn)
	}
}
