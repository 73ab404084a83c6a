// Package cfi reads DWARF call-frame information, the .eh_frame and
// .debug_frame sections that say how to find a function's caller: its
// entries (CIEs and FDEs), the rows of its call-frame table (where the
// canonical frame address and each saved register are at a code address),
// and the DWARF expressions those rows may hold.
//
// It reads both byte orders (s390x is big-endian) and keeps DWARF's
// meaning of DW_CFA_restore when the CIE gave the register no rule (the
// register is then unspecified, that is unchanged by convention, not
// undefined), which the readers it replaces got wrong. Only what unwinding
// needs is read: personality routines and language-specific data are
// skipped.
//
// Every input may be malformed: errors say what and where, never a panic,
// and every loop is bounded by the data.
package cfi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
)

// ErrMalformed is wrapped by the errors of malformed call-frame
// information.
var ErrMalformed = errors.New("malformed call-frame information")

// Section describes the section an entry list is parsed from.
type Section struct {
	// Order and PtrSize are the object's byte order and address size.
	Order   binary.ByteOrder
	PtrSize int
	// EH is true for .eh_frame (CIE id 0, addresses encoded as the CIE's
	// augmentation says), false for .debug_frame.
	EH bool
	// Addr is the section's link-time address (for pc-relative
	// encodings of .eh_frame).
	Addr uint64
	// Bias is added to every code address: the object's load bias.
	Bias uint64
}

// CIE is a common information entry.
type CIE struct {
	Version      uint8
	Augmentation string
	CodeAlign    uint64
	DataAlign    int64
	// RetAddr is the return address column.
	RetAddr uint64
	// Signal is the 'S' augmentation: the FDEs are of signal
	// trampolines, whose caller is the interrupted frame.
	Signal bool
	// Initial are the initial instructions.
	Initial []byte

	fdeEnc  byte // DW_EH_PE_* of FDE addresses
	lsda    bool // FDE augmentation data holds an LSDA pointer
	sec     *Section
	augData bool // 'z': FDEs have augmentation data
}

// FDE is a frame description entry: the call-frame program of the code
// from Begin to End (run-time addresses).
type FDE struct {
	CIE          *CIE
	Begin, End   uint64
	Instructions []byte
}

// Cover reports whether the FDE covers pc.
func (f *FDE) Cover(pc uint64) bool { return pc >= f.Begin && pc < f.End }

// Table is a section's FDEs sorted by address.
type Table []*FDE

// Lookup returns the FDE covering pc, or nil.
func (t Table) Lookup(pc uint64) *FDE {
	i := sort.Search(len(t), func(i int) bool { return t[i].End > pc })
	for ; i < len(t) && t[i].Begin <= pc; i++ {
		if t[i].Cover(pc) {
			return t[i]
		}
	}
	return nil
}

// Pointer encodings (DW_EH_PE_*).
const (
	peAbsptr  = 0x00
	peULEB128 = 0x01
	peUdata2  = 0x02
	peUdata4  = 0x03
	peUdata8  = 0x04
	peSLEB128 = 0x09
	peSdata2  = 0x0a
	peSdata4  = 0x0b
	peSdata8  = 0x0c
	pePCRel   = 0x10
	peDataRel = 0x30
	peIndir   = 0x80
	peOmit    = 0xff
)

// maxEntries bounds the entries of one section.
const maxEntries = 1 << 22

