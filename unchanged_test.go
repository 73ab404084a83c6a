package ompd

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ompd-go/ompd/internal/omprt"
)

// staleRuntime is a runtime whose every handle reads as stale.
type staleRuntime struct{ omprt.Runtime }

func (staleRuntime) Task(omprt.Ref) (*omprt.TaskData, error) {
	return nil, errorf(ErrStaleHandle, "task 0x1000: task was freed")
}

// TestUnchangedMemoryIsNotStale: before any Refresh (always, on a core)
// what the runtime calls a stale handle is corrupt memory, with the
// runtime's words; after one it is a stale handle.
func TestUnchangedMemoryIsNotStale(t *testing.T) {
	var refreshed atomic.Bool
	u := unchanged{Runtime: staleRuntime{}, refreshed: &refreshed}
	_, err := u.Task(omprt.Ref{})
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, ErrStaleHandle)
	assert.Contains(t, err.Error(), "task 0x1000: task was freed")
	assert.NotContains(t, err.Error(), ErrStaleHandle.Error())
	refreshed.Store(true)
	_, err = u.Task(omprt.Ref{})
	assert.ErrorIs(t, err, ErrStaleHandle)
	assert.NotErrorIs(t, err, ErrCorrupt)
}
