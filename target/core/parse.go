package core

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/internal/arch"
	"github.com/ompd-go/ompd/target"
)

// Limits that keep a corrupt core from making the parser allocate much
// more than the file's size, or at all unreasonably.
const (
	maxPhnum     = 1 << 22   // program headers
	maxNoteBytes = 128 << 20 // bytes of one PT_NOTE segment
	maxFiles     = 1 << 22   // NT_FILE entries
)

// Note types read from the core (owner "CORE" unless said otherwise).
const (
	ntPrstatus = 1
	ntAuxv     = 6
	ntFile     = 0x46494c45

	// Delve's dump command writes a note of its own first, then the
	// usual ones without an owner name (see delveOwner).
	ntDelveHeader = 0x444c5645 // "DLVE", owner "Delve Header"
	ntDelveThread = 0x444c5654 // "DLVT", no owner: Delve's own thread note
)

// Auxiliary vector entries used.
const (
	atPhdr  = 3
	atBase  = 7
	atEntry = 9
)

// prog is a program header of the core.
type prog struct {
	typ                  elf.ProgType
	flags                elf.ProgFlag
	off, vaddr           uint64
	filesz, memsz, align uint64
}

// fileEntry is one mapping of the NT_FILE note.
type fileEntry struct {
	start, end uint64 // run-time address range
	off        uint64 // offset in the file, in bytes
	name       string
}

// thread is one NT_PRSTATUS note (and the notes after it).
type thread struct {
	tid  uint64
	regs []uint64 // pr_reg, in the kernel's order; nil if the note has none
	tp   uint64   // thread pointer, 0 if the core does not give it
}

// coreData is what parsing a core file yields, before any other file is
// opened.
type coreData struct {
	class    elf.Class
	order    binary.ByteOrder
	machine  elf.Machine
	arch     *arch.Arch
	progs    []prog
	threads  []thread
	auxv     map[uint64]uint64
	files    []fileEntry
	pageSize uint64 // of NT_FILE
	hasFile  bool   // an NT_FILE note was found
	delve    bool   // written by Delve's dump (its header note was found)
	// delveEntry is the entry point Delve's header note gives, or 0.
	delveEntry uint64
	size       int64 // of the core file
	cuts       []cut // memory the core's PT_LOADs promise past the file's end
}

// cut is the part [start, end) of a PT_LOAD (program header prog) that
// lies past the end of a core file cut short.
type cut struct {
	prog       int
	start, end uint64
}

func (d *coreData) ptr() int {
	if d.class == elf.ELFCLASS32 {
		return 4
	}
	return 8
}

// FormatError reports a core file that is not a well-formed ELF core file:
// what was being read, where in the file, and what is wrong with it (or
// the error reading it), as debug/dwarf's DecodeError does for DWARF. For
// a compressed core the offset is in its decompressed content. Open's
// errors wrap it; errors.As finds it.
type FormatError struct {
	// Offset is the file offset of what was being read.
	Offset int64
	// What names it: "ELF header", "program header 3", "note 2 (\"CORE\"
	// type 0x1)", ...
	What string
	// Err says what is wrong, or is the error that reading gave.
	Err error
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("core: %s at offset %#x: %v", e.What, e.Offset, e.Err)
}

// Unwrap returns the cause.
func (e *FormatError) Unwrap() error { return e.Err }

// formatErr returns a *FormatError at off about what, with the message
// format (which may wrap a cause with %w).
func formatErr(off uint64, what, format string, args ...any) error {
	return &FormatError{Offset: int64(off), What: what, Err: fmt.Errorf(format, args...)}
}

// errNotELF is the cause of a FormatError for a file that is no ELF file.
var errNotELF = errors.New("not an ELF file")

