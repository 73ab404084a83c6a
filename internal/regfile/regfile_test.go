package regfile

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o600))
	reg := filepath.Join(dir, "reg")
	require.NoError(t, os.WriteFile(reg, []byte("hello"), 0o644))

	f, err := Open(reg)
	require.NoError(t, err)
	f.Close()
	for path, kind := range map[string]string{fifo: "a FIFO", dir: "a directory", "/dev/null": "a character device"} {
		_, err := Open(path)
		assert.ErrorIs(t, err, ErrNotRegular, path)
		assert.ErrorContains(t, err, kind)
	}
	_, err = Open(filepath.Join(dir, "missing"))
	assert.ErrorIs(t, err, os.ErrNotExist)

	// Not ELF: a clear error, not io.EOF.
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	for _, p := range []string{empty, reg} {
		_, _, err := OpenELF(p)
		assert.ErrorIs(t, err, ErrNotELF, p)
		assert.NotContains(t, err.Error(), "EOF")
	}
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("\x7fELF\x02\x01\x01"), 0o644))
	_, _, err = OpenELF(short)
	assert.ErrorContains(t, err, "truncated")
	exe, err := os.Executable()
	require.NoError(t, err)
	ef, fd, err := OpenELF(exe)
	require.NoError(t, err)
	assert.NotEmpty(t, ef.Progs)
	require.NoError(t, fd.Close())
}

func TestInRoot(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(root, "usr/lib"), 0o755))
	require.NoError(t, os.Symlink("usr/lib", filepath.Join(root, "lib")))
	require.NoError(t, os.Symlink("/usr/lib", filepath.Join(root, "abs")))
	require.NoError(t, os.Symlink("../../../../..", filepath.Join(root, "usr/lib/up")))
	require.NoError(t, os.Symlink("loop2", filepath.Join(root, "loop1")))
	require.NoError(t, os.Symlink("loop1", filepath.Join(root, "loop2")))
	for name, want := range map[string]string{
		"/usr/lib/libomp.so":          "usr/lib/libomp.so",
		"/lib/libomp.so":              "usr/lib/libomp.so",
		"/abs/libomp.so":              "usr/lib/libomp.so",
		"/../../../etc/passwd":        "etc/passwd",
		"/usr/lib/up/etc/passwd":      "etc/passwd",
		"/usr/lib/up/../../x":         "x",
		"/missing/../../etc/shadow":   "etc/shadow",
		"relative/../../../../a/b.so": "a/b.so",
		"/":                           "",
	} {
		got, err := InRoot(root, name)
		require.NoError(t, err, name)
		assert.Equal(t, filepath.Join(root, want), got, name)
	}
	_, err := InRoot(root, "/loop1/x")
	assert.ErrorContains(t, err, "symbolic links")
}
