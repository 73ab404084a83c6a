// Package core implements target.Target over an ELF core file of a Linux
// program, in pure Go.
//
// Open reads the core's program headers and notes (threads from
// NT_PRSTATUS, the auxiliary vector, the NT_FILE list of mapped files),
// finds the executable's load bias from the auxiliary vector and loads every
// shared library that NT_FILE names, ordered as the dynamic linker's
// link_map list in the core says. Memory is read from the core file on
// demand (it is never loaded whole); what the core left out is read from
// the mapped files, as described at the layer constants in memory.go:
// file-backed pages the program never wrote, such as library text, come
// from the files themselves, and nothing else is made up.
//
// Objects without a symbol table or DWARF of their own (a distribution's
// stripped libraries) take them from their separate debug files, found as
// gdb finds them: by build-id and .gnu_debuglink under the global debug
// directories (/usr/lib/debug unless WithDebugDirs says otherwise), by
// .gnu_debuglink next to the object, and from debuginfod servers when
// WithDebuginfod or WithDebuginfodFromEnv names some. The search happens the
// first time a lookup needs what the object lacks, not in Open. A debug file
// of another build is refused.
//
// A core compressed with zstd, as systemd-coredump keeps them (.zst), is
// opened as it is: Open streams it into an unlinked temporary file
// (WithTempDir says where) and reads that, so the core is never held in
// memory; WithContext bounds the decompression in time, and the core's
// own ELF headers and the temporary directory's free space bound it in
// size (ErrDecompressedSize, WithMaxDecompressedSize).
//
// Cores of x86-64, aarch64, ppc64le and s390x programs open on any host
// (what differs between the machines is in internal/arch; docs/arch.md); a
// core of another machine is refused with its name. A core without NT_FILE
// (qemu-user's) is read through the dynamic linker's list alone, its
// libraries looked up under WithSysroot's directory; one without the
// threads' thread pointers (qemu's cores of aarch64 lack NT_ARM_TLS) takes
// them from glibc's lists of threads. Malformed cores give errors that
// errors.As finds a *FormatError in.
//
// Cores written by Delve's dump command open too: Delve writes the
// kernel's notes without an owner name after a "Delve Header" note (or its
// own thread notes, for backends without native ones), and no NT_FILE
// list, since every readable mapping is in the core; the libraries are
// then found through the dynamic linker's list alone.
//
// A core may come from someone else: Open opens only regular files (a
// FIFO or device named by the core, or given as the core or executable, is
// refused at once, never waited on), resolves every name the core gives
// inside WithSysroot's directory (".." and symbolic links stay in it), and
// checks each library against the core's copy of its ELF headers and
// build-id. A library the core needs that cannot be loaded is a warning,
// and lookups that fail then say so (target.ErrObjectMissing). A core cut
// short in its memory segments is read up to the cut (a warning; the rest
// is an error); a core file that changes after Open gives errors, never
// zeros.
//
// A Core is read-only and safe for concurrent use.
package core

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/ompd-go/ompd/internal/errjoin"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/internal/regfile"
	"github.com/ompd-go/ompd/internal/targetopt"
	"github.com/ompd-go/ompd/internal/unwind"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/debuginfod"
)

// Option configures Open.
type Option func(*config)

type config struct {
	files targetopt.Files
	debug targetopt.Debug

	tempDir string

	maxDecompressed int64 // > 0: WithMaxDecompressedSize
}

// WithDebugDirs sets the global debug directories that separate debug
// files are looked for in (gdb's debug-file-directory): by build-id as
// DIR/.build-id/xx/rest.debug, and by .gnu_debuglink as
// DIR/<the object's directory>/<link>. They replace the default,
// /usr/lib/debug; name it too to keep it. WithDebugDirs() with no
// directory searches none (a debuglink next to the object is still
// followed).
func WithDebugDirs(dirs ...string) Option {
	return func(c *config) { c.debug.SetDirs(dirs...) }
}

// WithDebuginfod makes objects whose separate debug file is not found
// locally ask the debuginfod servers of client for it. A nil client means
// no server is asked, which is also the default: Open never reaches the
// network unless told to. To use the servers the environment names
// (DEBUGINFOD_URLS), pass debuginfod.FromEnv(os.Getenv) or use
// WithDebuginfodFromEnv.
func WithDebuginfod(client *debuginfod.Client) Option {
	return func(c *config) { c.debug.SetDebuginfod(client) }
}