// parseCore reads the ELF header, program headers and notes of the core
// file r of the given size. It reads nothing of the memory segments. A
// core of a machine the arch package has no file for is refused with the
// machine's name (an error wrapping target.ErrUnsupported).
func parseCore(r io.ReaderAt, size int64) (*coreData, error) {
	d, hdr, err := parseHeader(r, size)
	if err != nil {
		return nil, err
	}
	if err := d.parseProgs(r, hdr); err != nil {
		return nil, err
	}
	if err := d.readNotes(r); err != nil {
		return nil, err
	}
	if _, ok := d.auxv[atEntry]; !ok && d.delveEntry != 0 {
		if d.auxv == nil {
			d.auxv = make(map[uint64]uint64)
		}
		d.auxv[atEntry] = d.delveEntry
	}
	return d, nil
}

// elfHeader is what parseHeader reads of the ELF header for the program
// headers.
type elfHeader struct {
	phoff, phentsize, phnum uint64
}

// parseHeader reads and checks the ELF header.
func parseHeader(r io.ReaderAt, size int64) (*coreData, elfHeader, error) {
	var ident [64]byte
	n, err := r.ReadAt(ident[:], 0)
	if n < 4 || !bytes.Equal(ident[:4], []byte(elf.ELFMAG)) {
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, elfHeader{}, &FormatError{What: "ELF header", Err: err}
		}
		return nil, elfHeader{}, &FormatError{What: "ELF header", Err: errNotELF}
	}
	truncated := func() error {
		return formatErr(0, "ELF header", "truncated (file is %d bytes)", size)
	}
	if n < 16 {
		return nil, elfHeader{}, truncated()
	}
	d := &coreData{class: elf.Class(ident[elf.EI_CLASS]), size: size}
	data := elf.Data(ident[elf.EI_DATA])
	switch data {
	case elf.ELFDATA2LSB:
		d.order = binary.LittleEndian
	case elf.ELFDATA2MSB:
		d.order = binary.BigEndian
	default:
		return nil, elfHeader{}, formatErr(elf.EI_DATA, "ELF header", "unknown ELF data encoding %d", ident[elf.EI_DATA])
	}
	var ehsize int
	switch d.class {
	case elf.ELFCLASS64:
		ehsize = 64
	case elf.ELFCLASS32:
		ehsize = 52
	default:
		return nil, elfHeader{}, formatErr(elf.EI_CLASS, "ELF header", "unknown ELF class %d", ident[elf.EI_CLASS])
	}
	if n < ehsize {
		return nil, elfHeader{}, truncated()
	}
	o := d.order
	if typ := elf.Type(o.Uint16(ident[16:])); typ != elf.ET_CORE {
		return nil, elfHeader{}, formatErr(16, "ELF header", "not a core file (ELF type %v)", typ)
	}
	d.machine = elf.Machine(o.Uint16(ident[18:]))
	if d.arch, err = arch.ForMachine(d.machine, d.class, data); err != nil {
		return nil, elfHeader{}, fmt.Errorf("core: a core of %w: %w", err, target.ErrUnsupported)
	}
	var h elfHeader
	var shoff uint64
	if d.class == elf.ELFCLASS64 {
		h.phoff, shoff = o.Uint64(ident[32:]), o.Uint64(ident[40:])
		h.phentsize, h.phnum = uint64(o.Uint16(ident[54:])), uint64(o.Uint16(ident[56:]))
	} else {
		h.phoff, shoff = uint64(o.Uint32(ident[28:])), uint64(o.Uint32(ident[32:]))
		h.phentsize, h.phnum = uint64(o.Uint16(ident[42:])), uint64(o.Uint16(ident[44:]))
	}
	if h.phnum == 0xffff { // PN_XNUM: the count is in section header 0's sh_info
		var sh [48]byte
		infoOff := 44
		if d.class == elf.ELFCLASS32 {
			infoOff = 28
		}
		if shoff == 0 || shoff > uint64(size) || uint64(size)-shoff < uint64(infoOff+4) {
			return nil, elfHeader{}, formatErr(shoff, "section header 0", "e_phnum is PN_XNUM but section header 0 is missing or past end of file")
		}
		if _, err := r.ReadAt(sh[:infoOff+4], int64(shoff)); err != nil {
			return nil, elfHeader{}, formatErr(shoff, "section header 0", "%w", err)
		}
		h.phnum = uint64(o.Uint32(sh[infoOff:]))
	}
	return d, h, nil
}

