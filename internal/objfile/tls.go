package objfile

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ompd-go/ompd/internal/arch"
	"github.com/ompd-go/ompd/target"
)

// MaxLinkMapEntries bounds the walk of the dynamic linker's link_map list.
const MaxLinkMapEntries = 4096

// maxNameLen bounds the l_name strings read from memory.
const maxNameLen = 4096

// LinkMapEntry is one struct link_map of the dynamic linker's list of
// loaded objects.
type LinkMapEntry struct {
	Addr  uint64 // address of the struct link_map itself
	LAddr uint64 // l_addr: the object's load bias
	Name  string // l_name: its path ("" for the executable)
	LD    uint64 // l_ld: run-time address of its dynamic section
}

// memReader reads words of one byte order and size through a Memory.
type memReader struct {
	mem   Memory
	order binary.ByteOrder
	ptr   int // pointer size in bytes: 4 or 8
}

func (r memReader) word(addr uint64) (uint64, error) {
	var b [8]byte
	if err := r.mem.ReadMemory(b[:r.ptr], addr); err != nil {
		return 0, err
	}
	if r.ptr == 4 {
		return uint64(r.order.Uint32(b[:4])), nil
	}
	return r.order.Uint64(b[:8]), nil
}

// cstring reads a NUL-terminated string of at most maxNameLen bytes,
// without reading across a page boundary before it needs to.
func (r memReader) cstring(addr uint64) (string, error) {
	var out []byte
	var buf [256]byte
	for len(out) < maxNameLen {
		n := uint64(len(buf))
		cur := addr + uint64(len(out))
		if pageRem := 4096 - cur%4096; pageRem < n {
			n = pageRem
		}
		if err := r.mem.ReadMemory(buf[:n], cur); err != nil {
			return "", err
		}
		for i := uint64(0); i < n; i++ {
			if buf[i] == 0 {
				return string(append(out, buf[:i]...)), nil
			}
		}
		out = append(out, buf[:n]...)
	}
	return "", fmt.Errorf("string at %#x longer than %d bytes", addr, maxNameLen)
}

// ReadLinkMap walks the list of struct link_map that the struct r_debug at
// rDebug points to (r_map, the second member, after the int r_version), in
// load order. ptrSize (4 or 8) and order describe the target. The walk
// stops after MaxLinkMapEntries entries or at a repeated entry, with an
// error and the entries read so far. A name that cannot be read is left
// empty. An r_debug whose r_map is 0 (the dynamic linker has not started)
// gives no entries and no error.
func ReadLinkMap(mem Memory, rDebug uint64, ptrSize int, order binary.ByteOrder) ([]LinkMapEntry, error) {
	if ptrSize != 4 && ptrSize != 8 {
		return nil, fmt.Errorf("objfile: pointer size %d: %w", ptrSize, target.ErrUnsupported)
	}
	r := memReader{mem: mem, order: order, ptr: ptrSize}
	p := uint64(ptrSize)
	lm, err := r.word(rDebug + p)
	if err != nil {
		return nil, fmt.Errorf("objfile: reading r_debug.r_map at %#x: %w", rDebug+p, err)
	}
	var out []LinkMapEntry
	seen := make(map[uint64]bool)
	for lm != 0 {
		if len(out) >= MaxLinkMapEntries {
			return out, fmt.Errorf("objfile: link_map list longer than %d entries", MaxLinkMapEntries)
		}
		if seen[lm] {
			return out, fmt.Errorf("objfile: link_map list loops back to %#x", lm)
		}
		seen[lm] = true
		var w [4]uint64 // l_addr, l_name, l_ld, l_next
		for i := range w {
			if w[i], err = r.word(lm + uint64(i)*p); err != nil {
				return out, fmt.Errorf("objfile: reading link_map at %#x: %w", lm, err)
			}
		}
		e := LinkMapEntry{Addr: lm, LAddr: w[0], LD: w[2]}
		if w[1] != 0 {
			e.Name, _ = r.cstring(w[1])
		}
		out = append(out, e)
		lm = w[3]
	}
	return out, nil
}

// ptrSize is the pointer size of an ELF class.
func ptrSize(f *elf.File) int {
	if f.Class == elf.ELFCLASS32 {
		return 4
	}
	return 8
}