// WithDebuginfodFromEnv is WithDebuginfod(debuginfod.FromEnv(os.Getenv)), the
// environment being read when Open runs: no server is asked if
// DEBUGINFOD_URLS is empty or unset.
func WithDebuginfodFromEnv() Option {
	return func(c *config) { c.debug.SetDebuginfodFromEnv() }
}

// WithDebugContext sets the context that bounds every search for separate
// debug files made for the core's objects (debuginfod downloads in
// particular) for the core's whole life. Without it only the debuginfod
// client's timeout bounds them.
func WithDebugContext(ctx context.Context) Option {
	return func(c *config) { c.debug.Ctx = ctx }
}

// objOptions are the options of the objects Open loads.
func (c *config) objOptions() []objfile.Option { return c.debug.ObjOptions() }

// WithSysroot makes Open look for the shared libraries and mapped files
// that the core names (absolute paths of the machine the core comes from)
// under dir, as gdb's "set sysroot" does. WithFileMap entries take
// precedence.
func WithSysroot(dir string) Option {
	return func(c *config) { c.files.Sysroot = dir }
}

// WithFileMap maps paths as the core names them to paths on this machine,
// one file at a time. The map is copied.
func WithFileMap(m map[string]string) Option {
	return func(c *config) { c.files.AddMap(m) }
}

// WithSearchPath makes Open also look for a library or mapped file by its
// base name in each of dirs, after the path the core names (as gdb's
// solib-search-path).
func WithSearchPath(dirs ...string) Option {
	return func(c *config) { c.files.AddSearch(dirs...) }
}

// paths lists where to look for the file the core calls name (see
// targetopt.Files.Candidates: under a sysroot, neither ".." components nor
// symbolic links lead out of it).
func (c *config) paths(name string) []string { return c.files.Candidates(name) }

// Core is a core file opened with the executable it was dumped from.
type Core struct {
	corePath string
	r        io.ReaderAt
	f        *os.File  // nil when not opened from a file
	size     int64     // of f at Open
	mtime    time.Time // of f at Open
	d        *coreData
	mem      *memory
	set      *objfile.Set
	files    map[string]*mappedFile
	infos    []target.Object
	warnings []string
	// missingObjs are the libraries the core names that could not be
	// loaded, with why (MissingObjects).
	missingObjs []target.Object
	// threads are the threads with their thread pointers and pthread_t,
	// once resolveThreads ran.
	threads []target.Thread
	// byTID indexes d.threads by thread id (the first of a repeated id),
	// made on first use: a snapshot asks for every thread's registers.
	byTIDOnce sync.Once
	byTID     map[uint64]int

	stack stackPages // pages read by UnwindFrame

	closeOnce sync.Once
	closeErr  error
}

var (
	_ target.Target                                = (*Core)(nil)
	_ target.BitFieldLocator                       = (*Core)(nil)
	_ target.RegisterReader                        = (*Core)(nil)
	_ target.FrameUnwinder                         = (*Core)(nil)
	_ target.CodeLocator                           = (*Core)(nil)
	_ target.ObjectLister                          = (*Core)(nil)
	_ target.MissingObjectLister                   = (*Core)(nil)
	_ interface{ SymbolAt(uint64) (string, bool) } = (*Core)(nil)
)

// Open opens the core file corePath of the program exePath. Shared
// libraries are looked for where the core says they were, subject to the
// options. A library that cannot be found or does not match the core (by
// build-id) is left out with a warning (see Warnings); an executable that
// does not match is an error.
//
// ctx bounds the work of Open itself: decompressing a compressed core can
// take a while for a large one, and cancelling ctx makes Open return its
// error. The searches for separate debug files that lookups make later,
// for the core's whole life, are bounded by WithDebugContext instead.
func Open(ctx context.Context, exePath, corePath string, opts ...Option) (*Core, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	cfg.debug.Resolve()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := regfile.Open(corePath)
	if err != nil {
		return nil, fmt.Errorf("core: %w", err)
	}
	df, err := decompressed(ctx, f, &cfg)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("core: %w", err)
	}
	f = df
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("core: %w", err)
	}
	c, err := newCore(f, st.Size(), &cfg)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%w (in %s)", err, corePath)
	}
	c.f = f
	c.corePath = corePath
	c.size, c.mtime = st.Size(), st.ModTime()
	if err := ctx.Err(); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.loadObjects(&cfg, exePath); err != nil {
		c.Close()
		return nil, err
	}
	c.resolveThreads()
	return c, nil
}

