package objfile

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// checkLineHeader checks the counts of a DWARF 5 line program header at
// offset off of the .debug_line section sec before debug/dwarf reads it:
// debug/dwarf makes a slice of the directory and file counts the header
// states and loops over them, reading nothing once the data runs out, so a
// corrupt count costs memory and time in proportion to its value (a
// mutated executable's count hung a walk for minutes). Each count must fit
// in the header's remaining bytes, every entry taking at least one. Other
// versions (file names ended by an empty one) and the program itself are
// bounded by the data and left to debug/dwarf.
func checkLineHeader(sec []byte, off int64, order binary.ByteOrder) error {
	_, err := lineHeaderFiles(sec, off, order, lineStrings{})
	return err
}

// lineStrings are the string sections a line program header's file names
// may point into (nil: not available).
type lineStrings struct {
	lineStr, str []byte // .debug_line_str, .debug_str
}

// lineHeaderFiles checks a line program header as checkLineHeader does
// and, for DWARF 5, returns each file entry's path as the header spells
// it (DW_LNCT_path, not joined with its directory; "" where its form is
// one it does not read, or for an earlier version): debug/dwarf joins a
// DWARF 5 file's directory with its path even when the path is absolute
// (a source compiled by its absolute path), which the spelling undoes.
func lineHeaderFiles(sec []byte, off int64, order binary.ByteOrder, strs lineStrings) ([]string, error) {
	if off < 0 || off >= int64(len(sec)) {
		return nil, fmt.Errorf("line table offset %#x outside .debug_line (%d bytes)", off, len(sec))
	}
	b := sec[off:]
	r := &lineHdr{b: b, order: order}
	ulen := uint64(r.u32())
	dwarf64 := ulen == 0xffffffff
	if dwarf64 {
		ulen = r.u64()
	}
	if r.err != nil || ulen > uint64(len(b)-r.p) {
		return nil, errors.New("line table length runs past .debug_line")
	}
	r.b = b[:r.p+int(ulen)]
	if version := r.u16(); version < 5 || r.err != nil {
		return nil, r.err
	}
	r.skip(2) // address_size, segment_selector_size
	var hlen uint64
	if dwarf64 {
		hlen = r.u64()
	} else {
		hlen = uint64(r.u32())
	}
	if r.err != nil || hlen > uint64(len(r.b)-r.p) {
		return nil, errors.New("line table header length runs past its unit")
	}
	r.b = r.b[:r.p+int(hlen)]
	r.skip(5) // minimum_instruction_length ... line_range
	opcodeBase := int(r.u8())
	r.skip(opcodeBase - 1)
	var files []string
	for _, what := range []string{"directories", "file names"} {
		types, forms := r.format()
		count := r.uleb()
		if r.err != nil {
			return nil, r.err
		}
		min := 0
		for _, f := range forms {
			min += formMinSize(f, dwarf64)
		}
		if count > 0 && (min == 0 || count > uint64(len(r.b)-r.p)/uint64(min)) {
			return nil, fmt.Errorf("line table header claims %d %s, more than its %d remaining bytes can hold", count, what, len(r.b)-r.p)
		}
		for range count {
			path := ""
			for i, f := range forms {
				if types[i] == lnctPath {
					path = r.str(f, dwarf64, strs)
				} else {
					r.form(f, dwarf64)
				}
			}
			if what == "file names" {
				files = append(files, path)
			}
		}
		if r.err != nil {
			return nil, fmt.Errorf("line table %s: %w", what, r.err)
		}
	}
	return files, nil
}

// lineHdr reads a line program header.
type lineHdr struct {
	b     []byte
	p     int
	order binary.ByteOrder
	err   error
}

var errLineShort = errors.New("line table header truncated")

func (r *lineHdr) skip(n int) {
	if r.err == nil && (n < 0 || n > len(r.b)-r.p) {
		r.err = errLineShort
	}
	if r.err == nil {
		r.p += n
	}
}

func (r *lineHdr) bytes(n int) []byte {
	r.skip(n)
	if r.err != nil {
		return make([]byte, n)
	}
	return r.b[r.p-n : r.p]
}

func (r *lineHdr) u8() uint8   { return r.bytes(1)[0] }
func (r *lineHdr) u16() uint16 { return r.order.Uint16(r.bytes(2)) }
func (r *lineHdr) u32() uint32 { return r.order.Uint32(r.bytes(4)) }
func (r *lineHdr) u64() uint64 { return r.order.Uint64(r.bytes(8)) }

func (r *lineHdr) uleb() uint64 {
	var v uint64
	for shift := uint(0); ; shift += 7 {
		c := r.u8()
		if r.err != nil {
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

// lnctPath is DW_LNCT_path, the content type of an entry's path.
const lnctPath = 0x1

// format reads an entry format: its content types and their forms.
func (r *lineHdr) format() (types, forms []uint64) {
	n := int(r.u8())
	types, forms = make([]uint64, 0, n), make([]uint64, 0, n)
	for range n {
		types = append(types, r.uleb())
		forms = append(forms, r.uleb())
	}
	return types, forms
}

// str reads a string of form f: inline, or an offset into
// .debug_line_str or .debug_str; "" for other forms or an offset out of
// its section.
func (r *lineHdr) str(f uint64, dwarf64 bool, strs lineStrings) string {
	var sec []byte
	switch f {
	case formString:
		start := r.p
		r.form(f, dwarf64)
		if r.err != nil || r.p == start {
			return ""
		}
		return string(r.b[start : r.p-1])
	case formLineStrp:
		sec = strs.lineStr
	case formStrp:
		sec = strs.str
	default:
		r.form(f, dwarf64)
		return ""
	}
	var off uint64
	if dwarf64 {
		off = r.u64()
	} else {
		off = uint64(r.u32())
	}
	if r.err != nil || off >= uint64(len(sec)) {
		return ""
	}
	end := off
	for end < uint64(len(sec)) && sec[end] != 0 {
		end++
	}
	return string(sec[off:end])
}

// formMinSize is the fewest bytes a value of form takes, 0 for a form
// that debug/dwarf reads nothing of.
func formMinSize(f uint64, dwarf64 bool) int {
	switch f {
	case formString, formUdata, formStrx, formBlock, formData1, formStrx1:
		return 1
	case formData2, formStrx2:
		return 2
	case formStrx3:
		return 3
	case formData4, formStrx4:
		return 4
	case formStrp, formLineStrp, formStrpSup:
		if dwarf64 {
			return 8
		}
		return 4
	case formData8:
		return 8
	case formData16:
		return 16
	}
	return 0
}

// form skips a value of form f.
func (r *lineHdr) form(f uint64, dwarf64 bool) {
	switch f {
	case formString:
		for r.err == nil && r.u8() != 0 {
		}
	case formUdata, formStrx:
		r.uleb()
	case formBlock:
		n := r.uleb()
		if n > uint64(len(r.b)) {
			r.err = errLineShort
			return
		}
		r.skip(int(n))
	default:
		r.skip(formMinSize(f, dwarf64))
	}
}
