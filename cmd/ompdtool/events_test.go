package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
)

// TestEventsMatchProgram runs events -json on the events fixture (nested
// serialized regions, nested active regions, tasks) and checks every
// region's and task's begin and end lines against what the program
// recorded (ompdtest.CheckEvents): the same function, level and team size
// at both ends, or the reason there is none; then the same run in text.
func TestEventsMatchProgram(t *testing.T) {
	text := eventsMatchProgram(t, fixtures.Runtime(t))
	assert.Contains(t, text, "(function unavailable)")
	assert.Contains(t, text, "level 4, 1 thread main.omp_outlined_debug__")
}

// eventsMatchProgram runs the events fixture built against the runtime
// info describes under events -json, checks its events with
// ompdtest.CheckEvents, and returns the text of a second run, whose lines
// it counts against the first's.
func eventsMatchProgram(t *testing.T, info fixtures.RuntimeInfo) string {
	t.Helper()
	exe := fixtures.BuildWith(t, fixtures.Events, info)
	dir := t.TempDir()
	truthPath := filepath.Join(dir, "truth.json")
	var env []string
	for _, kv := range append(fixtures.OMPEnv(fixtures.Events), "OMPD_FIXTURE_TRUTH="+truthPath,
		"OMPD_FIXTURE_STDOUT="+filepath.Join(dir, "stdout"), "OMPD_FIXTURE_STDERR="+filepath.Join(dir, "stderr")) {
		env = append(env, "-env", kv)
	}
	out := runTool(t, append(append([]string{"-json", "events"}, env...), "--", exe)...)

	var events []ompdtest.Event
	exited := false
	dec := json.NewDecoder(strings.NewReader(out))
	for dec.More() {
		var l struct {
			eventLine
			ExitStatus *int `json:"exit_status"`
		}
		require.NoError(t, dec.Decode(&l))
		if l.ExitStatus != nil {
			assert.Zero(t, *l.ExitStatus)
			exited = true
			continue
		}
		ev := ompdtest.Event{Kind: l.Event, LWP: int(l.LWP), Region: l.Parallel, Task: l.Task,
			Function: l.FunctionPC, NoFunction: l.NoFunction, Unavailable: l.Unavailable}
		if l.Level != nil && l.NumThreads != nil {
			ev.Level, ev.Size = *l.Level, *l.NumThreads
		}
		if (l.Parallel != "" || l.Task != "") && l.FunctionPC == 0 {
			assert.NotEmpty(t, l.NoFunction, "a line without its function says why: %+v", l)
		}
		events = append(events, ev)
	}
	require.True(t, exited, "the program's exit status ends the output")

	tr, err := fixtures.LoadTruth(truthPath)
	require.NoError(t, err)
	require.NoError(t, tr.Validate())
	fns, err := tr.ConstructFunctions(exe)
	require.NoError(t, err)
	ompdtest.CheckEvents(t, tr, fns, events)

	// The text has a line per event too.
	text := runTool(t, append(append([]string{"events"}, env...), "--", exe)...)
	for _, kind := range []string{"parallel-begin", "parallel-end", "task-begin", "task-end"} {
		n := 0
		for _, ev := range events {
			if ev.Kind == kind {
				n++
			}
		}
		assert.Equal(t, n, strings.Count("\n"+text, "\n"+kind+" "), "%s lines", kind)
	}
	return text
}