// newCore parses the core read through r and sets up its memory, with no
// objects loaded yet.
func newCore(r io.ReaderAt, size int64, cfg *config) (*Core, error) {
	d, err := parseCore(r, size)
	if err != nil {
		return nil, err
	}
	c := &Core{r: r, d: d, set: objfile.NewSet()}
	c.buildMemory(cfg)
	if len(d.cuts) > 0 {
		lost := uint64(0)
		for _, k := range d.cuts {
			lost += k.end - k.start
		}
		c.warnf("the core file is cut short (%d bytes): %d memory segments from program header %d (address %#x) on lack %d bytes, which read as errors", d.size, len(d.cuts), d.cuts[0].prog, d.cuts[0].start, lost)
	}
	return c, nil
}

// buildMemory sets up the core and NT_FILE layers.
func (c *Core) buildMemory(cfg *config) {
	c.mem = &memory{}
	var rs []region
	for _, p := range c.d.progs {
		if p.typ == elf.PT_LOAD && p.filesz > 0 {
			rs = append(rs, region{start: p.vaddr, end: p.vaddr + p.filesz, base: p.vaddr, src: coreSource{r: c.r, off: p.off}})
		}
	}
	for _, k := range c.d.cuts {
		rs = append(rs, region{start: k.start, end: k.end, base: k.start, src: cutSource{size: c.d.size}})
	}
	c.mem.add(layerCore, rs...)
	page := c.d.pageSize
	if page < 4096 || page&(page-1) != 0 {
		page = 4096
	}
	c.files = make(map[string]*mappedFile)
	rs = rs[:0]
	for _, e := range c.d.files {
		name := strings.TrimSuffix(e.name, " (deleted)")
		if name == "" || !strings.HasPrefix(name, "/") {
			continue
		}
		mf := c.files[name]
		if mf == nil {
			// Where to look is worked out on first use: a core may
			// name millions of files, each resolved under a sysroot.
			mf = &mappedFile{name: name, paths: func() []string { return cfg.paths(name) }, page: page}
			c.files[name] = mf
		}
		rs = append(rs, region{start: e.start, end: e.end, base: e.start, src: fileSource{mf: mf, off: e.off}})
	}
	c.mem.add(layerFile, rs...)
}

func (c *Core) warnf(format string, args ...any) {
	c.warnings = append(c.warnings, oneLine(fmt.Sprintf(format, args...)))
}

// missing records a library of the core that could not be loaded: a
// warning, and the reason symbol lookups that fail name (see
// LookupSymbol).
func (c *Core) missing(name string, err error) {
	c.warnings = append(c.warnings, missingText(name, err))
	c.missingObjs = append(c.missingObjs, target.Object{Name: name, Err: err})
}

// missingText is the line that says the library name could not be
// loaded, and why.
func missingText(name string, err error) string { return oneLine(fmt.Sprintf("%s: %v", name, err)) }

// MissingObjects lists the libraries the core names that could not be
// loaded (target.MissingObjectLister): Name as the core names them, Err
// why (see Warnings).
func (c *Core) MissingObjects() []target.Object {
	return append([]target.Object(nil), c.missingObjs...)
}

// oneLine joins the lines of a message (errors.Join separates its errors
// by newlines) with "; ".
func oneLine(s string) string {
	return strings.ReplaceAll(s, "\n", "; ")
}

// candidate is a shared object found in NT_FILE.
type candidate struct {
	name  string
	start uint64 // lowest address it is mapped at with file offset 0
	obj   *objfile.Object
	used  bool
}

// loadObjects opens the executable and the shared libraries.
func (c *Core) loadObjects(cfg *config, exePath string) error {
	exe, err := c.openExe(exePath, cfg)
	if err != nil {
		return err
	}
	// The executable's own pages first: a core without its read-only
	// pages (qemu's cores) still shows the dynamic linker's name, which
	// points into the executable's .interp.
	c.addObjectMemory(exe)
	loaded, failed := c.openMapped(cfg, exe, c.mappedLibraries(c.exeMappedName()))
	objs, names := c.linkMapOrder(cfg, exe, exePath, loaded, failed)
	c.set = objfile.NewSet(objs...)
	c.addObjects(objs, names)
	return nil
}

