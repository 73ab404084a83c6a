package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"regexp"
	"slices"
	"strconv"
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

	dump := s.Dump(t)

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
// stop, then at the next one, and ends when the program exits. Each state
// is what "ompdtool core" prints for the core dlv dumps at that stop, the
// threads are those dlv lists, and the user's session stays as it was at
// both stops.
func TestConnectFollow(t *testing.T) {
	s := dlvtest.Start(t, fixtures.Nested)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	s.BreakAt(t, "stopme")
	st1 := s.Continue(t)
	bps1, err := s.User.ListBreakpoints(false)
	require.NoError(t, err)
	dumps := []string{s.Dump(t)}
	lwps := [][]uint64{s.ThreadIDs(t)}

	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-q", "-threads", "-follow", "connect", s.Srv.Addr}, out, io.Discard)
	}()
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
	s.Unchanged(t, st1, bps1)

	// The user goes on to the end of a region (libomp's functions are
	// not in Delve's list: break at the symbol's address).
	tgt, err := delverpc.Dial(ctx, s.Srv.Addr)
	require.NoError(t, err)
	pe, err := tgt.LookupSymbol("ompd_bp_parallel_end")
	require.NoError(t, err)
	tgt.Close()
	_, err = s.User.CreateBreakpoint(&api.Breakpoint{Addr: pe})
	require.NoError(t, err)
	st2 := s.Continue(t)
	// As soon as the user has the stop (connect may be reading already).
	bps2, err := s.User.ListBreakpoints(false)
	require.NoError(t, err)
	// Dump once connect has read this stop (it prints after reading):
	// while dlv dumps, its server holds the target and reads wait.
	waitFor(2)
	dumps = append(dumps, s.Dump(t))
	lwps = append(lwps, s.ThreadIDs(t))
	s.Unchanged(t, st2, bps2)

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

	got := out.String()
	second := strings.Index(got[1:], header) + 1
	blocks := []string{got[:second], got[second:]}
	for i, dump := range dumps {
		code, want, errOut := execTool(ctx, "-q", "-threads", "core", s.Exe, dump)
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, want, blocks[i], "stop %d: connect -follow prints what core prints for dlv's dump", i+1)
		assert.NotContains(t, blocks[i], "Errors (", "stop %d: no errors (the second is at a region's end)", i+1)
		assert.Equal(t, lwps[i], printedLWPs(blocks[i]), "stop %d: the threads dlv lists", i+1)
	}
}

// printedLWPs returns the LWPs of the -threads table of out, sorted.
func printedLWPs(out string) []uint64 {
	var ids []uint64
	for _, m := range regexp.MustCompile(`(?m)^  gtid \d+\s+lwp (\d+) `).FindAllStringSubmatch(out, -1) {
		n, _ := strconv.ParseUint(m[1], 10, 64)
		ids = append(ids, n)
	}
	slices.Sort(ids)
	return ids
}
