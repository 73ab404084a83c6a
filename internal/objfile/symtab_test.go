package objfile

import (
	"context"
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestReadSymbols checks readSymbols against debug/elf's Symbols and
// DynamicSymbols over 64-bit and 32-bit objects with and without a .symtab.
func TestReadSymbols(t *testing.T) {
	requireGCC(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src := filepath.Join(dir, "s.c")
	require.NoError(t, os.WriteFile(src, []byte("int x = 1; static int y; int f(void) { return y + x; }\n"), 0o644))
	files := []string{fixtures.Runtime(t).LibOMP}
	for _, c := range [][]string{
		{"-shared", "-o", "s64.so"}, {"-shared", "-s", "-o", "s64-stripped.so"},
		{"-m32", "-shared", "-nostdlib", "-o", "s32.so"}, {"-m32", "-c", "-o", "s32.o"},
	} {
		cmd := exec.CommandContext(ctx, "gcc", append(append([]string{"-g", "-fPIC"}, c...), src)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "gcc %v: %s", c, out)
		files = append(files, filepath.Join(dir, c[len(c)-1]))
	}
	for _, path := range files {
		f, err := elf.Open(path)
		require.NoError(t, err)
		for _, c := range []struct {
			typ  elf.SectionType
			want func() ([]elf.Symbol, error)
		}{{elf.SHT_SYMTAB, f.Symbols}, {elf.SHT_DYNSYM, f.DynamicSymbols}} {
			want, werr := c.want()
			got, gerr := readSymbols(f, c.typ)
			if errors.Is(werr, elf.ErrNoSymbols) {
				assert.ErrorIs(t, gerr, elf.ErrNoSymbols, "%s %v", path, c.typ)
				continue
			}
			require.NoError(t, werr, "%s %v", path, c.typ)
			require.NoError(t, gerr, "%s %v", path, c.typ)
			require.Len(t, got, len(want), "%s %v", path, c.typ)
			for i := range want {
				w := want[i]
				w.Version, w.Library, w.VersionIndex, w.HasVersion = "", "", 0, false
				assert.Equal(t, w, got[i], "%s %v symbol %d", path, c.typ, i+1)
			}
		}
		f.Close()
	}
}
