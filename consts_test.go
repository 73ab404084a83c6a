package ompd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/omprt"
)

// TestConstantsMatchTheBoundary checks that the public enumerations written
// out so that go doc shows their values are the runtime boundary's (the
// ICV ids and scopes are defined from the boundary's).
func TestConstantsMatchTheBoundary(t *testing.T) {
	for want, got := range map[omprt.LayoutSource]ompd.LayoutSource{
		omprt.LayoutOMPDTables: ompd.LayoutOMPDTables, omprt.LayoutDWARF: ompd.LayoutDWARF,
		omprt.LayoutKnownTable: ompd.LayoutKnownTable,
	} {
		assert.Equal(t, int(want), int(got))
	}
	assert.Equal(t, omprt.IDPthread, int(ompd.PthreadID))
	assert.Equal(t, omprt.IDLWP, int(ompd.LWPID))
}
