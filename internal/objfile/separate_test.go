package objfile

import (
	"debug/elf"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/debuginfo"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/debuginfod"
)

// stripped builds the types program, splits it as distributions do
// (objcopy --only-keep-debug, then strip), and returns the stripped
// executable, its debug file (in a directory no search looks in), and the
// unstripped original.
func stripped(t *testing.T, stripArgs ...string) (exe, debug, orig string) {
	t.Helper()
	orig, _ = buildTypes(t, "-gdwarf-5")
	fixtures.RequireTool(t, "objcopy", "strip")
	dir := t.TempDir()
	exe = filepath.Join(dir, "bin", "types")
	debug = filepath.Join(dir, "kept", "types.debug")
	require.NoError(t, os.MkdirAll(filepath.Dir(exe), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Dir(debug), 0o755))
	run := func(args ...string) {
		out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "%s: %s", strings.Join(args, " "), out)
	}
	run("objcopy", "--only-keep-debug", orig, debug)
	run(append(append([]string{"strip"}, stripArgs...), "-o", exe, orig)...)
	run("objcopy", "--add-gnu-debuglink="+debug, exe)
	return exe, debug, orig
}

// buildIDDir places file at the build-id path of obj under a new debug
// directory, and returns the directory.
func buildIDDir(t *testing.T, obj, file string) string {
	t.Helper()
	f, err := elf.Open(obj)
	require.NoError(t, err)
	id := debuginfo.BuildID(f)
	f.Close()
	require.NotEmpty(t, id)
	dir := t.TempDir()
	h := hex.EncodeToString(id)
	p := filepath.Join(dir, ".build-id", h[:2], h[2:]+".debug")
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.Symlink(file, p))
	return dir
}

func TestSeparateDebugFile(t *testing.T) {
	exe, debug, orig := stripped(t, "--strip-all")
	const bias = 0x555500000000
	ref, err := Open(orig, bias)
	require.NoError(t, err)
	defer ref.Close()

	dir := buildIDDir(t, exe, debug)
	o, err := Open(exe, bias, WithDebugInfo(debuginfo.Options{DebugDirs: []string{dir}}))
	require.NoError(t, err)
	defer o.Close()
	assert.False(t, o.ownSymtab())
	assert.False(t, o.ownDWARF())

	// Local symbols and functions, at the object's bias, as in the
	// unstripped original.
	for _, name := range []string{"only_local", "dup_name", "main", "dup_local_addr"} {
		want, err := ref.Lookup(name)
		require.NoError(t, err, name)
		got, err := o.Lookup(name)
		require.NoError(t, err, name)
		assert.Equal(t, want, got, name)
	}
	main, err := o.Lookup("main")
	require.NoError(t, err)
	sym, ok := o.SymbolAt(main.Addr + 4)
	assert.True(t, ok)
	assert.Equal(t, "main", sym.Name)

	// DWARF from the debug file.
	s, sr := NewSet(o), NewSet(ref)
	for _, typ := range []string{"struct outer", "inner_t", "union value"} {
		want, err := sr.TypeSize(typ)
		require.NoError(t, err)
		got, err := s.TypeSize(typ)
		require.NoError(t, err, typ)
		assert.Equal(t, want, got, typ)
	}
	wantOff, err := sr.FieldOffset("struct outer", "v")
	require.NoError(t, err)
	gotOff, err := s.FieldOffset("struct outer", "v")
	require.NoError(t, err)
	assert.Equal(t, wantOff, gotOff)

	p, err := o.DebugFile()
	require.NoError(t, err)
	assert.Equal(t, filepath.Dir(filepath.Dir(p)), filepath.Join(dir, ".build-id"))
	p, err = ref.DebugFile()
	assert.NoError(t, err)
	assert.Empty(t, p, "an unstripped object needs no debug file")
}

func TestSeparateDebugFileByLink(t *testing.T) {
	exe, debug, _ := stripped(t, "--strip-unneeded")
	// Next to the object, through .gnu_debuglink.
	require.NoError(t, os.Symlink(debug, filepath.Join(filepath.Dir(exe), filepath.Base(debug))))
	o, err := Open(exe, 0, WithDebugInfo(debuginfo.Options{DebugDirs: []string{}}))
	require.NoError(t, err)
	defer o.Close()
	sym, err := o.Lookup("only_local")
	require.NoError(t, err)
	assert.True(t, sym.Local)
	p, err := o.DebugFile()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(filepath.Dir(exe), filepath.Base(debug)), p)
}

func TestSeparateDebugFileMissing(t *testing.T) {
	exe, _, _ := stripped(t, "--strip-all")
	o, err := Open(exe, 0, WithDebugInfo(debuginfo.Options{DebugDirs: []string{}}))
	require.NoError(t, err)
	defer o.Close()
	_, err = o.Lookup("only_local")
	require.ErrorIs(t, err, target.ErrNotFound)
	assert.Contains(t, err.Error(), "no usable separate debug file")
	_, err = NewSet(o).TypeSize("struct outer")
	require.ErrorIs(t, err, target.ErrNotFound)
	assert.Contains(t, err.Error(), "no usable separate debug file", "the type's error says why")
	_, err = o.DebugFile()
	assert.ErrorIs(t, err, debuginfo.ErrNotFound)
}

