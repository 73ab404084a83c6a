package objfile

import (
	"cmp"
	"context"
	"debug/dwarf"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// referenceIndex indexes every named type of f with debug/dwarf's Reader
// (the fallback path).
func referenceIndex(t *testing.T, f *elf.File) map[string]typeEntry {
	t.Helper()
	d, err := f.DWARF()
	require.NoError(t, err)
	o := &Object{f: f}
	o.dw.data, o.dw.index = d, make(map[string]typeEntry)
	o.indexAll()
	require.NoError(t, o.dw.err)
	return o.dw.index
}

// scannerIndex indexes every named type of f with the scanner alone,
// failing the test if the scanner cannot read the file.
func scannerIndex(t *testing.T, f *elf.File) map[string]typeEntry {
	t.Helper()
	_, secs, ok, err := loadSections(f)
	require.NoError(t, err)
	require.True(t, ok)
	o := &Object{f: f}
	o.dw.index = make(map[string]typeEntry)
	s := &dieScanner{secs: secs, order: f.ByteOrder}
	for {
		e, more, err := s.next()
		require.NoError(t, err)
		if !more {
			break
		}
		o.addIndex(e.key, e.off, e.decl, e.tag)
	}
	return o.dw.index
}

// TestScannerMatchesReader checks that the lazy scanner indexes exactly
// what debug/dwarf's Reader does, over DWARF of several producers and
// versions: gcc's DWARF 2 to 5 (also 64-bit DWARF, type units and split
// DWARF skeletons), clang's, LLVM's libomp, and the Go linker's.
func TestScannerMatchesReader(t *testing.T) {
	check := func(t *testing.T, path string) {
		f, err := elf.Open(path)
		require.NoError(t, err)
		defer f.Close()
		want := referenceIndex(t, f)
		if !strings.Contains(path, "split") { // skeleton units hold no types
			require.NotEmpty(t, want)
		}
		assert.Equal(t, want, scannerIndex(t, f))
	}
	t.Run("go", func(t *testing.T) {
		fixtures.RequireTool(t, "go")
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte(goProgram), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module scantest\n"), 0o644))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "go", "build", "-o", "prog", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
		check(t, filepath.Join(dir, "prog"))
	})
	t.Run("libomp", func(t *testing.T) {
		check(t, fixtures.Runtime(t).LibOMP)
	})
	src, err := filepath.Abs("testdata")
	require.NoError(t, err)
	for _, c := range []struct{ cc, flags string }{
		{"gcc", "-gdwarf-2"}, {"gcc", "-gdwarf-3"}, {"gcc", "-gdwarf-4"}, {"gcc", "-gdwarf-5"},
		{"gcc", "-gdwarf-5 -gdwarf64"}, {"gcc", "-gdwarf-4 -fdebug-types-section"},
		{"gcc", "-gdwarf-5 -gsplit-dwarf"}, {"gcc", "-gdwarf-4 -gstrict-dwarf -gz"},
		{"clang-19", "-gdwarf-4"}, {"clang-19", "-gdwarf-5"}, {"clang-19", "-gdwarf-5 -fdebug-types-section"},
	} {
		t.Run(c.cc+c.flags, func(t *testing.T) {
			fixtures.RequireTool(t, c.cc)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			dir := t.TempDir()
			exe := filepath.Join(dir, "types")
			if strings.Contains(c.flags, "split") {
				exe += "-split"
			}
			args := append([]string{"-g", "-O0", "-o", exe}, strings.Fields(c.flags)...)
			cmd := exec.CommandContext(ctx, c.cc, append(args, filepath.Join(src, "dup.c"), filepath.Join(src, "types.c"))...)
			cmd.Dir = dir
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "%s", out)
			check(t, exe)
		})
	}
}

// goProgram is a Go program whose binary carries the Go linker's DWARF.
const goProgram = `package main

import "fmt"

type point struct{ x, y int }

func main() { fmt.Println(point{1, 2}) }
`

// TestLazyIndex checks that a lookup indexes only as far as it needs to,
// that later lookups go on from there, and that the answers are those of
// the full index.
func TestLazyIndex(t *testing.T) {
	lib := fixtures.Runtime(t).LibOMP
	o, err := Open(lib, 0)
	require.NoError(t, err)
	defer o.Close()
	off, err := o.FieldOffset("kmp_global_t", "g")
	require.NoError(t, err)
	assert.EqualValues(t, 0, off)
	o.dw.mu.Lock()
	partial := len(o.dw.index)
	scanning := o.dw.scan != nil
	o.dw.mu.Unlock()
	assert.True(t, scanning, "one lookup of a defined type scanned all of libomp's DWARF")

	// A name no object defines scans to the end.
	_, err = o.TypeSize("struct no_such_type_anywhere")
	require.Error(t, err)
	o.dw.mu.Lock()
	full := len(o.dw.index)
	assert.Nil(t, o.dw.scan)
	o.dw.mu.Unlock()
	assert.Less(t, partial, full)

	f, err := elf.Open(lib)
	require.NoError(t, err)
	defer f.Close()
	o.dw.mu.Lock()
	defer o.dw.mu.Unlock()
	assert.Equal(t, referenceIndex(t, f), o.dw.index)
}