// parseProgs reads the program header table.
func (d *coreData) parseProgs(r io.ReaderAt, h elfHeader) error {
	size := uint64(d.size)
	want := uint64(56)
	if d.class == elf.ELFCLASS32 {
		want = 32
	}
	const what = "program header table"
	switch {
	case h.phnum == 0:
		return formatErr(h.phoff, what, "no program headers")
	case h.phentsize < want:
		return formatErr(h.phoff, what, "program header size %d, want at least %d", h.phentsize, want)
	case h.phnum > maxPhnum:
		return formatErr(h.phoff, what, "%d program headers, more than the %d supported", h.phnum, maxPhnum)
	case h.phoff > size || h.phnum*h.phentsize > size-h.phoff:
		return formatErr(h.phoff, what, "%d entries extend past end of file (%d bytes)", h.phnum, size)
	}
	table := make([]byte, h.phnum*h.phentsize)
	if _, err := r.ReadAt(table, int64(h.phoff)); err != nil {
		return formatErr(h.phoff, what, "%w", err)
	}
	o := d.order
	d.progs = make([]prog, h.phnum)
	for i := range d.progs {
		at := uint64(i) * h.phentsize
		b := table[at:]
		p := &d.progs[i]
		if d.class == elf.ELFCLASS64 {
			p.typ, p.flags = elf.ProgType(o.Uint32(b[0:])), elf.ProgFlag(o.Uint32(b[4:]))
			p.off, p.vaddr = o.Uint64(b[8:]), o.Uint64(b[16:])
			p.filesz, p.memsz, p.align = o.Uint64(b[32:]), o.Uint64(b[40:]), o.Uint64(b[48:])
		} else {
			p.typ, p.off, p.vaddr = elf.ProgType(o.Uint32(b[0:])), uint64(o.Uint32(b[4:])), uint64(o.Uint32(b[8:]))
			p.filesz, p.memsz = uint64(o.Uint32(b[16:])), uint64(o.Uint32(b[20:]))
			p.flags, p.align = elf.ProgFlag(o.Uint32(b[24:])), uint64(o.Uint32(b[28:]))
		}
		if err := d.checkProg(i, h.phoff+at); err != nil {
			return err
		}
	}
	return nil
}

// checkProg checks program header i (at file offset off) against the
// file, and records the part of a memory segment that lies past the end
// of a core cut short.
func (d *coreData) checkProg(i int, off uint64) error {
	p := &d.progs[i]
	size := uint64(d.size)
	// Named only for an error: a core has a program header per mapping.
	what := func() string { return fmt.Sprintf("program header %d (%v)", i, p.typ) }
	if p.typ == elf.PT_LOAD {
		if p.filesz > p.memsz {
			return formatErr(off, what(), "p_filesz %#x > p_memsz %#x", p.filesz, p.memsz)
		}
		if p.vaddr+p.memsz < p.vaddr {
			return formatErr(off, what(), "address range %#x+%#x wraps around", p.vaddr, p.memsz)
		}
	}
	if p.filesz == 0 || p.off <= size && p.filesz <= size-p.off {
		return nil
	}
	if p.typ != elf.PT_LOAD {
		return formatErr(off, what(), "extends past end of file (offset %#x + size %#x > %d bytes)", p.off, p.filesz, size)
	}
	// A core cut short (a full disk, a size limit): keep what is there;
	// the rest of the segment reads as an error.
	have := uint64(0)
	if p.off < size {
		have = size - p.off
	}
	d.cuts = append(d.cuts, cut{prog: i, start: p.vaddr + have, end: p.vaddr + p.filesz})
	p.filesz = have
	return nil
}

