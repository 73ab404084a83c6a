package ompd_test

import (
	"encoding/binary"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/target"
)

// fakeDisplayWant is one display variable: its value, and whether it was
// corrected from runtime state (the runtime's block holds start-up
// defaults).
type fakeDisplayWant struct {
	name, value string
	corrected   bool
}

func fakeCheckDisplay(t *testing.T, vars []ompd.ControlVar, block string, want []fakeDisplayWant) {
	t.Helper()
	require.Len(t, vars, len(want))
	lines := strings.Split(strings.TrimSpace(block), "\n")
	require.Len(t, lines, len(want))
	for i, w := range want {
		v := vars[i]
		assert.Equal(t, w.name, v.Name)
		assert.Equal(t, w.value, v.Value, w.name)
		assert.Equal(t, w.corrected, v.Corrected, w.name)
		assert.Equal(t, v.Raw, v.String())
		if w.corrected {
			assert.Equal(t, lines[i], v.RuntimeRaw, "%s: the runtime's own line", w.name)
			assert.True(t, strings.HasPrefix(v.Raw, w.name+"="), "%s: %q", w.name, v.Raw)
			assert.Contains(t, v.Raw, w.value)
		} else {
			assert.Equal(t, lines[i], v.Raw, w.name)
			assert.Empty(t, v.RuntimeRaw, w.name)
		}
	}
}

