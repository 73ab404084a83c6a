package objfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFixJoin: a DWARF 5 file name debug/dwarf joined to the compilation
// directory although it was absolute is restored when the absolute file
// exists and the joined one does not, and left alone otherwise.
func TestFixJoin(t *testing.T) {
	dir := t.TempDir()
	compDir := filepath.Join(dir, "build")
	abs := filepath.Join(dir, "src", "x.S")
	require.NoError(t, os.MkdirAll(filepath.Dir(abs), 0o755))
	require.NoError(t, os.WriteFile(abs, nil, 0o644))
	joined := compDir + abs
	assert.Equal(t, abs, fixJoin(compDir, joined))

	// The joined file exists too: a real relative path, kept.
	require.NoError(t, os.MkdirAll(filepath.Dir(joined), 0o755))
	require.NoError(t, os.WriteFile(joined, nil, 0o644))
	assert.Equal(t, joined, fixJoin(compDir, joined))

	// Neither exists (another machine): kept.
	gone := compDir + filepath.Join(dir, "nowhere", "y.S")
	assert.Equal(t, gone, fixJoin(compDir, gone))
	// Not under the compilation directory, or a plain relative name: kept.
	assert.Equal(t, abs, fixJoin(compDir, abs))
	assert.Equal(t, compDir+"/src/z.c", fixJoin(compDir, compDir+"/src/z.c"))
	assert.Equal(t, joined, fixJoin("", joined))
}
