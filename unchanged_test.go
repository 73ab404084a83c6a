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

// whyError is a cause a runtime's stale-handle error may carry.
type whyError struct{ addr uint64 }

func (e *whyError) Error() string { return "slot reused" }

// Region's stale error has a cause, under context.
func (staleRuntime) Region(omprt.Ref) (*omprt.RegionData, error) {
	return nil, wrapErr(ErrReadFailed, omprt.Wrap(ErrStaleHandle, &whyError{0x2000}, "team 0x2000"), "region")
}

// Thread's is one of a record's stored errors.
func (staleRuntime) Thread(omprt.ThreadRef) (*omprt.ThreadData, error) {
	var st omprt.ErrorStore
	return nil, st.Error(ErrStaleHandle, omprt.ThreadN(omprt.ThreadRef{Addr: 0x3000, ID: 3}), " is no longer in the thread table")
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

	// The errors stay typed: causes and context are kept.
	_, err = u.Region(omprt.Ref{})
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, ErrStaleHandle)
	var why *whyError
	if assert.ErrorAs(t, err, &why) {
		assert.Equal(t, uint64(0x2000), why.addr)
	}
	assert.Regexp(t, `^region: team 0x2000 \(not a stale handle: .*\): ompd: runtime memory is inconsistent: slot reused$`, err.Error())
	_, err = u.Thread(omprt.ThreadRef{})
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, ErrStaleHandle)
	assert.Contains(t, err.Error(), "thread/3@0x3000 is no longer in the thread table (not a stale handle")

	refreshed.Store(true)
	_, err = u.Task(omprt.Ref{})
	assert.ErrorIs(t, err, ErrStaleHandle)
	assert.NotErrorIs(t, err, ErrCorrupt)
	_, err = u.Region(omprt.Ref{})
	assert.ErrorIs(t, err, ErrStaleHandle)
	assert.ErrorAs(t, err, &why)
}
