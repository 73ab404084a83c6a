package main

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/shipped"
)

// TestShippedCores runs the inspector on every real core shipped in
// testdata/cores (internal/shipped), with nothing installed, given the
// core's files with -sysroot and -file-map as for a core copied off
// another machine: every thread, its number, region nest, functions and
// ICVs as the program saw them; libgomp's waits inferred from the stacks,
// with and without its debug information; LLVM's states as the runtime
// recorded them, or inferred from the stacks for a runtime without OMPD
// support, which then has no display variables or breakpoints; and, for a runtime the
// library cannot read (LLVM's without OMPD support or debug
// information), exit 1 naming why, and -json the same snapshot data.
func TestShippedCores(t *testing.T) {
	shipped.Each(t, func(t *testing.T, c *shipped.Core, o shipped.Opening) {
		f := c.Unpack(t, o.Debug)
		files := append(f.ToolFlags(t), "-debug-dir", t.TempDir(), f.Program, f.Core)
		code, out, errOut := execTool(context.Background(), append([]string{"core", "-threads", "-vars", "-breakpoints"}, files...)...)
		if o.Layout == "" {
			assert.Equal(t, 1, code, out)
			assert.Contains(t, errOut, "incompatible")
			return
		}
		require.Equal(t, 0, code, errOut)
		switch {
		case c.Runtime == shipped.GOMP:
			checkGompText(t, out, c.Truth, o.Debug)
		case c.Tracking():
			assert.Contains(t, out, "layout from OMPD tables, state tracking on")
			assert.Contains(t, out, "6 threads in 3 groups:\n")
			for _, st := range []string{"work_parallel", "wait_barrier_explicit", "wait_lock"} {
				assert.Regexp(t, "(?m)^  2 threads "+st+" in main.omp_outlined_debug__.omp_outlined ", out)
			}
			assert.Regexp(t, `Breakpoints:\n  ompd_bp_`, out)
			checkThreadsText(t, out, c.Truth, "omp_outlined", "")
		default:
			assert.Contains(t, out, "layout from DWARF, states inferred from the stacks")
			assert.Contains(t, out, "6 threads in 4 groups:\n")
			for _, g := range []string{"2 threads work_parallel", "2 threads wait_barrier_explicit", "1 thread wait_lock", "1 thread wait_critical"} {
				assert.Regexp(t, "(?m)^  "+g+" in main.omp_outlined_debug__.omp_outlined ", out)
			}
			assert.Regexp(t, `Display control variables:\n  none: the runtime is built without OMPD support`, out)
			checkThreadsText(t, out, c.Truth, "omp_outlined", "")
		}

		// -json: the same threads, numbers and nests.
		code, out, errOut = execTool(context.Background(), append([]string{"-json", "core"}, files...)...)
		require.Equal(t, 0, code, errOut)
		var snap struct {
			Threads []struct {
				LWP       int `json:"lwp"`
				ThreadNum int `json:"thread_num"`
				Parallel  []struct {
					Level      int `json:"level"`
					NumThreads int `json:"num_threads"`
				} `json:"parallel"`
			} `json:"threads"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &snap), out)
		require.Len(t, snap.Threads, len(c.Truth.Threads))
		for _, th := range snap.Threads {
			tr := c.Truth.ThreadByTID(th.LWP)
			require.NotNil(t, tr, "thread %d", th.LWP)
			assert.Equal(t, tr.ThreadNum, th.ThreadNum, "thread %d", th.LWP)
			require.Len(t, th.Parallel, tr.Level+1, "thread %d", th.LWP)
			for i, p := range th.Parallel {
				assert.Equal(t, tr.Level-i, p.Level)
				assert.Equal(t, tr.Ancestors[p.Level].TeamSize, p.NumThreads, "thread %d, level %d", th.LWP, p.Level)
			}
		}
	})
}
