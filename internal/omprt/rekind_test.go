package omprt

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestRekindOther: an error of another type matching from becomes one
// matching to with its message; nil and errors not matching from pass.
func TestRekindOther(t *testing.T) {
	assert.NoError(t, Rekind(nil, ErrStaleHandle, ErrCorrupt, " (note)"))
	other := fmt.Errorf("read: %w", ErrReadFailed)
	assert.Same(t, other, Rekind(other, ErrStaleHandle, ErrCorrupt, " (note)"))
	foreign := fmt.Errorf("gone: %w", ErrStaleHandle)
	err := Rekind(foreign, ErrStaleHandle, ErrCorrupt, " (note)")
	assert.ErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, ErrStaleHandle)
	assert.Equal(t, "gone: ompd: stale handle (note): ompd: runtime memory is inconsistent", err.Error())
	// An *Error of another kind is kept as it is.
	read := Errorf(ErrReadFailed, "read %#x", 0x10)
	assert.Equal(t, read.Error(), Rekind(read, ErrStaleHandle, ErrCorrupt, " (note)").Error())
}

// Is answers as errors.Is does, for every error type and sentinel.
func TestIs(t *testing.T) {
	var es ErrorStore
	name := es.Error(ErrUnavailable, TaskN(Ref{Addr: 0x10, Level: 1}), " has no generating task")
	wrapped := Wrap(ErrReadFailed, name, "reading %d", 1)
	caused := Wrap(ErrCorrupt, errors.New("plain"), "x")
	errs := []error{nil, ErrUnavailable, ErrCorrupt, name, wrapped, caused,
		Errorf(ErrUnavailable, "a"), Errorf(ErrCorrupt, "b"), ErrNoRuntime,
		fmt.Errorf("via fmt: %w", name), errors.New("plain"), Rekind(name, ErrUnavailable, ErrCorrupt, " (rekinded)"),
		// A stored error of a kind that matches another kind too.
		es.Error(ErrNoRuntime, ThreadN(ThreadRef{Addr: 0x20, ID: 1}), " has no runtime")}
	kinds := []error{nil, ErrUnavailable, ErrCorrupt, ErrReadFailed, ErrIncompatible, ErrStaleHandle}
	for _, err := range errs {
		for _, kind := range kinds {
			if got, want := Is(err, kind), errors.Is(err, kind); got != want {
				t.Errorf("Is(%v, %v) = %v, errors.Is says %v", err, kind, got, want)
			}
		}
	}
}
