package delve

import (
	"context"
	"os"
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
