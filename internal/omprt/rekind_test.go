package omprt

import (
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
