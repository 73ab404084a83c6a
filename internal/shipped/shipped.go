// Package shipped opens the small real cores checked into testdata/cores,
// for the tests of every package that reads cores: so that `go test ./...`
// reads real runtime memory of both OpenMP runtimes on a machine with
// nothing but Go (no compiler, gdb or runtime build).
//
// Each core is a directory of testdata/cores, made by
// scripts/make-testdata-core.sh: a fixture program (see internal/fixtures)
// stopped at stopme, its core, the runtime library it ran with (code
// zeroed: nothing reads it) and, for a runtime read through its DWARF, the
// library's separate debug file; the truth the program recorded at the
// stop (truth.json, display.txt); and core.json, which says what the files
// are (Manifest). Files may be compressed with gzip (.gz) or zstd (.zst).
//
// A test ranges over All and over each core's Openings (Each does both):
// with the debug files where the core has some, and without them, as a
// distribution ships the runtime. A core of another machine or runtime is one more directory:
// the tests read it without changes, so that adding one is adding files.
package shipped

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target/core"
)

// Runtimes a Manifest names.
const (
	LLVM = "libomp"  // LLVM's OpenMP runtime
	GOMP = "libgomp" // GCC's
)

// Layout sources a Manifest names, as ompd.LayoutSource's String gives
// them.
const (
	LayoutOMPD  = "OMPD tables"
	LayoutDWARF = "DWARF"
	LayoutTable = "known layout table"
)

// Manifest is a core's core.json.
type Manifest struct {
	// Fixture is the program's name in internal/fixtures ("nested").
	Fixture string `json:"fixture"`
	// Machine is the ELF machine the program ran on, as uname -m names
	// it ("x86_64", "aarch64", ...).
	Machine string `json:"machine"`
	// Runtime is LLVM or GOMP; RuntimeVersion its version ("19.1.7",
	// "12.2.0").
	Runtime        string `json:"runtime"`
	RuntimeVersion string `json:"runtime_version"`
	// Program is the file of the directory (without a compression
	// suffix) holding the program.
	Program string `json:"program"`
	// Files maps the paths the core names (those of the machine it was
	// made on) to the files that stand for them: the directory's, or
	// shared ones of another directory of testdata/cores
	// ("../system-x86_64/BUILD-ID/libc.so.6", a system library shared by
	// the cores made with it). Their base names must differ.
	Files map[string]string `json:"files"`
	// DebugFiles are the directory's separate debug files: each is found
	// next to the library whose .gnu_debuglink names it.
	DebugFiles []string `json:"debug_files"`
	// Layout is where the library takes the runtime's layout from with
	// the debug files; NoDebugLayout without them ("" when the runtime
	// cannot be read without them: ompd.Open fails with
	// ErrIncompatible). Cores with no debug files have no NoDebugLayout.
	Layout        string `json:"layout"`
	NoDebugLayout string `json:"no_debug_layout,omitempty"`
}

// Core is one shipped core.
type Core struct {
	// Name is its directory's name ("libgomp12-nested").
	Name string
	// Dir is its directory.
	Dir string
	Manifest
	// Truth is what the program recorded, display block included.
	Truth *fixtures.Truth
}

// Tracking reports whether the runtime records thread states and task
// frames for a debugger: LLVM's built with OMPD support, the program run
// with OMP_DEBUG=enabled (every shipped core is), and read through its
// OMPD tables.
func (c *Core) Tracking() bool { return c.Runtime == LLVM && c.Layout == LayoutOMPD }

// Dir returns the directory of the shipped cores.
func Dir() (string, error) {
	root, err := fixtures.ModuleRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "testdata", "cores"), nil
}