// DebugPointer returns the value of the DT_DEBUG entry of the object's
// dynamic section as it is in memory (the dynamic linker stores the
// address of its struct r_debug there), or 0 if the object has none.
func (o *Object) DebugPointer(mem Memory) (uint64, error) {
	addr, size, ok := o.DynamicAddr()
	if !ok {
		return 0, nil
	}
	r := memReader{mem: mem, order: o.f.ByteOrder, ptr: ptrSize(o.f)}
	ent := uint64(2 * r.ptr)
	n := min(size/ent, 4096)
	for i := uint64(0); i < n; i++ {
		tag, err := r.word(addr + i*ent)
		if err != nil {
			return 0, fmt.Errorf("objfile: %s: reading dynamic section: %w", o.path, err)
		}
		if tag == uint64(elf.DT_NULL) {
			break
		}
		if tag == uint64(elf.DT_DEBUG) {
			return r.word(addr + i*ent + uint64(r.ptr))
		}
	}
	return 0, nil
}

// RDebug returns the address of the dynamic linker's struct r_debug: the
// DT_DEBUG entry of the executable (the set's first object) read through
// mem, when it points at an r_debug whose r_version is plausible, or else
// the _r_debug symbol (exported by ld.so). DT_DEBUG comes first because it
// costs one small read, where the symbol costs indexing the symbol table of
// every object before ld.so (a core opens several libraries that way). It
// reads only the objects' own symbol tables, never separate debug files:
// ld.so exports _r_debug.
func (s *Set) RDebug(mem Memory) (uint64, error) {
	if len(s.objs) == 0 {
		return 0, fmt.Errorf("objfile: no objects: %w", target.ErrNotFound)
	}
	exe := s.objs[0]
	p, derr := exe.DebugPointer(mem)
	if derr == nil && p != 0 {
		// r_debug starts with int r_version: 1, or 2 for glibc's
		// r_debug_extended.
		var v [4]byte
		if err := mem.ReadMemory(v[:], p); err == nil {
			if ver := exe.f.ByteOrder.Uint32(v[:]); ver >= 1 && ver <= 2 {
				return p, nil
			}
		}
	}
	for _, o := range s.objs {
		if sym, ok := o.lookupOwn("_r_debug"); ok && !sym.TLS() {
			return sym.Addr, nil
		}
	}
	if derr != nil {
		return 0, derr
	}
	if p == 0 {
		return 0, fmt.Errorf("objfile: neither _r_debug nor a set DT_DEBUG: %w", target.ErrNotFound)
	}
	return p, nil
}

// LinkMap walks the dynamic linker's list of loaded objects (see RDebug
// and ReadLinkMap).
func (s *Set) LinkMap(mem Memory) ([]LinkMapEntry, error) {
	rd, err := s.RDebug(mem)
	if err != nil {
		return nil, err
	}
	f := s.objs[0].f
	return ReadLinkMap(mem, rd, ptrSize(f), f.ByteOrder)
}

// dbDesc is a libthread_db descriptor exported by glibc: the size in bits
// of a field (or of an array element), the number of elements, and its
// offset in its struct.
type dbDesc struct {
	bits, count, offset uint32
}

// threadDB are the glibc descriptors the TLS lookup needs.
type threadDB struct {
	dtvp       dbDesc // struct pthread: dtv pointer (tcbhead_t.dtv)
	dtv        dbDesc // dtv_t array: element size
	pointerVal dbDesc // dtv_t: pointer.val
	modid      dbDesc // struct link_map: l_tls_modid
	tlsOffset  dbDesc // struct link_map: l_tls_offset
}

