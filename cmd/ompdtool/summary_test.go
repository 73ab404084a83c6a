package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestCoreSummary: by default the nested fixture's six threads print as
// three groups (the roles of the program's truth: two working, two in the
// inner barrier, two waiting for a lock), without the display variables
// and breakpoints, which come on request; -thread shows one thread.
func TestCoreSummary(t *testing.T) {
	fixtures.Runtime(t)
	stop := fixtures.Core(t, fixtures.Nested)
	code, out, errOut := execTool(context.Background(), "core", stop.Exe, stop.Core)
	require.Equal(t, 0, code, errOut)
	t.Log(out)
	nest := ` in main.omp_outlined_debug__.omp_outlined \(nested.c:(\d+)\), level 2, team of 2; in main.omp_outlined \(nested.c:(\d+)\), level 1, team of 3\n`
	assert.Contains(t, out, "6 threads in 3 groups:\n")
	for _, st := range []string{"work_parallel", "wait_barrier_explicit", "wait_lock"} {
		assert.Regexp(t, "  2 threads "+st+nest, out)
	}
	// The sources named are the two parallel constructs of nested.c.
	dir, err := fixtures.TestdataDir()
	require.NoError(t, err)
	src, err := os.ReadFile(filepath.Join(dir, "nested.c"))
	require.NoError(t, err)
	lines := strings.Split(string(src), "\n")
	m := regexp.MustCompile(nest).FindStringSubmatch(out)
	require.Len(t, m, 3)
	for _, n := range m[1:] {
		l, _ := strconv.Atoi(n)
		require.True(t, l >= 1 && l <= len(lines), "line %d", l)
		assert.Contains(t, lines[l-1], "#pragma omp parallel", "nested.c:%d", l)
	}
	for _, absent := range []string{"Display control variables", "Breakpoints:", "Thread gtid", "ICVs"} {
		assert.NotContains(t, out, absent)
	}

	_, out, _ = execTool(context.Background(), "core", "-vars", "-breakpoints", stop.Exe, stop.Core)
	assert.Contains(t, out, "\nDisplay control variables:\n  KMP_ABORT_DELAY=")
	assert.Contains(t, out, "\nBreakpoints:\n  ompd_bp_")
	assert.NotContains(t, out, "Thread gtid")

	code, out, errOut = execTool(context.Background(), "core", "-thread", "0", stop.Exe, stop.Core)
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, 1, strings.Count(out, "\nThread gtid "), out)
	assert.Contains(t, out, "\nThread gtid 0 (lwp "+strconv.Itoa(stop.Truth.Threads[0].TID))

	code, _, errOut = execTool(context.Background(), "core", "-thread", "999", stop.Exe, stop.Core)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "no OpenMP thread with global thread id 999")

	_, out, _ = execTool(context.Background(), "core", "-threads", stop.Exe, stop.Core)
	assert.Equal(t, 6, strings.Count(out, "\nThread gtid "))
	assert.Contains(t, out, "Threads (6):")
}

