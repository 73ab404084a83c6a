package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestBacktraceFlag: -bt -json gives every thread a frames list whose
// frames carry pc, function, file, line, task and runtime; the stopper's
// reaches stopme in the fixture's source; the text view prints gdb-like
// frames with task markers and groups threads by stack.
func TestBacktraceFlag(t *testing.T) {
	fixtures.Runtime(t)
	stop := fixtures.Core(t, fixtures.Tasks)
	code, out, errOut := execTool(context.Background(), "-json", "-bt", "core", stop.Exe, stop.Core)
	require.Equal(t, 0, code, errOut)
	var s struct {
		Threads []struct {
			LWP    uint64           `json:"lwp"`
			Frames []map[string]any `json:"frames"`
		} `json:"threads"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.Len(t, s.Threads, len(stop.Truth.Threads))
	for _, th := range s.Threads {
		require.NotEmpty(t, th.Frames, "thread %d", th.LWP)
		for _, k := range []string{"pc", "function", "file", "line", "task", "runtime"} {
			assert.Contains(t, th.Frames[0], k, "thread %d frame 0", th.LWP)
		}
		if th.LWP == uint64(stop.Truth.StopTID) {
			assert.Equal(t, "stopme", th.Frames[0]["function"])
			assert.True(t, strings.HasSuffix(th.Frames[0]["file"].(string), "fixture.h"))
		}
	}

	code, out, errOut = execTool(context.Background(), "-bt", "-threads", "core", stop.Exe, stop.Core)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "; stack stopme < fx_stop < ", "groups by stack")
	assert.Regexp(t, `#0 +0x[0-9a-f]{16} in stopme \(\S+fixture\.h:\d+\)`, out)
	assert.Contains(t, out, "waiting in taskwait) --", "a task suspended in its taskwait")
	assert.Regexp(t, `__kmpc_omp_taskwait \(\S+\)  \[runtime, \d+ frames\]`, out, "runtime frames folded")
	code, full, errOut := execTool(context.Background(), "-bt", "-bt-runtime", "-threads", "core", stop.Exe, stop.Core)
	require.Equal(t, 0, code, errOut)
	assert.Greater(t, strings.Count(full, "\n"), strings.Count(out, "\n"), "-bt-runtime shows more frames")
	assert.Regexp(t, `in __kmpc_omp_taskwait \(\S+\)  \[runtime\]`, full, "unfolded runtime frames")
}

// TestBacktraceFlagGomp: on the system's libgomp (no debug information),
// -bt places each thread's frames in its tasks (read from the stacks): the
// frame that recorded a thread's truth, in the fixture's source, is
// printed under its current task's marker with the task's level, never
// "outside the thread's tasks"; a task suspended in its taskwait and one
// whose region's primary waits in a barrier say what they wait in.
func TestBacktraceFlagGomp(t *testing.T) {
	stop := fixtures.CoreWith(t, fixtures.SystemGomp(t), fixtures.Tasks)
	out := runTool(t, "-bt", "-threads", "core", "-debug-dir", t.TempDir(), stop.Exe, stop.Core)
	for _, th := range stop.Truth.Threads {
		block := threadBlocks(t, out)[th.TID]
		require.NotEmpty(t, block, "thread %d", th.TID)
		_, bt, ok := strings.Cut(block, "  backtrace:\n")
		require.True(t, ok, "thread %d has a backtrace:\n%s", th.TID, block)
		// The marker above the thread's innermost frame in the
		// fixture's source.
		marker := ""
		for _, line := range strings.Split(bt, "\n") {
			if strings.HasPrefix(line, "    -- ") {
				marker = line
			}
			if strings.Contains(line, "/testdata/tasks.c:") || strings.Contains(line, "/testdata/fixture.h:") {
				break
			}
		}
		assert.Regexp(t, `^    -- task/0x[0-9a-f]+(/L\d+)? \(level `+strconv.Itoa(th.Level)+`[,)]`, marker, "thread %d:\n%s", th.TID, bt)
	}
	assert.Contains(t, out, "waiting in taskwait) --", "a task suspended in its taskwait")
	assert.Contains(t, out, "waiting in barrier) --", "the barrier's thread")
}