// readDesc reads the descriptor symbol name through mem, or from the file
// of the object that defines it when mem cannot (a core file may leave
// read-only data out, and the descriptors are constants).
func (s *Set) readDesc(mem Memory, name string) (dbDesc, error) {
	o, sym, err := s.LookupSymbol(name)
	if err != nil {
		return dbDesc{}, err
	}
	if sym.TLS() {
		return dbDesc{}, fmt.Errorf("%s is thread-local: %w", name, target.ErrNotFound)
	}
	var b [12]byte
	if err := mem.ReadMemory(b[:], sym.Addr); err != nil {
		if ferr := o.ReadVirtual(b[:], sym.Addr); ferr != nil {
			return dbDesc{}, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	order := o.f.ByteOrder
	d := dbDesc{order.Uint32(b[0:]), order.Uint32(b[4:]), order.Uint32(b[8:])}
	if d.bits == 0 || d.bits%8 != 0 || d.bits > 128 || d.offset > 1<<20 {
		return dbDesc{}, fmt.Errorf("descriptor %s = {%d, %d, %d} is implausible", name, d.bits, d.count, d.offset)
	}
	return d, nil
}

func (s *Set) threadDB(mem Memory) (threadDB, error) {
	var db threadDB
	for _, x := range []struct {
		name string
		dst  *dbDesc
	}{
		{"_thread_db_pthread_dtvp", &db.dtvp},
		{"_thread_db_dtv_dtv", &db.dtv},
		{"_thread_db_dtv_t_pointer_val", &db.pointerVal},
		{"_thread_db_link_map_l_tls_modid", &db.modid},
		{"_thread_db_link_map_l_tls_offset", &db.tlsOffset},
	} {
		d, err := s.readDesc(mem, x.name)
		if err != nil {
			return db, fmt.Errorf("glibc's libthread_db descriptors: %w", err)
		}
		*x.dst = d
	}
	return db, nil
}

// field reads the integer field that d describes in the struct at base.
func (r memReader) field(base uint64, d dbDesc) (uint64, error) {
	var b [8]byte
	switch d.bits {
	case 32:
		if err := r.mem.ReadMemory(b[:4], base+uint64(d.offset)); err != nil {
			return 0, err
		}
		return uint64(r.order.Uint32(b[:4])), nil
	case 64:
		if err := r.mem.ReadMemory(b[:8], base+uint64(d.offset)); err != nil {
			return 0, err
		}
		return r.order.Uint64(b[:8]), nil
	}
	return 0, fmt.Errorf("field of %d bits: %w", d.bits, target.ErrUnsupported)
}

// findLinkMap finds the link_map entry of s.objs[idx]: the first entry for
// the executable, otherwise the entry whose l_addr is the object's bias and
// whose l_ld is its dynamic section (or, failing that, whose name has the
// same base name).
func (s *Set) findLinkMap(mem Memory, idx int) (LinkMapEntry, error) {
	entries, err := s.LinkMap(mem)
	if len(entries) == 0 {
		if err == nil {
			err = errors.New("the dynamic linker's link_map list is empty")
		}
		return LinkMapEntry{}, err
	}
	o := s.objs[idx]
	if idx == 0 {
		return entries[0], nil
	}
	dyn, _, hasDyn := o.DynamicAddr()
	for _, e := range entries[1:] {
		if e.LAddr == o.bias && (!hasDyn || e.LD == dyn) {
			return e, nil
		}
	}
	for _, e := range entries[1:] {
		if e.LAddr == o.bias && baseName(e.Name) == baseName(o.path) {
			return e, nil
		}
	}
	if err == nil {
		err = target.ErrNotFound
	}
	return LinkMapEntry{}, fmt.Errorf("no link_map entry for %s: %w", o, err)
}

// Arch returns the machine of the set's executable (its first object).
// A machine the arch package does not know is an error wrapping
// target.ErrUnsupported that names it.
func (s *Set) Arch() (*arch.Arch, error) {
	if len(s.objs) == 0 {
		return nil, fmt.Errorf("objfile: no objects: %w", target.ErrNotFound)
	}
	a, err := arch.For(s.objs[0].f)
	if err != nil {
		return nil, fmt.Errorf("objfile: %s: %w: %w", s.objs[0].path, err, target.ErrUnsupported)
	}
	return a, nil
}

// readWords reads n 32-bit words of the symbol name (a glibc descriptor)
// through mem, or from the file of the object that defines it when mem
// cannot (a core file may leave read-only data out, and the descriptors
// are constants).
func (s *Set) readWords(mem Memory, name string, n int) ([]uint32, error) {
	o, sym, err := s.LookupSymbol(name)
	if err != nil {
		return nil, err
	}
	if sym.TLS() {
		return nil, fmt.Errorf("%s is thread-local: %w", name, target.ErrNotFound)
	}
	b := make([]byte, 4*n)
	if err := mem.ReadMemory(b, sym.Addr); err != nil {
		if ferr := o.ReadVirtual(b, sym.Addr); ferr != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	out := make([]uint32, n)
	for i := range out {
		out[i] = o.f.ByteOrder.Uint32(b[4*i:])
	}
	return out, nil
}

// threadSelfBias returns the machine of the set and how far a thread's
// struct pthread lies from its thread pointer (see arch.Arch.ThreadSelf),
// read once from glibc's descriptors.
func (s *Set) threadSelfBias(mem Memory) (*arch.Arch, int64, error) {
	a, err := s.Arch()
	if err != nil {
		return nil, 0, err
	}
	s.mu.RLock()
	bias, ok := s.selfBias, s.selfBiasOK
	s.mu.RUnlock()
	if ok {
		return a, bias, nil
	}
	bias, err = a.ThreadSelf(func(name string, n int) ([]uint32, error) { return s.readWords(mem, name, n) })
	if err != nil {
		return a, 0, fmt.Errorf("glibc's thread descriptor on %s: %w", a, err)
	}
	s.mu.Lock()
	s.selfBias, s.selfBiasOK = bias, true
	s.mu.Unlock()
	return a, bias, nil
}

// ThreadSelf returns the pthread_t (the address of glibc's struct
// pthread) of the thread whose thread pointer is tp: tp itself on TLS
// variant II machines (x86-64, s390x), at a distance glibc's libthread_db
// descriptors give on variant I machines (aarch64, ppc64), where an error
// says why they could not be read.
func (s *Set) ThreadSelf(mem Memory, tp uint64) (uint64, error) {
	_, bias, err := s.threadSelfBias(mem)
	if err != nil {
		return 0, err
	}
	return tp + uint64(bias), nil
}

// ThreadPointerOf is the inverse of ThreadSelf: the thread pointer of the
// thread whose struct pthread is at pthread.
func (s *Set) ThreadPointerOf(mem Memory, pthread uint64) (uint64, error) {
	_, bias, err := s.threadSelfBias(mem)
	if err != nil {
		return 0, err
	}
	return pthread - uint64(bias), nil
}

// LookupThreadLocal returns the address, in the thread whose thread
// pointer is threadPointer, of the thread-local variable called name.
//
// The method is the one of glibc's libthread_db (td_thr_tlsbase), with
// every read going through mem. The variable's TLS offset is its STT_TLS
// symbol's value. Its object's TLS module id is l_tls_modid of the
// object's struct link_map, found by walking the dynamic linker's list
// (r_debug.r_map; see LinkMap) for the entry whose l_addr is the object's
// load bias. The thread's struct pthread (see ThreadSelf) holds its dtv
// pointer at the offset given by glibc's exported descriptor
// _thread_db_pthread_dtvp; the module's TLS block address is
// dtv[modid].pointer.val (element size from _thread_db_dtv_dtv, member
// offset from _thread_db_dtv_t_pointer_val; the link_map offsets likewise
// come from _thread_db_link_map_l_tls_modid and _l_tls_offset, so nothing
// depends on one glibc version's struct layouts). A block that the thread
// has not allocated (0, or odd: TLS_DTV_UNALLOCATED), or a modid past the
// dtv's length (dtv[-1].counter), falls back to static TLS when the module
// has a static offset (see arch.Arch.StaticTLSBlock for where the block
// is, by the machine's TLS variant); otherwise the variable has no storage
// in that thread yet and the error wraps target.ErrNoMemory. Without
// glibc's descriptors (a static executable, another libc) a variable of
// the executable itself is still found, at the static offset glibc gives
// the first TLS module.
//
// A machine the arch package does not know gives an error wrapping
// target.ErrUnsupported; errors are *target.LookupError.
func (s *Set) LookupThreadLocal(mem Memory, threadPointer uint64, name string) (uint64, error) {
	wrap := func(err error) error {
		return &target.LookupError{Kind: "thread-local symbol", Name: name, Err: err}
	}
	idx := -1
	var sym Symbol
	nonTLS := ""
	for i, o := range s.objs {
		sy, err := o.Lookup(name)
		if err != nil {
			continue
		}
		if !sy.TLS() {
			if nonTLS == "" {
				nonTLS = o.path
			}
			continue
		}
		idx, sym = i, sy
		break
	}
	if idx < 0 {
		if nonTLS != "" {
			return 0, wrap(fmt.Errorf("%w: %s defines it, but not as thread-local", target.ErrNotFound, nonTLS))
		}
		return 0, wrap(target.ErrNotFound)
	}
	a, err := arch.For(s.objs[idx].f)
	if err != nil {
		return 0, wrap(fmt.Errorf("thread-local storage on %w: %w", err, target.ErrUnsupported))
	}
	if threadPointer == 0 {
		return 0, wrap(fmt.Errorf("thread pointer unknown: %w", target.ErrUnsupported))
	}
	base, err := s.tlsBlock(mem, a, threadPointer, idx)
	if err != nil {
		return 0, wrap(err)
	}
	return base + sym.Addr, nil
}

// tlsBlock returns the start of the TLS block of s.objs[idx] in the thread
// whose thread pointer is tp (see LookupThreadLocal).
func (s *Set) tlsBlock(mem Memory, a *arch.Arch, tp uint64, idx int) (uint64, error) {
	o := s.objs[idx]
	r := memReader{mem: mem, order: a.Order, ptr: a.PtrSize}
	db, err := s.threadDB(mem)
	if err == nil {
		var lm LinkMapEntry
		lm, err = s.findLinkMap(mem, idx)
		if err == nil {
			var pd uint64
			if pd, err = s.ThreadSelf(mem, tp); err == nil {
				return s.dtvBlock(r, a, db, lm, tp, pd, o)
			}
		}
	}
	if idx == 0 {
		if seg := o.TLSSegment(); seg != nil {
			return a.StaticTLSBlock(tp, a.FirstStaticOffset(seg)), nil
		}
	}
	return 0, err
}

func (s *Set) dtvBlock(r memReader, a *arch.Arch, db threadDB, lm LinkMapEntry, tp, pd uint64, o *Object) (uint64, error) {
	modid, err := r.field(lm.Addr, db.modid)
	if err != nil {
		return 0, fmt.Errorf("reading l_tls_modid of %s: %w", o, err)
	}
	if modid == 0 {
		return 0, fmt.Errorf("%s has no TLS module id: %w", o, target.ErrNotFound)
	}
	tlsOff, err := r.field(lm.Addr, db.tlsOffset)
	if err != nil {
		return 0, fmt.Errorf("reading l_tls_offset of %s: %w", o, err)
	}
	if db.tlsOffset.bits == 32 {
		tlsOff = uint64(int64(int32(tlsOff)))
	}
	static := func(why string) (uint64, error) {
		if a.StaticTLSOffset(int64(tlsOff)) {
			return a.StaticTLSBlock(tp, tlsOff), nil
		}
		return 0, fmt.Errorf("TLS block of %s (module %d) %s in thread %#x: %w", o, modid, why, tp, target.ErrNoMemory)
	}
	dtv, err := r.field(pd, db.dtvp)
	if err != nil {
		return 0, fmt.Errorf("reading the dtv pointer of thread %#x: %w", pd, err)
	}
	if dtv == 0 {
		return static("has no dtv")
	}
	elt := uint64(db.dtv.bits / 8)
	if modid > 1<<24 || (db.dtv.count != 0 && modid >= uint64(db.dtv.count)) {
		return 0, fmt.Errorf("TLS module id %d of %s is implausible", modid, o)
	}
	// dtv[-1].counter is the number of slots the dtv has room for.
	if n, err := r.word(dtv - elt); err == nil && n < modid {
		return static("is past the thread's dtv")
	}
	val, err := r.field(dtv+uint64(db.dtv.offset)+modid*elt, db.pointerVal)
	if err != nil {
		return 0, fmt.Errorf("reading dtv[%d] of thread %#x: %w", modid, pd, err)
	}
	if val == 0 || val&1 != 0 {
		return static("is not allocated")
	}
	return val, nil
}