// TestQuickFieldMatchesTypes checks the member offsets and bit-field
// positions read from the types' entries alone (quickField,
// quickBitField) against those read through debug/dwarf's types, for
// every named member of every struct and union of LLVM's libomp and GCC's
// libgomp, and one level deeper for members that are structs. The quick
// lookups run on a second object as a first lookup would: in the order of
// the types in .debug_info, the index scanned only that far, and over the
// units before the scanner's position (the whole DWARF is never made).
// The members the runtimes' readers look up first take the quick path.
func TestQuickFieldMatchesTypes(t *testing.T) {
	type want struct {
		typ, path      string
		off, bit, size uint64
		offErr, bitErr bool
	}
	check := func(t *testing.T, lib string, first ...string) {
		ref, err := Open(lib, 0)
		require.NoError(t, err)
		defer ref.Close()
		ref.loadDWARF()
		ref.dw.mu.Lock()
		ref.indexed("struct no_such_type_anywhere") // index everything
		require.NoError(t, ref.dw.err)
		type keyed struct {
			key string
			off dwarf.Offset
		}
		var keys []keyed
		for key, e := range ref.dw.index {
			if !e.decl && (strings.HasPrefix(key, "struct ") || strings.HasPrefix(key, "union ")) {
				keys = append(keys, keyed{key, e.off})
			}
		}
		slices.SortFunc(keys, func(a, b keyed) int { return cmp.Compare(a.off, b.off) })
		var wants []want
		add := func(typ, path string) {
			w := want{typ: typ, path: path}
			loc, found, err := ref.locate(typ, path)
			w.off, w.offErr = loc.byteOff, !found || err != nil
			var ok bool
			w.bit, w.size, ok, err = ref.bitFieldOf(typ, path)
			w.bitErr = !ok || err != nil
			wants = append(wants, w)
		}
		for _, k := range keys {
			typ, ok, err := ref.findType(k.key)
			require.NoError(t, err)
			st, _ := ref.strip(typ).(*dwarf.StructType)
			if !ok || st == nil || st.Incomplete {
				continue
			}
			for _, f := range st.Field {
				if f.Name == "" {
					continue
				}
				add(k.key, f.Name)
				if inner, ok := ref.strip(f.Type).(*dwarf.StructType); ok && !inner.Incomplete {
					for _, g := range inner.Field {
						if g.Name != "" {
							add(k.key, f.Name+"."+g.Name)
						}
					}
				}
			}
		}
		ref.dw.mu.Unlock()

		o, err := Open(lib, 0)
		require.NoError(t, err)
		defer o.Close()
		o.loadDWARF()
		o.dw.mu.Lock()
		defer o.dw.mu.Unlock()
		quick, bits := 0, 0
		for _, w := range wants {
			if off, ok := o.quickField(w.typ, w.path); ok {
				quick++
				if assert.False(t, w.offErr, "%s.%s: found quickly, not through the types", w.typ, w.path) {
					assert.Equal(t, w.off, off, "%s.%s", w.typ, w.path)
				}
			}
			if bit, size, ok := o.quickBitField(w.typ, w.path); ok {
				bits++
				if assert.False(t, w.bitErr, "%s.%s: bit-field found quickly, not through the types", w.typ, w.path) {
					assert.Equal(t, [2]uint64{w.bit, w.size}, [2]uint64{bit, size}, "%s.%s", w.typ, w.path)
				}
			}
		}
		t.Logf("%d of %d members and %d bit-fields found quickly", quick, len(wants), bits)
		assert.Greater(t, quick, len(wants)/2)
		assert.Nil(t, o.dw.data, "quick lookups made the whole DWARF")
		for _, f := range first {
			typ, path, _ := strings.Cut(f, ":")
			_, ok := o.quickField(typ, path)
			_, _, bok := o.quickBitField(typ, path)
			assert.True(t, ok || bok, "%s.%s quickly", typ, path)
		}
	}
	t.Run("libomp", func(t *testing.T) {
		check(t, fixtures.Runtime(t).LibOMP, "kmp_global_t:g", "kmp_base_global_t:g_dynamic", "kmp_base_team_t:t_argv",
			"kmp_base_info_t:th_ident", "kmp_affinity_t:flags", "kmp_affinity_flags_t:core_types_gran", "kmp_affinity_attrs_t:valid")
	})
	t.Run("libgomp", func(t *testing.T) {
		check(t, fixtures.GompRuntime(t, fixtures.GompVersions[len(fixtures.GompVersions)-1]).LibOMP)
	})
}
