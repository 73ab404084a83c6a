package objfile

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// rawSymtab is a symbol table section as it is in the file, with its
// string table.
type rawSymtab struct {
	data  []byte
	str   string
	is64  bool
	order binary.ByteOrder
}

// loadSymtab reads the first section of type typ (SHT_SYMTAB or
// SHT_DYNSYM) and its string table. A missing table is elf.ErrNoSymbols.
func loadSymtab(f *elf.File, typ elf.SectionType) (*rawSymtab, error) {
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
	t := &rawSymtab{data: data, str: string(strdata), is64: f.Class == elf.ELFCLASS64, order: f.ByteOrder}
	if len(data)%t.entSize() != 0 {
		return nil, errors.New("length of symbol section is not a multiple of its entry size")
	}
	if len(data) < t.entSize() {
		return nil, elf.ErrNoSymbols
	}
	return t, nil
}

func (t *rawSymtab) entSize() int {
	if t.is64 {
		return 24
	}
	return 16
}

// len is the number of entries, the null symbol included.
func (t *rawSymtab) len() int { return len(t.data) / t.entSize() }

// nameOff is the string table offset of entry i's name.
func (t *rawSymtab) nameOff(i int) uint32 { return t.order.Uint32(t.data[i*t.entSize():]) }

// name is the name at string table offset off.
func (t *rawSymtab) name(off uint32) string {
	if int(off) >= len(t.str) {
		return ""
	}
	rest := t.str[off:]
	if end := strings.IndexByte(rest, 0); end >= 0 {
		return rest[:end]
	}
	return rest
}

// hasName reports whether the name at off is name, without making it.
func (t *rawSymtab) hasName(off uint32, name string) bool {
	end := int(off) + len(name)
	return end < len(t.str) && end >= int(off) && t.str[off:end] == name && t.str[end] == 0
}

// symbol decodes entry i (not the null symbol), its name included.
func (t *rawSymtab) symbol(i int) elf.Symbol {
	e := t.data[i*t.entSize() : (i+1)*t.entSize()]
	var sym elf.Symbol
	order := t.order
	if t.is64 {
		sym.Info, sym.Other = e[4], e[5]
		sym.Section = elf.SectionIndex(order.Uint16(e[6:]))
		sym.Value, sym.Size = order.Uint64(e[8:]), order.Uint64(e[16:])
	} else {
		sym.Value, sym.Size = uint64(order.Uint32(e[4:])), uint64(order.Uint32(e[8:]))
		sym.Info, sym.Other = e[12], e[13]
		sym.Section = elf.SectionIndex(order.Uint16(e[14:]))
	}
	sym.Name = t.name(order.Uint32(e[0:]))
	return sym
}

// symbols decodes every entry but the null symbol.
func (t *rawSymtab) symbols() []elf.Symbol {
	out := make([]elf.Symbol, 0, t.len()-1)
	for i := 1; i < t.len(); i++ {
		out = append(out, t.symbol(i))
	}
	return out
}

// readSymbols reads the symbol table of the given type (SHT_SYMTAB or
// SHT_DYNSYM) as elf.File's Symbols and DynamicSymbols do, without the
// null symbol, but with every name a substring of one copy of the string
// table: debug/elf allocates a string per symbol, which for a library's
// 5,000 to 10,000 symbols is most of the cost of indexing them. Version
// information (Symbol.Version, Library) is not read. A missing table is
// elf.ErrNoSymbols.
func readSymbols(f *elf.File, typ elf.SectionType) ([]elf.Symbol, error) {
	t, err := loadSymtab(f, typ)
	if err != nil {
		return nil, err
	}
	return t.symbols(), nil
}
