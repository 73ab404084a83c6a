// Package targetopt holds the option state that the targets share (core
// files, Delve in process, Delve over JSON-RPC): where separate debug files
// are looked for, and where the files a program names are found on this
// machine. Each target package keeps its own Option type and With*
// functions; they only set fields here, so the behaviour is written once.
package targetopt

import (
	"context"
	"os"
	"path/filepath"

	"github.com/ompd-go/ompd/internal/debuginfo"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/internal/regfile"
	"github.com/ompd-go/ompd/target/debuginfod"
)

// Debug says where the separate debug files of stripped objects are
// looked for.
type Debug struct {
	// Dirs are the global debug directories; nil means
	// debuginfo.DefaultDebugDirs, empty means none.
	Dirs []string
	// Debuginfod is the client asked for missing files, or nil.
	Debuginfod *debuginfod.Client
	// FromEnv makes ObjOptions use the servers the environment names
	// (DEBUGINFOD_URLS ...) when Debuginfod is nil.
	FromEnv bool
	// Ctx bounds every search, or nil.
	Ctx context.Context
}

// SetDirs sets Dirs to a copy of dirs (an empty, non-nil list when none).
func (d *Debug) SetDirs(dirs ...string) { d.Dirs = append([]string{}, dirs...) }

// SetDebuginfod sets the client, replacing a FromEnv setting.
func (d *Debug) SetDebuginfod(c *debuginfod.Client) { d.Debuginfod, d.FromEnv = c, false }

// SetDebuginfodFromEnv uses the environment's servers, replacing a client.
func (d *Debug) SetDebuginfodFromEnv() { d.Debuginfod, d.FromEnv = nil, true }

// Resolve reads the environment if FromEnv asks for it, so that the
// client is fixed from then on.
func (d *Debug) Resolve() {
	if d.FromEnv && d.Debuginfod == nil {
		d.Debuginfod = debuginfod.FromEnv(os.Getenv)
	}
	d.FromEnv = false
}

// ObjOptions returns the objfile options of these settings (call Resolve
// first to read the environment once).
func (d Debug) ObjOptions() []objfile.Option {
	c := d.Debuginfod
	if d.FromEnv && c == nil {
		c = debuginfod.FromEnv(os.Getenv)
	}
	dopts := debuginfo.Options{DebugDirs: d.Dirs}
	if c != nil {
		dopts.Fetcher = c
	}
	opts := []objfile.Option{objfile.WithDebugInfo(dopts)}
	if d.Ctx != nil {
		opts = append(opts, objfile.WithContext(d.Ctx))
	}
	return opts
}

// Files maps the paths a program names (those of the machine it ran on) to
// files on this machine, as gdb's sysroot, solib-search-path and a
// per-file map do.
type Files struct {
	// Sysroot is prefixed to every absolute path, or "".
	Sysroot string
	// Map gives the file for a path, one file at a time; it wins over
	// everything else.
	Map map[string]string
	// Search are directories where a file is also looked for by its base
	// name, after the path itself.
	Search []string
}

// AddMap copies the entries of m into Map.
func (f *Files) AddMap(m map[string]string) {
	if f.Map == nil {
		f.Map = make(map[string]string, len(m))
	}
	for k, v := range m {
		f.Map[k] = v
	}
}

// AddSearch appends dirs to Search.
func (f *Files) AddSearch(dirs ...string) { f.Search = append(f.Search, dirs...) }

// Candidates lists, in order, the local paths to try for the file the
// program calls name. Under a sysroot the name is resolved inside it
// (regfile.InRoot): neither ".." components nor symbolic links lead out of
// it. The search path gets the base name only.
func (f Files) Candidates(name string) []string {
	if p, ok := f.Map[name]; ok {
		return []string{p}
	}
	var out []string
	if f.Sysroot != "" {
		if p, err := regfile.InRoot(f.Sysroot, name); err == nil {
			out = append(out, p)
		}
	} else {
		out = append(out, name)
	}
	if base := filepath.Base(name); base != "." && base != ".." && base != "/" {
		for _, d := range f.Search {
			out = append(out, filepath.Join(d, base))
		}
	}
	return out
}
