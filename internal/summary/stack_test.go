package summary_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/summary"
)

// TestStackKey: runtime runs fold into the call the program made, frames
// after the thread's tasks are left out, and nameless code is named by its
// object, not by an address that differs between processes.
func TestStackKey(t *testing.T) {
	frames := []ompd.FrameSnapshot{
		{PC: 0x7f0000001000, Object: "/usr/lib/x86_64-linux-gnu/libc.so.6", InRuntimeCall: true, Task: "task/1", Level: 1},
		{PC: 0x7f0000002000, Function: "__kmp_barrier", Runtime: true, InRuntimeCall: true, Task: "task/1", Level: 1},
		{PC: 0x7f0000003000, Function: "__kmpc_barrier", Runtime: true, InRuntimeCall: true, Task: "task/1", Level: 1},
		{PC: 0x555500001000, Function: "work", Task: "task/1", Level: 1},
		{PC: 0x555500002000, Object: "/opt/lib/libuser.so", Task: "task/1", Level: 1},
		{PC: 0x7f0000004000, Function: "__kmp_invoke_microtask", Runtime: true},
		{PC: 0x7f0000005000, Function: "start_thread"},
	}
	assert.Equal(t, []string{"__kmpc_barrier", "work", "?? in libuser.so"}, summary.StackKey(frames))
	// Without task placement (no task frames), every frame counts.
	for i := range frames {
		frames[i].Task, frames[i].InRuntimeCall = "", false
	}
	assert.Equal(t, []string{"?? in libc.so.6", "__kmpc_barrier", "work", "?? in libuser.so", "__kmp_invoke_microtask", "start_thread"},
		summary.StackKey(frames))
}
