package gomp_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/gomp"
	"github.com/ompd-go/ompd/target/delve"
)

// TestLiveAgainstTruth runs gcc fixtures live under Delve, stopped at
// stopme, and compares every thread with the program's truth as the core
// tests do: on libgomp 12 with its debug information and on the system's
// libgomp1 without, every fixture; on libgomp 14 with its debug
// information and on a stripped libgomp 12 with its separate debug file
// (found by build-id in a debug directory), a few fixtures (live reads of
// the other version's layout and of a separate debug file; the core tests
// cover every fixture there); on the stock libgomp1 of Debian sid (GCC
// 16, with sid's C library), whose cores gdb's gcore cannot write (see
// setups), every fixture.
func TestLiveAgainstTruth(t *testing.T) {
	all := []string{fixtures.Nested, fixtures.Tasks, fixtures.Idle, fixtures.Waits, fixtures.TaskWaits, fixtures.EndBarrier}
	few := []string{fixtures.Nested, fixtures.Tasks, fixtures.Waits}
	noDebugDirs := func(t *testing.T) []delve.Option { return []delve.Option{delve.WithDebugDirs()} }
	debug := func(v string) func(t *testing.T) fixtures.RuntimeInfo {
		return func(t *testing.T) fixtures.RuntimeInfo { return fixtures.GompRuntime(t, v) }
	}
	stripped := func(t *testing.T) fixtures.RuntimeInfo {
		return fixtures.StripRuntime(t, fixtures.GompRuntime(t, fixtures.GompVersions[0])).RuntimeInfo
	}
	debugFile := func(t *testing.T) []delve.Option {
		s := fixtures.StripRuntime(t, fixtures.GompRuntime(t, fixtures.GompVersions[0]))
		dir := t.TempDir()
		p := s.BuildIDPath(dir)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.Symlink(s.DebugFile, p))
		return []delve.Option{delve.WithDebugDirs(dir)}
	}
	cases := []struct {
		name     string
		info     func(t *testing.T) fixtures.RuntimeInfo
		opts     func(t *testing.T) []delve.Option
		globals  bool
		fixtures []string
	}{
		{"debug-" + fixtures.GompVersions[0], debug(fixtures.GompVersions[0]), noDebugDirs, true, all},
		{"system", func(t *testing.T) fixtures.RuntimeInfo { return fixtures.SystemGomp(t) }, noDebugDirs, false, all},
		{"debug-" + fixtures.GompVersions[1], debug(fixtures.GompVersions[1]), noDebugDirs, true, few},
		{"stripped-debugfile-" + fixtures.GompVersions[0], stripped, debugFile, true, few},
		{"stock-sid", func(t *testing.T) fixtures.RuntimeInfo { return fixtures.StockGomp(t, "sid") }, noDebugDirs, false,
			[]string{fixtures.Nested, fixtures.Tasks, fixtures.Idle, fixtures.Waits, fixtures.TaskWaits, fixtures.EndBarrier, fixtures.Hung, fixtures.HostTeams}},
	}
	for _, c := range cases {
		for _, name := range c.fixtures {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				fixtures.Watchdog(t, fixtures.LiveBound())
				exe := fixtures.BuildWith(t, name, c.info(t))
				dir := t.TempDir()
				truthPath := filepath.Join(dir, "truth.json")
				env := fixtures.Env(name,
					"OMPD_FIXTURE_TRUTH="+truthPath,
					"OMPD_FIXTURE_STDOUT="+filepath.Join(dir, "stdout.txt"),
					"OMPD_FIXTURE_STDERR="+filepath.Join(dir, "stderr.txt"))
				opts := append([]delve.Option{delve.WithEnv(env)}, c.opts(t)...)
				p, err := delve.Launch(context.Background(), []string{exe}, opts...)
				if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
					fixtures.Unavailable(t, "ptrace not allowed: %v", err)
				}
				require.NoError(t, err)
				t.Cleanup(func() { _ = p.Kill() })
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				_, err = p.RunToFunction(ctx, "stopme")
				require.NoError(t, err)
				truth, err := fixtures.LoadTruth(truthPath)
				require.NoError(t, err)
				require.NoError(t, truth.Validate())
				r, err := gomp.Open(p)
				require.NoError(t, err)
				checkTruth(t, r, p, truth, c.globals)
			})
		}
	}
}
