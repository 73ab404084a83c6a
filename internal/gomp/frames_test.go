package gomp

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ompd-go/ompd/internal/omprt"
)

// TestWait: the entry points of libgomp a task waits in.
func TestWait(t *testing.T) {
	var r Runtime
	for fn, want := range map[string]omprt.Wait{
		"GOMP_taskwait": omprt.WaitTaskwait, "GOMP_taskgroup_end": omprt.WaitTaskgroup,
		"GOMP_barrier": omprt.WaitBarrier, "gomp_team_barrier_wait_end": omprt.WaitBarrier,
		"GOMP_parallel": omprt.WaitParallel, "GOMP_parallel_end": omprt.WaitParallel,
		"__kmpc_fork_call": omprt.WaitNone, "GOMP_critical_start": omprt.WaitNone,
	} {
		assert.Equal(t, want, r.Wait(fn), fn)
	}
}
