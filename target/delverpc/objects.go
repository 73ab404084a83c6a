package delverpc

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-delve/delve/service/api"
	"github.com/go-delve/delve/service/rpc2"

	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/target"
)

// ErrMismatch reports a local file whose GNU build-id differs from the one
// the process has in memory at the object's place: not the file the
// process loaded.
var ErrMismatch = errors.New("local file is another build than the process's")

// image is one object opened locally.
type image struct {
	o    *objfile.Object // nil if none could be used
	path string
	err  error
}

type imageKey struct {
	name string
	bias uint64
}

// objects are the loaded objects of one stop.
type objects struct {
	set   *objfile.Set
	infos []target.Object
	files []*objfile.Object // infos[i]'s local file, nil if none
}

// objectsLocked returns the objects loaded at this stop: the executable
// first, then the libraries in the order the server lists them, each at
// its load bias. Files stay open across stops.
func (t *Target) objectsLocked() (*objects, error) {
	if t.objs != nil {
		return t.objs, nil
	}
	if t.err != nil {
		return nil, t.err
	}
	var libs rpc2.ListDynamicLibrariesOut
	if err := t.c.call(bg, false, "ListDynamicLibraries", rpc2.ListDynamicLibrariesIn{}, &libs); err != nil {
		return nil, fmt.Errorf("loaded libraries: %w", err)
	}
	var libObjs, files []*objfile.Object
	var infos []target.Object
	for _, l := range libs.List {
		im := t.openLocked(l.Path, l.Address, []string{l.Path})
		infos = append(infos, target.Object{Name: l.Path, Path: im.path, Bias: l.Address, Err: im.err})
		files = append(files, im.o)
		if im.o != nil {
			libObjs = append(libObjs, im.o)
		}
	}
	exe := t.exeLocked(libObjs)
	var exeObj *objfile.Object
	if im := t.opened[imageKey{exe.Name, exe.Bias}]; im != nil && im.o != nil && exe.Err == nil {
		exeObj = im.o
	}
	if len(libs.List) == 0 && exeObj != nil {
		// A server that lists no libraries (on a core file): the
		// dynamic linker's list in the process's memory names them.
		entries, _ := objfile.NewSet(exeObj).LinkMap(lockedMemory{t})
		for i, e := range entries {
			if i == 0 || !strings.HasPrefix(e.Name, "/") {
				continue // the executable; the vDSO
			}
			im := t.openLocked(e.Name, e.LAddr, []string{e.Name})
			infos = append(infos, target.Object{Name: e.Name, Path: im.path, Bias: e.LAddr, Err: im.err})
			files = append(files, im.o)
			if im.o != nil {
				libObjs = append(libObjs, im.o)
			}
		}
	}
	infos = append([]target.Object{exe}, infos...)
	files = append([]*objfile.Object{exeObj}, files...)
	objs := libObjs
	if exeObj != nil {
		objs = append([]*objfile.Object{exeObj}, libObjs...)
	}
	t.objs = &objects{set: objfile.NewSet(objs...), infos: infos, files: files}
	return t.objs, nil
}

// openLocked opens the first of the candidate files for the object the
// server calls name, loaded at bias, that is the build the process has in
// memory.
func (t *Target) openLocked(name string, bias uint64, names []string) *image {
	k := imageKey{name, bias}
	if im, ok := t.opened[k]; ok {
		return im
	}
	im := &image{}
	var errs []error
	for _, n := range names {
		for _, p := range t.cfg.files.Candidates(n) {
			o, err := objfile.Open(p, bias, t.cfg.debug.ObjOptions()...)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if err := t.verifyLocked(o); err != nil {
				o.Close()
				errs = append(errs, fmt.Errorf("%s: %w", p, err))
				continue
			}
			im.o, im.path = o, p
			break
		}
		if im.o != nil {
			break
		}
	}
	if im.o == nil {
		im.err = fmt.Errorf("no usable local file for %s: %w", name, errors.Join(errs...))
	}
	t.opened[k] = im
	return im
}

// verifyLocked compares the object's GNU build-id with the bytes of its
// build-id note in the process's memory. An object without one, or whose
// note the process does not show, passes: there is nothing to compare.
func (t *Target) verifyLocked(o *objfile.Object) error {
	id := o.BuildID()
	sec := o.File().Section(".note.gnu.build-id")
	if len(id) == 0 || sec == nil || sec.Addr == 0 || sec.Size == 0 || sec.Size > 1024 {
		return nil
	}
	buf := make([]byte, sec.Size)
	if err := t.readLocked(buf, o.Bias()+sec.Addr); err != nil {
		if errors.Is(err, target.ErrNoMemory) {
			return nil
		}
		return err
	}
	if mem := objfile.ParseBuildID(buf, binary.LittleEndian); !bytes.Equal(mem, id) {
		return fmt.Errorf("%w (build-id %x, process has %x)", ErrMismatch, id, mem)
	}
	return nil
}

