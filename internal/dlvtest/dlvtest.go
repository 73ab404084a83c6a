// Package dlvtest runs fixture programs under a real headless dlv for
// tests, with a user's own dlv client (what "dlv connect" and editors use)
// driving it, so that tests can check that ompd-go reads the session
// without disturbing it.
//
// It imports Delve's JSON-RPC client (service/rpc2), the user's side of the
// session, and is imported by tests only (of target/delverpc and
// cmd/ompdtool): no package of the library depends on it.
package dlvtest

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/go-delve/delve/service/api"
	"github.com/go-delve/delve/service/rpc2"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// Session is a fixture program under a headless dlv, and the user's client.
type Session struct {
	Srv       *fixtures.DlvServer
	User      *rpc2.RPCClient
	Exe       string
	TruthPath string
}

// Start builds fixture name and starts it under a headless dlv
// ("--accept-multiclient --api-version 2" on 127.0.0.1), stopped at its
// entry, with a user's client connected. Both end with the test.
func Start(t testing.TB, name string, args ...string) *Session {
	t.Helper()
	return StartEnv(t, name, nil, args...)
}

// StartEnv is Start with extra KEY=VALUE settings in the program's
// environment (OMPD_FIXTURE_HOLD=1, say).
func StartEnv(t testing.TB, name string, extra []string, args ...string) *Session {
	t.Helper()
	return start(t, fixtures.Runtime(t), name, extra, args)
}

// StartWith is Start for the program built against the runtime info
// describes (a stripped copy, say: see fixtures.BuildWith).
func StartWith(t testing.TB, info fixtures.RuntimeInfo, name string, args ...string) *Session {
	t.Helper()
	return start(t, info, name, nil, args)
}

func start(t testing.TB, info fixtures.RuntimeInfo, name string, extra, args []string) *Session {
	t.Helper()
	fixtures.Watchdog(t, fixtures.LiveBound())
	exe := fixtures.BuildWith(t, name, info)
	dir := t.TempDir()
	s := &Session{Exe: exe, TruthPath: filepath.Join(dir, "truth.json")}
	env := fixtures.Env(name, append([]string{
		"OMPD_FIXTURE_TRUTH=" + s.TruthPath,
		"OMPD_FIXTURE_STDOUT=" + filepath.Join(dir, "stdout.txt"),
		"OMPD_FIXTURE_STDERR=" + filepath.Join(dir, "stderr.txt"),
		"OMPD_FIXTURE_TIMEOUT=300"}, extra...)...)
	s.Srv = fixtures.StartDlv(t, env, exe, args...)
	nc, err := net.DialTimeout("tcp", s.Srv.Addr, 10*time.Second)
	require.NoError(t, err)
	s.User = rpc2.NewClientFromConn(nc)
	pid := s.User.ProcessPid()
	t.Cleanup(func() {
		// Delve kills what it launched when it dies; make sure of it
		// even if the server hangs.
		if pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		s.User.Disconnect(false)
	})
	return s
}

// Truth loads and validates the truth the program wrote.
func (s *Session) Truth(t testing.TB) *fixtures.Truth {
	t.Helper()
	tr, err := fixtures.LoadTruth(s.TruthPath)
	require.NoError(t, err)
	require.NoError(t, tr.Validate())
	// The display block the stopper printed before the stop.
	stderr, err := os.ReadFile(filepath.Join(filepath.Dir(s.TruthPath), "stderr.txt"))
	require.NoError(t, err)
	tr.Display = fixtures.DisplayBlock(string(stderr))
	return tr
}

// BreakAt sets a breakpoint on a C function of the program, as the user
// would ("break stopme").
func (s *Session) BreakAt(t testing.TB, fn string) *api.Breakpoint {
	t.Helper()
	// C functions carry Delve's "C." prefix; libomp's (C++ code with C
	// linkage) do not.
	bp, err := s.User.CreateBreakpoint(&api.Breakpoint{FunctionName: "C." + fn})
	if err != nil {
		bp, err = s.User.CreateBreakpoint(&api.Breakpoint{FunctionName: fn})
	}
	require.NoError(t, err, "breakpoint on %s", fn)
	return bp
}

// Continue continues the program as the user would and waits for the
// stop, which must not be its end.
func (s *Session) Continue(t testing.TB) *api.DebuggerState {
	t.Helper()
	var st *api.DebuggerState
	for st = range s.User.Continue() {
		require.NoError(t, st.Err)
	}
	require.NotNil(t, st)
	require.False(t, st.Exited, "program exited")
	return st
}

// Unchanged checks that the user's session still stands where before
// shows: stopped, the same thread selected at the same PC, and every
// breakpoint of bps still set at its address with its hit count.
func (s *Session) Unchanged(t testing.TB, before *api.DebuggerState, bps []*api.Breakpoint) {
	t.Helper()
	st, err := s.User.GetState()
	require.NoError(t, err)
	require.False(t, st.Running, "still stopped")
	require.NotNil(t, st.CurrentThread)
	require.Equal(t, before.CurrentThread.ID, st.CurrentThread.ID, "selected thread")
	require.Equal(t, before.CurrentThread.PC, st.CurrentThread.PC, "pc")
	now, err := s.User.ListBreakpoints(false)
	require.NoError(t, err)
	byID := map[int]*api.Breakpoint{}
	for _, b := range now {
		byID[b.ID] = b
	}
	for _, b := range bps {
		n := byID[b.ID]
		require.NotNil(t, n, "breakpoint %d still set", b.ID)
		require.Equal(t, b.Addr, n.Addr, "breakpoint %d address", b.ID)
		require.Equal(t, b.TotalHitCount, n.TotalHitCount, "breakpoint %d hit count", b.ID)
	}
}

// Dump has the server write a core of the program at its current stop
// with dlv's "dump" command, as the user would, into a file of the test,
// and returns its path.
func (s *Session) Dump(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dlv.core")
	_, err := s.User.CoreDumpStart(path)
	require.NoError(t, err, "dlv dump")
	deadline := time.Now().Add(3 * time.Minute)
	var ds api.DumpState
	for ds = s.User.CoreDumpWait(1000); ds.Dumping && !ds.AllDone; ds = s.User.CoreDumpWait(1000) {
		require.True(t, time.Now().Before(deadline), "dlv dump did not end")
	}
	require.Empty(t, ds.Err, "dlv dump")
	return path
}

// ThreadIDs returns the LWPs of the program's threads as the user's dlv
// lists them in its state at the current stop, sorted.
func (s *Session) ThreadIDs(t testing.TB) []uint64 {
	t.Helper()
	st, err := s.User.GetState()
	require.NoError(t, err)
	require.False(t, st.Running, "stopped")
	ids := make([]uint64, 0, len(st.Threads))
	for _, th := range st.Threads {
		ids = append(ids, uint64(th.ID))
	}
	slices.Sort(ids)
	return ids
}
