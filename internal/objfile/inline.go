package objfile

import (
	"debug/dwarf"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ianlancetaylor/demangle"

	"github.com/ompd-go/ompd/target"
)

// scope is one address range of a function (DW_TAG_subprogram) or of a
// call inlined into one (DW_TAG_inlined_subroutine) in a unit.
type scope struct {
	low, high uint64 // file addresses, [low, high)
	depth     int    // nesting depth in the unit's tree
	name      string
	inlined   bool
	callFile  string // for an inlined call: where it was called
	callLine  int
	// fortran is a Fortran function's name as gdb shows it: its name
	// after the name of the module or procedure it is defined in (its
	// parent in the unit's tree), "solver::run_team"; "" in other
	// languages.
	fortran string
}

// maxScopes bounds the scopes kept for one unit.
const maxScopes = 1 << 20

// maxScopeDepth bounds the depth of a unit's tree whose entries name
// their children's scopes.
const maxScopeDepth = 1 << 10

// isFortran reports whether a unit's language is Fortran
// (DW_LANG_Fortran77 to DW_LANG_Fortran2008, and Fortran 18).
func isFortran(cu *dwarf.Entry) bool {
	lang, _ := cu.Val(dwarf.AttrLanguage).(int64)
	switch lang {
	case 0x7, 0x8, 0xe, 0x22, 0x23, 0x2d:
		return true
	}
	return false
}

// fortranName returns a Fortran function's name as gdb shows it (see
// scope.fortran) from unit cu's scopes, for the function whose entry is
// the run-time address entry; "" when cu is no Fortran unit or has no such
// function.
func (o *Object) fortranName(cu *dwarf.Entry, entry uint64) string {
	if !isFortran(cu) {
		return ""
	}
	addr := entry - o.bias
	for _, sc := range o.unitScopes(cu) {
		if sc.low > addr {
			break
		}
		if sc.low == addr && sc.fortran != "" {
			return sc.fortran
		}
	}
	return ""
}

// maxInlineCache bounds the addresses whose inline frames an object keeps.
const maxInlineCache = 1 << 16

// unitScopes reads the scopes of unit cu, once (callers hold no lock).
func (o *Object) unitScopes(cu *dwarf.Entry) []scope {
	t := o.table(cu)
	o.lines.mu.Lock()
	defer o.lines.mu.Unlock()
	if t.scopesRead {
		return t.scopes
	}
	t.scopesRead = true
	d := o.lines.data
	names := map[dwarf.Offset]string{}
	var nameOf func(e *dwarf.Entry, hops int) string
	nameOf = func(e *dwarf.Entry, hops int) string {
		for _, a := range []dwarf.Attr{dwarf.AttrName, dwarf.AttrLinkageName} {
			if n, ok := e.Val(a).(string); ok {
				return n
			}
		}
		if hops > 4 {
			return ""
		}
		for _, a := range []dwarf.Attr{dwarf.AttrAbstractOrigin, dwarf.AttrSpecification} {
			off, ok := e.Val(a).(dwarf.Offset)
			if !ok {
				continue
			}
			if n, ok := names[off]; ok {
				return n
			}
			r := d.Reader()
			r.Seek(off)
			ref, err := r.Next()
			if err != nil || ref == nil {
				continue
			}
			n := nameOf(ref, hops+1)
			names[off] = n
			return n
		}
		return ""
	}
	r := d.Reader()
	r.Seek(cu.Offset)
	unit, err := r.Next()
	if err != nil || unit == nil || !unit.Children {
		return nil
	}
	fortran := isFortran(unit)
	// parents[d] is the entry at depth d of the unit's tree, while its
	// children are read (Fortran units).
	type parent struct {
		tag  dwarf.Tag
		name string
	}
	parents := []parent{{tag: unit.Tag}}
	depth := 1
	for depth > 0 && len(t.scopes) < maxScopes {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 {
			depth--
			continue
		}
		if fortran && depth < maxScopeDepth {
			parents = append(parents[:min(depth, len(parents))], parent{e.Tag, ""})
			if n, ok := e.Val(dwarf.AttrName).(string); ok && len(parents) == depth+1 {
				parents[depth].name = n
			}
		}
		if e.Tag == dwarf.TagSubprogram || e.Tag == dwarf.TagInlinedSubroutine {
			if rs, err := d.Ranges(e); err == nil && len(rs) > 0 {
				sc := scope{depth: depth, name: nameOf(e, 0), inlined: e.Tag == dwarf.TagInlinedSubroutine}
				if fortran && !sc.inlined && depth < len(parents) {
					sc.fortran = sc.name
					if p := parents[depth-1]; p.name != "" && (p.tag == dwarf.TagModule || p.tag == dwarf.TagSubprogram) {
						sc.fortran = p.name + "::" + sc.name
					}
				}
				if sc.inlined {
					if f, ok := e.Val(dwarf.AttrCallFile).(int64); ok && f >= 0 && int(f) < len(t.fileTable) {
						sc.callFile = t.fileTable[f]
					}
					if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
						sc.callLine = int(l)
					}
				}
				for _, rg := range rs {
					if rg[1] > rg[0] {
						sc.low, sc.high = rg[0], rg[1]
						t.scopes = append(t.scopes, sc)
					}
				}
			}
		}
		if e.Children {
			depth++
		}
	}
	sort.SliceStable(t.scopes, func(i, j int) bool { return t.scopes[i].low < t.scopes[j].low })
	return t.scopes
}

