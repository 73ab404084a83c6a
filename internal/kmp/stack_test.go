package kmp

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ompd-go/ompd/internal/omprt"
)

// TestWait: the entry points of libomp a task waits in, its GOMP_*
// ones for programs compiled by GCC included.
func TestWait(t *testing.T) {
	var rt Runtime
	for fn, want := range map[string]omprt.Wait{
		"__kmpc_omp_taskwait": omprt.WaitTaskwait, "__kmpc_end_taskgroup": omprt.WaitTaskgroup,
		"__kmpc_barrier": omprt.WaitBarrier, "__kmp_barrier_template<(bool)0>": omprt.WaitBarrier,
		"__kmpc_fork_call": omprt.WaitParallel, "__kmp_fork_call": omprt.WaitParallel,
		"GOMP_parallel": omprt.WaitParallel, "GOMP_taskwait": omprt.WaitTaskwait,
		"__kmpc_critical": omprt.WaitNone, "": omprt.WaitNone,
	} {
		assert.Equal(t, want, rt.Wait(fn), fn)
	}
}