func TestSeparateDebugFileMismatch(t *testing.T) {
	exe, _, _ := stripped(t, "--strip-all")
	// The debug file of another build (other DWARF, so another build-id)
	// at this build-id's place.
	other, _ := buildTypes(t, "-gdwarf-4")
	wrong := filepath.Join(t.TempDir(), "wrong.debug")
	out, err := exec.Command("objcopy", "--only-keep-debug", other, wrong).CombinedOutput()
	require.NoError(t, err, "%s", out)
	dir := buildIDDir(t, exe, wrong)
	o, err := Open(exe, 0, WithDebugInfo(debuginfo.Options{DebugDirs: []string{dir}}))
	require.NoError(t, err)
	defer o.Close()
	_, err = o.Lookup("only_local")
	require.ErrorIs(t, err, target.ErrNotFound)
	assert.Contains(t, err.Error(), "does not match")
	_, err = NewSet(o).TypeSize("struct outer")
	require.ErrorIs(t, err, target.ErrNotFound, "the refused file's DWARF is not used either")
	_, err = o.DebugFile()
	assert.ErrorIs(t, err, debuginfo.ErrMismatch)
}

func TestSeparateDebugFileDebuginfod(t *testing.T) {
	exe, debug, _ := stripped(t, "--strip-all")
	f, err := elf.Open(exe)
	require.NoError(t, err)
	id := hex.EncodeToString(debuginfo.BuildID(f))
	f.Close()
	var mu sync.Mutex
	hits := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		mu.Unlock()
		if r.URL.Path == "/buildid/"+id+"/debuginfo" {
			http.ServeFile(w, r, debug)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	client := &debuginfod.Client{URLs: []string{srv.URL}, CacheDir: t.TempDir()}
	o, err := Open(exe, 0, WithDebugInfo(debuginfo.Options{DebugDirs: []string{}, Fetcher: client}))
	require.NoError(t, err)
	defer o.Close()

	// Concurrent first lookups search once.
	var wg sync.WaitGroup
	var failed atomic.Int32
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := o.Lookup("only_local"); err != nil {
				failed.Add(1)
			}
			if _, err := NewSet(o).TypeSize("struct outer"); err != nil {
				failed.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Zero(t, failed.Load())
	mu.Lock()
	assert.Equal(t, 1, hits["/buildid/"+id+"/debuginfo"])
	mu.Unlock()
}

// TestRDebugDoesNotSearch: finding the dynamic linker's r_debug reads
// only the objects' own symbols, so opening a program never searches for
// debug files of its libraries.
func TestRDebugDoesNotSearch(t *testing.T) {
	exe, _, _ := stripped(t, "--strip-all")
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	client := &debuginfod.Client{URLs: []string{srv.URL}, CacheDir: t.TempDir()}
	o, err := Open(exe, 0, WithDebugInfo(debuginfo.Options{DebugDirs: []string{}, Fetcher: client}))
	require.NoError(t, err)
	defer o.Close()
	_, _ = NewSet(o).RDebug(zeroMem{})
	assert.Zero(t, asked.Load())
	_, err = o.Lookup("no_such_symbol")
	assert.ErrorIs(t, err, target.ErrNotFound)
	assert.Equal(t, int32(1), asked.Load(), "a lookup the object cannot answer asks the server once")
	_, _ = o.Lookup("no_such_symbol_either")
	assert.Equal(t, int32(1), asked.Load(), "the answer is kept")
}

// TestScanDebugMatchesIndex checks that looking names up by scanning the
// separate debug file's table (the first lookups of names the object
// lacks) gives what the full index gives, for every name of the table and
// for a missing one, and that lookups go on working past maxScans.
func TestScanDebugMatchesIndex(t *testing.T) {
	exe, debug, _ := stripped(t, "--strip-all")
	dir := buildIDDir(t, exe, debug)
	open := func() *Object {
		o, err := Open(exe, 0x555500000000, WithDebugInfo(debuginfo.Options{DebugDirs: []string{dir}}))
		require.NoError(t, err)
		t.Cleanup(func() { o.Close() })
		return o
	}
	ref := open()
	ref.indexFull()
	f, err := elf.Open(debug)
	require.NoError(t, err)
	syms, err := f.Symbols()
	f.Close()
	require.NoError(t, err)
	names := []string{"no_such_symbol_anywhere"}
	for _, s := range syms {
		names = append(names, s.Name)
	}
	o := open()
	for i, name := range names {
		want, werr := ref.Lookup(name)
		got, gerr := o.Lookup(name)
		assert.Equal(t, want, got, name)
		assert.Equal(t, werr == nil, gerr == nil, name)
		if i < maxScans {
			assert.False(t, o.fullDone.Load(), "lookup %d (%s) indexed the debug file", i, name)
		}
	}
	assert.Greater(t, len(names), maxScans)
	assert.NoError(t, o.SymbolErr())
}
