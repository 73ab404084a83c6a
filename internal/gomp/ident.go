package gomp

import (
	"debug/elf"
	"encoding/hex"
	"fmt"
	"path"
	"strings"

	"github.com/ompd-go/ompd/internal/arch"
	"github.com/ompd-go/ompd/internal/gomp/gompver"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// library is what target memory alone tells of the loaded libgomp: where
// it is, who it is, and where its thread-local gomp_tls_data lives. All of
// it is read through the dynamic linker's link_map list and the library's
// dynamic section, so it works on a stripped library, in a core as live.
type library struct {
	name  string // the path the dynamic linker loaded it from
	arch  *arch.Arch
	base  uint64 // l_addr
	dyn   uint64 // l_ld: the dynamic section in memory
	tpoff int64  // thread-pointer offset of gomp_tls_data
	// tpoffSlot is the GOT slot the tpoff was read from: an address inside
	// libgomp that names the library (used as the synthetic level-0 ids).
	tpoffSlot uint64
	buildID   string // hex, "" if none
	// newestNode is the newest GOMP_x.y[.z] symbol version the library
	// defines: each GCC release that changed libgomp's ABI adds one.
	newestNode string
}

// Limits on what is read from the dynamic section, so that corrupt memory
// cannot make the search run or allocate without bound.
const (
	maxDynEntries = 512
	maxRelocs     = 1 << 16
	maxVerdefs    = 256
)

// isLibgomp reports whether a link_map name is a libgomp.
func isLibgomp(name string) bool {
	return strings.HasPrefix(path.Base(name), "libgomp.so")
}

// findLibrary locates libgomp in t's link_map list. A target with no
// libgomp gives omprt.ErrNoRuntime.
func findLibrary(t target.Target, mem *omprt.Memory) (*library, error) {
	rd, err := objfile.RDebug(t, mem, mem.Order)
	if err != nil {
		return nil, omprt.Wrap(omprt.ErrNoRuntime, err, "gomp: no dynamic linker state (_r_debug)")
	}
	entries, err := objfile.ReadLinkMap(t, rd, mem.PtrSize, mem.Order)
	var lib *library
	for _, e := range entries {
		if isLibgomp(e.Name) {
			lib = &library{name: e.Name, base: e.LAddr, dyn: e.LD}
			break
		}
	}
	if lib == nil {
		if err != nil {
			return nil, omprt.Wrap(omprt.ErrNoRuntime, err, "gomp: no libgomp in the link_map list")
		}
		return nil, omprt.Errorf(omprt.ErrNoRuntime, "gomp: no libgomp loaded")
	}
	if mem.PtrSize != 8 {
		return nil, omprt.Errorf(omprt.ErrIncompatible, "gomp: %s: only 64-bit targets are supported", lib.name)
	}
	if lib.arch, err = omprt.Arch(t); err != nil {
		return nil, omprt.Wrap(omprt.ErrIncompatible, err, "gomp: %s", lib.name)
	}
	if err := lib.readDynamic(mem); err != nil {
		return nil, lib.unreadable(t, err)
	}
	return lib, nil
}

// unreadable returns the error of libgomp found in the program's list of
// objects but whose memory cannot be read (err): when the target could
// not load the library's file, one that says so, which file and why, and
// where the target looks for it, matching omprt.ErrIncompatible and
// target.ErrObjectMissing; else err.
func (l *library) unreadable(t target.Target, err error) error {
	m, ok := t.(target.MissingObjectLister)
	if !ok {
		return err
	}
	for _, o := range m.MissingObjects() {
		if isLibgomp(o.Name) {
			return omprt.Wrap(omprt.ErrIncompatible, fmt.Errorf("%w: %s: %w", target.ErrObjectMissing, o.Name, o.Err),
				"gomp: the program uses GNU libgomp (%s), which cannot be read without its file (%v); a core's libraries are looked for where the core names them, under the sysroot or file map it is opened with (core.WithSysroot, core.WithFileMap; ompdtool -sysroot, -file-map)",
				l.name, err)
		}
	}
	return err
}

// dynAddr turns a d_ptr value of the dynamic section into a run-time
// address: glibc relocates some entries in place and not others.
func (l *library) dynAddr(v uint64) uint64 {
	if v < l.base {
		return v + l.base
	}
	return v
}

// readDynamic reads the dynamic section: relocations (for the TLS
// offset), version definitions and the build-id note.
func (l *library) readDynamic(mem *omprt.Memory) error {
	tags := map[elf.DynTag]uint64{}
	for i := uint64(0); i < maxDynEntries; i++ {
		v, err := mem.View(l.dyn+16*i, 16, "libgomp dynamic section")
		if err != nil {
			return omprt.Wrap(omprt.ErrIncompatible, err, "gomp: %s", l.name)
		}
		tag := elf.DynTag(v.Uint(0, 8))
		if tag == elf.DT_NULL {
			break
		}
		if _, ok := tags[tag]; !ok {
			tags[tag] = v.Uint(8, 8)
		}
	}
	if err := l.readTPOff(mem, tags); err != nil {
		return err
	}
	l.newestNode = l.readVerdefs(mem, tags)
	l.buildID = l.readBuildID(mem)
	return nil
}

// readTPOff finds the GOT slots that the machine's initial-exec TLS
// relocations against symbol 0 fill (R_X86_64_TPOFF64 on x86-64, see
// arch.Arch.TPOffReloc): libgomp reaches its one initial-exec TLS
// variable, gomp_tls_data (at offset 0 of its TLS block), through them,
// each slot holding the variable's thread-pointer offset plus the
// relocation's addend. All of them must agree.
func (l *library) readTPOff(mem *omprt.Memory, tags map[elf.DynTag]uint64) error {
	rela, ok := tags[elf.DT_RELA]
	size := tags[elf.DT_RELASZ]
	ent := tags[elf.DT_RELAENT]
	if !ok || size == 0 {
		return omprt.Errorf(omprt.ErrIncompatible, "gomp: %s has no dynamic relocations", l.name)
	}
	if ent == 0 {
		ent = 24
	}
	if ent != 24 || size/ent > maxRelocs {
		return omprt.Errorf(omprt.ErrIncompatible, "gomp: %s: unexpected relocation table (%d bytes of %d-byte entries)", l.name, size, ent)
	}
	rela = l.dynAddr(rela)
	v, err := mem.View(rela, size, "libgomp relocations")
	if err != nil {
		return omprt.Wrap(omprt.ErrIncompatible, err, "gomp: %s", l.name)
	}
	found := false
	var base int64
	for off := uint64(0); off+24 <= size; off += 24 {
		info := v.Uint(off+8, 8)
		if elf.R_TYPE64(info) != l.arch.TPOffReloc || elf.R_SYM64(info) != 0 {
			continue
		}
		slot := l.base + v.Uint(off, 8)
		addend := v.Int(off+16, 8)
		got, err := mem.Uint(slot, 8, "libgomp TLS offset slot")
		if err != nil {
			return omprt.Wrap(omprt.ErrIncompatible, err, "gomp: %s", l.name)
		}
		b := int64(got) - addend
		if found && b != base {
			return omprt.Errorf(omprt.ErrIncompatible, "gomp: %s: TLS offset slots disagree (%d and %d)", l.name, base, b)
		}
		if !found || addend == 0 {
			l.tpoffSlot = slot
		}
		base, found = b, true
	}
	if !found {
		return omprt.Errorf(omprt.ErrIncompatible, "gomp: %s: no %s relocation for its thread-local data", l.name, l.arch.TPOffRelocName)
	}
	if !l.arch.TPOffPlausible(base) {
		return omprt.Errorf(omprt.ErrIncompatible, "gomp: %s: implausible TLS offset %d", l.name, base)
	}
	l.tpoff = base
	return nil
}

// readVerdefs returns the newest GOMP_ version node the library defines,
// "" if it cannot tell.
func (l *library) readVerdefs(mem *omprt.Memory, tags map[elf.DynTag]uint64) string {
	vd, ok1 := tags[elf.DT_VERDEF]
	n := tags[elf.DT_VERDEFNUM]
	strtab, ok2 := tags[elf.DT_STRTAB]
	if !ok1 || !ok2 || n == 0 || n > maxVerdefs {
		return ""
	}
	vd, strtab = l.dynAddr(vd), l.dynAddr(strtab)
	newest := ""
	for i := uint64(0); i < n; i++ {
		v, err := mem.View(vd, 20, "libgomp version definition")
		if err != nil {
			return ""
		}
		aux := v.Uint(12, 4)
		if aux != 0 {
			name, err := mem.Uint(vd+aux, 4, "libgomp version name")
			if err == nil {
				s, err := mem.String(strtab+name, "libgomp version name")
				if err == nil {
					newest = gompver.Newer(newest, s)
				}
			}
		}
		next := v.Uint(16, 4)
		if next == 0 {
			break
		}
		vd += next
	}
	return newest
}

// readBuildID reads the GNU build-id note through the program headers
// mapped at the library's base; "" if it cannot.
func (l *library) readBuildID(mem *omprt.Memory) string {
	if id := objfile.LoadedBuildID(mem, l.base, mem.Order); id != nil {
		return hex.EncodeToString(id)
	}
	return ""
}
