package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/summary"
)

// TestPrintStarting: a thread the runtime is still starting (no pthread
// id, so no LWP, and no thread number yet; the snapshot holds zeros for
// them, as target/delve's TestThreadStarting sees on a real runtime) is
// printed as starting, with "-" for its LWP and thread number in the
// -threads table, never as "lwp 0 ... thread_num 0"; a worker waiting for
// its first region (no thread number: ThreadSnapshot.NumUnknown) has "-"
// for its thread number.
func TestPrintStarting(t *testing.T) {
	s := &ompd.Snapshot{
		Runtime: "LLVM libomp", OpenMPVersion: 201811, LayoutSource: ompd.LayoutDWARF, StateTracking: true,
		Threads: []ompd.ThreadSnapshot{
			{ID: "thread/0@0x1000", GTID: 0, LWP: 4242, Pthread: 0x7f00, State: ompd.StateWorkSerial},
			{ID: "thread/1@0x2000", GTID: 1, Starting: true, State: ompd.StateOverhead},
			{ID: "thread/2@0x3000", GTID: 2, LWP: 4243, Pthread: 0x7f01, NumUnknown: true, State: ompd.StateWaitBarrierImplicitParallel},
		},
		Errors: []string{"thread/1@0x2000 thread num: starting"},
	}
	var b bytes.Buffer
	require.NoError(t, printText(&b, s, summary.Of(0, s, summary.Options{}), view{threads: true}))
	out := b.String()
	t.Log(out)
	assert.Contains(t, out, "  gtid 0    lwp 4242     thread_num 0    work_serial\n")
	assert.Contains(t, out, "  gtid 1    lwp -        thread_num -    starting\n")
	assert.Contains(t, out, "  gtid 2    lwp 4243     thread_num -    wait_barrier_implicit_parallel\n", "a worker waiting for its first region has no thread number")
	assert.Contains(t, out, "Thread gtid 1 (starting: no pthread id yet):")
	assert.NotContains(t, out, "lwp 0 ")
	assert.NotContains(t, out, "pthread 0x0")
}