// TestCoreRanks: several cores are one job, rank i the i-th core: groups
// count threads over all ranks and name the ranks they come from.
func TestCoreRanks(t *testing.T) {
	fixtures.Runtime(t)
	four := fixtures.Core(t, fixtures.Many, "4")
	eight := fixtures.Core(t, fixtures.Many, "8")
	require.Equal(t, four.Exe, eight.Exe)
	args := []string{"core", four.Exe, four.Core, four.Core, eight.Core, four.Core, four.Core}
	code, out, errOut := execTool(context.Background(), args...)
	require.Equal(t, 0, code, errOut)
	t.Log(out)
	assert.Contains(t, out, "24 threads of 5 ranks (0-4) in 4 groups:\n")
	fn := `main.omp_outlined \(many.c:\d+\)`
	assert.Regexp(t, "  12 threads wait_barrier_explicit in "+fn+`, level 1, team of 4\n      ranks 0-1,3-4 \(e.g. rank 0 gtid 9\)\n`, out)
	assert.Regexp(t, "  7 threads wait_barrier_explicit in "+fn+`, level 1, team of 8\n      ranks 2 \(e.g. rank 2 gtid 9\)\n`, out)
	assert.Regexp(t, "  4 threads work_parallel in "+fn+`, level 1, team of 4\n      ranks 0-1,3-4 \(e.g. rank 0 gtid 0\)\n`, out)
	assert.Regexp(t, "  1 thread work_parallel in "+fn+`, level 1, team of 8\n      ranks 2 \(e.g. rank 2 gtid 0\)\n`, out)
	assert.Contains(t, errOut, "reading core 5 of 5")

	code, out, errOut = execTool(context.Background(), append([]string{"-json"}, args...)...)
	require.Equal(t, 0, code, errOut)
	var j struct {
		Summary struct {
			Threads int    `json:"threads"`
			Ranks   string `json:"ranks"`
			Groups  []struct {
				State   string `json:"state"`
				Threads int    `json:"threads"`
				Ranks   string `json:"ranks"`
			} `json:"groups"`
		} `json:"summary"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &j), out)
	assert.Equal(t, 24, j.Summary.Threads)
	assert.Equal(t, "0-4", j.Summary.Ranks)
	require.Len(t, j.Summary.Groups, 4)
	assert.Equal(t, 12, j.Summary.Groups[0].Threads)
	assert.Equal(t, "0-1,3-4", j.Summary.Groups[0].Ranks)

	// -vars with several cores: each rank's, then the summary.
	_, out, _ = execTool(context.Background(), "core", "-vars", four.Exe, four.Core, eight.Core)
	assert.Contains(t, out, "=== rank 0: "+four.Core)
	assert.Contains(t, out, "=== rank 1: "+eight.Core)
	assert.Equal(t, 2, strings.Count(out, "Display control variables:"))
}

// TestZstdCore: a core compressed as systemd-coredump keeps them is read
// as it is, saying so on standard error.
func TestZstdCore(t *testing.T) {
	fixtures.Runtime(t)
	fixtures.RequireTool(t, "zstd")
	stop := fixtures.Core(t, fixtures.Nested)
	zst := filepath.Join(t.TempDir(), "core.nested.zst")
	out, err := exec.Command("zstd", "-q", "-o", zst, stop.Core).CombinedOutput()
	require.NoError(t, err, "%s", out)
	code, text, errOut := execTool(context.Background(), "core", stop.Exe, zst)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, text, "6 threads in 3 groups:")
	assert.Contains(t, errOut, "decompressing "+zst)
}

// TestTeamsAndIdle: the inspector on a host teams league (each thread's
// team shown, no errors) and on workers idle in a hot team (serial, like
// their primary).
func TestTeamsAndIdle(t *testing.T) {
	fixtures.Runtime(t)
	teams := fixtures.Core(t, fixtures.Teams)
	code, out, errOut := execTool(context.Background(), "core", "-threads", teams.Exe, teams.Core)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "Errors")
	for _, th := range teams.Truth.Threads {
		n, _ := teams.Truth.TeamNum(th.TID)
		assert.Regexp(t, fmt.Sprintf(`lwp %d +thread_num %d +.*\(team %d of 2\)`, th.TID, th.ThreadNum, n), out)
	}
	// Teams apart: the same state in team 0 and team 1 is two groups.
	assert.Contains(t, out, "4 threads in 4 groups:")
	assert.Regexp(t, `  1 thread overhead in .*, level 1, team of 2; host team 0 of 2\n`, out)

	// In JSON every thread of the league has its team number, team 0's
	// too, and the number of teams.
	code, out, errOut = execTool(context.Background(), "-json", "core", teams.Exe, teams.Core)
	require.Equal(t, 0, code, errOut)
	var snap struct {
		Threads []map[string]any `json:"threads"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &snap))
	require.Len(t, snap.Threads, len(teams.Truth.Threads))
	zero := 0
	for _, th := range snap.Threads {
		lwp := int(th["lwp"].(float64))
		n, ok := teams.Truth.TeamNum(lwp)
		require.True(t, ok, "lwp %d in the league", lwp)
		assert.Equal(t, float64(n), th["team_num"], "lwp %d: team_num", lwp)
		assert.Equal(t, float64(2), th["num_teams"], "lwp %d: num_teams", lwp)
		if n == 0 {
			zero++
		}
	}
	assert.Positive(t, zero, "threads of team 0")

	// Stopped in the teams' body, one worker per team waits for the
	// first parallel region: no thread number, "-" in the table and no
	// thread_num in JSON, never thread 0.
	body := fixtures.Core(t, fixtures.Teams, "body")
	code, out, errOut = execTool(context.Background(), "core", "-threads", body.Exe, body.Core)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "Errors")
	assert.Len(t, regexp.MustCompile(`(?m)^  gtid \d+ +lwp \d+ +thread_num - `).FindAllString(out, -1), 2, "%s", out)
	for _, th := range body.Truth.Threads {
		assert.Regexp(t, fmt.Sprintf(`lwp %d +thread_num %d `, th.TID, th.ThreadNum), out)
	}
	code, out, errOut = execTool(context.Background(), "-json", "core", body.Exe, body.Core)
	require.Equal(t, 0, code, errOut)
	snap.Threads = nil
	require.NoError(t, json.Unmarshal([]byte(out), &snap))
	without := 0
	for _, th := range snap.Threads {
		if _, ok := th["thread_num"]; !ok {
			without++
			lwp := int(th["lwp"].(float64))
			assert.Nil(t, body.Truth.ThreadByTID(lwp), "lwp %d recorded a thread number", lwp)
		}
	}
	assert.Equal(t, 2, without, "waiting workers without thread_num")

	idle := fixtures.Core(t, fixtures.Idle)
	code, out, errOut = execTool(context.Background(), "core", idle.Exe, idle.Core)
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, out, "Errors")
	assert.Regexp(t, `  2 threads wait_[a-z_]+, serial\n`, out)
	assert.Contains(t, out, "  1 thread work_serial, serial\n")
}
