package delve

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestLaunchAttachContext: Launch and Attach take their context as every
// call that can block does: done before they start, they return its error
// and leave no process behind, nor attached.
func TestLaunchAttachContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := Launch(ctx, []string{"sleep", "60"})
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, p)

	cmd := fixtures.Sleeper(t, time.Minute)
	p, err = Attach(ctx, cmd.Process.Pid)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, p)
	// Not attached: the process is not traced.
	assert.Equal(t, "0", tracerPid(t, cmd.Process.Pid))
	require.NoError(t, cmd.Process.Signal(syscall.Signal(0)))
}

// tracerPid returns the TracerPid line of /proc/PID/status.
func tracerPid(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "TracerPid:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatalf("no TracerPid in /proc/%d/status", pid)
	return ""
}

// TestAttachBounded: a program whose only thread is in vfork cannot stop
// until its child exits, so Delve's attach waits that long; Attach
// returns at its context's deadline all the same, and the program, let
// go once that attach ends, runs on to its end, traced by no one.
func TestAttachBounded(t *testing.T) {
	fixtures.Watchdog(t, fixtures.LiveBound())
	fixtures.RequireTool(t, "gcc")
	dir := t.TempDir()
	src, exe := filepath.Join(dir, "vfork.c"), filepath.Join(dir, "vfork")
	// The child sleeps 5 s before it exits: its parent waits in vfork.
	require.NoError(t, os.WriteFile(src, []byte(`#include <sys/wait.h>
#include <unistd.h>
int main(void) {
	pid_t c = vfork();
	if (c == 0) { sleep(5); _exit(0); }
	waitpid(c, 0, 0);
	return 0;
}
`), 0o644))
	out, err := exec.Command("gcc", "-o", exe, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	cmd := exec.Command(exe)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	pid := cmd.Process.Pid
	children := "/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children"
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(children)
		return err == nil && len(strings.TrimSpace(string(b))) > 0
	}, 10*time.Second, 5*time.Millisecond, "the program's vfork")

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	p, err := Attach(ctx, pid)
	took := time.Since(start)
	assert.Nil(t, p)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "did not all stop in time")
	assert.Less(t, took, 3*time.Second, "Attach outlasted its context")

	// No wait before it is traced by no one (a wait for a traced child
	// takes the stops Delve waits for): it ends once its child has.
	require.Eventually(t, func() bool { return zombie(pid) }, 30*time.Second, 20*time.Millisecond,
		"the program did not end after its child (TracerPid %s)", tracerPid(t, pid))
	require.NoError(t, cmd.Wait())
}
