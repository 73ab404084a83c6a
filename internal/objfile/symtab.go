package objfile

import (
	"debug/elf"
	"errors"
	"fmt"
	"strings"
)

// readSymbols reads the symbol table of the given type (SHT_SYMTAB or
// SHT_DYNSYM) as elf.File's Symbols and DynamicSymbols do, without the
// null symbol, but with every name a substring of one copy of the string
// table: debug/elf allocates a string per symbol, which for a library's
// 5,000 to 10,000 symbols is most of the cost of indexing them. Version
// information (Symbol.Version, Library) is not read. A missing table is
// elf.ErrNoSymbols.
func readSymbols(f *elf.File, typ elf.SectionType) ([]elf.Symbol, error) {
	var s *elf.Section
	for _, sec := range f.Sections {
		if sec.Type == typ {
			s = sec
			break
		}
	}
	if s == nil {
		return nil, elf.ErrNoSymbols
	}
	data, err := s.Data()
	if err != nil {
		return nil, fmt.Errorf("cannot load symbol section: %w", err)
	}
	if int(s.Link) <= 0 || int(s.Link) >= len(f.Sections) {
		return nil, fmt.Errorf("symbol section links to string table %d of %d", s.Link, len(f.Sections))
	}
	strdata, err := f.Sections[s.Link].Data()
	if err != nil {
		return nil, fmt.Errorf("cannot load string table section: %w", err)
	}
	str := string(strdata)
	size := 16
	if f.Class == elf.ELFCLASS64 {
		size = 24
	}
	if len(data)%size != 0 {
		return nil, errors.New("length of symbol section is not a multiple of its entry size")
	}
	n := len(data) / size
	if n == 0 {
		return nil, elf.ErrNoSymbols
	}
	order := f.ByteOrder
	out := make([]elf.Symbol, 0, n-1)
	for i := 1; i < n; i++ {
		e := data[i*size : (i+1)*size]
		var sym elf.Symbol
		var name uint32
		if f.Class == elf.ELFCLASS64 {
			name = order.Uint32(e[0:])
			sym.Info, sym.Other = e[4], e[5]
			sym.Section = elf.SectionIndex(order.Uint16(e[6:]))
			sym.Value, sym.Size = order.Uint64(e[8:]), order.Uint64(e[16:])
		} else {
			name = order.Uint32(e[0:])
			sym.Value, sym.Size = uint64(order.Uint32(e[4:])), uint64(order.Uint32(e[8:]))
			sym.Info, sym.Other = e[12], e[13]
			sym.Section = elf.SectionIndex(order.Uint16(e[14:]))
		}
		if int(name) < len(str) {
			rest := str[name:]
			if end := strings.IndexByte(rest, 0); end >= 0 {
				sym.Name = rest[:end]
			} else {
				sym.Name = rest
			}
		}
		out = append(out, sym)
	}
	return out, nil
}