// demangled returns name as people read it, as gdb shows it: a C++ name
// demangled without its parameters, the region or task GCC outlined from
// a C++ function keeping its suffix (geo::Grid<double>::relax._omp_fn.0),
// a gfortran module procedure as module::procedure; others unchanged; kept
// per object (bounded). (A gfortran main program, MAIN__, has its name
// only in the DWARF: see fortranName.)
func (o *Object) demangled(name string) string {
	if !strings.HasPrefix(name, "_Z") {
		return fortranSymbol(name)
	}
	if v, ok := o.inline.names.Load(name); ok {
		return v.(string)
	}
	d := demangle.Filter(name, demangle.NoParams)
	if base, suffix, ok := strings.Cut(name, "._omp_fn."); ok {
		if db := demangle.Filter(base, demangle.NoParams); db != base {
			d = db + "._omp_fn." + suffix
		}
	}
	if o.inline.nnames.Load() < maxInlineCache {
		if _, loaded := o.inline.names.LoadOrStore(name, d); !loaded {
			o.inline.nnames.Add(1)
		}
	}
	return d
}

// fortranSymbol turns a gfortran module procedure's symbol,
// __MODULE_MOD_PROCEDURE, into MODULE::PROCEDURE, as gdb names it from the
// DWARF; other names are returned unchanged. A region or task outlined from
// it keeps its symbol: gdb names it PROCEDURE::SYMBOL from the DWARF,
// which fortranName gives.
func fortranSymbol(name string) string {
	rest, ok := strings.CutPrefix(name, "__")
	if !ok || strings.Contains(name, "._omp_fn.") {
		return name
	}
	mod, proc, ok := strings.Cut(rest, "_MOD_")
	if !ok || mod == "" || proc == "" {
		return name
	}
	return mod + "::" + proc
}

// inlineCache remembers the inline frames of addresses already looked up.
type inlineCache struct {
	m sync.Map // pc -> []target.InlineFrame
	n atomic.Int64

	names  sync.Map // symbol -> demangled name
	nnames atomic.Int64
}

// inlineAt returns the source-level frames at pc when calls are inlined
// there (see target.CodeLocation.Inline), or nil. file and line are the
// line table's position of pc, in unit cu; symbol names the function of an
// outermost scope DWARF leaves unnamed (compiler-made functions).
func (o *Object) inlineAt(cu *dwarf.Entry, pc uint64, file string, line int, symbol string) []target.InlineFrame {
	if v, ok := o.inline.m.Load(pc); ok {
		return v.([]target.InlineFrame)
	}
	addr := pc - o.bias
	var in []scope
	for _, sc := range o.unitScopes(cu) {
		if sc.low > addr {
			break
		}
		if addr < sc.high {
			in = append(in, sc)
		}
	}
	var out []target.InlineFrame
	hasInlined := false
	for _, sc := range in {
		hasInlined = hasInlined || sc.inlined
	}
	if hasInlined {
		// Innermost first: deepest scope first.
		sort.SliceStable(in, func(i, j int) bool { return in[i].depth > in[j].depth })
		for _, sc := range in {
			out = append(out, target.InlineFrame{Function: sc.name, File: file, Line: line})
			if !sc.inlined {
				break
			}
			file, line = sc.callFile, sc.callLine
		}
		if last := &out[len(out)-1]; last.Function == "" {
			last.Function = o.demangled(symbol)
		}
	}
	if o.inline.n.Load() < maxInlineCache {
		if _, loaded := o.inline.m.LoadOrStore(pc, out); !loaded {
			o.inline.n.Add(1)
		}
	}
	return out
}
