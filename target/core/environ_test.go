package core_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/target/core"
)

// TestEnviron: a core's start-up environment, read from the program's
// initial stack, is the one the program was started with, in order (gdb,
// which starts the fixtures, adds its LINES and COLUMNS); on a clang
// program on LLVM's runtime and a gcc one on the system's libgomp.
func TestEnviron(t *testing.T) {
	for name, stop := range map[string]func(t *testing.T) *fixtures.Stop{
		"llvm":    func(t *testing.T) *fixtures.Stop { return fixtures.Core(t, fixtures.Nested) },
		"libgomp": func(t *testing.T) *fixtures.Stop { return fixtures.CoreWith(t, fixtures.SystemGomp(t), fixtures.Waits) },
	} {
		t.Run(name, func(t *testing.T) {
			s := stop(t)
			c, err := core.Open(context.Background(), s.Exe, s.Core)
			require.NoError(t, err)
			defer c.Close()
			env, err := c.Environ()
			require.NoError(t, err)
			require.NotEmpty(t, s.Env)
			require.GreaterOrEqual(t, len(env), len(s.Env))
			assert.Equal(t, s.Env, env[:len(s.Env)])
			for _, kv := range env[len(s.Env):] {
				assert.Regexp(t, `^(LINES|COLUMNS)=\d+$`, kv, "gdb's additions only")
			}
		})
	}
}