// exeLocked finds and opens the executable: the file WithExecutable
// names, or else the program's path as its command line gives it (through
// the path options) and /proc/PID/exe of a server on this machine, the
// first that is the build in the process's memory. Its load bias is the
// l_addr of the first entry of the dynamic linker's link_map list (found
// through _r_debug in the libraries), or else where the server places
// main (see exeBiasLocked).
func (t *Target) exeLocked(libs []*objfile.Object) target.Object {
	info := target.Object{Name: t.exeName()}
	biasKnown := false
	if rd, err := objfile.NewSet(libs...).Lookup("_r_debug"); err == nil {
		lm, err := objfile.ReadLinkMap(lockedMemory{t}, rd, 8, binary.LittleEndian)
		if err != nil || len(lm) == 0 {
			info.Err = fmt.Errorf("executable's load bias: dynamic linker's list: %w", errors.Join(err, errEmpty))
			return info
		}
		info.Bias, biasKnown = lm[0].LAddr, true
	}
	var paths []string
	switch {
	case t.cfg.exe != "":
		paths = []string{t.cfg.exe}
	default:
		if strings.HasPrefix(info.Name, "/") {
			paths = t.cfg.files.Candidates(info.Name)
		}
		if t.stop.pid > 0 {
			paths = append(paths, "/proc/"+strconv.Itoa(t.stop.pid)+"/exe")
		}
	}
	var errs []error
	for _, p := range paths {
		bias := info.Bias
		if !biasKnown {
			b, err := t.exeBiasLocked(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: load bias: %w", p, err))
				continue
			}
			bias = b
		}
		im := t.openExact(info.Name, bias, p)
		if im.o != nil {
			info.Path, info.Bias = im.path, bias
			return info
		}
		errs = append(errs, im.err)
	}
	if len(errs) == 0 {
		errs = append(errs, errors.New("the server names no program"))
	}
	info.Err = fmt.Errorf("executable (command line %q): %w; name it with WithExecutable", t.stop.cmdline, errors.Join(errs...))
	return info
}

var errEmpty = errors.New("empty")

// exeBiasLocked finds the load bias of the executable at path when no
// dynamic linker lists it (a server on a core file lists no libraries): a
// position-dependent executable has none; a position-independent one is
// where the server places the entry of main.
func (t *Target) exeBiasLocked(path string) (uint64, error) {
	o, err := objfile.Open(path, 0, t.cfg.debug.ObjOptions()...)
	if err != nil {
		return 0, err
	}
	defer o.Close()
	if o.File().Type != elf.ET_DYN {
		return 0, nil
	}
	sym, err := o.Lookup("main")
	if err != nil {
		return 0, err
	}
	for _, loc := range []string{"C.main", "main"} {
		var out rpc2.FindLocationOut
		err := t.c.call(bg, false, "FindLocation", rpc2.FindLocationIn{Scope: api.EvalScope{GoroutineID: -1}, Loc: loc}, &out)
		if err != nil {
			var se *ServerError
			if errors.As(err, &se) {
				continue
			}
			return 0, err
		}
		for _, l := range out.Locations {
			if l.Function != nil && l.Function.Value >= sym.Addr {
				return l.Function.Value - sym.Addr, nil
			}
		}
	}
	return 0, fmt.Errorf("the server places no function main: %w", target.ErrNotFound)
}

// openExact opens path for the object the server calls name, loaded at
// bias, if it is the build in the process's memory. A success is kept for
// later stops; a failure is tried again.
func (t *Target) openExact(name string, bias uint64, path string) *image {
	k := imageKey{name, bias}
	if im, ok := t.opened[k]; ok && im.o != nil {
		return im
	}
	im := &image{}
	o, err := objfile.Open(path, bias, t.cfg.debug.ObjOptions()...)
	if err == nil {
		if err = t.verifyLocked(o); err != nil {
			o.Close()
			err = fmt.Errorf("%s: %w", path, err)
		}
	}
	if err != nil {
		im.err = err
	} else {
		im.o, im.path = o, path
	}
	t.opened[k] = im
	return im
}

// setLocked returns the object set of this stop.
func (t *Target) setLocked() (*objfile.Set, error) {
	o, err := t.objectsLocked()
	if err != nil {
		return nil, err
	}
	return o.set, nil
}

// exeName is the program's path as its command line gives it.
func (t *Target) exeName() string {
	f := strings.Fields(t.stop.cmdline)
	if len(f) == 0 {
		return ""
	}
	return filepath.Clean(f[0])
}

// LookupSymbol returns the run-time address of the symbol called name,
// global or local, from the executable or a loaded library (executable
// first, then the libraries in load order).
func (t *Target) LookupSymbol(name string) (uint64, error) { return t.look.LookupSymbol(name) }

// LookupThreadLocal returns the address of thread tid's instance of the
// thread-local variable called name (see objfile.Set.LookupThreadLocal).
func (t *Target) LookupThreadLocal(tid uint64, name string) (uint64, error) {
	return t.look.LookupThreadLocal(tid, name)
}

// TypeSize returns the size of the named C type from the loaded objects'
// DWARF.
func (t *Target) TypeSize(typeName string) (uint64, error) { return t.look.TypeSize(typeName) }

// FieldOffset returns the byte offset of the named member of the named C
// struct or union type.
func (t *Target) FieldOffset(typeName, field string) (uint64, error) {
	return t.look.FieldOffset(typeName, field)
}

// BitField returns the bit position and width of the named member of the
// named struct type (target.BitFieldLocator).
func (t *Target) BitField(typeName, field string) (bitOffset, bitSize uint64, err error) {
	return t.look.BitField(typeName, field)
}

// SymbolAt returns the name of the function symbol containing addr
// (target.Symbolizer).
func (t *Target) SymbolAt(addr uint64) (string, bool) { return t.look.SymbolAt(addr) }

// Objects lists the objects loaded in the process at this stop
// (target.ObjectLister): the executable first, then the libraries, with
// the local file used for each or why none could be. Name is the path the
// server names ("" for an executable it does not name).
func (t *Target) Objects() ([]target.Object, error) {
	t.mu.Lock()
	o, err := t.objectsLocked()
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return objfile.Describe(o.infos, o.files), nil
}
