package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/shipped"
)

var snakeCase = regexp.MustCompile(`^[a-z][a-z0-9]*(_[a-z0-9]+)*$`)

// checkKeys asserts that every object key in v is snake_case and returns
// how many keys it saw.
func checkKeys(t *testing.T, path string, v any) int {
	n := 0
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			assert.Regexp(t, snakeCase, k, "key %s.%s", path, k)
			n += 1 + checkKeys(t, path+"."+k, x)
		}
	case []any:
		for _, x := range v {
			n += checkKeys(t, path+"[]", x)
		}
	}
	return n
}

// jsonKeys decodes every JSON value of out (one, or one a line), checks
// their keys with checkKeys and returns the values and how many keys
// they had.
func jsonKeys(t *testing.T, what, out string) ([]any, int) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(out))
	var vs []any
	n := 0
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, what)
		vs = append(vs, v)
		n += checkKeys(t, what, v)
	}
	require.NotEmpty(t, vs, what)
	return vs, n
}

// hasKey says whether some object in v has key k.
func hasKey(v any, k string) bool {
	switch v := v.(type) {
	case map[string]any:
		for kk, x := range v {
			if kk == k || hasKey(x, k) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hasKey(x, k) {
				return true
			}
		}
	}
	return false
}

// TestJSONSchema: every key of the JSON output is snake_case: snapshot,
// summary, summary of several cores, backtraces (-bt: frames, their
// inlined calls, stacks in the summary), collect's records and merged
// classes, and merge's output (which job prints too, through the same
// printMerged), display variables and breakpoints included.
func TestJSONSchema(t *testing.T) {
	fixtures.Runtime(t)
	stop := fixtures.Core(t, fixtures.ICVs)
	for _, c := range []struct {
		args []string
		keys []string // keys that must occur somewhere
	}{
		{[]string{"-json", "core", stop.Exe, stop.Core}, []string{"display_vars", "breakpoints"}},
		{[]string{"-json", "-summary", "core", stop.Exe, stop.Core}, []string{"groups"}},
		{[]string{"-json", "core", stop.Exe, stop.Core, stop.Core}, []string{"groups", "ranks"}},
		{[]string{"-json", "-bt", "core", stop.Exe, stop.Core}, []string{"frames", "function", "task"}},
		{[]string{"-json", "-bt", "-bt-runtime", "core", stop.Exe, stop.Core}, []string{"frames"}},
		{[]string{"-json", "-bt", "-summary", "core", stop.Exe, stop.Core}, []string{"stack"}},
		{[]string{"-json", "merge", "-exe", stop.Exe, stop.Core}, []string{"summary", "groups"}},
	} {
		code, out, errOut := execTool(context.Background(), c.args...)
		require.Equal(t, 0, code, errOut)
		vs, n := jsonKeys(t, strings.Join(c.args, " "), out)
		require.Len(t, vs, 1, "%v: one value", c.args)
		assert.Greater(t, n, 10, "%v", c.args)
		for _, k := range c.keys {
			assert.True(t, hasKey(vs[0], k), "%v has %s", c.args, k)
		}
	}

	// collect's records (a line per rank, with frames), its merged
	// classes, and merge's output on the records.
	cmd := holdNested(t)
	records := runTool(t, "-q", "collect", strconv.Itoa(cmd.Process.Pid))
	vs, _ := jsonKeys(t, "collect", records)
	require.Len(t, vs, 1)
	for _, k := range []string{"rank", "pid", "threads", "frames", "stack"} {
		assert.True(t, hasKey(vs[0], k), "collect's record has %s", k)
	}
	_, _ = jsonKeys(t, "collect -merged", runTool(t, "-q", "collect", "-merged", strconv.Itoa(cmd.Process.Pid)))
	file := filepath.Join(t.TempDir(), "records.json")
	require.NoError(t, os.WriteFile(file, []byte(records), 0o644))
	vs, _ = jsonKeys(t, "merge", runTool(t, "-q", "-json", "merge", file))
	require.Len(t, vs, 1)
	assert.True(t, hasKey(vs[0], "summary"))

	_, out, _ := execTool(context.Background(), "-json", "core", stop.Exe, stop.Core)
	var s struct {
		DisplayVars []map[string]any `json:"display_vars"`
		Breakpoints []map[string]any `json:"breakpoints"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	require.NotEmpty(t, s.DisplayVars)
	require.NotEmpty(t, s.Breakpoints)
	for _, k := range []string{"name", "value", "raw", "corrected", "stale"} {
		assert.Contains(t, s.DisplayVars[0], k)
	}
	for _, k := range []string{"name", "addr"} {
		assert.Contains(t, s.Breakpoints[0], k)
	}
}

// TestDisplayVarsText: -vars marks what only the runtime's start-up text
// gives, and shows what the runtime left out or recorded wrongly.
func TestDisplayVarsText(t *testing.T) {
	fixtures.Runtime(t)
	stop := fixtures.Core(t, fixtures.ICVs)
	code, out, errOut := execTool(context.Background(), "core", "-vars", stop.Exe, stop.Core)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^  OMP_WAIT_POLICY=PASSIVE +\(the runtime recorded nothing\)$`, out)
	assert.Regexp(t, `(?m)^  KMP_BLOCKTIME=0ms +\(the runtime recorded 200ms\)$`, out)
	assert.Regexp(t, `(?m)^  OMP_SCHEDULE='dynamic,7' +\(the runtime recorded 'static'\)$`, out)
	assert.Regexp(t, `(?m)^  KMP_AFFINITY='.*,compact,0,0' +\(the runtime recorded 'noverbose,warnings,disabled'\)$`, out)
	assert.Regexp(t, `(?m)^  KMP_LOCK_KIND=queuing +\(the runtime recorded default\)$`, out)
	// KMP_ABORT_DELAY=3 (seconds) is kept in milliseconds and printed so.
	assert.Regexp(t, `(?m)^  KMP_ABORT_DELAY=3000 +\(the runtime recorded 0\)$`, out)
	assert.Regexp(t, `(?m)^  KMP_SPIN_BACKOFF_PARAMS='2048,50' +\(the runtime recorded '4096,100'\)$`, out)
	assert.NotContains(t, out, "may be stale")
}

// TestDisplayVarsStaleText: without the runtime's DWARF (the shipped core's
// runtime has none) the variables whose state sits in structures only the
// DWARF describes keep the start-up text, and say so in text and JSON.
func TestDisplayVarsStaleText(t *testing.T) {
	f := shipped.Get(t, "libomp-nested").Unpack(t, false)
	args := append(append([]string{"core", "-vars"}, f.ToolFlags(t)...), f.Program, f.Core)
	code, out, errOut := execTool(context.Background(), args...)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^  KMP_AFFINITY='.*' +\(start-up text, may be stale\)$`, out)
	assert.Regexp(t, `(?m)^  KMP_ABORT_DELAY=0$`, out)

	code, out, errOut = execTool(context.Background(), append([]string{"-json"}, args...)...)
	require.Equal(t, 0, code, errOut)
	var s struct {
		DisplayVars []struct {
			Name  string `json:"name"`
			Stale bool   `json:"stale"`
		} `json:"display_vars"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &s))
	stale := map[string]bool{}
	for _, v := range s.DisplayVars {
		stale[v.Name] = v.Stale
	}
	assert.True(t, stale["KMP_AFFINITY"], "KMP_AFFINITY stale in JSON")
	assert.False(t, stale["KMP_ABORT_DELAY"], "KMP_ABORT_DELAY stale in JSON")
}
