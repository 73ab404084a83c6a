package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/shipped"
)

// TestReadcore runs the example on every real core shipped in
// testdata/cores, its libraries under a sysroot as for a core of another
// machine: each thread of the program's truth with its state (LLVM's as
// the runtime recorded it, or inferred from the stack where the runtime
// is built without OMPD support and records none) and every level of its region nest with the
// team size the program saw and its outlined function; a runtime with nothing to read its layout
// from is an error saying so.
func TestReadcore(t *testing.T) {
	shipped.Each(t, func(t *testing.T, c *shipped.Core, o shipped.Opening) {
		f := c.Unpack(t, o.Debug)
		var out bytes.Buffer
		err := run(context.Background(), &out, f.Program, f.Core, f.Sysroot(t))
		if o.Layout == "" {
			require.ErrorIs(t, err, ompd.ErrIncompatible)
			return
		}
		require.NoError(t, err)
		text := out.String()
		assert.True(t, strings.HasPrefix(text, map[string]string{shipped.LLVM: "LLVM libomp", shipped.GOMP: "GNU libgomp"}[c.Runtime]), text)
		for _, th := range c.Truth.Threads {
			m := regexp.MustCompile(fmt.Sprintf(`(?m)^thread lwp %d: (.*)\n((?:  .*\n)*)`, th.TID)).FindStringSubmatch(text)
			require.NotNil(t, m, "thread %d in:\n%s", th.TID, text)
			if c.Runtime == shipped.LLVM {
				assert.Equal(t, llvmState(th.Role, c.Tracking()), m[1], "thread %d", th.TID)
			} else {
				assert.NotEqual(t, "state unknown", m[1], "thread %d", th.TID)
			}
			levels := strings.Split(strings.TrimSuffix(m[2], "\n"), "\n")
			require.Len(t, levels, th.Level+1, "thread %d", th.TID)
			for i, l := range levels {
				lv := th.Level - i
				want := fmt.Sprintf("  level %d: %d threads", lv, th.Ancestors[lv].TeamSize)
				if lv > 0 {
					want += " in main." // the outlined function of the program
				}
				assert.True(t, strings.HasPrefix(l, want), "thread %d: %q", th.TID, l)
			}
		}
	})
}

// llvmState is the state the nested fixture's thread of role shows on
// LLVM's runtime: recorded by it (tracking), where a critical section's
// waiter is in its lock acquisition's state, or inferred from its stack,
// where the critical section is told apart.
func llvmState(role string, tracking bool) string {
	switch role {
	case fixtures.RoleStopper, fixtures.RoleWorking:
		return "work_parallel"
	case fixtures.RoleBarrier:
		return "wait_barrier_explicit"
	case fixtures.RoleCritical:
		if !tracking {
			return "wait_critical"
		}
	}
	return "wait_lock"
}
