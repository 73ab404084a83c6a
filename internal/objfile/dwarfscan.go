package objfile

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// The type index is built lazily by a scanner of .debug_info that decodes
// only what the index needs (each entry's tag and, for named types, its
// DW_AT_name and DW_AT_declaration) and skips every other attribute by its
// form, without allocating. It stops as soon as the type asked for has a
// complete definition, so finding one type in a large library costs a
// fraction of a full pass of debug/dwarf's Reader, which decodes every
// attribute of every entry (about 60 ms for LLVM's libomp). What the
// scanner cannot read (an unknown form, a malformed unit) makes the object
// fall back to indexing everything with debug/dwarf's Reader, as before.

// DWARF form codes (DWARF 5, section 7.5.6, and GNU extensions).
const (
	formAddr          = 0x01
	formBlock2        = 0x03
	formBlock4        = 0x04
	formData2         = 0x05
	formData4         = 0x06
	formData8         = 0x07
	formString        = 0x08
	formBlock         = 0x09
	formBlock1        = 0x0a
	formData1         = 0x0b
	formFlag          = 0x0c
	formSdata         = 0x0d
	formStrp          = 0x0e
	formUdata         = 0x0f
	formRefAddr       = 0x10
	formRef1          = 0x11
	formRef2          = 0x12
	formRef4          = 0x13
	formRef8          = 0x14
	formRefUdata      = 0x15
	formIndirect      = 0x16
	formSecOffset     = 0x17
	formExprloc       = 0x18
	formFlagPresent   = 0x19
	formStrx          = 0x1a
	formAddrx         = 0x1b
	formRefSup4       = 0x1c
	formStrpSup       = 0x1d
	formData16        = 0x1e
	formLineStrp      = 0x1f
	formRefSig8       = 0x20
	formImplicitConst = 0x21
	formLoclistx      = 0x22
	formRnglistx      = 0x23
	formRefSup8       = 0x24
	formStrx1         = 0x25
	formStrx2         = 0x26
	formStrx3         = 0x27
	formStrx4         = 0x28
	formAddrx1        = 0x29
	formAddrx2        = 0x2a
	formAddrx3        = 0x2b
	formAddrx4        = 0x2c
	formGnuRefAlt     = 0x1f20
	formGnuStrpAlt    = 0x1f21
)

// DWARF 5 unit types with extra header fields.
const (
	utType        = 0x02
	utSkeleton    = 0x04
	utSplitCompil = 0x05
	utSplitType   = 0x06
)

// errScan marks data the scanner does not handle; the object then indexes
// with debug/dwarf's Reader instead.
var errScan = errors.New("DWARF the type scanner cannot read")

// dwarfSections are the raw sections the scanner reads.
type dwarfSections struct {
	info, abbrev, str, lineStr, strOffsets []byte
}

// typeSections are the DWARF sections type lookups need (by name without
// ".debug_"): entries, abbreviations, strings, DWARF 4 type units, and the
// address and range list tables that debug/dwarf resolves while decoding
// an entry (a unit's DW_AT_low_pc, DW_AT_ranges). Line tables, location
// lists, frame tables and the like are left unread: they are half of a
// library's DWARF (objfile's line lookups load their own).
var typeSections = map[string]bool{"info": true, "abbrev": true, "str": true,
	"str_offsets": true, "line_str": true, "types": true, "addr": true, "rnglists": true}