// exeMappedName returns the executable's own NT_FILE name: the file mapped
// where its entry point (or program headers) are; "" if none is.
func (c *Core) exeMappedName() string {
	for _, k := range []uint64{atEntry, atPhdr} {
		v, ok := c.d.auxv[k]
		if !ok {
			continue
		}
		for _, e := range c.d.files {
			if v >= e.start && v < e.end {
				return strings.TrimSuffix(e.name, " (deleted)")
			}
		}
	}
	return ""
}

// mappedLibraries lists the candidate shared objects of NT_FILE, by
// address: every file but the executable (exeName) with a mapping at file
// offset 0, at its lowest such mapping.
func (c *Core) mappedLibraries(exeName string) []*candidate {
	byName := make(map[string]*candidate)
	var cands []*candidate
	for _, e := range c.d.files {
		name := strings.TrimSuffix(e.name, " (deleted)")
		if e.off != 0 || name == exeName || !strings.HasPrefix(name, "/") {
			continue
		}
		if cd := byName[name]; cd != nil {
			cd.start = min(cd.start, e.start)
			continue
		}
		cd := &candidate{name: name, start: e.start}
		byName[name] = cd
		cands = append(cands, cd)
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].start < cands[j].start })
	return cands
}

// openMapped opens the candidates that are ELF shared objects for this
// machine, each at the bias its mapping gives it. It returns those it
// opened, and the base names of those it warned about (missing, of
// another build).
func (c *Core) openMapped(cfg *config, exe *objfile.Object, cands []*candidate) (loaded []*candidate, failed map[string]bool) {
	exeStart, _, exeMapped := exe.Range()
	failed = make(map[string]bool)
	for _, cd := range cands {
		if exeMapped && cd.start == exeStart&^4095 {
			continue // the executable under another name
		}
		// The core keeps the first page of mapped ELF files: skip mapped
		// files that are not ELF without looking for them.
		var magic [4]byte
		err := c.mem.read(magic[:], cd.start, layerCore+1)
		if err == nil && string(magic[:]) != elf.ELFMAG {
			continue
		}
		o, err := c.openLib(cfg, cd.name, err == nil, func(f *elf.File) (uint64, error) {
			low, ok := objfile.LowestLoad(f)
			if !ok {
				return 0, errors.New("no PT_LOAD segment")
			}
			return cd.start - low&^4095, nil
		})
		if err != nil {
			if !errors.Is(err, errNotShared) {
				c.missing(cd.name, err)
				failed[filepath.Base(cd.name)] = true
			}
			continue
		}
		cd.obj = o
		loaded = append(loaded, cd)
	}
	return loaded, failed
}

// linkMapOrder returns the objects, the executable first, in the order of
// the dynamic linker's list, with what it lists that NT_FILE did not show
// opened too (unless failed already warned about its base name), and the
// loaded objects it does not list last; names are the paths the core
// gives them.
func (c *Core) linkMapOrder(cfg *config, exe *objfile.Object, exePath string, loaded []*candidate, failed map[string]bool) (objs []*objfile.Object, names []string) {
	objs, names = []*objfile.Object{exe}, []string{exePath}
	tmp := []*objfile.Object{exe}
	for _, cd := range loaded {
		tmp = append(tmp, cd.obj)
	}
	entries, lmErr := objfile.NewSet(tmp...).LinkMap(c.mem)
	if _, _, dynamic := exe.DynamicAddr(); lmErr != nil && dynamic {
		c.warnf("the dynamic linker's list of objects: %v", lmErr)
	}
	for i, e := range entries {
		if i == 0 && e.Name == "" || e.LAddr == exe.Bias() && e.Name == "" {
			continue // the executable
		}
		if cd := unusedAt(loaded, e.LAddr); cd != nil {
			cd.used = true
			objs, names = append(objs, cd.obj), append(names, cd.name)
			continue
		}
		if !strings.HasPrefix(e.Name, "/") {
			continue // linux-vdso.so.1 and the like: no file
		}
		o, err := c.openLib(cfg, e.Name, true, func(*elf.File) (uint64, error) { return e.LAddr, nil })
		if err != nil {
			if !failed[filepath.Base(e.Name)] {
				c.missing(e.Name, err)
			}
			continue
		}
		objs, names = append(objs, o), append(names, e.Name)
	}
	for _, cd := range loaded {
		if !cd.used {
			objs, names = append(objs, cd.obj), append(names, cd.name)
		}
	}
	return objs, names
}

