package ompd_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/omprt"
)

// TestConstantsMatchTheBoundary checks that the public enumerations, written
// out so that go doc shows their values, are the runtime boundary's.
func TestConstantsMatchTheBoundary(t *testing.T) {
	ids := ompd.AllICVs()
	assert.Len(t, ids, int(omprt.ICVEnd)-1)
	for _, id := range ids {
		assert.Equal(t, omprt.ICVTable[omprt.ICV(id)].Name, id.Name(), "ICV %d", int(id))
	}
	assert.Equal(t, int(omprt.ICVTeamSizeVar), int(ompd.ICVTeamSizeVar))
	assert.Equal(t, int(omprt.ICVDynVar), int(ompd.ICVDynVar))
	for want, got := range map[omprt.ScopeKind]ompd.ScopeKind{
		omprt.ScopeGlobal: ompd.ScopeGlobal, omprt.ScopeAddressSpace: ompd.ScopeAddressSpace,
		omprt.ScopeThread: ompd.ScopeThread, omprt.ScopeParallel: ompd.ScopeParallel,
		omprt.ScopeImplicitTask: ompd.ScopeImplicitTask, omprt.ScopeTask: ompd.ScopeTask,
	} {
		assert.Equal(t, int(want), int(got))
	}
	for want, got := range map[omprt.LayoutSource]ompd.LayoutSource{
		omprt.LayoutOMPDTables: ompd.LayoutOMPDTables, omprt.LayoutDWARF: ompd.LayoutDWARF,
		omprt.LayoutKnownTable: ompd.LayoutKnownTable,
	} {
		assert.Equal(t, int(want), int(got))
	}
	assert.Equal(t, omprt.IDPthread, int(ompd.PthreadID))
	assert.Equal(t, omprt.IDLWP, int(ompd.LWPID))
}
