package objfile

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strings"
	"sync"

	"github.com/ompd-go/ompd/target"
)

// maxLineRows bounds the rows kept from one compilation unit's line table.
const maxLineRows = 1 << 22

// lineState is an object's DWARF line information: the address ranges of
// its compilation units, read on first use, and each unit's line table,
// read when an address in it is first looked up.
type lineState struct {
	once  sync.Once
	data  *dwarf.Data
	line  []byte           // .debug_line, for checkLineHeader (nil: not checked)
	order binary.ByteOrder // of line
	strs  lineStrings      // the string sections line's file names point into
	cus   []cuRange        // sorted by low
	err   error

	mu     sync.Mutex
	tables map[dwarf.Offset]*lineTable
}

type cuRange struct {
	low, high uint64 // file addresses, [low, high)
	cu        *dwarf.Entry
}

// lineTable is one unit's line table as rows sorted by address, and the
// unit's scopes for inlined calls (see inline.go), read on first need.
type lineTable struct {
	rows      []lineRow
	files     []string
	fileTable []string // the table's file entries by number (DW_AT_call_file)
	err       error

	scopes     []scope
	scopesRead bool
}

type lineRow struct {
	addr uint64
	file int32 // index in files
	line int32
	end  bool // end of a sequence: no code from addr on
}

// dwarfData returns the object's DWARF, from itself or its separate debug
// file.
func (o *Object) lineDWARF() (*dwarf.Data, error) {
	f, where := o.f, o.path
	if !o.ownDWARF() {
		df, err := o.separate()
		if err != nil {
			return nil, fmt.Errorf("%s: %w, and no usable separate debug file: %w", o.path, ErrNoDWARF, err)
		}
		if !hasSection(df, ".debug_info", ".zdebug_info") {
			return nil, fmt.Errorf("%s: %w in it or in its debug file %s", o.path, ErrNoDWARF, o.dbgPath)
		}
		f, where = df, o.dbgPath
	}
	d, line, strs, err := lineSections(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", where, ErrNoDWARF, err)
	}
	o.lines.line, o.lines.order, o.lines.strs = line, f.ByteOrder, strs
	return d, nil
}

// lineNeeds are the DWARF sections (without ".debug_") that line tables,
// unit ranges and inlined-call scopes are read from: not the location
// lists, frame tables, macros and the like, which are most of an optimized
// library's DWARF.
var lineNeeds = []string{"abbrev", "info", "line", "ranges", "str", "str_offsets", "line_str", "addr", "rnglists"}

// lineSections builds the DWARF of f from the sections lineNeeds lists,
// decompressed; a relocatable object (never loaded in a process) takes
// (*elf.File).DWARF, which applies its relocations.
//
// It also returns the .debug_line section (nil for a relocatable object),
// for checkLineHeader, and the string sections its file names point into.
func lineSections(f *elf.File) (*dwarf.Data, []byte, lineStrings, error) {
	if f.Type == elf.ET_REL {
		d, err := f.DWARF()
		return d, nil, lineStrings{}, err
	}
	raw := map[string][]byte{}
	for _, name := range lineNeeds {
		s := f.Section(".debug_" + name)
		if s == nil {
			s = f.Section(".zdebug_" + name)
		}
		if s == nil || s.Type == elf.SHT_NOBITS {
			continue
		}
		b, err := s.Data()
		if err != nil {
			return nil, nil, lineStrings{}, fmt.Errorf("%s: %w", s.Name, err)
		}
		raw[name] = b
	}
	d, err := dwarf.New(raw["abbrev"], nil, nil, raw["info"], raw["line"], nil, raw["ranges"], raw["str"])
	if err != nil {
		return nil, nil, lineStrings{}, err
	}
	for _, name := range []string{"str_offsets", "line_str", "addr", "rnglists"} {
		if b, ok := raw[name]; ok {
			if name == "str_offsets" {
				b = goStrOffsets(b, f.ByteOrder)
			}
			if err := d.AddSection(".debug_"+name, b); err != nil {
				return nil, nil, lineStrings{}, err
			}
		}
	}
	return d, raw["line"], lineStrings{lineStr: raw["line_str"], str: raw["str"]}, nil
}

func (o *Object) loadLineIndex() {
	o.lines.once.Do(func() {
		d, err := o.lineDWARF()
		if err != nil {
			o.lines.err = err
			return
		}
		o.lines.data = d
		o.lines.tables = make(map[dwarf.Offset]*lineTable)
		r := d.Reader()
		for {
			e, err := r.Next()
			if err != nil {
				o.lines.err = fmt.Errorf("%s: reading DWARF units: %w", o.path, err)
				break
			}
			if e == nil {
				break
			}
			if e.Tag == dwarf.TagCompileUnit || e.Tag == dwarf.TagPartialUnit {
				if rs, err := d.Ranges(e); err == nil {
					for _, rg := range rs {
						if rg[1] > rg[0] {
							o.lines.cus = append(o.lines.cus, cuRange{low: rg[0], high: rg[1], cu: e})
						}
					}
				}
			}
			if e.Children {
				r.SkipChildren()
			}
		}
		sort.Slice(o.lines.cus, func(i, j int) bool { return o.lines.cus[i].low < o.lines.cus[j].low })
	})
}

