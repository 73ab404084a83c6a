package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-delve/delve/service/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/dlvtest"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/target/delverpc"
)

// TestConnect: a user stops the nested fixture at stopme in a headless
// dlv and has dlv dump a core there. "ompdtool connect" must print what
// "ompdtool core" prints for that core (text and JSON), and leave the
// user's session as it was.
func TestConnect(t *testing.T) {
	s := dlvtest.Start(t, fixtures.Nested)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s.BreakAt(t, "stopme")
	st := s.Continue(t)
	bps, err := s.User.ListBreakpoints(false)
	require.NoError(t, err)

	dump := filepath.Join(t.TempDir(), "dlv.core")
	_, err = s.User.CoreDumpStart(dump)
	require.NoError(t, err)
	var ds api.DumpState
	for ds = s.User.CoreDumpWait(1000); ds.Dumping && !ds.AllDone; ds = s.User.CoreDumpWait(1000) {
		require.NoError(t, ctx.Err())
	}
	require.Empty(t, ds.Err, "dlv dump")

	for _, args := range [][]string{{"-threads"}, {"-json"}, {}, {"-bt", "-threads"}} {
		code, got, errOut := execTool(ctx, append(append([]string{"-q"}, args...), "connect", s.Srv.Addr)...)
		require.Equal(t, 0, code, errOut)
		code, want, errOut := execTool(ctx, append(append([]string{"-q"}, args...), "core", s.Exe, dump)...)
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, want, got, "connect %v prints what core prints", args)
	}
	out := runTool(t, "-q", "connect", s.Srv.Addr)
	tr := s.Truth(t)
	assert.Contains(t, out, "6 threads", "%s", out)
	assert.Len(t, tr.Threads, 6)
	s.Unchanged(t, st, bps)
}

// TestConnectErrors: usage errors exit 2, a server that is not there or
// not Delve an error naming the address, without hanging.
func TestConnectErrors(t *testing.T) {
	ctx := context.Background()
	code, _, errOut := execTool(ctx, "connect")
	assert.Equal(t, 2, code, errOut)
	code, _, errOut = execTool(ctx, "connect", "nohostport")
	assert.Equal(t, 2, code, errOut)
	assert.Contains(t, errOut, "bad server address")

	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	code, _, errOut = execTool(ctx, "connect", addr)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, addr)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestConnectFollow: with -follow, connect prints the state at the user's
// stop, then at the next one, and ends when the program exits.
func TestConnectFollow(t *testing.T) {
	s := dlvtest.Start(t, fixtures.Nested)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s.BreakAt(t, "stopme")
	s.Continue(t)

	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- run(ctx, []string{"-q", "-follow", "connect", s.Srv.Addr}, out, io.Discard) }()
	header := "OpenMP runtime:"
	waitFor := func(n int) {
		t.Helper()
		for strings.Count(out.String(), header) < n {
			select {
			case err := <-done:
				t.Fatalf("connect -follow ended early: %v\n%s", err, out.String())
			case <-time.After(20 * time.Millisecond):
			}
			require.NoError(t, ctx.Err())
		}
	}
	waitFor(1)

	// The user goes on to the end of a region (libomp's functions are
	// not in Delve's list: break at the symbol's address).
	tgt, err := delverpc.Dial(ctx, s.Srv.Addr)
	require.NoError(t, err)
	pe, err := tgt.LookupSymbol("ompd_bp_parallel_end")
	require.NoError(t, err)
	tgt.Close()
	_, err = s.User.CreateBreakpoint(&api.Breakpoint{Addr: pe})
	require.NoError(t, err)
	s.Continue(t)
	waitFor(2)

	// And on to the program's end: connect -follow ends with it.
	bps, err := s.User.ListBreakpoints(false)
	require.NoError(t, err)
	for _, b := range bps {
		_, err := s.User.ClearBreakpoint(b.ID)
		require.NoError(t, err)
	}
	for range s.User.Continue() {
	}
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("connect -follow did not end with the program")
	}
	assert.Equal(t, 2, strings.Count(out.String(), header), "one state per stop")
}