// readNotes reads every PT_NOTE segment.
func (d *coreData) readNotes(r io.ReaderAt) error {
	notes := 0
	for i, p := range d.progs {
		if p.typ != elf.PT_NOTE || p.filesz == 0 {
			continue
		}
		what := fmt.Sprintf("PT_NOTE segment (program header %d)", i)
		if p.filesz > maxNoteBytes {
			return formatErr(p.off, what, "%d bytes, more than the %d supported", p.filesz, maxNoteBytes)
		}
		buf := make([]byte, p.filesz)
		if _, err := r.ReadAt(buf, int64(p.off)); err != nil {
			return formatErr(p.off, what, "%w", err)
		}
		if err := d.parseNotes(buf, p.off); err != nil {
			return err
		}
		notes++
	}
	if notes == 0 {
		return formatErr(0, "program header table", "no PT_NOTE segment")
	}
	if len(d.threads) == 0 {
		return formatErr(0, "notes", "no NT_PRSTATUS note (no threads)")
	}
	return nil
}

// parseNotes reads a PT_NOTE segment that starts at file offset base.
func (d *coreData) parseNotes(buf []byte, base uint64) error {
	o := d.order
	pos := uint64(0)
	for i := 0; pos < uint64(len(buf)); i++ {
		// Notes are named only for an error: a core has several per
		// thread.
		rest := uint64(len(buf)) - pos
		if rest < 12 {
			// Trailing padding is tolerated, other bytes are not.
			if bytes.Count(buf[pos:], []byte{0}) == int(rest) {
				return nil
			}
			return formatErr(base+pos, fmt.Sprintf("note %d", i), "truncated header")
		}
		namesz, descsz := uint64(o.Uint32(buf[pos:])), uint64(o.Uint32(buf[pos+4:]))
		typ := o.Uint32(buf[pos+8:])
		p := pos + 12
		nameEnd := p + align4(namesz)
		if namesz > rest || nameEnd > uint64(len(buf)) {
			return formatErr(base+pos, fmt.Sprintf("note %d", i), "name size %d runs past the end of the PT_NOTE segment", namesz)
		}
		name := noteOwner(bytes.TrimRight(buf[p:p+namesz], "\x00"))
		descEnd := nameEnd + descsz
		if descsz > rest || descEnd > uint64(len(buf)) {
			return formatErr(base+pos, fmt.Sprintf("note %d (%s)", i, d.noteName(name, typ)), "descriptor size %d runs past the end of the PT_NOTE segment", descsz)
		}
		desc := buf[nameEnd:descEnd]
		if err := d.note(name, typ, desc); err != nil {
			return &FormatError{Offset: int64(base + pos), What: fmt.Sprintf("note %d (%s)", i, d.noteName(name, typ)), Err: err}
		}
		pos = nameEnd + align4(descsz)
	}
	return nil
}

// noteOwner returns a note's owner name b as a string, without
// allocating for the owners of the notes a core has by the thousand.
func noteOwner(b []byte) string {
	switch string(b) {
	case "CORE":
		return "CORE"
	case "LINUX":
		return "LINUX"
	case "":
		return ""
	}
	return string(b)
}

// noteName names a note for messages: its type's name where this package
// reads it, else its owner and type.
func (d *coreData) noteName(name string, typ uint32) string {
	if name == "CORE" || d.delve && name == delveOwner {
		switch typ {
		case ntPrstatus:
			return "NT_PRSTATUS"
		case ntAuxv:
			return "NT_AUXV"
		case ntFile:
			return "NT_FILE"
		case ntDelveThread:
			return "Delve thread note"
		}
	}
	if name == "LINUX" && typ != 0 && typ == d.arch.TLSNote {
		return fmt.Sprintf("%s's thread pointer note", d.arch.Name)
	}
	return fmt.Sprintf("%q type %#x", name, typ)
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }

