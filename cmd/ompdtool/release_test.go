package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/objfile"
)

// cxxReleases are the LLVM releases whose runtime compiles its OMPD
// breakpoint functions and ompd_dll_locations_valid as C++ functions
// (_Z22ompd_bp_parallel_beginv, ...): 13 to 16. The first and the last
// are built for the tests (scripts/test.sh); OMPD_GO_ALL_RELEASES=1 adds
// the others (each built the first time, about two minutes).
func cxxReleases() []int {
	if os.Getenv("OMPD_GO_ALL_RELEASES") == "1" {
		return []int{13, 14, 15, 16}
	}
	return []int{13, 16}
}

// TestReleaseBreakpoints: on the project's builds of LLVM 13-16 (with
// debug information), -breakpoints lists the breakpoint functions under
// their C++ names, and the events mode watches a program from the
// runtime's start to its end: 13 regions begin and end in the serialized
// fixture, as on LLVM 19 (TestEventsSerialized), and from LLVM 14 on every
// region and task of the events fixture matches what it recorded
// (TestEventsMatchProgram). LLVM 13 lowers a serial team's t_level before
// it calls ompd_bp_parallel_end at the end of its outermost level, whose
// region its events then leave unavailable.
func TestReleaseBreakpoints(t *testing.T) {
	for _, major := range cxxReleases() {
		t.Run(fmt.Sprint(major), func(t *testing.T) {
			info := fixtures.ReleaseRuntime(t, major)
			stop := fixtures.CoreWith(t, info, fixtures.Nested)
			out := runTool(t, "core", "-breakpoints", stop.Exe, stop.Core)
			for _, name := range []string{"ompd_bp_parallel_begin", "ompd_bp_parallel_end", "ompd_bp_task_begin",
				"ompd_bp_task_end", "ompd_bp_thread_begin", "ompd_bp_thread_end", "ompd_dll_locations_valid"} {
				assert.Contains(t, out, objfile.CXXFuncName(name))
			}

			exe := fixtures.BuildWith(t, fixtures.Serialized, info)
			dir := t.TempDir()
			args := []string{"events"}
			for _, kv := range append(fixtures.OMPEnv(fixtures.Serialized),
				"OMPD_FIXTURE_STDOUT="+filepath.Join(dir, "stdout"),
				"OMPD_FIXTURE_STDERR="+filepath.Join(dir, "stderr")) {
				args = append(args, "-env", kv)
			}
			out = runTool(t, append(args, "--", exe)...)
			count := func(prefix string) int {
				return strings.Count("\n"+out, "\n"+prefix+" ")
			}
			assert.Equal(t, 13, count("parallel-begin"), out)
			assert.Equal(t, 13, count("parallel-end"))
			assert.Equal(t, 4, count("thread-begin"))
			assert.Contains(t, out, "exited with status 0")
			if major >= 14 {
				eventsMatchProgram(t, info)
			}
		})
	}
}