// unusedAt returns the first candidate not used yet whose object is loaded
// at bias, or nil.
func unusedAt(cands []*candidate, bias uint64) *candidate {
	for _, cd := range cands {
		if !cd.used && cd.obj.Bias() == bias {
			return cd
		}
	}
	return nil
}

// addObjects records the objects (Objects) and adds their memory the core
// leaves out (see addObjectMemory; the executable's was added first).
func (c *Core) addObjects(objs []*objfile.Object, names []string) {
	for i, o := range objs {
		c.infos = append(c.infos, target.Object{Name: names[i], Path: o.Path(), Bias: o.Bias()})
		if i > 0 {
			c.addObjectMemory(o)
		}
	}
}

// addObjectMemory adds the memory the object o's file gives: its
// segments' bss (zeros), and its read-only segments, which a core may
// leave out.
func (c *Core) addObjectMemory(o *objfile.Object) {
	var bss, ro []region
	for _, p := range o.File().Progs {
		if p.Type != elf.PT_LOAD {
			continue
		}
		start := p.Vaddr + o.Bias()
		if p.Memsz > p.Filesz && start+p.Memsz > start {
			bss = append(bss, region{start: start + p.Filesz, end: start + p.Memsz, base: start + p.Filesz, src: zeroSource{}})
		}
		if p.Flags&elf.PF_W == 0 && p.Filesz > 0 && start+p.Filesz > start {
			ro = append(ro, region{start: start, end: start + p.Filesz, base: 0, src: objectSource{o}})
		}
	}
	c.mem.add(layerBSS, bss...)
	c.mem.add(layerObject, ro...)
}

// errNotShared marks a mapped file that is not a shared object of the
// core's machine (a data file, for instance): skipped silently.
var errNotShared = errors.New("not an ELF shared object for this machine")