// table returns the line table of the unit cu, reading it on first use.
func (o *Object) table(cu *dwarf.Entry) *lineTable {
	o.lines.mu.Lock()
	defer o.lines.mu.Unlock()
	if t := o.lines.tables[cu.Offset]; t != nil {
		return t
	}
	t := &lineTable{}
	o.lines.tables[cu.Offset] = t
	var spelled []string // the header's file paths as written (DWARF 5)
	if off, ok := cu.Val(dwarf.AttrStmtList).(int64); ok && o.lines.line != nil {
		var err error
		if spelled, err = lineHeaderFiles(o.lines.line, off, o.lines.order, o.lines.strs); err != nil {
			t.err = fmt.Errorf("%s: line table: %w", o.path, err)
			return t
		}
	}
	lr, err := o.lines.data.LineReader(cu)
	if err != nil || lr == nil {
		t.err = fmt.Errorf("%s: line table: %v", o.path, err)
		return t
	}
	compDir, _ := cu.Val(dwarf.AttrCompDir).(string)
	// A file's name: its path as the header spells it when that is
	// absolute (debug/dwarf joined it with its directory anyway), else
	// debug/dwarf's.
	names := map[*dwarf.LineFile]string{}
	for i, f := range lr.Files() {
		name := ""
		if f != nil {
			name = fixJoin(compDir, f.Name)
			if i < len(spelled) && strings.HasPrefix(spelled[i], "/") {
				name = path.Clean(spelled[i])
			}
			names[f] = name
		}
		t.fileTable = append(t.fileTable, name)
	}
	fileIdx := map[*dwarf.LineFile]int32{}
	var e dwarf.LineEntry
	for len(t.rows) < maxLineRows {
		if err := lr.Next(&e); err != nil {
			if !errors.Is(err, io.EOF) {
				t.err = fmt.Errorf("%s: line table: %w", o.path, err)
			}
			break
		}
		fi := int32(-1)
		if e.File != nil {
			i, ok := fileIdx[e.File]
			if !ok {
				i = int32(len(t.files))
				name, ok := names[e.File]
				if !ok {
					name = fixJoin(compDir, e.File.Name)
				}
				t.files = append(t.files, name)
				fileIdx[e.File] = i
			}
			fi = i
		}
		t.rows = append(t.rows, lineRow{addr: e.Address, file: fi, line: int32(e.Line), end: e.EndSequence})
	}
	sort.SliceStable(t.rows, func(i, j int) bool {
		if t.rows[i].addr != t.rows[j].addr {
			return t.rows[i].addr < t.rows[j].addr
		}
		// An end of sequence at the address another sequence starts
		// at comes first, so that the start wins.
		return t.rows[i].end && !t.rows[j].end
	})
	return t
}

// fixJoin undoes a join debug/dwarf makes of a DWARF 5 line table's
// directory with a file name that is already absolute (Go 1.26 joins
// them regardless: "/build" and "/src/x.S" give "/build/src/x.S"). Only
// a name under compDir whose rest starts like compDir itself is a
// candidate, and it is changed only when the absolute file exists and the
// joined one does not: on another machine, with neither, the name stays.
func fixJoin(compDir, name string) string {
	if compDir == "" || !strings.HasPrefix(name, compDir+"/") {
		return name
	}
	rest := name[len(compDir):] // "/root/..."
	first := func(p string) string {
		p = strings.TrimPrefix(p, "/")
		if i := strings.IndexByte(p, '/'); i >= 0 {
			return p[:i]
		}
		return p
	}
	if first(rest) != first(compDir) {
		return name
	}
	if _, err := os.Stat(rest); err != nil {
		return name
	}
	if _, err := os.Stat(name); err == nil {
		return name
	}
	return rest
}

// LineAt returns the source file and line of the run-time address pc from
// the object's DWARF line tables (its own or its separate debug file's);
// ok is false when no line table covers pc.
func (o *Object) LineAt(pc uint64) (file string, line int, ok bool) {
	file, line, _, ok = o.lineAt(pc)
	return file, line, ok
}

// lineAt is LineAt, also returning the unit whose table answered.
func (o *Object) lineAt(pc uint64) (file string, line int, cu *dwarf.Entry, ok bool) {
	o.loadLineIndex()
	if o.lines.data == nil {
		return "", 0, nil, false
	}
	addr := pc - o.bias
	cus := o.lines.cus
	i := sort.Search(len(cus), func(i int) bool { return cus[i].low > addr })
	// Ranges may nest or overlap: look back over a few.
	for j := i - 1; j >= 0 && j >= i-8; j-- {
		if addr < cus[j].low || addr >= cus[j].high {
			continue
		}
		t := o.table(cus[j].cu)
		rows := t.rows
		k := sort.Search(len(rows), func(k int) bool { return rows[k].addr > addr })
		if k == 0 {
			continue
		}
		r := rows[k-1]
		if r.end || r.file < 0 || int(r.file) >= len(t.files) {
			continue
		}
		return t.files[r.file], int(r.line), cus[j].cu, true
	}
	return "", 0, nil, false
}

// LineErr reports why the object's line tables could not be read, if so.
func (o *Object) LineErr() error {
	o.loadLineIndex()
	return o.lines.err
}

// LocateCode returns the object, function symbol, and source file and line
// of the run-time address pc (see target.CodeLocator). An address in no
// object wraps target.ErrNotFound.
func (s *Set) LocateCode(pc uint64) (target.CodeLocation, error) {
	o := s.ObjectAt(pc)
	if o == nil {
		return target.CodeLocation{}, fmt.Errorf("%#x is in no loaded object: %w", pc, target.ErrNotFound)
	}
	loc := target.CodeLocation{Object: o.path}
	if sym, ok := o.SymbolAt(pc); ok {
		loc.Function, loc.Entry = sym.Name, sym.Addr
		loc.Name = o.demangled(sym.Name)
	}
	var cu *dwarf.Entry
	var ok bool
	loc.File, loc.Line, cu, ok = o.lineAt(pc)
	if ok {
		loc.Inline = o.inlineAt(cu, pc, loc.File, loc.Line, loc.Function)
		if n := o.fortranName(cu, loc.Entry); n != "" && loc.Entry != 0 {
			loc.Name = n
		}
	}
	return loc, nil
}
