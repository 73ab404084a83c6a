package main

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-delve/delve/service/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/dlvtest"
	"github.com/ompd-go/ompd/internal/fixtures"
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
