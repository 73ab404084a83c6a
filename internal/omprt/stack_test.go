package omprt

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/target"
)

func TestWaitNames(t *testing.T) {
	w := WaitNames{{"taskwait", WaitTaskwait}, {"barrier", WaitBarrier}, {"fork_call", WaitParallel}}
	assert.Equal(t, WaitTaskwait, w.Of("__kmpc_omp_taskwait"))
	assert.Equal(t, WaitBarrier, w.Of("GOMP_barrier"), "case is ignored")
	assert.Equal(t, WaitParallel, w.Of("__kmp_fork_call"))
	assert.Equal(t, WaitNone, w.Of("__kmpc_critical"))
	assert.Equal(t, WaitNone, w.Of(""))
}

// noRegs is a target without registers.
type noRegs struct{ target.Target }

func (noRegs) ByteOrder() binary.ByteOrder { return binary.LittleEndian }

// TestUnwindUnsupported: a target that cannot read registers cannot give
// stacks: ErrUnsupported, with the target's own sentinel.
func TestUnwindUnsupported(t *testing.T) {
	_, err := Unwind(context.Background(), noRegs{}, 1, 0, func(string) bool { return false })
	require.ErrorIs(t, err, ErrUnsupported)
	require.ErrorIs(t, err, target.ErrUnsupported)
}