// All returns every shipped core, by name; it fails the test if there are
// none or one cannot be read.
func All(tb testing.TB) []*Core {
	tb.Helper()
	dir, err := Dir()
	if err != nil {
		tb.Fatalf("shipped: %v", err)
	}
	manifests, err := filepath.Glob(filepath.Join(dir, "*", "core.json"))
	if err != nil || len(manifests) == 0 {
		tb.Fatalf("shipped: no cores in %s (%v)", dir, err)
	}
	slices.Sort(manifests)
	var out []*Core
	for _, m := range manifests {
		c, err := load(filepath.Dir(m))
		if err != nil {
			tb.Fatalf("shipped: %v", err)
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

func load(dir string) (*Core, error) {
	c := &Core{Name: filepath.Base(dir), Dir: dir}
	data, err := os.ReadFile(filepath.Join(dir, "core.json"))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c.Manifest); err != nil {
		return nil, fmt.Errorf("%s/core.json: %w", dir, err)
	}
	if c.Runtime != LLVM && c.Runtime != GOMP {
		return nil, fmt.Errorf("%s/core.json: runtime %q", dir, c.Runtime)
	}
	// Files are the directory's, or shared ones of a sibling directory
	// (../system-x86_64/...): never outside testdata/cores.
	for _, local := range append(append([]string{c.Program}, c.DebugFiles...), slices.Collect(maps.Values(c.Files))...) {
		if local == "" || filepath.IsAbs(local) || strings.HasPrefix(filepath.Join(c.Name, local), "..") {
			return nil, fmt.Errorf("%s/core.json: file %q outside testdata/cores", dir, local)
		}
	}
	for _, o := range c.Openings() {
		if o.Layout != "" && o.Source() == 0 {
			return nil, fmt.Errorf("%s/core.json: layout %q", dir, o.Layout)
		}
	}
	if c.Truth, err = fixtures.LoadTruth(filepath.Join(dir, "truth.json")); err != nil {
		return nil, err
	}
	if display, err := os.ReadFile(filepath.Join(dir, "display.txt")); err == nil {
		c.Truth.Display = fixtures.DisplayBlock(string(display))
	}
	if err := c.Truth.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return c, nil
}

// String is the core's name.
func (c *Core) String() string { return c.Name }

// Opening is one way to open a core: with its debug files or without.
type Opening struct {
	// Name is "debug" or "nodebug" ("" for a core without debug files).
	Name string
	// Debug says whether the debug files are there.
	Debug bool
	// Layout is where the layout comes from ("" when the runtime cannot
	// be read).
	Layout string
}

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
	if len(c.DebugFiles) == 0 {
		return []Opening{{Layout: c.Layout}}
	}
	return []Opening{{"debug", true, c.Layout}, {"nodebug", false, c.NoDebugLayout}}
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
type Files struct {
	// Dir is the directory.
	Dir string
	// Program and Core are the program's and the core's paths.
	Program, Core string
	// Map maps the paths the core names to the unpacked files (for
	// core.WithFileMap, or ompdtool's -file-map).
	Map map[string]string
	// Debug are the unpacked debug files, if any.
	Debug []string
}

// Unpack decompresses the core's files into a directory of tb.TempDir(),
// each under its base name, the debug files too when debug is true.
func (c *Core) Unpack(tb testing.TB, debug bool) *Files {
	tb.Helper()
	f := &Files{Dir: tb.TempDir(), Map: map[string]string{}}
	names := []string{c.Program, "core"}
	for _, local := range c.Files {
		if !slices.Contains(names, local) {
			names = append(names, local)
		}
	}
	if debug {
		names = append(names, c.DebugFiles...)
	}
	done := map[string]string{}
	for _, n := range names {
		base := filepath.Base(n)
		if other, ok := done[base]; ok {
			tb.Fatalf("shipped: %s: %s and %s have the same base name", c.Name, other, n)
		}
		done[base] = n
		if err := unpack(filepath.Join(c.Dir, n), filepath.Join(f.Dir, base)); err != nil {
			tb.Fatalf("shipped: %s: %v", c.Name, err)
		}
	}
	f.Program, f.Core = filepath.Join(f.Dir, c.Program), filepath.Join(f.Dir, "core")
	for path, local := range c.Files {
		f.Map[path] = filepath.Join(f.Dir, filepath.Base(local))
	}
	if debug {
		for _, d := range c.DebugFiles {
			f.Debug = append(f.Debug, filepath.Join(f.Dir, filepath.Base(d)))
		}
	}
	return f
}

// Options are the options of core.Open that read the files and nothing of
// this machine: its own libraries (another C library, perhaps) and debug
// files stay out.
func (f *Files) Options(tb testing.TB) []core.Option {
	return []core.Option{core.WithFileMap(f.Map), core.WithSysroot(tb.TempDir()), core.WithDebugDirs()}
}

// Sysroot makes a directory that holds the files at the paths the core
// names, as a copy of the machine it was made on would (the debug files
// beside the libraries that name them), for core.WithSysroot or
// ompdtool's -sysroot alone. The files are hard links to the unpacked ones
// (a sysroot's symbolic links may not lead out of it).
func (f *Files) Sysroot(tb testing.TB) string {
	tb.Helper()
	root := tb.TempDir()
	dirs := map[string]bool{}
	for path, local := range f.Map {
		to := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			tb.Fatalf("shipped: %v", err)
		}
		if err := os.Link(local, to); err != nil {
			tb.Fatalf("shipped: %v", err)
		}
		dirs[filepath.Dir(to)] = true
	}
	for _, d := range f.Debug {
		for dir := range dirs {
			if err := os.Link(d, filepath.Join(dir, filepath.Base(d))); err != nil {
				tb.Fatalf("shipped: %v", err)
			}
		}
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

// unpack writes the file at from, decompressed if a compressed copy
// (from.gz, from.zst) is what exists, to to.
func unpack(from, to string) error {
	var in io.ReadCloser
	for _, ext := range []string{"", ".gz", ".zst"} {
		if in != nil {
			break
		}
		f, err := os.Open(from + ext)
		if err != nil {
			continue
		}
		switch ext {
		case ".gz":
			zr, err := gzip.NewReader(f)
			if err != nil {
				f.Close()
				return err
			}
			in = readCloser{zr, f}
		case ".zst":
			zr, err := zstd.NewReader(f)
			if err != nil {
				f.Close()
				return err
			}
			in = readCloser{zr, closeFunc(func() error { zr.Close(); return f.Close() })}
		default:
			in = f
		}
	}
	if in == nil {
		return fmt.Errorf("no file %s (nor .gz, .zst)", from)
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

type readCloser struct {
	io.Reader
	io.Closer
}

type closeFunc func() error

func (f closeFunc) Close() error { return f() }
