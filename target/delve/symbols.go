package delve

import (
	"fmt"
	"slices"

	"github.com/go-delve/delve/pkg/proc/linutil"

	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/target"
)

// image is one object file Delve lists as loaded (Objects), opened with
// package objfile for symbols, DWARF types and thread-local storage.
type image struct {
	o   *objfile.Object // nil if it could not be opened
	err error           // why not
}

type imageKey struct {
	path string
	bias uint64
}

// setLocked returns the objects loaded in the process at this stop: the
// executable first, then the shared libraries in load order, each at its
// load bias (Delve's StaticBase). Objects stay open across stops.
func (t *Target) setLocked() (*objfile.Set, error) {
	if t.imagesOK && t.set != nil {
		return t.set, nil
	}
	if err := t.aliveLocked(); err != nil {
		return nil, err
	}
	// The dynamic linker's list as the previous stop saw it: if it has
	// not changed, neither have the objects. Reading it through the page
	// cache costs a few page reads, where Delve's update reads every
	// field and name of it separately (about 30 reads a stop).
	if t.set != nil && t.linkMap != nil {
		if lm, err := t.set.LinkMap(lockedMemory{t}); err == nil && slices.Equal(lm, t.linkMap) {
			t.imagesOK = true
			return t.set, nil
		}
	}
	t.imagesUpdate()
	var objs []*objfile.Object
	for _, im := range t.dt.BinInfo().Images {
		k := imageKey{im.Path, im.StaticBase}
		e, ok := t.objs[k]
		if !ok {
			e = &image{}
			e.o, e.err = objfile.Open(im.Path, im.StaticBase, t.objOpts...)
			t.objs[k] = e
		}
		if e.o != nil {
			objs = append(objs, e.o)
		}
	}
	t.set = objfile.NewSet(objs...)
	t.imagesOK = true
	t.linkMap, _ = t.set.LinkMap(lockedMemory{t})
	return t.set, nil
}

// LookupSymbol returns the run-time address of the symbol called name,
// global or local, from the executable or a loaded library (the executable
// first, then the libraries in load order; in an object a global definition
// wins over a local one). A missing symbol is a *target.LookupError wrapping
// target.ErrNotFound.
func (t *Target) LookupSymbol(name string) (uint64, error) { return t.look.LookupSymbol(name) }

func (t *Target) lookupSymbolLocked(name string) (uint64, error) {
	return t.look.LookupSymbolLocked(name)
}

// LookupThreadLocal returns the address of thread tid's instance of the
// thread-local variable called name, found through glibc's thread
// descriptors from the thread's fs_base (see objfile.Set.LookupThreadLocal).
// An unknown thread wraps target.ErrNoThread; a variable the thread has no
// storage for yet wraps target.ErrNoMemory.
func (t *Target) LookupThreadLocal(tid uint64, name string) (uint64, error) {
	return t.look.LookupThreadLocal(tid, name)
}

// TypeSize returns the size of the named C type from the DWARF of the
// loaded objects (the first that defines it completely).
func (t *Target) TypeSize(typeName string) (uint64, error) { return t.look.TypeSize(typeName) }

// FieldOffset returns the byte offset of the named member of the named C
// struct or union type, from the DWARF of the loaded objects; field may be
// a dotted path.
func (t *Target) FieldOffset(typeName, field string) (uint64, error) {
	return t.look.FieldOffset(typeName, field)
}

// BitField returns the bit position and width of the named member of the
// named struct type (target.BitFieldLocator).
func (t *Target) BitField(typeName, field string) (bitOffset, bitSize uint64, err error) {
	return t.look.BitField(typeName, field)
}

// SymbolAt returns the name of the function symbol containing addr, in the
// loaded object whose segments cover it (target.Symbolizer).
func (t *Target) SymbolAt(addr uint64) (string, bool) { return t.look.SymbolAt(addr) }

// Objects lists the objects loaded in the process (target.ObjectLister):
// the executable first, then the shared libraries in load order. Name is
// the path Delve reports (the executable's may be /proc/PID/exe), and the
// file opened, Path, is that path; "" when it could not be opened (Err
// says why).
func (t *Target) Objects() ([]target.Object, error) {
	t.mu.Lock()
	if _, err := t.setLocked(); err != nil {
		t.mu.Unlock()
		return nil, err
	}
	var infos []target.Object
	var files []*objfile.Object
	for _, im := range t.dt.BinInfo().Images {
		info := target.Object{Name: im.Path, Path: im.Path, Bias: im.StaticBase}
		var f *objfile.Object
		if e := t.objs[imageKey{im.Path, im.StaticBase}]; e != nil {
			if e.err != nil {
				info.Path, info.Err = "", fmt.Errorf("open %s: %w", im.Path, e.err)
			}
			f = e.o
		}
		infos, files = append(infos, info), append(files, f)
	}
	t.mu.Unlock()
	return objfile.Describe(infos, files), nil
}

// imagesUpdate refreshes Delve's list of loaded libraries from the dynamic
// loader's link map. Delve does it itself when it launched the process;
// for processes it attached to (which Launch also does) it would not see
// libraries loaded afterwards.
func (t *Target) imagesUpdate() {
	_ = linutil.ElfUpdateSharedObjects(t.dt)
}