func TestFakeDisplayControlVars(t *testing.T) {
	forEachFake(t, func(t *testing.T, cfg fakeruntime.Config) {
		// The program runs with the defaults: nothing to correct.
		m := fakeruntime.Minimal(cfg)
		mas, err := ompd.Open(m.T)
		require.NoError(t, err)
		vars, err := mas.DisplayControlVars()
		require.NoError(t, err)
		defaults := []fakeDisplayWant{
			{"OMP_AFFINITY_FORMAT", fakeruntime.DefaultAffinityFormat, false},
			{"OMP_CANCELLATION", "false", false},
			{"OMP_DEFAULT_DEVICE", "0", false},
			{"OMP_DISPLAY_AFFINITY", "false", false},
			{"OMP_DISPLAY_ENV", "false", false},
			{"OMP_DYNAMIC", "false", false},
			{"OMP_MAX_ACTIVE_LEVELS", "1", false},
			{"OMP_MAX_TASK_PRIORITY", "0", false},
			{"OMP_NESTED: deprecated; max-active-levels-var", "1", false},
			{"OMP_NUM_THREADS", "undefined", false},
			{"OMP_PLACES", "undefined", false},
			{"OMP_PROC_BIND", "false", false},
			{"OMP_SCHEDULE", "static", false},
			{"OMP_STACKSIZE", "8M", false},
			{"OMP_THREAD_LIMIT", "2147483647", false},
			{"OMP_WAIT_POLICY", "PASSIVE", false},
			{"KMP_BLOCKTIME", "200", false},
		}
		fakeCheckDisplay(t, vars, fakeruntime.DefaultEnvBlock, defaults)

		// Nested runs with other settings: what runtime state holds is
		// corrected, the rest keeps the block's text.
		s, as := fakeOpenNested(t, cfg)
		vars, err = as.DisplayControlVars()
		require.NoError(t, err)
		fakeCheckDisplay(t, vars, s.EnvBlock, []fakeDisplayWant{
			{"OMP_AFFINITY_FORMAT", fakeruntime.DefaultAffinityFormat, false},
			{"OMP_CANCELLATION", "true", true},
			{"OMP_DEFAULT_DEVICE", "0", false},
			{"OMP_DISPLAY_AFFINITY", "true", true},
			{"OMP_DISPLAY_ENV", "false", false},
			{"OMP_DYNAMIC", "true", true},
			{"OMP_MAX_ACTIVE_LEVELS", "3", true},
			{"OMP_MAX_TASK_PRIORITY", "7", true},
			{"OMP_NESTED: deprecated; max-active-levels-var", "3", true},
			{"OMP_NUM_THREADS", "4,2,3,1", true},
			{"OMP_PLACES", "undefined", false},
			{"OMP_PROC_BIND", "spread,close,close", true},
			{"OMP_SCHEDULE", "dynamic,7", true},
			{"OMP_STACKSIZE", "4M", true},
			{"OMP_THREAD_LIMIT", "64", true},
			{"OMP_WAIT_POLICY", "PASSIVE", false},
			{"KMP_BLOCKTIME", "200", false},
		})
		as.Refresh()
		thr, err := as.ThreadLimit()
		require.NoError(t, err)
		assert.Equal(t, 64, thr)

		// Schedules as the runtime prints them.
		for _, c := range []struct {
			typ, chunk int
			want       string
		}{
			{fakeruntime.SchedStatic | fakeruntime.SchedMonotonic, 0, "monotonic:static"},
			{fakeruntime.SchedGuidedChunked | fakeruntime.SchedNonmonotonic, 3, "nonmonotonic:guided,3"},
			{fakeruntime.SchedAuto, 0, "auto"},
		} {
			s.RT.SetGlobal("__kmp_sched", int64(c.typ))
			s.RT.SetGlobal("__kmp_chunk", int64(c.chunk))
			as.Refresh()
			vars, err := as.DisplayControlVars()
			require.NoError(t, err)
			for _, v := range vars {
				if v.Name == "OMP_SCHEDULE" {
					assert.Equal(t, c.want, v.Value)
				}
			}
		}

		// Lines without quotes or '=', blank lines, and a trailing NUL
		// counted in the size.
		s.RT.SetEnvBlock("\n\nA=1\nB\n  C='x=y'  \nD='\n")
		as.Refresh()
		vars, err = as.DisplayControlVars()
		require.NoError(t, err)
		assert.Equal(t, []ompd.ControlVar{
			{Name: "A", Value: "1", Raw: "A=1", Stale: true},
			{Name: "B", Value: "", Raw: "B", Stale: true},
			{Name: "C", Value: "x=y", Raw: "C='x=y'", Stale: true},
			{Name: "D", Value: "'", Raw: "D='", Stale: true},
		}, vars)

		s.RT.SetEnvBlock("")
		as.Refresh()
		_, err = as.DisplayControlVars()
		assert.ErrorIs(t, err, ompd.ErrUnavailable)

		// An absurd size is corrupt, a size beyond the mapping a read error.
		s.RT.SetEnvBlock("A=1\n")
		s.RT.SetGlobal("ompd_env_block_size", 1<<30)
		as.Refresh()
		_, err = as.DisplayControlVars()
		assert.ErrorIs(t, err, ompd.ErrCorrupt)
		s.RT.SetGlobal("ompd_env_block_size", 1<<19)
		as.Refresh()
		_, err = as.DisplayControlVars()
		assert.ErrorIs(t, err, ompd.ErrReadFailed)
		assert.ErrorIs(t, err, target.ErrNoMemory)

		// Without the globals behind the corrections, the block's text stays.
		m.RT.SetStringGlobal("__kmp_affinity_format", "%n")
		for _, g := range []string{"__kmp_sched", "__kmp_global", "__kmp_cg_max_nth", "__kmp_affinity_format"} {
			m.RT.DropSymbol(g)
		}
		mas, err = ompd.Open(m.T)
		require.NoError(t, err)
		vars, err = mas.DisplayControlVars()
		require.NoError(t, err)
		fakeCheckDisplay(t, vars, fakeruntime.DefaultEnvBlock, defaults)
	})
}

// ompd_env_block_size is an ompd_size_t, a uint64_t on every target. A
// 32-bit big-endian target shows whether it is read in its own size.
func TestFakeDisplayControlVarsBigEndian32(t *testing.T) {
	cfg := fakeruntime.Config{ByteOrder: binary.BigEndian, Sizes: target.ILP32}
	_, as := fakeOpenNested(t, cfg)
	vars, err := as.DisplayControlVars()
	fakeKnownBug(t, errors.Is(err, ompd.ErrUnavailable),
		"address_space.go DisplayControlVars reads ompd_env_block_size (ompd_size_t, 8 bytes) with "+
			"as.global(\"ompd_env_block_size\", uint64(as.mem.ptrSize), false): on a 32-bit big-endian target it reads "+
			"the upper half (0) and reports %v; read it as 8 bytes", err)
	require.NoError(t, err)
	assert.Len(t, vars, 17)
}