// delveOwner is the owner name of the notes in Delve's cores: Delve 1.27's
// dump command (pkg/proc/dump.go, pkg/elfwriter) writes NT_PRSTATUS,
// NT_PRPSINFO, NT_AUXV and NT_X86_XSTATE with an empty name where the
// kernel writes "CORE", after a "Delve Header" note; it writes no NT_FILE
// (every readable mapping is in the core's PT_LOADs instead), and a
// backend without native notes gets DLVT thread notes instead of
// NT_PRSTATUS.
const delveOwner = ""

// note interprets one note.
func (d *coreData) note(name string, typ uint32, desc []byte) error {
	if d.delve && name == delveOwner {
		switch typ {
		case ntPrstatus, ntAuxv:
			name = "CORE"
		case ntDelveThread:
			return d.delveThread(desc)
		}
	}
	switch {
	case name == "Delve Header" && typ == ntDelveHeader:
		d.delve = true
		d.delveHeader(desc)
	case name == "CORE" && typ == ntPrstatus:
		return d.prstatus(desc)
	case name == "CORE" && typ == ntAuxv:
		return d.auxvNote(desc)
	case name == "CORE" && typ == ntFile:
		return d.fileNote(desc)
	case name == "LINUX" && typ != 0 && typ == d.arch.TLSNote && len(d.threads) > 0:
		// The thread pointer register of the thread whose
		// NT_PRSTATUS came last (NT_ARM_TLS: tpidr_el0).
		if len(desc) < d.arch.PtrSize {
			return fmt.Errorf("%d bytes, want %d", len(desc), d.arch.PtrSize)
		}
		d.threads[len(d.threads)-1].tp = d.arch.Word(desc)
	}
	return nil
}

// prstatus reads an NT_PRSTATUS note (struct elf_prstatus of the Linux
// kernel): pr_pid, and pr_reg, the machine's register set, whose layout
// the arch package knows.
func (d *coreData) prstatus(desc []byte) error {
	pidOff, regOff := 32, 112
	if d.class == elf.ELFCLASS32 {
		pidOff, regOff = 24, 72
	}
	w := d.ptr()
	need := regOff + d.arch.PrRegs*w
	if len(desc) < need {
		return fmt.Errorf("%d bytes, want at least %d", len(desc), need)
	}
	t := thread{tid: uint64(d.order.Uint32(desc[pidOff:])), regs: make([]uint64, d.arch.PrRegs)}
	for i := range t.regs {
		t.regs[i] = d.word(desc[regOff+i*w:])
	}
	t.tp, _ = d.arch.PrStatus(t.regs, func(int, uint64) {})
	d.threads = append(d.threads, t)
	return nil
}

func (d *coreData) word(b []byte) uint64 {
	if d.class == elf.ELFCLASS32 {
		return uint64(d.order.Uint32(b))
	}
	return d.order.Uint64(b)
}

// delveHeader reads Delve's header note ("linux/amd64\nVersion: ...\n
// Target Pid: N\nEntry Point: 0x...\n"): its entry point stands in for
// AT_ENTRY when the core has no auxiliary vector.
func (d *coreData) delveHeader(desc []byte) {
	for _, line := range strings.Split(string(desc), "\n") {
		if v, ok := strings.CutPrefix(line, "Entry Point: "); ok {
			if e, err := strconv.ParseUint(strings.TrimPrefix(v, "0x"), 16, 64); err == nil && e != 0 {
				d.delveEntry = e
			}
		}
	}
}