// Parse reads the entries of a call-frame section. A malformed entry makes
// the whole section an error wrapping ErrMalformed that gives the entry's
// offset: such a section is not trusted in part.
func Parse(data []byte, sec Section) (Table, error) {
	if sec.PtrSize != 4 && sec.PtrSize != 8 {
		return nil, fmt.Errorf("cfi: address size %d: %w", sec.PtrSize, ErrMalformed)
	}
	cies := make(map[uint64]*CIE)
	var fdes Table
	for off := uint64(0); off < uint64(len(data)); {
		if len(fdes) >= maxEntries {
			return nil, fmt.Errorf("cfi: more than %d entries: %w", maxEntries, ErrMalformed)
		}
		b := buf{data: data, off: off, order: sec.Order}
		length := uint64(b.u32())
		dwarf64 := false
		if length == 0xffffffff {
			length, dwarf64 = b.u64(), true
		}
		if b.err != nil {
			return nil, entryErr(off, b.err)
		}
		if length == 0 {
			if sec.EH {
				break // the .eh_frame terminator
			}
			off = b.off
			continue
		}
		start := b.off
		if length > uint64(len(data))-start {
			return nil, entryErr(off, fmt.Errorf("length %d runs past the section", length))
		}
		end := start + length
		b.data = data[:end]
		var id uint64
		if dwarf64 {
			id = b.u64()
		} else {
			id = uint64(b.u32())
		}
		isCIE := id == 0 && sec.EH || !sec.EH && (dwarf64 && id == ^uint64(0) || !dwarf64 && id == 0xffffffff)
		if isCIE {
			cie, err := parseCIE(&b, &sec)
			if err != nil {
				return nil, entryErr(off, err)
			}
			cies[off] = cie
		} else {
			// The CIE pointer: in .eh_frame relative to the field
			// itself, in .debug_frame an offset in the section.
			cieOff := id
			if sec.EH {
				cieOff = start - id
				if id > start {
					return nil, entryErr(off, errors.New("CIE pointer before the section"))
				}
			}
			cie := cies[cieOff]
			if cie == nil {
				c, err := parseCIEAt(data, cieOff, &sec)
				if err != nil {
					return nil, entryErr(off, fmt.Errorf("its CIE at %#x: %w", cieOff, err))
				}
				cies[cieOff], cie = c, c
			}
			fde, err := parseFDE(&b, cie)
			if err != nil {
				return nil, entryErr(off, err)
			}
			if fde != nil {
				fdes = append(fdes, fde)
			}
		}
		off = end
	}
	sort.SliceStable(fdes, func(i, j int) bool { return fdes[i].Begin < fdes[j].Begin })
	return fdes, nil
}

func entryErr(off uint64, err error) error {
	return fmt.Errorf("cfi: entry at %#x: %w: %w", off, ErrMalformed, err)
}

// parseCIEAt parses the CIE at offset off (an FDE before its CIE).
func parseCIEAt(data []byte, off uint64, sec *Section) (*CIE, error) {
	b := buf{data: data, off: off, order: sec.Order}
	length := uint64(b.u32())
	dwarf64 := length == 0xffffffff
	if dwarf64 {
		length = b.u64()
	}
	if b.err != nil || length > uint64(len(data))-b.off {
		return nil, errors.New("truncated")
	}
	b.data = data[:b.off+length]
	var id uint64
	if dwarf64 {
		id = b.u64()
	} else {
		id = uint64(b.u32())
	}
	if sec.EH && id != 0 || !sec.EH && id != 0xffffffff && id != ^uint64(0) {
		return nil, errors.New("not a CIE")
	}
	return parseCIE(&b, sec)
}

func parseCIE(b *buf, sec *Section) (*CIE, error) {
	c := &CIE{sec: sec, Version: b.u8()}
	if c.Version != 1 && c.Version != 3 && c.Version != 4 {
		return nil, fmt.Errorf("CIE version %d", c.Version)
	}
	c.Augmentation = b.cstring()
	if c.Version == 4 {
		if as := b.u8(); int(as) != sec.PtrSize {
			return nil, fmt.Errorf("CIE address size %d", as)
		}
		b.u8() // segment selector size
	}
	c.CodeAlign = b.uleb()
	c.DataAlign = b.sleb()
	if c.Version == 1 {
		c.RetAddr = uint64(b.u8())
	} else {
		c.RetAddr = b.uleb()
	}
	c.fdeEnc = peAbsptr
	aug := c.Augmentation
	if aug == "eh" {
		return nil, errors.New(`augmentation "eh" is not supported`)
	}
	if len(aug) > 0 && aug[0] == 'z' {
		c.augData = true
		n := b.uleb()
		if b.err != nil || n > b.left() {
			return nil, errors.New("augmentation data runs past the entry")
		}
		ab := buf{data: b.data[:b.off+n], off: b.off, order: b.order}
		b.off += n
		for _, ch := range aug[1:] {
			switch ch {
			case 'R':
				c.fdeEnc = ab.u8()
			case 'L':
				ab.u8()
				c.lsda = true
			case 'P':
				enc := ab.u8()
				if _, err := ab.pointer(enc, sec, true); err != nil {
					return nil, fmt.Errorf("personality: %w", err)
				}
			case 'S':
				c.Signal = true
			case 'B', 'G':
				// AArch64 BTI / MTE markers: no data.
			default:
				// An augmentation this reader does not know: the
				// data length lets the rest be read still.
			}
		}
		if ab.err != nil {
			return nil, fmt.Errorf("augmentation data: %w", ab.err)
		}
	} else if aug != "" {
		return nil, fmt.Errorf("augmentation %q is not supported", aug)
	}
	if b.err != nil {
		return nil, b.err
	}
	if c.CodeAlign == 0 {
		return nil, errors.New("code alignment factor 0")
	}
	c.Initial = b.data[b.off:]
	return c, nil
}