// openLib opens the shared object the core calls name, with the bias that
// biasOf computes from its ELF headers, and checks its build-id against
// the copy of its notes in the core. Only regular files are opened. When
// elfExpected is false (the core does not show an ELF header where the
// file is mapped), a file that is not an ELF shared object of the core's
// machine gives errNotShared; when it is true, that is a file that does
// not match the core, and the error says so.
func (c *Core) openLib(cfg *config, name string, elfExpected bool, biasOf func(*elf.File) (uint64, error)) (*objfile.Object, error) {
	var errs []error
	for _, p := range cfg.paths(name) {
		f, fd, err := regfile.OpenELF(p)
		if err != nil {
			var fe *elf.FormatError
			if errors.Is(err, regfile.ErrNotELF) || errors.As(err, &fe) {
				if !elfExpected {
					return nil, errNotShared
				}
				return nil, fmt.Errorf("the core has an ELF object mapped from it, but %w", err)
			}
			errs = append(errs, err)
			continue
		}
		if f.Type != elf.ET_DYN || f.Machine != c.d.machine || f.Class != c.d.class {
			fd.Close()
			if !elfExpected {
				return nil, errNotShared
			}
			return nil, fmt.Errorf("%s is an ELF %v for %v %v, not a shared object for the core's %v %v", p, f.Type, f.Machine, f.Class, c.d.machine, c.d.class)
		}
		bias, err := biasOf(f)
		if err != nil {
			fd.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		o := objfile.NewObject(f, p, bias, append(cfg.objOptions(), objfile.WithCloser(fd))...)
		if err := c.checkBuildID(o); err != nil {
			o.Close()
			err = fmt.Errorf("%s does not match the core: %w", p, err)
			if mf := c.files[name]; mf != nil {
				mf.disable(err)
			}
			return nil, err
		}
		return o, nil
	}
	if len(errs) == 0 {
		return nil, errors.New("cannot open: no path to look for it under the sysroot")
	}
	return nil, fmt.Errorf("cannot open: %w", errjoin.Join(errs...))
}

// openExe opens the executable and computes its load bias from the
// auxiliary vector.
func (c *Core) openExe(path string, cfg *config) (*objfile.Object, error) {
	f, fd, err := regfile.OpenELF(path)
	if err != nil {
		return nil, fmt.Errorf("core: executable: %w", err)
	}
	fail := func(err error) (*objfile.Object, error) {
		fd.Close()
		return nil, err
	}
	if f.Machine != c.d.machine || f.Class != c.d.class {
		return fail(fmt.Errorf("core: executable %s is for %v %v, the core for %v %v", path, f.Machine, f.Class, c.d.machine, c.d.class))
	}
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fail(fmt.Errorf("core: %s is not an executable (ELF type %v)", path, f.Type))
	}
	// The load bias as the entry point and as the program headers give
	// it; they must agree, and be page-aligned.
	var biases []uint64
	if v, ok := c.d.auxv[atEntry]; ok && f.Entry != 0 {
		biases = append(biases, v-f.Entry)
	}
	if v, ok := c.d.auxv[atPhdr]; ok && progVaddr(f, elf.PT_PHDR) != nil {
		biases = append(biases, v-*progVaddr(f, elf.PT_PHDR))
	}
	mismatch := func(why string) (*objfile.Object, error) {
		return fail(fmt.Errorf("core: this core was not made from the executable %s: %s", path, why))
	}
	var bias uint64
	switch {
	case len(biases) == 0:
		c.warnf("executable %s: no AT_ENTRY or AT_PHDR in the core; assuming load bias 0", path)
	case len(biases) == 2 && biases[0] != biases[1]:
		return mismatch(fmt.Sprintf("its entry point %#x and program headers %#x do not sit at one load address in the core (AT_ENTRY %#x, AT_PHDR %#x)", f.Entry, *progVaddr(f, elf.PT_PHDR), c.d.auxv[atEntry], c.d.auxv[atPhdr]))
	case f.Type == elf.ET_EXEC && biases[0] != 0:
		return mismatch(fmt.Sprintf("its entry point %#x is not the core's %#x", f.Entry, c.d.auxv[atEntry]))
	case biases[0]%4096 != 0:
		return mismatch(fmt.Sprintf("its load bias would be %#x, not page-aligned", biases[0]))
	default:
		bias = biases[0]
	}
	o := objfile.NewObject(f, path, bias, append(cfg.objOptions(), objfile.WithCloser(fd))...)
	if err := c.checkBuildID(o); err != nil {
		o.Close()
		return nil, fmt.Errorf("core: this core was not made from the executable %s: %w", path, err)
	}
	return o, nil
}

func progVaddr(f *elf.File, t elf.ProgType) *uint64 {
	for _, p := range f.Progs {
		if p.Type == t {
			v := p.Vaddr
			return &v
		}
	}
	return nil
}

// checkBuildID compares the object's build-id with the one in the core's
// copy of its notes (the first page of a mapped ELF file is dumped). A core
// without that copy is not evidence against the file.
func (c *Core) checkBuildID(o *objfile.Object) error {
	if err := c.checkHeaders(o); err != nil {
		return err
	}
	want := o.BuildID()
	if want == nil {
		return nil
	}
	for _, p := range o.File().Progs {
		if p.Type != elf.PT_NOTE || p.Filesz == 0 || p.Filesz > 1<<16 {
			continue
		}
		buf := make([]byte, p.Filesz)
		if err := c.mem.read(buf, p.Vaddr+o.Bias(), layerCore+1); err != nil {
			continue
		}
		order := binary.ByteOrder(binary.LittleEndian)
		if c.d.order == binary.ByteOrder(binary.BigEndian) {
			order = binary.BigEndian
		}
		if got := objfile.ParseBuildID(buf, order); got != nil && !bytes.Equal(got, want) {
			return fmt.Errorf("build-id %x in the file, %x in the core", want, got)
		}
	}
	return nil
}