// loadSections reads the DWARF sections of f that type lookups need,
// decompressed, keeping the raw bytes the scanner needs without reading
// them twice, and returns build, which makes the dwarf.Data over them as
// (*elf.File).DWARF does: over all of .debug_info for end < 0, or over its
// units before offset end (a unit boundary), which spares debug/dwarf's
// parse of every unit's header and abbreviations where a lookup needs the
// first units only. ok false means f needs what only (*elf.File).DWARF
// does (relocations of a relocatable object): the caller uses that and
// indexes with debug/dwarf's Reader.
func loadSections(f *elf.File) (build func(end int) (*dwarf.Data, error), secs dwarfSections, ok bool, err error) {
	if f.Type == elf.ET_REL {
		return nil, secs, false, nil
	}
	raw := make(map[string][]byte)
	var types [][]byte
	for _, s := range f.Sections {
		var sfx string
		switch {
		case strings.HasPrefix(s.Name, ".debug_"):
			sfx = s.Name[7:]
		case strings.HasPrefix(s.Name, ".zdebug_"):
			sfx = s.Name[8:]
		}
		if !typeSections[sfx] {
			continue
		}
		b, err := s.Data()
		if err != nil && uint64(len(b)) < s.Size {
			return nil, secs, true, fmt.Errorf("%s: %w", s.Name, err)
		}
		if sfx == "types" {
			types = append(types, b)
		} else {
			raw[sfx] = b
		}
	}
	secs = dwarfSections{info: raw["info"], abbrev: raw["abbrev"], str: raw["str"],
		lineStr: raw["line_str"], strOffsets: raw["str_offsets"]}
	if b, ok := raw["str_offsets"]; ok {
		raw["str_offsets"] = goStrOffsets(b, f.ByteOrder)
	}
	build = func(end int) (*dwarf.Data, error) {
		info := raw["info"]
		if end >= 0 && end < len(info) {
			info = info[:end]
		}
		d, err := dwarf.New(raw["abbrev"], nil, nil, info, nil, nil, nil, raw["str"])
		if err != nil {
			return nil, err
		}
		for _, sfx := range []string{"str_offsets", "line_str", "addr", "rnglists"} {
			if b, ok := raw[sfx]; ok {
				if err := d.AddSection(".debug_"+sfx, b); err != nil {
					return nil, err
				}
			}
		}
		for i, b := range types {
			if err := d.AddTypes(fmt.Sprintf("types-%d", i), b); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	return build, secs, true, nil
}

// abbrevAttr is one attribute specification of an abbreviation.
type abbrevAttr struct {
	attr dwarf.Attr
	form uint64
}

// scanAbbrev is one abbreviation, with what the scanner needs precomputed.
type scanAbbrev struct {
	tag      dwarf.Tag
	children bool
	attrs    []abbrevAttr
	// fixed is the size in bytes of the attributes when every form has
	// a size known from the unit header alone, else -1.
	fixed int
	// named: an entry of this abbreviation may go into the index.
	named bool
}

// abbrevTable maps abbreviation codes to abbreviations: dense for the
// usual consecutive codes from 1, a map for the rest.
type abbrevTable struct {
	dense  []scanAbbrev // code i+1 at index i
	sparse map[uint64]*scanAbbrev
}

func (t *abbrevTable) get(code uint64) *scanAbbrev {
	if code-1 < uint64(len(t.dense)) {
		return &t.dense[code-1]
	}
	return t.sparse[code]
}

// scanUnit is the header of the unit being scanned.
type scanUnit struct {
	vers     int
	is64     bool
	addrSize int
	strBase  uint64
	tab      *abbrevTable
	end      int // offset of the next unit in .debug_info
}

// dieScanner walks .debug_info entry by entry and hands named type
// entries to the index. Its zero position is the first unit; it is not
// safe for concurrent use (the object's dw.mu guards it).
type dieScanner struct {
	secs  dwarfSections
	order binary.ByteOrder
	tabs  map[abbrevKey]*abbrevTable

	off   int // next entry (or unit header) in .debug_info
	u     scanUnit
	inCU  bool // off is inside u
	depth int  // parents open at off
	skip  int  // >0: inside a subprogram (or block) entered at depth skip-1
}

// scanned is one named type entry found by the scanner.
type scanned struct {
	key  string // index key ("struct x", "x", ...)
	off  dwarf.Offset
	decl bool
	tag  dwarf.Tag
}

// indexPrefix is the index key prefix of a type tag, and whether entries
// of that tag are indexed at all.
func indexPrefix(tag dwarf.Tag) (string, bool) {
	switch tag {
	case dwarf.TagStructType:
		return "struct ", true
	case dwarf.TagUnionType:
		return "union ", true
	case dwarf.TagClassType:
		return "class ", true
	case dwarf.TagEnumerationType:
		return "enum ", true
	case dwarf.TagTypedef, dwarf.TagBaseType:
		return "", true
	}
	return "", false
}

// skipsChildren reports tags whose children the index leaves out (types
// local to functions).
func skipsChildren(tag dwarf.Tag) bool {
	return tag == dwarf.TagSubprogram || tag == dwarf.TagLexDwarfBlock || tag == dwarf.TagInlinedSubroutine
}

// next scans to the next named type entry. It returns ok false at the end
// of .debug_info, and errScan (wrapped) for data it cannot read.
func (s *dieScanner) next() (e scanned, ok bool, err error) {
	info := s.secs.info
	for {
		if !s.inCU || s.off >= s.u.end {
			if s.inCU {
				s.off = s.u.end
			}
			if s.off >= len(info) {
				return e, false, nil
			}
			if err := s.unitHeader(); err != nil {
				return e, false, err
			}
			continue
		}
		at := s.off
		code, n := uleb(info[s.off:s.u.end])
		if n == 0 {
			return e, false, s.errorf(at, "truncated abbreviation code")
		}
		s.off += n
		if code == 0 {
			if s.depth > 0 {
				s.depth--
			}
			if s.skip > 0 && s.depth < s.skip {
				s.skip = 0
			}
			continue
		}
		a := s.u.tab.get(code)
		if a == nil {
			return e, false, s.errorf(at, "unknown abbreviation code %d", code)
		}
		index := a.named && s.skip == 0
		if a.fixed >= 0 && !index {
			if a.fixed > s.u.end-s.off {
				return e, false, s.errorf(at, "entry runs past its unit")
			}
			s.off += a.fixed
		} else {
			name, decl, err := s.attrs(a, index)
			if err != nil {
				return e, false, err
			}
			if index && name != "" {
				pfx, _ := indexPrefix(a.tag)
				e = scanned{key: pfx + name, off: dwarf.Offset(at), decl: decl, tag: a.tag}
				ok = true
			}
		}
		if a.children {
			if s.skip == 0 && skipsChildren(a.tag) {
				s.skip = s.depth + 1
			}
			s.depth++
		}
		if ok {
			return e, true, nil
		}
	}
}

func (s *dieScanner) errorf(off int, format string, args ...any) error {
	return fmt.Errorf("%w: .debug_info at %#x: %s", errScan, off, fmt.Sprintf(format, args...))
}

// unitHeader reads the unit header at s.off, and the unit's
// DW_AT_str_offsets_base from its first entry.
func (s *dieScanner) unitHeader() error {
	info, at := s.secs.info, s.off
	r := reader{b: info, off: at, order: s.order}
	length := uint64(r.u32())
	is64 := false
	if length == 0xffffffff {
		length, is64 = r.u64(), true
	} else if length >= 0xfffffff0 {
		return s.errorf(at, "reserved unit length %#x", length)
	}
	if r.bad || length > uint64(len(info)-r.off) {
		return s.errorf(at, "unit length %#x runs past the section", length)
	}
	end := r.off + int(length)
	r.b = info[:end]
	vers := int(r.u16())
	if vers < 2 || vers > 5 {
		return s.errorf(at, "unit version %d", vers)
	}
	var abbrevOff uint64
	addrSize := 0
	if vers >= 5 {
		ut := r.u8()
		addrSize = int(r.u8())
		abbrevOff = r.offset(is64)
		switch ut {
		case utType, utSplitType:
			r.skip(8)
			r.offset(is64)
		case utSkeleton, utSplitCompil:
			r.skip(8)
		}
	} else {
		abbrevOff = r.offset(is64)
		addrSize = int(r.u8())
	}
	if r.bad {
		return s.errorf(at, "truncated unit header")
	}
	tab, err := s.abbrevs(abbrevOff, vers, is64, addrSize)
	if err != nil {
		return fmt.Errorf("%w: unit at %#x: %v", errScan, at, err)
	}
	s.u = scanUnit{vers: vers, is64: is64, addrSize: addrSize, tab: tab, end: end}
	s.off, s.inCU, s.depth, s.skip = r.off, true, 0, 0
	if vers >= 5 {
		// The base for DW_FORM_strx, from the unit entry (0 without it,
		// as debug/dwarf takes it).
		base, err := s.strOffsetsBase()
		if err != nil {
			return err
		}
		s.u.strBase = base
	}
	return nil
}

// strOffsetsBase reads DW_AT_str_offsets_base from the entry at s.off
// without moving past it.
func (s *dieScanner) strOffsetsBase() (uint64, error) {
	info := s.secs.info[:s.u.end]
	code, n := uleb(info[s.off:])
	if n == 0 || code == 0 {
		return 0, nil
	}
	a := s.u.tab.get(code)
	if a == nil {
		return 0, s.errorf(s.off, "unknown abbreviation code %d", code)
	}
	r := reader{b: info, off: s.off + n, order: s.order}
	for _, at := range a.attrs {
		if at.attr == dwarf.AttrStrOffsetsBase && at.form == formSecOffset {
			v := r.offset(s.u.is64)
			if r.bad {
				return 0, s.errorf(s.off, "truncated unit entry")
			}
			return v, nil
		}
		if err := s.skipForm(&r, at.form); err != nil {
			return 0, err
		}
	}
	return 0, nil
}

// attrs reads an entry's attributes at s.off (after its code), decoding
// DW_AT_name and DW_AT_declaration when want, and leaves s.off after them.
func (s *dieScanner) attrs(a *scanAbbrev, want bool) (name string, decl bool, err error) {
	r := reader{b: s.secs.info[:s.u.end], off: s.off, order: s.order}
	haveName, haveDecl := false, false
	for _, at := range a.attrs {
		form := at.form
		if form == formIndirect {
			f, n := uleb(r.b[r.off:])
			if n == 0 {
				return "", false, s.errorf(r.off, "truncated DW_FORM_indirect")
			}
			r.off += n
			form = f
			if form == formImplicitConst || form == formIndirect {
				return "", false, s.errorf(r.off, "DW_FORM_indirect to form %#x", form)
			}
		}
		switch {
		case want && at.attr == dwarf.AttrName && !haveName:
			haveName = true
			if name, err = s.str(&r, form); err != nil {
				return "", false, err
			}
			continue
		case want && at.attr == dwarf.AttrDeclaration && !haveDecl:
			haveDecl = true
			switch form {
			case formFlagPresent:
				decl = true
				continue
			case formFlag:
				decl = r.u8() != 0
				continue
			}
		}
		if err := s.skipForm(&r, form); err != nil {
			return "", false, err
		}
	}
	if r.bad {
		return "", false, s.errorf(s.off, "entry runs past its unit")
	}
	s.off = r.off
	return name, decl, nil
}

// str reads a string attribute of the given form; forms whose value is
// not a string of this file (or not a string) give "" as debug/dwarf's
// Entry.Val(...).(string) does.
func (s *dieScanner) str(r *reader, form uint64) (string, error) {
	var off uint64
	var tab []byte
	switch form {
	case formString:
		i := r.off
		for i < len(r.b) && r.b[i] != 0 {
			i++
		}
		if i >= len(r.b) {
			return "", s.errorf(r.off, "unterminated string")
		}
		v := string(r.b[r.off:i])
		r.off = i + 1
		return v, nil
	case formStrp:
		off, tab = r.offset(s.u.is64), s.secs.str
	case formLineStrp:
		off, tab = r.offset(s.u.is64), s.secs.lineStr
	case formStrx, formStrx1, formStrx2, formStrx3, formStrx4:
		var idx uint64
		switch form {
		case formStrx:
			v, n := uleb(r.b[r.off:])
			if n == 0 {
				return "", s.errorf(r.off, "truncated DW_FORM_strx")
			}
			idx, r.off = v, r.off+n
		case formStrx1:
			idx = uint64(r.u8())
		case formStrx2:
			idx = uint64(r.u16())
		case formStrx3:
			idx = r.u24()
		case formStrx4:
			idx = uint64(r.u32())
		}
		size := uint64(4)
		if s.u.is64 {
			size = 8
		}
		pos := s.u.strBase + idx*size
		if idx > 1<<40 || pos+size > uint64(len(s.secs.strOffsets)) || pos+size < pos {
			return "", s.errorf(r.off, "DW_FORM_strx index %d outside .debug_str_offsets", idx)
		}
		so := reader{b: s.secs.strOffsets, off: int(pos), order: s.order}
		off, tab = so.offset(s.u.is64), s.secs.str
	default:
		return "", s.skipForm(r, form)
	}
	if r.bad {
		return "", s.errorf(r.off, "truncated string attribute")
	}
	if off >= uint64(len(tab)) {
		return "", s.errorf(r.off, "string offset %#x outside its section", off)
	}
	b := tab[off:]
	for i, c := range b {
		if c == 0 {
			return string(b[:i]), nil
		}
	}
	return "", s.errorf(r.off, "unterminated string at %#x", off)
}

// formSize is the size of a form's value known from the unit header alone,
// or -1 (variable size, or a form the scanner does not know).
func formSize(form uint64, vers int, is64 bool, addrSize int) int {
	off := 4
	if is64 {
		off = 8
	}
	switch form {
	case formFlagPresent, formImplicitConst:
		return 0
	case formData1, formRef1, formFlag, formStrx1, formAddrx1:
		return 1
	case formData2, formRef2, formStrx2, formAddrx2:
		return 2
	case formStrx3, formAddrx3:
		return 3
	case formData4, formRef4, formRefSup4, formStrx4, formAddrx4:
		return 4
	case formData8, formRef8, formRefSig8, formRefSup8:
		return 8
	case formData16:
		return 16
	case formAddr:
		return addrSize
	case formRefAddr:
		if vers <= 2 {
			return addrSize
		}
		return off
	case formStrp, formLineStrp, formSecOffset, formStrpSup, formGnuRefAlt, formGnuStrpAlt:
		return off
	}
	return -1
}

// skipForm moves r past one value of form.
func (s *dieScanner) skipForm(r *reader, form uint64) error {
	if n := formSize(form, s.u.vers, s.u.is64, s.u.addrSize); n >= 0 {
		r.skip(n)
		return nil
	}
	var n uint64
	switch form {
	case formUdata, formSdata, formRefUdata, formStrx, formAddrx, formLoclistx, formRnglistx:
		_, k := uleb(r.b[min(r.off, len(r.b)):])
		if k == 0 {
			r.bad = true
		}
		r.off += k
		return nil
	case formString:
		for r.off < len(r.b) && r.b[r.off] != 0 {
			r.off++
		}
		r.skip(1)
		return nil
	case formBlock1:
		n = uint64(r.u8())
	case formBlock2:
		n = uint64(r.u16())
	case formBlock4:
		n = uint64(r.u32())
	case formBlock, formExprloc:
		v, k := uleb(r.b[min(r.off, len(r.b)):])
		if k == 0 {
			r.bad = true
		}
		n, r.off = v, r.off+k
	default:
		return s.errorf(r.off, "form %#x", form)
	}
	if n > uint64(len(r.b)) {
		r.bad = true
		return nil
	}
	r.skip(int(n))
	return nil
}

// abbrevKey names a parsed abbreviation table: its offset in
// .debug_abbrev and the unit format its fixed sizes were computed for.
type abbrevKey struct {
	off            uint64
	vers, addrSize int
	is64           bool
}

// abbrevs returns the abbreviation table at off in .debug_abbrev, parsed
// once per table and unit format.
func (s *dieScanner) abbrevs(off uint64, vers int, is64 bool, addrSize int) (*abbrevTable, error) {
	key := abbrevKey{off, vers, addrSize, is64}
	if t, ok := s.tabs[key]; ok {
		return t, nil
	}
	if off >= uint64(len(s.secs.abbrev)) {
		return nil, fmt.Errorf("abbreviation table offset %#x outside .debug_abbrev", off)
	}
	b := s.secs.abbrev[off:]
	t := &abbrevTable{}
	for {
		code, n := uleb(b)
		if n == 0 {
			return nil, errors.New("truncated abbreviation table")
		}
		b = b[n:]
		if code == 0 {
			break
		}
		tag, n := uleb(b)
		if n == 0 || len(b) < n+1 {
			return nil, errors.New("truncated abbreviation")
		}
		a := scanAbbrev{tag: dwarf.Tag(tag), children: b[n] != 0}
		b = b[n+1:]
		_, a.named = indexPrefix(a.tag)
		for {
			attr, n1 := uleb(b)
			if n1 == 0 {
				return nil, errors.New("truncated abbreviation")
			}
			form, n2 := uleb(b[n1:])
			if n2 == 0 {
				return nil, errors.New("truncated abbreviation")
			}
			b = b[n1+n2:]
			if attr == 0 && form == 0 {
				break
			}
			if form == formImplicitConst {
				_, n := uleb(b) // the value (signed; only skipped)
				if n == 0 {
					return nil, errors.New("truncated abbreviation")
				}
				b = b[n:]
			}
			a.attrs = append(a.attrs, abbrevAttr{attr: dwarf.Attr(attr), form: form})
		}
		a.fixed = 0
		for _, at := range a.attrs {
			n := formSize(at.form, vers, is64, addrSize)
			if n < 0 {
				a.fixed = -1
				break
			}
			a.fixed += n
		}
		if code == uint64(len(t.dense))+1 && t.sparse == nil {
			t.dense = append(t.dense, a)
			continue
		}
		if t.sparse == nil {
			t.sparse = make(map[uint64]*scanAbbrev)
		}
		if _, dup := t.sparse[code]; dup || code <= uint64(len(t.dense)) {
			return nil, fmt.Errorf("abbreviation code %d defined twice", code)
		}
		t.sparse[code] = &a
	}
	if s.tabs == nil {
		s.tabs = make(map[abbrevKey]*abbrevTable)
	}
	s.tabs[key] = t
	return t, nil
}

// uleb decodes an unsigned LEB128 number; n is 0 if b ends first or the
// number takes more than 10 bytes. Bits beyond 64 are dropped.
func uleb(b []byte) (v uint64, n int) {
	var shift uint
	for i, c := range b {
		if i >= 10 {
			return 0, 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			return v, i + 1
		}
	}
	return 0, 0
}

// reader reads fixed-size values; bad is set (and zeros returned) when a
// read would pass the end of b.
type reader struct {
	b     []byte
	off   int
	order binary.ByteOrder
	bad   bool
}

func (r *reader) take(n int) []byte {
	if r.bad || n < 0 || n > len(r.b)-r.off {
		r.bad = true
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

func (r *reader) skip(n int) { r.take(n) }

func (r *reader) u8() uint8 {
	if p := r.take(1); p != nil {
		return p[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if p := r.take(2); p != nil {
		return r.order.Uint16(p)
	}
	return 0
}

func (r *reader) u24() uint64 {
	p := r.take(3)
	if p == nil {
		return 0
	}
	if r.order == binary.ByteOrder(binary.BigEndian) {
		return uint64(p[0])<<16 | uint64(p[1])<<8 | uint64(p[2])
	}
	return uint64(p[2])<<16 | uint64(p[1])<<8 | uint64(p[0])
}

func (r *reader) u32() uint32 {
	if p := r.take(4); p != nil {
		return r.order.Uint32(p)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if p := r.take(8); p != nil {
		return r.order.Uint64(p)
	}
	return 0
}

// offset reads a section offset of the unit's format.
func (r *reader) offset(is64 bool) uint64 {
	if is64 {
		return r.u64()
	}
	return uint64(r.u32())
}
