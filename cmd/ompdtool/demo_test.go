package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/shipped"
)

// TestDemo: demo reads the shipped cores as core reads them, from a
// checkout (the test runs in one) with nothing installed: by default LLVM's
// (states recorded, every thread and its nest as the program saw them),
// by name libgomp's (as TestCoreGomp checks the inspector on a core with
// its debug information); an unknown name is a usage error naming those
// there are, and the file options it gives itself are refused.
func TestDemo(t *testing.T) {
	ctx := context.Background()
	code, out, errOut := execTool(ctx, "demo", "-threads")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "the nested fixture on libomp 19.1.7")
	assert.Contains(t, out, "6 threads in 3 groups:\n")
	assert.Regexp(t, `(?m)^  2 threads wait_barrier_explicit in main.omp_outlined_debug__.omp_outlined `, out)
	checkThreadsText(t, out, shipped.Get(t, "libomp-nested").Truth, "omp_outlined", "")

	code, out, errOut = execTool(ctx, "demo", "-threads", "-vars", "-breakpoints", "libgomp14-nested")
	require.Equal(t, 0, code, errOut)
	checkGompText(t, out, shipped.Get(t, "libgomp14-nested").Truth, true)

	code, _, errOut = execTool(ctx, "demo", "nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, `no shipped core "nope" (there are libgomp12-nested, libgomp14-nested, libomp-nested, `)
	code, _, errOut = execTool(ctx, "demo", "-sysroot", t.TempDir())
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "do not apply to demo")
}

// TestDemoInREADME: what the README shows of "ompdtool demo" is what it
// prints (standard error, then standard output).
func TestDemoInREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	const prompt = "```\n$ ompdtool demo\n"
	_, after, ok := strings.Cut(string(readme), prompt)
	require.True(t, ok, "README.md has no %q block", prompt)
	shown, _, ok := strings.Cut(after, "```\n")
	require.True(t, ok)
	code, out, errOut := execTool(context.Background(), "demo")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, shown, errOut+out)
}