func parseFDE(b *buf, c *CIE) (*FDE, error) {
	enc := c.fdeEnc
	if !c.sec.EH {
		enc = peAbsptr
	}
	begin, err := b.pointer(enc, c.sec, false)
	if err != nil {
		return nil, fmt.Errorf("initial location: %w", err)
	}
	// The range has the encoding's size and format, without its
	// application (it is not pc-relative).
	n, err := b.pointer(enc&0x0f, c.sec, false)
	if err != nil {
		return nil, fmt.Errorf("address range: %w", err)
	}
	if c.augData {
		l := b.uleb()
		if b.err != nil || l > b.left() {
			return nil, errors.New("augmentation data runs past the entry")
		}
		b.off += l
	}
	if b.err != nil {
		return nil, b.err
	}
	if begin == 0 && c.sec.EH {
		return nil, nil // a discarded function (linker-zeroed)
	}
	begin += c.sec.Bias
	if begin+n < begin {
		return nil, fmt.Errorf("address range %#x+%#x wraps around", begin, n)
	}
	return &FDE{CIE: c, Begin: begin, End: begin + n, Instructions: b.data[b.off:]}, nil
}

// buf is a sticky-error reader of one entry.
type buf struct {
	data  []byte
	off   uint64
	order binary.ByteOrder
	err   error
}

var errShort = errors.New("truncated")

func (b *buf) left() uint64 {
	if b.off > uint64(len(b.data)) {
		return 0
	}
	return uint64(len(b.data)) - b.off
}

func (b *buf) bytes(n uint64) []byte {
	if b.err != nil {
		return nil
	}
	if n > b.left() {
		b.err = errShort
		return nil
	}
	out := b.data[b.off : b.off+n]
	b.off += n
	return out
}

func (b *buf) u8() uint8 {
	if p := b.bytes(1); p != nil {
		return p[0]
	}
	return 0
}

func (b *buf) u16() uint16 {
	if p := b.bytes(2); p != nil {
		return b.order.Uint16(p)
	}
	return 0
}

func (b *buf) u32() uint32 {
	if p := b.bytes(4); p != nil {
		return b.order.Uint32(p)
	}
	return 0
}

func (b *buf) u64() uint64 {
	if p := b.bytes(8); p != nil {
		return b.order.Uint64(p)
	}
	return 0
}

func (b *buf) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := b.u8()
		if b.err != nil {
			return 0
		}
		if shift < 64 {
			v |= uint64(c&0x7f) << shift
		}
		if c&0x80 == 0 {
			return v
		}
	}
}

func (b *buf) sleb() int64 {
	var v int64
	shift := uint(0)
	for {
		c := b.u8()
		if b.err != nil {
			return 0
		}
		if shift < 64 {
			v |= int64(c&0x7f) << shift
		}
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			return v
		}
	}
}

func (b *buf) cstring() string {
	for i := b.off; i < uint64(len(b.data)); i++ {
		if b.data[i] == 0 {
			s := string(b.data[b.off:i])
			b.off = i + 1
			return s
		}
	}
	b.err = errShort
	return ""
}

// pointer reads an address of encoding enc (pc-relative to the field's
// link-time address, for .eh_frame). DW_EH_PE_indirect and datarel, which
// need memory or a base this reader has not, are errors unless skip says
// the value is only skipped (a personality routine's).
func (b *buf) pointer(enc byte, sec *Section, skip bool) (uint64, error) {
	if enc == peOmit {
		return 0, nil
	}
	at := sec.Addr + b.off
	var v uint64
	switch enc & 0x0f {
	case peAbsptr:
		if sec.PtrSize == 4 {
			v = uint64(b.u32())
		} else {
			v = b.u64()
		}
	case peULEB128:
		v = b.uleb()
	case peUdata2:
		v = uint64(b.u16())
	case peUdata4:
		v = uint64(b.u32())
	case peUdata8:
		v = b.u64()
	case peSLEB128:
		v = uint64(b.sleb())
	case peSdata2:
		v = uint64(int64(int16(b.u16())))
	case peSdata4:
		v = uint64(int64(int32(b.u32())))
	case peSdata8:
		v = b.u64()
	default:
		return 0, fmt.Errorf("pointer encoding %#x", enc)
	}
	if b.err != nil {
		return 0, b.err
	}
	if skip {
		return 0, nil
	}
	switch enc & 0x70 {
	case 0:
	case pePCRel:
		v += at
	default:
		return 0, fmt.Errorf("pointer encoding %#x", enc)
	}
	if enc&peIndir != 0 {
		return 0, fmt.Errorf("indirect pointer encoding %#x", enc)
	}
	if sec.PtrSize == 4 {
		v = uint64(uint32(v))
	}
	return v, nil
}
