// Command dwarfcut writes the .debug_info of an ELF file with only the
// compile units of the named source files, for scripts/make-testdata-core.sh:
// a runtime's separate debug file shipped in testdata keeps the units that
// define the structures and globals the library reads, not the whole
// program's (a tenth of the size).
//
// Usage: go run ./internal/shipped/dwarfcut -o OUT FILE SOURCE...
//
// SOURCE names a unit by its DW_AT_name's base name ("kmp_runtime.cpp").
// The units are copied as they are: the sections they refer to through
// per-unit bases and offsets (abbreviations, strings, addresses, line
// tables) are kept whole by the caller, which puts OUT in place with
// objcopy --update-section and removes the sections that index units by
// offset (.debug_aranges, .debug_names). Every SOURCE must be found.
package main

import (
	"debug/dwarf"
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"path"
)

func main() {
	out := flag.String("o", "", "output file")
	flag.Parse()
	if *out == "" || flag.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: dwarfcut -o OUT FILE SOURCE...")
		os.Exit(2)
	}
	data, err := cut(flag.Arg(0), flag.Args()[1:])
	if err == nil {
		err = os.WriteFile(*out, data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dwarfcut:", err)
		os.Exit(1)
	}
}

func cut(file string, sources []string) ([]byte, error) {
	f, err := elf.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		return nil, err
	}
	sec := f.Section(".debug_info")
	if sec == nil {
		return nil, fmt.Errorf("%s has no .debug_info", file)
	}
	info, err := sec.Data()
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, s := range sources {
		want[s] = false
	}
	bo := f.ByteOrder
	var out []byte
	r := d.Reader()
	for off := 0; off < len(info); {
		if len(info)-off < 12 {
			return nil, fmt.Errorf("truncated unit header at %#x", off)
		}
		n := int(bo.Uint32(info[off:]))
		if n >= 0xfffffff0 {
			return nil, fmt.Errorf("64-bit DWARF unit at %#x", off)
		}
		end := off + 4 + n
		if end > len(info) {
			return nil, fmt.Errorf("unit at %#x runs past the section", off)
		}
		// The unit's first entry follows its header: 11 bytes up to
		// DWARF 4, 12 from DWARF 5 on (unit type added).
		hdr := 11
		if bo.Uint16(info[off+4:]) >= 5 {
			hdr = 12
		}
		r.Seek(dwarf.Offset(off + hdr))
		e, err := r.Next()
		if err != nil {
			return nil, fmt.Errorf("unit at %#x: %w", off, err)
		}
		name, _ := e.Val(dwarf.AttrName).(string)
		if _, ok := want[path.Base(name)]; ok && e.Tag == dwarf.TagCompileUnit {
			want[path.Base(name)] = true
			out = append(out, info[off:end]...)
		}
		off = end
	}
	for s, found := range want {
		if !found {
			return nil, fmt.Errorf("%s: no compile unit of %s", file, s)
		}
	}
	return out, nil
}
