package ompd_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fakeruntime"
)

// TestOpenNeedsOnlyWhatItReads drops the runtime's OMPD layout table
// entries one at a time: the task flags this package does not read may be
// missing (a runtime version may move or drop them), the ones it reads may
// not, and the error names the entry.
func TestOpenNeedsOnlyWhatItReads(t *testing.T) {
	const prefix = "ompd_bitfield__kmp_tasking_flags_t__"
	for _, flag := range []string{"tasking_ser", "team_serial", "started", "executing", "complete", "native"} {
		t.Run("unread "+flag, func(t *testing.T) {
			s := fakeruntime.Nested(fakeruntime.Config{})
			s.RT.DropSymbol(prefix + flag)
			as, err := ompd.Open(s.T)
			require.NoError(t, err)
			defer as.Close()
			snap, err := as.Snapshot(context.Background())
			require.NoError(t, err)
			assert.Empty(t, snap.Errors)
		})
	}
	for _, flag := range []string{"final", "tiedness", "tasktype", "task_serial", "freed"} {
		t.Run("read "+flag, func(t *testing.T) {
			s := fakeruntime.Nested(fakeruntime.Config{})
			s.RT.DropSymbol(prefix + flag)
			_, err := ompd.Open(s.T)
			assert.ErrorIs(t, err, ompd.ErrIncompatible)
			assert.ErrorContains(t, err, prefix+flag)
		})
	}
}