// checkHeaders compares the object's ELF header and program header table
// with the core's copy of them, where the core has one (the first page of
// a mapped ELF file is dumped): another file, even one without a build-id
// or whose notes are elsewhere, differs there.
func (c *Core) checkHeaders(o *objfile.Object) error {
	f := o.File()
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Off != 0 || p.Filesz == 0 {
			continue
		}
		var n uint64 = 64 // the ELF64 header
		if f.Class == elf.ELFCLASS32 {
			n = 52
		}
		hdr := make([]byte, n)
		if _, err := p.ReadAt(hdr, 0); err != nil {
			return nil
		}
		// Extend to the program header table when it follows closely.
		var phoff, phsize uint64
		if f.Class == elf.ELFCLASS64 {
			phoff, phsize = f.ByteOrder.Uint64(hdr[32:]), uint64(f.ByteOrder.Uint16(hdr[54:]))*uint64(f.ByteOrder.Uint16(hdr[56:]))
		} else {
			phoff, phsize = uint64(f.ByteOrder.Uint32(hdr[28:])), uint64(f.ByteOrder.Uint16(hdr[42:]))*uint64(f.ByteOrder.Uint16(hdr[44:]))
		}
		if phoff >= n && phoff+phsize <= min(p.Filesz, 4096) {
			n = phoff + phsize
		}
		want := make([]byte, n)
		got := make([]byte, n)
		if _, err := p.ReadAt(want, 0); err != nil {
			return nil
		}
		if err := c.mem.read(got, p.Vaddr+o.Bias(), layerCore+1); err != nil {
			return nil // no copy in the core: no evidence either way
		}
		if !bytes.Equal(got, want) {
			return errors.New("its ELF headers are not the core's copy of them")
		}
		return nil
	}
	return nil
}

// Close closes the core and every file opened for it.
func (c *Core) Close() error {
	c.closeOnce.Do(func() {
		var errs []error
		if c.set != nil {
			errs = append(errs, c.set.Close())
		}
		for _, mf := range c.files {
			mf.close()
		}
		if c.f != nil {
			errs = append(errs, c.f.Close())
		}
		c.closeErr = errjoin.Join(errs...)
	})
	return c.closeErr
}

// Objects lists the loaded objects (target.ObjectLister): the executable
// first, then the shared libraries in load order; those the core names but
// that could not be loaded are not listed (see Warnings and
// MissingObjects). Name is the path the core names (the executable's is
// the path given to Open). For an object that lacks its own symbol table
// or DWARF it reports its separate debug file, searching for it first if
// no lookup has yet (which may ask a debuginfod server, see
// WithDebuginfod). The error is always nil.
func (c *Core) Objects() ([]target.Object, error) {
	return objfile.Describe(c.infos, c.set.Objects()), nil
}

// Warnings lists what Open could not load or check: libraries not found or
// not matching the core, an unreadable link_map list.
func (c *Core) Warnings() []string {
	return append([]string(nil), c.warnings...)
}

// LookupSymbol returns the run-time address of the symbol called name (see
// target.Target).
//
// When the symbol is not found and libraries of the core could not be
// loaded (see Warnings), the error matches target.ErrObjectMissing too and
// names them: the symbol may be in one of those.
func (c *Core) LookupSymbol(name string) (uint64, error) {
	a, err := c.set.Lookup(name)
	if err != nil && len(c.missingObjs) > 0 && errors.Is(err, target.ErrNotFound) {
		lines := make([]string, len(c.missingObjs))
		for i, o := range c.missingObjs {
			lines[i] = missingText(o.Name, o.Err)
		}
		err = &target.LookupError{Kind: "symbol", Name: name, Err: fmt.Errorf("%w in the objects loaded, and %w: %s", target.ErrNotFound, target.ErrObjectMissing, strings.Join(lines, "; "))}
	}
	return a, err
}

// LookupThreadLocal returns the address of the thread's instance of the
// thread-local variable name (see objfile.Set.LookupThreadLocal for the
// method).
func (c *Core) LookupThreadLocal(tid uint64, name string) (uint64, error) {
	tp, err := c.threadPointer(tid)
	if err != nil {
		return 0, &target.LookupError{Kind: "thread-local symbol", Name: name, Err: err}
	}
	return c.set.LookupThreadLocal(c.mem, tp, name)
}

func (c *Core) thread(tid uint64) (thread, bool) {
	c.byTIDOnce.Do(func() {
		c.byTID = make(map[uint64]int, len(c.d.threads))
		for i, t := range c.d.threads {
			if _, dup := c.byTID[t.tid]; !dup {
				c.byTID[t.tid] = i
			}
		}
	})
	i, ok := c.byTID[tid]
	if !ok {
		return thread{}, false
	}
	return c.d.threads[i], true
}

