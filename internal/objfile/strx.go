package objfile

import "encoding/binary"

// goStrOffsets returns the .debug_str_offsets section b as Go's
// debug/dwarf is to have it: with the header of every contribution (its
// length, version and padding) zeroed.
//
// debug/dwarf (Go 1.25 and 1.26) decodes a DWARF 5 unit's own entry once
// before it knows the unit's DW_AT_str_offsets_base, resolving the
// DW_FORM_strx attributes that precede it (clang puts DW_AT_producer and
// DW_AT_name there) at base 0: on the section's first header. Read
// little-endian, the header's words are small and name some string; read
// big-endian (s390x), the version word is 0x50000, past .debug_str, and
// the whole unit fails to decode ("underflow"). Zeroed, those early reads
// name the string at offset 0; the entry is decoded again with the right
// base, and nothing else reads the headers.
func goStrOffsets(b []byte, order binary.ByteOrder) []byte {
	out := append([]byte(nil), b...)
	for off := uint64(0); off+8 <= uint64(len(out)); {
		length, hdr := uint64(order.Uint32(out[off:])), uint64(8)
		if length == 0xffffffff {
			if off+16 > uint64(len(out)) {
				break
			}
			length, hdr = order.Uint64(out[off+4:]), 16
			length += 8 // counted from after the 12-byte length field
		}
		clear(out[off : off+hdr])
		next := off + 4 + length
		if length == 0 || next <= off || next > uint64(len(out)) {
			break
		}
		off = next
	}
	return out
}
