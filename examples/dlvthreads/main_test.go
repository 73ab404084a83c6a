package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/dlvtest"
	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestDlvthreads runs the example against a real headless dlv that a
// user's client stopped in the nested fixture's stopme (it needs the
// fixtures' tools and runtime, and dlv: see internal/fixtures): one line
// per thread of the program's truth, with its number in its team, the
// state its role gives it, and its innermost region's level and team
// size; and the user's session is as the user left it.
func TestDlvthreads(t *testing.T) {
	s := dlvtest.Start(t, fixtures.Nested)
	s.BreakAt(t, "stopme")
	st := s.Continue(t)
	bps, err := s.User.ListBreakpoints(false)
	require.NoError(t, err)
	truth := s.Truth(t)

	var out bytes.Buffer
	require.NoError(t, run(context.Background(), &out, s.Srv.Addr))
	state := map[string]string{
		fixtures.RoleStopper: "work_parallel", fixtures.RoleWorking: "work_parallel",
		fixtures.RoleBarrier: "wait_barrier_explicit", fixtures.RoleLock: "wait_lock", fixtures.RoleCritical: "wait_lock",
	}
	for _, th := range truth.Threads {
		want := fmt.Sprintf(`(?m)^gtid \d+ lwp %d thread %d %s level %d of %d threads$`, th.TID, th.ThreadNum, state[th.Role], th.Level, th.TeamSize)
		assert.Regexp(t, regexp.MustCompile(want), out.String())
	}
	s.Unchanged(t, st, bps)
}