// TypeSize returns the size of the named type from the objects' DWARF.
func (c *Core) TypeSize(typeName string) (uint64, error) {
	return c.set.TypeSize(typeName)
}

// FieldOffset returns the offset of the named member of the named type from
// the objects' DWARF; field may be a dotted path.
func (c *Core) FieldOffset(typeName, field string) (uint64, error) {
	return c.set.FieldOffset(typeName, field)
}

// BitField returns the bit position and width of the named member of the
// named type (target.BitFieldLocator).
func (c *Core) BitField(typeName, field string) (bitOffset, bitSize uint64, err error) {
	return c.set.BitField(typeName, field)
}

// SymbolAt returns the name of the function symbol containing addr.
func (c *Core) SymbolAt(addr uint64) (string, bool) {
	return c.set.SymbolAt(addr)
}

// ReadMemory fills buf with the memory at addr (see the package comment
// for where the bytes come from).
func (c *Core) ReadMemory(buf []byte, addr uint64) error {
	return c.mem.ReadMemory(buf, addr)
}

// WriteMemory always fails: a core file is read-only. The error wraps
// target.ErrReadOnly.
func (c *Core) WriteMemory(addr uint64, data []byte) error {
	return &target.ReadError{Addr: addr, Size: len(data), Write: true, Err: target.ErrReadOnly}
}

// ByteOrder is the core's byte order.
func (c *Core) ByteOrder() binary.ByteOrder { return c.d.order }

// Sizes are the primitive type sizes of the core's ELF class.
func (c *Core) Sizes() target.Sizes {
	if c.d.class == elf.ELFCLASS32 {
		return target.ILP32
	}
	return target.LP64
}

// Threads lists the threads of the core in note order (the first is the
// one that received the signal, or gdb's current thread).
//
// It fails if the core file changed since Open (it was cut short or
// rewritten): what was read from it no longer describes the file.
func (c *Core) Threads() ([]target.Thread, error) {
	if err := c.changed(); err != nil {
		return nil, err
	}
	return slices.Clone(c.osThreads()), nil
}

// changed returns an error if the core file is not the one Open read: a
// size or modification time that differs.
func (c *Core) changed() error {
	if c.f == nil {
		return nil
	}
	st, err := c.f.Stat()
	if err != nil {
		return fmt.Errorf("core: %s: %w", c.corePath, err)
	}
	if st.Size() != c.size || !st.ModTime().Equal(c.mtime) {
		return fmt.Errorf("core: %s changed since it was opened (%d bytes, modified %s; was %d bytes, modified %s)", c.corePath, st.Size(), st.ModTime().UTC().Format(time.RFC3339Nano), c.size, c.mtime.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// Machine is the core's ELF machine.
func (c *Core) Machine() elf.Machine { return c.d.machine }

// ThreadRegisters returns the general registers of thread tid from its
// NT_PRSTATUS note, in DWARF numbering (target.RegisterReader). A thread
// whose note holds none (a Delve thread note of a machine whose register
// names this package does not know) gives an error wrapping
// target.ErrUnsupported.
func (c *Core) ThreadRegisters(tid uint64) (target.Registers, error) {
	t, ok := c.thread(tid)
	if !ok {
		return target.Registers{}, fmt.Errorf("core: thread %d: %w", tid, target.ErrNoThread)
	}
	if t.regs == nil {
		return target.Registers{}, fmt.Errorf("core: thread %d: no registers of %v: %w", tid, c.d.arch, target.ErrUnsupported)
	}
	r := target.NewRegisters(c.d.machine)
	if _, err := c.d.arch.PrStatus(t.regs, r.Set); err != nil {
		return target.Registers{}, fmt.Errorf("core: thread %d: %w", tid, err)
	}
	return r, nil
}

// UnwindFrame unwinds one frame with the call-frame information of the
// core's objects (target.FrameUnwinder).
func (c *Core) UnwindFrame(regs target.Registers, caller bool) (target.Registers, uint64, error) {
	return unwind.Step(c.set, cachedReader{c}, c.d.order, regs, caller)
}

// LocateCode names the object, function, and source file and line of the
// code at pc (target.CodeLocator).
func (c *Core) LocateCode(pc uint64) (target.CodeLocation, error) {
	return c.set.LocateCode(pc)
}
