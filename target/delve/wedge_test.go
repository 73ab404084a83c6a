package delve

import (
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestWedgeDetection checks the two halves of the workaround for Delve's
// lost halting wait (wedge.go) on a real stopped process: the detector
// sees a thread blocked in wait4 while every thread of the program is in
// ptrace-stop (and only then), and Delve's ptrace thread is reachable and
// is the tracer (PTRACE_GETSIGINFO works from it, not from this thread).
// The wedge itself is a race inside Delve; cmd/ompdtool's
// TestEventsSerialized met it about once in 20-200 runs before the nudge.
func TestWedgeDetection(t *testing.T) {
	r := newRun(t, fixtures.Nested)
	p := r.launch(t)
	ctx := testContext(t)
	// Stop in the middle of the program, with its team running.
	_, err := p.RunToFunction(ctx, "stopme")
	require.NoError(t, err)

	// A thread of ours blocked in wait4 (on a child that sleeps).
	child := exec.Command("sleep", "60")
	require.NoError(t, child.Start())
	tidc := make(chan int, 1)
	waited := make(chan struct{})
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tidc <- syscall.Gettid()
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(child.Process.Pid, &ws, 0, nil)
		close(waited)
	}()
	tid := <-tidc
	require.Eventually(t, func() bool { return wedged(p.pid, tid) }, 10*time.Second, 10*time.Millisecond,
		"a thread blocked in wait4 while the whole program is in ptrace-stop")
	assert.False(t, wedged(p.pid, syscall.Gettid()), "this thread is not in wait4")
	assert.False(t, haltingWaitInStack(), "no goroutine waits in Delve's halting wait")
	require.NoError(t, child.Process.Kill())
	<-waited
	assert.False(t, wedged(p.pid, tid), "the thread left wait4")

	run, err := ptraceRunner(p.dt)
	require.NoError(t, err)
	getsiginfo := func() syscall.Errno {
		var si [128]byte
		_, _, e := syscall.Syscall6(syscall.SYS_PTRACE, syscall.PTRACE_GETSIGINFO, uintptr(p.pid), 0, uintptr(unsafe.Pointer(&si[0])), 0, 0)
		return e
	}
	var onTracer syscall.Errno
	run(func() { onTracer = getsiginfo() })
	assert.Equal(t, syscall.Errno(0), onTracer, "PTRACE_GETSIGINFO on Delve's ptrace thread")
	runtime.LockOSThread()
	assert.Equal(t, syscall.ESRCH, getsiginfo(), "ptrace from a thread that is not the tracer")
	runtime.UnlockOSThread()

	// The process goes on as before.
	var ee *ExitError
	require.ErrorAs(t, p.Continue(ctx), &ee)
	assert.Equal(t, 0, ee.Status)
	assert.Zero(t, p.nudges.Load(), "no nudge when Delve was not lost")
}
