package corefiles

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInModuleCache: the sources go install leaves in the module cache are
// found by the tool's version, under the cache's layout
// (MODULE@VERSION/go.mod), and their cores load; a development build, a
// missing cache or a version not in it are errors saying which.
func TestInModuleCache(t *testing.T) {
	wd, err := os.Getwd()
	require.NoError(t, err)
	checkout, err := ModuleRoot(wd)
	require.NoError(t, err)

	cache := t.TempDir()
	root := filepath.Join(cache, "github.com", "ompd-go", "ompd@v1.2.3")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "testdata"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(checkout, "go.mod"), filepath.Join(root, "go.mod")))
	require.NoError(t, os.Symlink(Dir(checkout), Dir(root)))

	got, err := InModuleCache(cache, "v1.2.3")
	require.NoError(t, err)
	assert.Equal(t, root, got)
	cores, err := LoadAll(Dir(got))
	require.NoError(t, err)
	var names []string
	for _, c := range cores {
		names = append(names, c.Name)
	}
	assert.Contains(t, names, "libomp-nested")
	assert.Contains(t, names, "libgomp14-nested")

	_, err = InModuleCache(cache, "v1.2.4")
	assert.ErrorContains(t, err, Module+"@v1.2.4 is not in the Go module cache")
	_, err = InModuleCache(cache, "(devel)")
	assert.ErrorContains(t, err, "no known version")
	_, err = InModuleCache("", "v1.2.3")
	assert.ErrorContains(t, err, "no Go module cache")
}

// TestModCache: GOMODCACHE, else GOPATH's first directory, else $HOME/go.
func TestModCache(t *testing.T) {
	env := func(kv map[string]string) func(string) string {
		return func(k string) string { return kv[k] }
	}
	sep := string(filepath.ListSeparator)
	assert.Equal(t, "/c", ModCache(env(map[string]string{"GOMODCACHE": "/c", "GOPATH": "/g", "HOME": "/h"})))
	assert.Equal(t, filepath.Join("/g", "pkg", "mod"), ModCache(env(map[string]string{"GOPATH": "/g" + sep + "/g2", "HOME": "/h"})))
	assert.Equal(t, filepath.Join("/h", "go", "pkg", "mod"), ModCache(env(map[string]string{"HOME": "/h"})))
	assert.Equal(t, "", ModCache(env(nil)))
}
