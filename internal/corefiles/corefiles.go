// Package corefiles reads the small real cores checked into
// testdata/cores (made by scripts/make-testdata-core.sh): what each
// directory's core.json says its files are, and those files unpacked into
// a directory, with the map from the paths the core names to them. The
// tests read the cores through internal/shipped, which adds what the
// programs recorded; "ompdtool demo" through this package alone.
package corefiles

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/klauspost/compress/zstd"
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

// Core is one core of testdata/cores.
type Core struct {
	// Name is its directory's name ("libgomp12-nested").
	Name string
	// Dir is its directory.
	Dir string
	Manifest
}

// String is the core's name.
func (c *Core) String() string { return c.Name }

// Module is the path of the module whose testdata holds the cores.
const Module = "github.com/ompd-go/ompd"

// ModuleRoot returns the root directory of a checkout of the module that
// holds dir, searching upwards.
func ModuleRoot(dir string) (string, error) {
	for d := dir; ; d = filepath.Dir(d) {
		data, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && bytes.Contains(data, []byte("module "+Module+"\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is in no checkout of %s", dir, Module)
		}
	}
}

// InModuleCache returns the root of version of the module in the Go
// module cache (where "go install Module/cmd/ompdtool@version" left its
// sources, testdata included), if it is there. modCache is the cache's
// directory (go env GOMODCACHE).
func InModuleCache(modCache, version string) (string, error) {
	if version == "" || version == "(devel)" {
		return "", fmt.Errorf("%s was built from sources of no known version", Module)
	}
	if modCache == "" {
		return "", errors.New("no Go module cache (go env GOMODCACHE)")
	}
	// The module path has no upper-case letter, so the cache's escaped
	// form of it is the path itself.
	d := filepath.Join(modCache, filepath.FromSlash(Module)+"@"+version)
	if _, err := os.Stat(filepath.Join(d, "go.mod")); err != nil {
		return "", fmt.Errorf("%s@%s is not in the Go module cache: %w", Module, version, err)
	}
	return d, nil
}

// ModCache returns the Go module cache's directory as the go command
// finds it without its configuration file: GOMODCACHE, else the first
// directory of GOPATH, else $HOME/go, followed by pkg/mod.
func ModCache(getenv func(string) string) string {
	if d := getenv("GOMODCACHE"); d != "" {
		return d
	}
	gopath := filepath.SplitList(getenv("GOPATH"))
	if len(gopath) > 0 && gopath[0] != "" {
		return filepath.Join(gopath[0], "pkg", "mod")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, "go", "pkg", "mod")
	}
	return ""
}

// Dir returns the directory of the cores in the module rooted at root.
func Dir(root string) string { return filepath.Join(root, "testdata", "cores") }

// LoadAll reads every core of dir (a directory with a core.json), by name.
func LoadAll(dir string) ([]*Core, error) {
	manifests, err := filepath.Glob(filepath.Join(dir, "*", "core.json"))
	if err != nil {
		return nil, err
	}
	if len(manifests) == 0 {
		return nil, fmt.Errorf("no cores in %s", dir)
	}
	slices.Sort(manifests)
	var out []*Core
	for _, m := range manifests {
		c, err := Load(filepath.Dir(m))
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Load reads the core of the directory dir, checking its core.json.
func Load(dir string) (*Core, error) {
	c := &Core{Name: filepath.Base(dir), Dir: dir}
	data, err := os.ReadFile(filepath.Join(dir, "core.json"))
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
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
		switch o.Layout {
		case LayoutOMPD, LayoutDWARF, LayoutTable:
		case "":
			if o.Debug || len(c.DebugFiles) == 0 {
				return nil, fmt.Errorf("%s/core.json: no layout", dir)
			}
		default:
			return nil, fmt.Errorf("%s/core.json: layout %q", dir, o.Layout)
		}
	}
	return c, nil
}

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

// Openings lists the ways to open the core: as it is, and for a core with
// debug files, also without them.
func (c *Core) Openings() []Opening {
	if len(c.DebugFiles) == 0 {
		return []Opening{{Layout: c.Layout}}
	}
	return []Opening{{"debug", true, c.Layout}, {"nodebug", false, c.NoDebugLayout}}
}

// Files are a core's files unpacked in a directory.
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

// UnpackTo decompresses the core's files into the directory dir, each
// under its base name, the debug files too when debug is true.
func (c *Core) UnpackTo(dir string, debug bool) (*Files, error) {
	f := &Files{Dir: dir, Map: map[string]string{}}
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
			return nil, fmt.Errorf("%s: %s and %s have the same base name", c.Name, other, n)
		}
		done[base] = n
		if err := unpack(filepath.Join(c.Dir, n), filepath.Join(dir, base)); err != nil {
			return nil, fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	f.Program, f.Core = filepath.Join(dir, c.Program), filepath.Join(dir, "core")
	for path, local := range c.Files {
		f.Map[path] = filepath.Join(dir, filepath.Base(local))
	}
	if debug {
		for _, d := range c.DebugFiles {
			f.Debug = append(f.Debug, filepath.Join(dir, filepath.Base(d)))
		}
	}
	return f, nil
}

// MakeSysroot fills the empty directory root with the files at the paths
// the core names, as a copy of the machine it was made on would hold them
// (the debug files beside the libraries that name them), for
// core.WithSysroot or ompdtool's -sysroot alone. The files are hard links
// to the unpacked ones (a sysroot's symbolic links may not lead out of
// it).
func (f *Files) MakeSysroot(root string) error {
	dirs := map[string]bool{}
	var errs []error
	for path, local := range f.Map {
		to := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		errs = append(errs, os.Link(local, to))
		dirs[filepath.Dir(to)] = true
	}
	for _, d := range f.Debug {
		for dir := range dirs {
			errs = append(errs, os.Link(d, filepath.Join(dir, filepath.Base(d))))
		}
	}
	return errors.Join(errs...)
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
