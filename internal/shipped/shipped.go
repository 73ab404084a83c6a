// Package shipped opens the small real cores checked into testdata/cores,
// for the tests of every package that reads cores: so that `go test ./...`
// reads real runtime memory of both OpenMP runtimes on a machine with
// nothing but Go (no compiler, gdb or runtime build).
//
// Each core is a directory of testdata/cores, made by
// scripts/make-testdata-core.sh: a fixture program (see internal/fixtures)
// stopped at stopme, its core, the runtime library it ran with and, for a
// runtime read through its DWARF, the library's separate debug file; the
// system libraries the program loaded (shared by the cores made with
// them); the truth the program recorded at the stop (truth.json,
// display.txt); and core.json, which says what the files are
// (internal/corefiles reads it). Files may be compressed with gzip (.gz)
// or zstd (.zst).
//
// A test ranges over All and over each core's Openings (Each does both):
// with the debug files where the core has some, and without them, as a
// distribution ships the runtime. A core of another machine or runtime is
// one more directory: the tests read it without changes, so that adding
// one is adding files.
package shipped

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ompd-go/ompd/internal/corefiles"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target/core"
)

// Runtimes and layout sources a core's core.json names.
const (
	LLVM        = corefiles.LLVM
	GOMP        = corefiles.GOMP
	LayoutOMPD  = corefiles.LayoutOMPD
	LayoutDWARF = corefiles.LayoutDWARF
	LayoutTable = corefiles.LayoutTable
)

// Core is one shipped core.
type Core struct {
	*corefiles.Core
	// Truth is what the program recorded, display block included.
	Truth *fixtures.Truth
}

// Tracking reports whether the runtime records thread states and task
// frames for a debugger: LLVM's built with OMPD support, the program run
// with OMP_DEBUG=enabled (every shipped core is), and read through its
// OMPD tables.
func (c *Core) Tracking() bool { return c.Runtime == LLVM && c.Layout == LayoutOMPD }

// All returns every shipped core, by name; it fails the test if there are
// none or one cannot be read.
func All(tb testing.TB) []*Core {
	tb.Helper()
	root, err := fixtures.ModuleRoot()
	if err != nil {
		tb.Fatalf("shipped: %v", err)
	}
	cores, err := corefiles.LoadAll(corefiles.Dir(root))
	if err != nil {
		tb.Fatalf("shipped: %v", err)
	}
	var out []*Core
	for _, cf := range cores {
		c := &Core{Core: cf}
		if c.Truth, err = fixtures.LoadTruth(filepath.Join(c.Dir, "truth.json")); err != nil {
			tb.Fatalf("shipped: %v", err)
		}
		if display, err := os.ReadFile(filepath.Join(c.Dir, "display.txt")); err == nil {
			c.Truth.Display = fixtures.DisplayBlock(string(display))
		}
		if err := c.Truth.Validate(); err != nil {
			tb.Fatalf("shipped: %s: %v", c.Dir, err)
		}
		out = append(out, c)
	}
	return out
}

// Get returns the shipped core called name.
func Get(tb testing.TB, name string) *Core {
	tb.Helper()
	for _, c := range All(tb) {
		if c.Name == name {
			return c
		}
	}
	tb.Fatalf("shipped: no core %q", name)
	return nil
}

// Opening is one way to open a core: with its debug files or without.
type Opening corefiles.Opening

// Source is Layout as internal/omprt names it (0 for "").
func (o Opening) Source() omprt.LayoutSource {
	switch o.Layout {
	case LayoutOMPD:
		return omprt.LayoutOMPDTables
	case LayoutDWARF:
		return omprt.LayoutDWARF
	case LayoutTable:
		return omprt.LayoutKnownTable
	}
	return 0
}

// Openings lists the ways to open the core: as it is, and for a core with
// debug files, also without them.
func (c *Core) Openings() []Opening {
	var out []Opening
	for _, o := range c.Core.Openings() {
		out = append(out, Opening(o))
	}
	return out
}

// TestName is the name of a subtest of the core opened as o:
// "libgomp12-nested/debug", or the core's name alone when it has but one
// opening.
func (c *Core) TestName(o Opening) string {
	if o.Name == "" {
		return c.Name
	}
	return c.Name + "/" + o.Name
}

// Each runs f in a parallel subtest for every shipped core and each of its
// openings (named as TestName says).
func Each(t *testing.T, f func(t *testing.T, c *Core, o Opening)) {
	t.Helper()
	for _, c := range All(t) {
		for _, o := range c.Openings() {
			t.Run(c.TestName(o), func(t *testing.T) {
				t.Parallel()
				f(t, c, o)
			})
		}
	}
}

// Files are a core's files unpacked in a temporary directory.
type Files struct{ *corefiles.Files }

// Unpack decompresses the core's files into a directory of tb.TempDir(),
// each under its base name, the debug files too when debug is true.
func (c *Core) Unpack(tb testing.TB, debug bool) *Files {
	tb.Helper()
	f, err := c.UnpackTo(tb.TempDir(), debug)
	if err != nil {
		tb.Fatalf("shipped: %v", err)
	}
	return &Files{f}
}

// Options are the options of core.Open that read the files and nothing of
// this machine: its own libraries (another C library, perhaps) and debug
// files stay out.
func (f *Files) Options(tb testing.TB) []core.Option {
	return []core.Option{core.WithFileMap(f.Map), core.WithSysroot(tb.TempDir()), core.WithDebugDirs()}
}

// Sysroot makes a directory of tb.TempDir() that holds the files at the
// paths the core names (see corefiles.Files.MakeSysroot).
func (f *Files) Sysroot(tb testing.TB) string {
	tb.Helper()
	root := tb.TempDir()
	if err := f.MakeSysroot(root); err != nil {
		tb.Fatalf("shipped: %v", err)
	}
	return root
}

// ToolFlags are the flags of ompdtool core that read the files and nothing
// of this machine, as Options does for core.Open: -sysroot (an empty
// directory) and a -file-map for each file.
func (f *Files) ToolFlags(tb testing.TB) []string {
	flags := []string{"-sysroot", tb.TempDir()}
	paths := make([]string, 0, len(f.Map))
	for p := range f.Map {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		flags = append(flags, "-file-map", p+"="+f.Map[p])
	}
	return flags
}

// Open unpacks the core (with its debug files or not) and opens it with
// core.Open, Files.Options and opts; the core is closed when the test
// ends.
func (c *Core) Open(tb testing.TB, debug bool, opts ...core.Option) (*core.Core, *Files) {
	tb.Helper()
	f := c.Unpack(tb, debug)
	co, err := core.Open(context.Background(), f.Program, f.Core, append(f.Options(tb), opts...)...)
	if err != nil {
		tb.Fatalf("shipped: %s: %v", c.Name, err)
	}
	tb.Cleanup(func() { co.Close() })
	return co, f
}
