package gompver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestNewer(t *testing.T) {
	newest := ""
	for _, name := range []string{"OMP_1.0", "GOMP_1.0", "GOMP_4.0.1", "GOMP_PLUGIN_1.3", "GOMP_4.0", "GOMP_5.1", "GOMP_5.0.1", "GOMP_4.5"} {
		newest = Newer(newest, name)
	}
	assert.Equal(t, "GOMP_5.1", newest)
	assert.Equal(t, "GOMP_5.1.2", Newer(newest, "GOMP_5.1.2"))
	assert.Equal(t, "", Newer("", "GOMP_PLUGIN_9.0"))
}

func TestLess(t *testing.T) {
	assert.True(t, Less("5.1", "5.1.2"))
	assert.True(t, Less("4.5", "5.0"))
	assert.True(t, Less("5.9", "5.10"))
	assert.False(t, Less("5.1", "5.1.0"))
	assert.False(t, Less("5.1.2", "5.1"))
}

func TestRelease(t *testing.T) {
	assert.Equal(t, "GCC 12", Release("GOMP_5.1"))
	assert.Equal(t, "GCC 13", Release("GOMP_5.1.1"))
	assert.Equal(t, "GCC 14", Release("GOMP_5.1.2"))
	assert.Equal(t, "", Release("GOMP_5.1.3"), "GCC 15 added it with GOMP_6.0: no release's newest")
	assert.Equal(t, "GCC 15", Release("GOMP_6.0"))
	assert.Equal(t, "GCC 16", Release("GOMP_6.0.1"))
	assert.Equal(t, "a GCC newer than 16", Release("GOMP_6.1"))
	assert.Equal(t, "", Release("GOMP_4.7"))
	assert.Equal(t, "", Release("OMP_5.1"))
	assert.Equal(t, "", Release(""))
}
