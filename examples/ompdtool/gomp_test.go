package main

import (
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestCoreGomp: the inspector on a core of a gcc program on the system's
// libgomp (no debug package) prints every thread with its region nest and
// task ICVs as the program saw them; on a libgomp with debug information
// it also prints states, region functions and display variables.
func TestCoreGomp(t *testing.T) {
	for _, c := range []struct {
		name  string
		info  func(testing.TB) fixtures.RuntimeInfo
		debug bool
	}{
		{"system", func(t testing.TB) fixtures.RuntimeInfo { return fixtures.SystemGomp(t) }, false},
		{"debug", func(t testing.TB) fixtures.RuntimeInfo { return fixtures.GompRuntime(t, fixtures.GompVersions[0]) }, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			stop := fixtures.CoreWith(t, c.info(t), fixtures.Nested)
			out := runTool(t, "core", "-threads", "-vars", "-debug-dir", t.TempDir(), stop.Exe, stop.Core)
			assert.Contains(t, out, "GNU libgomp")
			assert.Contains(t, out, "states inferred from the stacks")
			for _, th := range stop.Truth.Threads {
				// "Thread gtid N (lwp N, ...)" then its regions.
				re := regexp.MustCompile(`(?s)Thread gtid \d+ \(lwp ` + strconv.Itoa(th.TID) + `,.*?level 2  active level 2  2 threads  (\S+).*?level 1  active level 1  3 threads  (\S+).*?nthreads-var=(\d+)`)
				m := re.FindStringSubmatch(out)
				require.NotNil(t, m, "thread %d with its nest:\n%s", th.TID, out)
				assert.Contains(t, m[1], "._omp_fn.", "the inner region's function")
				assert.Contains(t, m[2], "._omp_fn.", "the outer region's function")
				assert.Equal(t, strconv.Itoa(th.MaxThreads), m[3], "nthreads-var of thread %d", th.TID)
			}
			if c.debug {
				assert.Contains(t, out, "wait_barrier_explicit")
				assert.Contains(t, out, "OMP_NUM_THREADS")
			}
			assert.Contains(t, out, "work_parallel")
		})
	}
}
