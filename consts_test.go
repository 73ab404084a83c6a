package ompd_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/omprt"
)

// TestConstantsMatchTheBoundary checks that the public enumerations written
// out so that go doc shows their values are the runtime boundary's (the
// ICV ids and scopes are defined from the boundary's).
func TestConstantsMatchTheBoundary(t *testing.T) {
	// The scopes are ompd_scope_t's values; the ICV ids libompd 19's.
	assert.Equal(t, []int{1, 2, 3, 4, 5, 6}, []int{int(ompd.ScopeGlobal), int(ompd.ScopeAddressSpace),
		int(ompd.ScopeThread), int(ompd.ScopeParallel), int(ompd.ScopeImplicitTask), int(ompd.ScopeTask)})
	assert.Len(t, slices.Collect(ompd.AllICVs()), 32)
	assert.Equal(t, 1, int(ompd.ICVDynVar))
	assert.Equal(t, 7, int(ompd.ICVNthreadsVar))
	assert.Equal(t, 30, int(ompd.ICVOMPDTeamSizeVar))
	// OpenMP 5.1's teams ICVs, which libompd 19 does not know, follow.
	assert.Equal(t, 31, int(ompd.ICVNteamsVar))
	assert.Equal(t, 32, int(ompd.ICVTeamsThreadLimitVar))
	for want, got := range map[omprt.LayoutSource]ompd.LayoutSource{
		omprt.LayoutOMPDTables: ompd.LayoutOMPDTables, omprt.LayoutDWARF: ompd.LayoutDWARF,
		omprt.LayoutKnownTable: ompd.LayoutKnownTable,
	} {
		assert.Equal(t, int(want), int(got))
	}
	assert.Equal(t, omprt.IDPthread, int(ompd.PthreadID))
	assert.Equal(t, omprt.IDLWP, int(ompd.LWPID))
}

// TestVersionsAgree: Version and VersionString name the same
// specification (Version is its _OPENMP value).
func TestVersionsAgree(t *testing.T) {
	spec := map[int]string{201511: "4.5", 201811: "5.0", 202011: "5.1", 202111: "5.2", 202411: "6.0"}
	name, ok := spec[ompd.Version]
	if assert.True(t, ok, "Version %d is no OpenMP specification's _OPENMP", ompd.Version) {
		assert.Contains(t, ompd.VersionString(), fmt.Sprintf("OMPD %d (OpenMP %s ", ompd.Version, name))
	}
}
