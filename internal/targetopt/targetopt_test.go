package targetopt

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCandidates(t *testing.T) {
	var f Files
	assert.Equal(t, []string{"/usr/lib/libomp.so"}, f.Candidates("/usr/lib/libomp.so"))

	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "usr/lib"), 0o755))
	f = Files{Sysroot: root}
	f.AddSearch("/opt/a", "/opt/b")
	assert.Equal(t, []string{filepath.Join(root, "usr/lib/libomp.so"), "/opt/a/libomp.so", "/opt/b/libomp.so"},
		f.Candidates("/usr/lib/libomp.so"))
	// ".." does not lead out of the sysroot.
	for _, c := range f.Candidates("/../../etc/passwd") {
		if c != "/opt/a/passwd" && c != "/opt/b/passwd" {
			assert.Contains(t, c, root)
		}
	}

	// The map wins over everything, and is a copy.
	m := map[string]string{"/usr/lib/libomp.so": "/here/libomp.so"}
	f.AddMap(m)
	m["/usr/lib/libomp.so"] = "/elsewhere"
	assert.Equal(t, []string{"/here/libomp.so"}, f.Candidates("/usr/lib/libomp.so"))
}

func TestDebug(t *testing.T) {
	var d Debug
	assert.Len(t, d.ObjOptions(), 1)
	d.SetDirs()
	assert.NotNil(t, d.Dirs, "no directories is not the default")
	t.Setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1")
	d.SetDebuginfodFromEnv()
	d.Resolve()
	require.NotNil(t, d.Debuginfod, "client from the environment")
	assert.False(t, d.FromEnv)
	d.SetDebuginfod(nil)
	assert.Nil(t, d.Debuginfod)
}
