package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
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

// TestJSONSchema: every key of the JSON output (snapshot, summary, job
// summary) is snake_case, display variables and breakpoints included.
func TestJSONSchema(t *testing.T) {
	fixtures.Runtime(t)
	stop := fixtures.Core(t, fixtures.ICVs)
	for _, args := range [][]string{
		{"-json", "core", stop.Exe, stop.Core},
		{"-json", "-summary", "core", stop.Exe, stop.Core},
		{"-json", "core", stop.Exe, stop.Core, stop.Core},
	} {
		code, out, errOut := execTool(context.Background(), args...)
		require.Equal(t, 0, code, errOut)
		var v map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &v))
		assert.Greater(t, checkKeys(t, "", v), 10, "%v", args)
	}
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
	assert.Regexp(t, `(?m)^  KMP_ABORT_DELAY=0 +\(start-up text, may be stale\)$`, out)
}
