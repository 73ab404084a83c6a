package main

import (
	"bytes"
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

// fixtureArgs builds fixture name and returns -env flags with its
// settings (sending its output to files of the test) and its path.
func fixtureArgs(t *testing.T, name string) ([]string, string) {
	t.Helper()
	fixtures.Watchdog(t, fixtures.LiveBound())
	fixtures.Runtime(t)
	exe := fixtures.Build(t, name)
	dir := t.TempDir()
	var args []string
	for _, kv := range append(fixtures.OMPEnv(name),
		"OMPD_FIXTURE_STDOUT="+filepath.Join(dir, "stdout"),
		"OMPD_FIXTURE_STDERR="+filepath.Join(dir, "stderr")) {
		args = append(args, "-env", kv)
	}
	return args, exe
}

func ptraceUnavailable(t *testing.T, err error) {
	t.Helper()
	if err != nil && strings.Contains(err.Error(), "operation not permitted") {
		fixtures.Unavailable(t, "ptrace not allowed: %v", err)
	}
}

func runTool(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, stderr bytes.Buffer
	err := run(ctx, args, &out, &stderr)
	ptraceUnavailable(t, err)
	require.NoError(t, err, "ompdtool %s\n%s", strings.Join(args, " "), out.String())
	return out.String()
}

// TestLaunchNested runs the launch mode on the nested fixture: it stops in
// stopme and prints six threads, each in an inner region at level 2 (team
// of 2) inside the outer region at level 1 (team of 3).
func TestLaunchNested(t *testing.T) {
	env, exe := fixtureArgs(t, fixtures.Nested)
	out := runTool(t, append(append([]string{"launch", "-threads"}, env...), "--", exe)...)
	t.Log(out)
	assert.Contains(t, out, "Stopped at stopme")
	assert.Contains(t, out, "state tracking on")
	assert.Contains(t, out, "Threads (6):")
	assert.Equal(t, 6, strings.Count(out, "level 2  active level 2  2 threads"), "inner regions")
	assert.Equal(t, 6, strings.Count(out, "level 1  active level 1  3 threads"), "outer region")
	assert.Equal(t, 6, strings.Count(out, "level 0  active level 0  1 thread "), "initial region")
	for _, st := range []string{"work_parallel", "wait_barrier_explicit", "wait_lock"} {
		assert.Contains(t, out, st)
	}
}

// TestLaunchBreak stops at another function than stopme, with -json.
func TestLaunchBreak(t *testing.T) {
	env, exe := fixtureArgs(t, fixtures.Nested)
	out := runTool(t, append(append([]string{"-json", "launch", "-break", "ompd_bp_parallel_begin"}, env...), "--", exe)...)
	assert.Contains(t, out, `"layout_source"`)
	assert.Contains(t, out, `"threads"`)
}

// TestEventsSerialized runs the events mode on the serialized fixture: 13
// parallel regions begin and end (see target/delve's
// TestWatchEventsSerialized for the count), and the program exits 0.
func TestEventsSerialized(t *testing.T) {
	env, exe := fixtureArgs(t, fixtures.Serialized)
	out := runTool(t, append(append([]string{"events"}, env...), "--", exe)...)
	t.Log(out)
	count := func(prefix string) int {
		n := 0
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, prefix+" ") {
				n++
			}
		}
		return n
	}
	assert.Equal(t, 13, count("parallel-begin"))
	assert.Equal(t, 13, count("parallel-end"))
	assert.Equal(t, 4, count("thread-begin"))
	assert.Contains(t, out, "level 5, 1 thread")
	assert.Contains(t, out, "exited with status 0")
}

// TestAttach runs the attach mode on the nested fixture held in stopme.
func TestAttach(t *testing.T) {
	cmd := holdNested(t)
	out := runTool(t, "attach", "-threads", strconv.Itoa(cmd.Process.Pid))
	assert.Contains(t, out, "Threads (6):")
	assert.Equal(t, 6, strings.Count(out, "level 2  active level 2  2 threads"))
	// Detached, the program still runs.
	assert.NoError(t, cmd.Process.Signal(syscall.Signal(0)))
}

// holdNested starts the nested fixture (with extra environment variables)
// and returns once it is held in stopme; it is killed at the end of the
// test (the tool leaves it held).
func holdNested(t *testing.T, extraEnv ...string) *exec.Cmd {
	t.Helper()
	fixtures.Runtime(t)
	return holdExe(t, fixtures.Build(t, fixtures.Nested), fixtures.Nested, extraEnv...)
}

// holdExe is holdNested for exe, a build of fixture name.
func holdExe(t *testing.T, exe, name string, extraEnv ...string) *exec.Cmd {
	t.Helper()
	fixtures.Watchdog(t, fixtures.LiveBound())
	dir := t.TempDir()
	ready := filepath.Join(dir, "ready")
	cmd := exec.Command(exe)
	cmd.Env = fixtures.Env(name, append([]string{"OMPD_FIXTURE_HOLD=1", "OMPD_FIXTURE_READY=" + ready,
		"OMPD_FIXTURE_STDOUT=" + filepath.Join(dir, "stdout"), "OMPD_FIXTURE_STDERR=" + filepath.Join(dir, "stderr")}, extraEnv...)...)
	require.NoError(t, cmd.Start())
	// No Wait before the kill: a wait for a traced child steals the
	// debugger's ptrace stops.
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(ready); err == nil {
			return cmd
		}
		require.True(t, time.Now().Before(deadline), "the fixture did not get ready")
		time.Sleep(20 * time.Millisecond)
	}
}
