package objfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
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

// TestAbsoluteSourceName: a source compiled by its absolute path from
// another directory is named by that path (debug/dwarf joins a DWARF 5
// file's directory with its path even when the path is absolute), also
// where the source is gone (a core read on another machine); a source
// compiled by a relative path keeps it, as gdb shows it ("sub/abs.c");
// in C and in Fortran, whose procedures are named as gdb names them.
func TestAbsoluteSourceName(t *testing.T) {
	requireGCC(t)
	for _, c := range []struct {
		compiler, file, src, fn, want string
	}{
		{"gcc", "abs.c", "int f(int x) { return x + 1; }\nint main(void) { return f(2); }\n", "f", "f"},
		{"gfortran", "abs.f90", "module solver\ncontains\n  integer function run_team(n)\n    integer :: n\n    run_team = n + 1\n  end function\nend module\nprogram prog\n  use solver\n  print *, run_team(2)\nend program\n", "__solver_MOD_run_team", "solver::run_team"},
		{"gfortran", "main.f90", "program prog\n  print *, 1\nend program\n", "MAIN__", "prog"},
	} {
		t.Run(c.file, func(t *testing.T) {
			fixtures.RequireTool(t, c.compiler)
			srcDir, buildDir := t.TempDir(), t.TempDir()
			src := filepath.Join(srcDir, "sub", c.file)
			require.NoError(t, os.MkdirAll(filepath.Dir(src), 0o755))
			require.NoError(t, os.WriteFile(src, []byte(c.src), 0o644))
			for _, rel := range []bool{false, true} {
				arg, dir := src, buildDir
				if rel {
					arg, dir = filepath.Join("sub", c.file), srcDir
				}
				exe := filepath.Join(buildDir, "prog"+strconv.FormatBool(rel))
				cmd := exec.Command(c.compiler, "-g", "-O0", "-o", exe, arg)
				cmd.Dir = dir
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s", out)
				o, err := Open(exe, 0)
				require.NoError(t, err)
				sym, ok := lookupFunc(o, c.fn)
				require.True(t, ok, "symbol %s", c.fn)
				s := NewSet(o)
				loc, err := s.LocateCode(sym)
				require.NoError(t, err)
				want := src
				if rel {
					want = arg
				}
				assert.Equal(t, want, loc.File, "compiled as %s in %s", arg, dir)
				assert.Equal(t, c.want, loc.Name, "named as gdb names it")
				o.Close()
			}
			// The source gone: the name the program was compiled with.
			require.NoError(t, os.Remove(src))
			o, err := Open(filepath.Join(buildDir, "progfalse"), 0)
			require.NoError(t, err)
			defer o.Close()
			sym, _ := lookupFunc(o, c.fn)
			loc, err := NewSet(o).LocateCode(sym)
			require.NoError(t, err)
			assert.Equal(t, src, loc.File, "with the source gone")
		})
	}
}

// lookupFunc returns the address of a function symbol of o.
func lookupFunc(o *Object, name string) (uint64, bool) {
	s, err := o.Lookup(name)
	return s.Addr, err == nil
}

// TestAbsoluteFileEntry: clang writes a DWARF 5 line table's file 0 as
// the absolute path the source was compiled by, in directory 0 (the
// compilation directory); debug/dwarf joins the two anyway. The file
// table (where inlined calls' and declarations' file numbers point) names
// it by its path, also where the source is gone (a core read on another
// machine), where fixJoin cannot tell.
func TestAbsoluteFileEntry(t *testing.T) {
	fixtures.RequireTool(t, fixtures.Compiler)
	srcDir, buildDir := t.TempDir(), t.TempDir()
	src := filepath.Join(srcDir, "sub", "abs.c")
	require.NoError(t, os.MkdirAll(filepath.Dir(src), 0o755))
	require.NoError(t, os.WriteFile(src, []byte("int f(int x) { return x + 1; }\nint main(void) { return f(2); }\n"), 0o644))
	exe := filepath.Join(buildDir, "prog")
	cmd := exec.Command(fixtures.Compiler, "-g", "-O0", "-o", exe, src)
	cmd.Dir = buildDir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.NoError(t, os.Remove(src))
	o, err := Open(exe, 0)
	require.NoError(t, err)
	defer o.Close()
	sym, ok := lookupFunc(o, "f")
	require.True(t, ok)
	_, _, cu, ok := o.lineAt(sym)
	require.True(t, ok)
	files := o.table(cu).fileTable
	require.NotEmpty(t, files)
	assert.Equal(t, src, files[0], "file 0, spelled absolute: %q", files)
}

// TestCxxOutlinedName: the region GCC outlines from a C++ member
// function, _ZN3geo4GridIdE5relaxEv._omp_fn.0, reads
// geo::Grid<double>::relax._omp_fn.0: demangled, and with its suffix, so
// that it does not look like the relax frame that forked it.
func TestCxxOutlinedName(t *testing.T) {
	fixtures.RequireTool(t, "g++")
	dir := t.TempDir()
	src := filepath.Join(dir, "grid.cc")
	require.NoError(t, os.WriteFile(src, []byte(`namespace geo {
template <class T> struct Grid {
  T v[8];
  void relax() {
#pragma omp parallel num_threads(2)
    v[0] += 1;
  }
};
}
int main() { geo::Grid<double> g{}; g.relax(); return 0; }
`), 0o644))
	exe := filepath.Join(dir, "grid")
	out, err := exec.Command("g++", "-g", "-O0", "-fopenmp", "-o", exe, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	o, err := Open(exe, 0)
	require.NoError(t, err)
	defer o.Close()
	s := NewSet(o)
	for sym, want := range map[string]string{
		"_ZN3geo4GridIdE5relaxEv._omp_fn.0": "geo::Grid<double>::relax._omp_fn.0",
		"_ZN3geo4GridIdE5relaxEv":           "geo::Grid<double>::relax",
	} {
		a, ok := lookupFunc(o, sym)
		require.True(t, ok, "%s", sym)
		loc, err := s.LocateCode(a)
		require.NoError(t, err)
		assert.Equal(t, sym, loc.Function)
		assert.Equal(t, want, loc.Name)
	}
}
