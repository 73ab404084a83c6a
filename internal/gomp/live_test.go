package gomp_test

import (
	"context"
	"errors"
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
// stopme, on libgomp 12 with its debug information and on the system's
// libgomp1 without, and compares every thread with the program's truth
// as the core tests do.
func TestLiveAgainstTruth(t *testing.T) {
	cases := []struct {
		name    string
		info    func(t *testing.T) fixtures.RuntimeInfo
		globals bool
	}{
		{"debug-" + fixtures.GompVersions[0], func(t *testing.T) fixtures.RuntimeInfo { return fixtures.GompRuntime(t, fixtures.GompVersions[0]) }, true},
		{"system", func(t *testing.T) fixtures.RuntimeInfo { return fixtures.SystemGomp(t) }, false},
	}
	for _, c := range cases {
		for _, name := range []string{fixtures.Nested, fixtures.Tasks, fixtures.Idle, fixtures.Waits, fixtures.TaskWaits, fixtures.EndBarrier} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				exe := fixtures.BuildWith(t, name, c.info(t))
				dir := t.TempDir()
				truthPath := filepath.Join(dir, "truth.json")
				env := fixtures.Env(name,
					"OMPD_FIXTURE_TRUTH="+truthPath,
					"OMPD_FIXTURE_STDOUT="+filepath.Join(dir, "stdout.txt"),
					"OMPD_FIXTURE_STDERR="+filepath.Join(dir, "stderr.txt"))
				p, err := delve.Launch([]string{exe}, delve.WithEnv(env), delve.WithDebugDirs())
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