// delveThread reads Delve's platform-independent thread note: thread id,
// pc, sp, bp and thread pointer (8 bytes each, little-endian), a flag and a
// goroutine address, then the registers by name. The registers that the
// machine's NT_PRSTATUS holds fill pr_reg, so that the thread unwinds as
// one from NT_PRSTATUS does.
func (d *coreData) delveThread(desc []byte) error {
	const fixed = 5*8 + 1 + 8 + 4
	if len(desc) < fixed {
		return fmt.Errorf("%d bytes, want at least %d", len(desc), fixed)
	}
	le := binary.LittleEndian
	t := thread{tid: le.Uint64(desc), tp: le.Uint64(desc[32:])}
	n := le.Uint32(desc[49:])
	order := d.arch.PrRegNames
	if order != nil {
		t.regs = make([]uint64, len(order))
	}
	p := desc[fixed:]
	for i := uint32(0); i < n; i++ {
		if len(p) < 2 {
			return fmt.Errorf("thread %d: register %d truncated", t.tid, i)
		}
		nl := int(le.Uint16(p))
		if len(p) < 2+nl+2 {
			return fmt.Errorf("thread %d: register %d truncated", t.tid, i)
		}
		name := strings.ToLower(string(p[2 : 2+nl]))
		dl := int(le.Uint16(p[2+nl:]))
		p = p[2+nl+2:]
		if len(p) < dl {
			return fmt.Errorf("thread %d: register %s truncated", t.tid, name)
		}
		if alias, ok := d.arch.PrRegAliases[name]; ok {
			name = alias
		}
		if dl == 8 {
			if j := slices.Index(order, name); j >= 0 {
				t.regs[j] = le.Uint64(p)
			}
		}
		p = p[dl:]
	}
	if j := slices.Index(order, d.arch.PrTPName); j >= 0 {
		t.regs[j] = t.tp
	}
	d.threads = append(d.threads, t)
	return nil
}

func (d *coreData) auxvNote(desc []byte) error {
	w := d.ptr()
	d.auxv = make(map[uint64]uint64)
	for i := 0; i+2*w <= len(desc); i += 2 * w {
		k, v := d.word(desc[i:]), d.word(desc[i+w:])
		if k == 0 {
			break
		}
		if _, dup := d.auxv[k]; !dup {
			d.auxv[k] = v
		}
	}
	return nil
}

// fileNote parses NT_FILE: count, page size, count × (start, end, file
// offset in pages), then count NUL-terminated names.
func (d *coreData) fileNote(desc []byte) error {
	w := uint64(d.ptr())
	if uint64(len(desc)) < 2*w {
		return fmt.Errorf("%d bytes, too short for its header", len(desc))
	}
	count, page := d.word(desc), d.word(desc[w:])
	if count > maxFiles || count > (uint64(len(desc))-2*w)/(3*w) {
		return fmt.Errorf("claims %d mappings, more than its %d bytes can hold", count, len(desc))
	}
	names := desc[2*w+count*3*w:]
	files := make([]fileEntry, 0, count)
	for i := uint64(0); i < count; i++ {
		b := desc[2*w+i*3*w:]
		e := fileEntry{start: d.word(b), end: d.word(b[w:])}
		pages := d.word(b[2*w:])
		if e.end < e.start {
			return fmt.Errorf("mapping %d ends (%#x) before it starts (%#x)", i, e.end, e.start)
		}
		if page != 0 && pages > ^uint64(0)/page {
			return fmt.Errorf("mapping %d: file offset %d pages of %d bytes overflows", i, pages, page)
		}
		e.off = pages * page
		j := bytes.IndexByte(names, 0)
		if j < 0 {
			if i+1 == count && len(names) > 0 { // last name unterminated
				j = len(names)
			} else {
				return fmt.Errorf("%d names for %d mappings", i, count)
			}
		}
		e.name = string(names[:j])
		if j < len(names) {
			names = names[j+1:]
		} else {
			names = nil
		}
		files = append(files, e)
	}
	d.files = append(d.files, files...)
	d.pageSize = page
	d.hasFile = true
	return nil
}
