package delve

import (
	"testing"

	"github.com/go-delve/delve/pkg/version"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDelveVersionGate: the memory thread workaround runs on the Delve
// version it was verified with (the one go.mod pins, which this test
// binary links) and refuses any other loudly.
func TestDelveVersionGate(t *testing.T) {
	require.NoError(t, checkDelveVersion(version.DelveVersion), "the pinned Delve")
	for _, v := range []version.Version{
		{Major: "1", Minor: "28", Patch: "0"},
		{Major: "1", Minor: "27", Patch: "1"},
		{Major: "1", Minor: "27", Patch: "2", Metadata: "dev"},
		{Major: "2", Minor: "0", Patch: "0"},
	} {
		err := checkDelveVersion(v)
		assert.ErrorIs(t, err, ErrDelveVersion, "%+v", v)
		assert.ErrorContains(t, err, "memthread.md")
	}
}
