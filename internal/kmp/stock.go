package kmp

//go:generate go run ./gen -o known_releases.go

import (
	"debug/elf"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ompd-go/ompd/internal/codescan"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// A stripped runtime, as distributions ship libomp (no .symtab, no DWARF,
// its OMPD tables and internal globals local symbols that are gone), is
// read with a table of the LLVM release it is (known_releases.go, written
// by internal/kmp/gen from the project's builds of every release): the
// values of its OMPD layout tables, and where the code of its exported
// functions refers to each hidden global and function this package reads.
// The release is told by the library's build-id (Debian's stock builds are
// in the table) or else by the functions it exports (each release exports
// some no older one does); the values its own ompd_init stores must be the
// table's; and before anything is answered, the threads must confirm the
// table (confirmStock). A runtime no table fits is refused with
// ErrIncompatible: nothing is guessed.

// release is one LLVM release's libomp as the project's build of it shows
// it (see known_releases.go).
type release struct {
	major   int
	version string
	// stock are Debian's stock builds of the release, told by build-id.
	stock []stockBuild
	// markers are functions the release exports and no older one does.
	markers []string
	// ompdEntries and ompdValues are the OMPD table entries in the order
	// ompd_init stores them, and the values it stores.
	ompdEntries []string
	ompdValues  []uint64
	// members are the offsets of members no OMPD table gives, by
	// "type.member".
	members map[string]uint64
	// paths lead from exported functions to each hidden name.
	paths map[string][]codescan.Path
}

// stockBuild is a distribution's build of a release.
type stockBuild struct {
	pkg, version, buildID string
}

// String names the release, e.g. "LLVM 13.0.1".
func (r *release) String() string { return "LLVM " + r.version }

// libomp is the runtime library as the dynamic linker loaded it.
type libomp struct {
	name    string // the path it was loaded from
	base    uint64 // l_addr
	buildID string // hex, "" if unknown
}

// String names the library and its build-id for messages.
func (l *libomp) String() string {
	if l.buildID == "" {
		return l.name + " (no build-id)"
	}
	return l.name + " (build-id " + l.buildID + ")"
}

// stockRuntime is what was found of a stripped runtime: its library, the
// release it is read as, and how.
type stockRuntime struct {
	lib  *libomp
	rel  *release
	why  string // how the release was told
	arch codescan.Arch
	code *omprt.Memory // the library's code, cached for good
	vals map[string]uint64

	mu    sync.Mutex
	found map[string]stockSym
	// ompdOK says the runtime's own ompd_init was found and stores the
	// table's values: only then are its OMPD globals (ompd_state, ...)
	// looked for, so that a runtime built without OMPD support is never
	// read as having them.
	ompdOK bool
}

// stockSym is a name looked for in the code, and the answer.
type stockSym struct {
	addr uint64
	err  error
}

// isLibomp reports whether a loaded object's path is LLVM's runtime.
func isLibomp(name string) bool {
	b := path.Base(name)
	return strings.HasPrefix(b, "libomp.so") || strings.HasPrefix(b, "libomp-") || strings.HasPrefix(b, "libiomp5.so")
}

// findLibomp finds the runtime among the loaded objects: the one whose
// range holds __kmpc_fork_call (at fork), else the first libomp by name.
func findLibomp(t target.Target, mem *omprt.Memory, fork uint64) (*libomp, error) {
	rd, err := objfile.RDebug(t, mem, mem.Order)
	if err != nil {
		return nil, wrapErr(omprt.ErrIncompatible, err, "no dynamic linker state (_r_debug) to find the runtime library in")
	}
	entries, err := objfile.ReadLinkMap(mem, rd, mem.PtrSize, mem.Order)
	var best *objfile.LinkMapEntry
	for i := range entries {
		e := &entries[i]
		if e.Name == "" || e.LAddr > fork {
			continue
		}
		// The object loaded nearest below the function holds it.
		if best == nil || e.LAddr > best.LAddr {
			best = e
		}
	}
	if best == nil || !isLibomp(best.Name) {
		for i := range entries {
			if isLibomp(entries[i].Name) {
				best = &entries[i]
				break
			}
		}
	}
	if best == nil {
		if err != nil {
			return nil, wrapErr(omprt.ErrIncompatible, err, "no LLVM OpenMP runtime in the dynamic linker's list")
		}
		return nil, errorf(omprt.ErrIncompatible, "no LLVM OpenMP runtime in the dynamic linker's list")
	}
	l := &libomp{name: best.Name, base: best.LAddr}
	if id := objfile.LoadedBuildID(mem, best.LAddr, mem.Order); id != nil {
		l.buildID = hex.EncodeToString(id)
	}
	return l, nil
}

// openStock reads a stripped runtime: finds its library, tells its
// release, checks the release's table against the library's own ompd_init.
// On failure, the stockRuntime returned holds what was found (the library,
// the release told) for the error's hint.
func openStock(t target.Target, rt *Runtime, fork uint64) (*stockRuntime, error) {
	lib, err := findLibomp(t, rt.mem, fork)
	if err != nil {
		return nil, err
	}
	s := &stockRuntime{lib: lib, code: omprt.NewMemory(t), found: map[string]stockSym{}}
	if s.arch, err = codescan.ForMachine(machine(t)); err != nil {
		return s, wrapErr(omprt.ErrIncompatible, err, "%v: its code cannot be read", lib)
	}
	cands, why := s.candidates(t)
	if len(cands) == 0 {
		said := ""
		if major := pathRelease(lib.name); major > 0 {
			said = fmt.Sprintf("its path says LLVM %d; ", major)
		}
		return s, errorf(omprt.ErrIncompatible, "%v is an LLVM OpenMP runtime of no release this package knows (%s%s)", lib, said, knownList())
	}
	var tried []string
	for _, rel := range cands {
		s.rel, s.why = rel, why
		s.vals = rel.values()
		s.found, s.ompdOK = map[string]stockSym{}, false
		err := s.checkOMPDInit(t)
		if err == nil {
			return s, nil
		}
		tried = append(tried, fmt.Sprintf("%v: %v", rel, err))
	}
	if len(cands) > 1 {
		s.rel = nil // told as none of them
	}
	return s, errorf(omprt.ErrIncompatible, "%v, told by %s, fits no known table: %s", lib, why, strings.Join(tried, "; "))
}

// release returns the known release the runtime is: a stripped runtime's,
// or the newest whose markers (functions no older release exports) the
// runtime exports, or, exporting none of them, the oldest known (or an
// older one). Told once.
func (rt *Runtime) release() *release {
	if rt.stock != nil {
		return rt.stock.rel
	}
	rt.relOnce.Do(func() {
		rels := slices.Clone(knownReleases)
		slices.SortFunc(rels, func(a, b *release) int { return b.major - a.major })
		for _, r := range rels {
			ok := len(r.markers) > 0
			for _, m := range r.markers {
				if _, err := rt.t.LookupSymbol(m); err != nil {
					ok = false
					break
				}
			}
			if ok || len(r.markers) == 0 {
				rt.rel = r
				return
			}
		}
	})
	return rt.rel
}

// before reports whether the runtime is a release older than major.
func (rt *Runtime) before(major int) bool {
	r := rt.release()
	return r != nil && r.major < major
}

// knownList names the known releases for messages.
func knownList() string {
	var vs []string
	for _, r := range knownReleases {
		vs = append(vs, r.version)
	}
	return "known: LLVM " + strings.Join(vs, ", ")
}

// values returns the release's OMPD table values by entry name.
func (r *release) values() map[string]uint64 {
	m := make(map[string]uint64, len(r.ompdEntries))
	for i, n := range r.ompdEntries {
		m[n] = r.ompdValues[i]
	}
	return m
}

// candidates returns the releases the library may be, best first, and how
// they were told: by its build-id, or by the functions it exports.
func (s *stockRuntime) candidates(t target.Target) ([]*release, string) {
	if s.lib.buildID != "" {
		for _, r := range knownReleases {
			for _, b := range r.stock {
				if b.buildID == s.lib.buildID {
					return []*release{r}, fmt.Sprintf("%s %s by its build-id", b.pkg, b.version)
				}
			}
		}
	}
	// The newest release whose markers the library all exports; a
	// release without markers exports what the one before it does, so
	// both are candidates.
	rels := slices.Clone(knownReleases)
	slices.SortFunc(rels, func(a, b *release) int { return b.major - a.major })
	var out []*release
	for _, r := range rels {
		ok := true
		for _, m := range r.markers {
			if a, err := t.LookupSymbol(m); err != nil || a < s.lib.base {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		out = append(out, r)
		if len(r.markers) > 0 {
			break
		}
	}
	return out, "its exported functions"
}

// machine returns the target's ELF machine as far as this package tells
// machines apart: x86-64 for 64-bit little-endian targets, the only kind
// whose code it reads so far.
func machine(t target.Target) elf.Machine {
	if t.Sizes().Pointer == 8 && t.ByteOrder() == binary.LittleEndian {
		return elf.EM_X86_64
	}
	return elf.EM_NONE
}

// lookup finds a hidden name of the runtime through the code of its
// exported functions: every path the release's table has for it is
// followed; paths whose code is shaped as in the project's build of the
// release decide, and must agree; else at least two others must, and
// none may disagree.
func (s *stockRuntime) lookup(t target.Target, name string) (uint64, error) {
	s.mu.Lock()
	f, ok := s.found[name]
	s.mu.Unlock()
	if ok {
		return f.addr, f.err
	}
	f.addr, f.err = s.follow(t, name)
	s.mu.Lock()
	s.found[name] = f
	s.mu.Unlock()
	return f.addr, f.err
}

func (s *stockRuntime) follow(t target.Target, name string) (uint64, error) {
	s.mu.Lock()
	ompdOK := s.ompdOK
	s.mu.Unlock()
	if strings.HasPrefix(name, "ompd_") && name != "ompd_init" && !ompdOK {
		return 0, &target.LookupError{Kind: "symbol", Name: name,
			Err: fmt.Errorf("%w: the stripped runtime %v shows no OMPD support (its code leads to no ompd_init that fills the OMPD tables)", target.ErrNotFound, s.lib)}
	}
	paths := s.rel.paths[name]
	if len(paths) == 0 {
		return 0, &target.LookupError{Kind: "symbol", Name: name,
			Err: fmt.Errorf("%w: the stripped runtime %v does not name it, and the table of %v knows no code that leads to it", target.ErrNotFound, s.lib, s.rel)}
	}
	var exact, loose []uint64
	var errs []string
	for _, p := range paths {
		entry, err := s.entry(t, p.Entry)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		a, ok, err := codescan.Follow(s.arch, s.code, entry, p)
		switch {
		case err != nil:
			errs = append(errs, err.Error())
		case ok:
			exact = append(exact, a)
		default:
			loose = append(loose, a)
		}
	}
	if a, ok := agree(exact, 1); ok {
		return a, nil
	}
	if len(exact) == 0 {
		if a, ok := agree(loose, 2); ok {
			return a, nil
		}
	}
	why := "its code does not lead to it as in " + s.rel.String()
	if len(exact)+len(loose) > 0 {
		why = fmt.Sprintf("the code of its exported functions leads to different places (%#x, %#x)", exact, loose)
	} else if len(errs) > 0 {
		why += ": " + strings.Join(errs, "; ")
	}
	return 0, &target.LookupError{Kind: "symbol", Name: name,
		Err: fmt.Errorf("%w in the stripped runtime %v: %s", target.ErrNotFound, s.lib, why)}
}

// entry returns the address of a path's entry: an exported function of
// the runtime, or the print function of a setting.
func (s *stockRuntime) entry(t target.Target, name string) (uint64, error) {
	if setting, ok := strings.CutPrefix(name, settingPrefix); ok {
		tab, err := s.lookup(t, "__kmp_stg_table")
		if err != nil {
			return 0, err
		}
		m := s.rel.members
		st := SettingTable{Addr: tab, Rows: m["__kmp_stg_table.rows"], RowSize: m["kmp_setting_t"],
			NameOff: m["kmp_setting_t.name"], PrintOff: m["kmp_setting_t.print"], Order: s.code.Order}
		// The rows are data the runtime sorts at start-up: read them
		// from the stop, not from the cache of code.
		return st.Print(t, setting)
	}
	a, err := t.LookupSymbol(name)
	if err != nil || a < s.lib.base {
		return 0, fmt.Errorf("%s: not exported by the runtime", name)
	}
	return a, nil
}

// agree returns the one address of as, if there are at least n of them
// and all are equal.
func agree(as []uint64, n int) (uint64, bool) {
	if len(as) < n {
		return 0, false
	}
	for _, a := range as[1:] {
		if a != as[0] {
			return 0, false
		}
	}
	return as[0], true
}

// checkOMPDInit compares the values the library's own ompd_init stores
// in its OMPD tables with the release's table: the same layout compiled
// in. A library without a readable ompd_init (built without OMPD
// support; or one whose code leads to a function that stores fewer
// values than the table has) is not checked here; confirmStock checks
// its threads.
func (s *stockRuntime) checkOMPDInit(t target.Target) error {
	init, err := s.lookup(t, "ompd_init")
	if err != nil {
		if errors.Is(err, target.ErrNotFound) {
			return nil
		}
		return err
	}
	var vals []uint64
	var addrs []uint64
	n := len(s.rel.ompdValues)
	code, err := codescan.ReadCode(s.code, init, 16<<10)
	if err != nil {
		return wrapErr(omprt.ErrIncompatible, err, "ompd_init at %#x", init)
	}
	s.arch.Scan(code, init, func(r codescan.Ref) bool {
		if r.Kind == codescan.Data && r.Store {
			vals = append(vals, uint64(r.Imm))
			addrs = append(addrs, r.Target)
		}
		return len(vals) < n
	})
	if len(vals) < n {
		// Not the function that fills the OMPD tables: the code led
		// elsewhere (a runtime built without OMPD support has none).
		// The threads confirm the table or refuse it.
		return nil
	}
	for i, v := range vals {
		if v != s.rel.ompdValues[i] {
			return errorf(omprt.ErrIncompatible, "its ompd_init stores %#x in %s, %v's table says %#x", v, s.rel.ompdEntries[i], s.rel, s.rel.ompdValues[i])
		}
	}
	// The tables themselves are now known by address too.
	s.mu.Lock()
	for i, a := range addrs {
		s.found[s.rel.ompdEntries[i]] = stockSym{addr: a}
	}
	s.ompdOK = true
	s.mu.Unlock()
	return nil
}

// knownReader serves a layout from a release's table.
type knownReader struct {
	s     *stockRuntime
	order binary.ByteOrder
	err   error
}

func (r *knownReader) source() omprt.LayoutSource { return omprt.LayoutKnownTable }
func (r *knownReader) failed() error              { return r.err }

func (r *knownReader) value(name string) uint64 {
	if r.err != nil {
		return 0
	}
	v, ok := r.s.vals[name]
	if !ok {
		r.err = errorf(omprt.ErrIncompatible, "the table of %v has no %s", r.s.rel, name)
	}
	return v
}

func (r *knownReader) access(typ, member string) field {
	off := r.value("ompd_access__" + typ + "__" + member)
	size := r.value("ompd_sizeof__" + typ + "__" + member)
	return field{Off: off, Size: size}
}

func (r *knownReader) sizeof(name string) uint64 { return r.value("ompd_sizeof__" + name) }

func (r *knownReader) mask(typ, member string) []byte {
	v := r.value("ompd_bitfield__" + typ + "__" + member)
	b := make([]byte, 8)
	r.order.PutUint64(b, v)
	return b
}

// confirmStock checks the table on the threads as this first stop shows
// them, before anything is answered with it. Every thread of the
// runtime's thread table must be an OS thread of the target (its pthread
// id there is a thread pointer the target knows), the thread whose
// thread-local __kmp_gtid (where the stripped library still names it)
// holds its thread id, with a thread number its team's thread array
// agrees with, in a team of sane size and levels. One thread that
// contradicts the table, or none that confirms it, refuses it:
// ErrIncompatible naming the library and the release. A runtime that has
// not made its thread table yet is not initialized (ErrUnavailable).
func (rt *Runtime) confirmStock() error {
	st := rt.stock
	refuse := func(format string, args ...any) error {
		return errorf(omprt.ErrIncompatible, "%v read as %v (told by %s) is refused: %s; %s", st.lib, st.rel, st.why, fmt.Sprintf(format, args...), st.hint())
	}
	s := rt.stop()
	arr, err := rt.globalPtr("__kmp_threads")
	if err != nil {
		return refuse("%v", err)
	}
	if arr == 0 {
		return errorf(omprt.ErrUnavailable, "OpenMP runtime not initialized yet (%v has no thread table yet)", st.lib)
	}
	tt, err := s.table()
	if err != nil {
		return refuse("its thread table: %v", err)
	}
	o := s.osThreads()
	if o.err != nil {
		return o.err
	}
	confirmed := 0
	for pos, ref := range tt.refs {
		if err := tt.errs[pos]; err != nil {
			return refuse("thread %d: %v", ref.ID, err)
		}
		pt := tt.infos[pos].thread
		if pt == 0 {
			continue // starting: no pthread id recorded yet
		}
		lwp, known := o.lwpByPth[pt]
		if !known && len(o.lwpByPth) > 0 {
			return refuse("thread %d's entry in the thread table holds pthread %#x, which is no thread of the target", ref.ID, pt)
		}
		if known {
			if addr, err := rt.t.LookupThreadLocal(lwp, "__kmp_gtid"); err == nil {
				if g, err := rt.readUint(addr, 4, "__kmp_gtid"); err == nil && int32(g) >= 0 && int32(g) != ref.ID {
					return refuse("lwp %d, the thread of table entry %d, has thread id %d", lwp, ref.ID, int32(g))
				}
			}
		}
		ok, why := s.confirmTeam(tt, int32(pos))
		if why != "" {
			return refuse("thread %d: %s", ref.ID, why)
		}
		if ok && known {
			confirmed++
		}
	}
	if confirmed == 0 {
		return refuse("no thread confirms the table (none is a thread of the target in a team that holds it)")
	}
	return nil
}

// confirmTeam checks the thread at pos against its team: ok when the
// team's thread array holds it at its thread number; why says what breaks
// the table (a team of impossible size or levels).
func (s *stop) confirmTeam(tt *threadTable, pos int32) (ok bool, why string) {
	v := &tt.infos[pos]
	teamAddr := v.team
	if teamAddr == 0 {
		return false, ""
	}
	tm, err := s.teamFields(teamAddr, "team")
	if err != nil {
		return false, fmt.Sprintf("its team: %v", err)
	}
	if tm.nproc < 1 || int64(tm.nproc) > max(tt.capacity, 1) || tm.level < 0 || tm.level > maxLevel ||
		tm.activeLevel < 0 || tm.activeLevel > tm.level {
		return false, fmt.Sprintf("its team %#x has %d threads at level %d, active level %d", teamAddr, tm.nproc, tm.level, tm.activeLevel)
	}
	num := v.tid
	if num < 0 || num >= int64(tm.nproc) || tm.threads == 0 {
		return false, ""
	}
	p, err := s.rt.readPtr(tm.threads+uint64(num)*uint64(s.rt.mem.PtrSize), "team thread array")
	return err == nil && p == tt.refs[pos].Addr, ""
}

// stockErr is the error of a stripped runtime no known table fits:
// ErrIncompatible, with the target's lookup error (what it searched for
// debug information, matching target.ErrNotFound), why the tables did not
// fit, and what would help (s, as far as it got, says which library).
func stockErr(s *stockRuntime, serr, lookup error) error {
	return wrapErr(omprt.ErrIncompatible, lookup, "open: the OpenMP runtime is loaded but has no symbol ompd_sizeof__kmp_info_t or __kmp_threads: it is stripped and no usable debug information was found for it, and it cannot be read without: %v; %s", serr, s.hint())
}

// hint says what would let the runtime be read: its debug file, the
// package that carries it, and that a debuginfod server would fetch it.
func (s *stockRuntime) hint() string {
	pkg := "the debug package (-dbgsym) of the package that installed it"
	major := 0
	if s != nil && s.rel != nil {
		major = s.rel.major
	} else if s != nil && s.lib != nil {
		major = pathRelease(s.lib.name)
	}
	if major > 0 {
		pkg = fmt.Sprintf("the package libomp5-%d-dbgsym (Debian's debug archive; Ubuntu's ddebs archive)", major)
	}
	id := "its build-id"
	if s != nil && s.lib != nil && s.lib.buildID != "" {
		id += " " + s.lib.buildID
	}
	return fmt.Sprintf("its debug information would help: %s installs it under /usr/lib/debug, where it is found by %s, and a debuginfod server (DEBUGINFOD_URLS) would fetch it by %s", pkg, id, id)
}

// pathRelease returns the LLVM release a library's path names, 0 for
// none: Debian and Ubuntu install release N under /usr/lib/llvm-N.
func pathRelease(name string) int {
	_, after, ok := strings.Cut(name, "/llvm-")
	if !ok {
		return 0
	}
	n, _, _ := strings.Cut(after, "/")
	major, err := strconv.Atoi(n)
	if err != nil || major <= 0 {
		return 0
	}
	return major
}

// fieldOffset returns the offset of a member no OMPD table gives: from the
// runtime's DWARF, or for a stripped runtime from its release's table.
func (rt *Runtime) fieldOffset(typ, member string) (uint64, error) {
	if rt.stock != nil {
		if off, ok := rt.stock.rel.members[typ+"."+member]; ok {
			return off, nil
		}
	}
	return rt.t.FieldOffset(typ, member)
}

// bitField locates a bit-field member: from the runtime's DWARF (a target
// that is a target.BitFieldLocator), or for a stripped runtime from its
// release's table.
func (rt *Runtime) bitField(typ, member string) (bit, width uint64, err error) {
	if rt.stock != nil {
		if v, ok := rt.stock.rel.members[typ+"."+member+"#bit"]; ok {
			return v >> 8, v & 0xff, nil
		}
	}
	bl, ok := rt.t.(target.BitFieldLocator)
	if !ok {
		return 0, 0, fmt.Errorf("bit-field %s.%s: %w", typ, member, target.ErrUnsupported)
	}
	return bl.BitField(typ, member)
}

// LookupHidden looks up a hidden global or function of the runtime the way
// this package finds the ones it reads: by symbol, or in a stripped
// runtime through the code of its exported functions (stockNames). Tests
// use it to find what their checks need in a stripped runtime.
func (rt *Runtime) LookupHidden(name string) (uint64, error) { return rt.sym(name) }

// settingPrefix names a path's entry that is the print function of one of
// the runtime's settings (an environment variable), not an exported
// function: "setting:OMP_TOOL".
const settingPrefix = "setting:"

// maxSettings bounds the rows of the settings table read.
const maxSettings = 1024

// SettingTable is the layout of the runtime's table of settings
// (__kmp_stg_table, rows of kmp_setting_t) as a release's table records
// it.
type SettingTable struct {
	Addr                             uint64 // the table
	Rows, RowSize, NameOff, PrintOff uint64 // its rows, and the offsets in a row of the variable's name and print function
	Order                            binary.ByteOrder
}

// Print returns the print function of the setting called name: the rows
// are read from r (the runtime sorts them by name at start-up; the name
// decides).
func (st SettingTable) Print(r codescan.CodeReader, name string) (uint64, error) {
	if st.Rows == 0 || st.Rows > maxSettings || st.RowSize < 16 || st.NameOff+8 > st.RowSize || st.PrintOff+8 > st.RowSize {
		return 0, fmt.Errorf("settings table of %d rows of %d bytes", st.Rows, st.RowSize)
	}
	tab := make([]byte, st.Rows*st.RowSize)
	if err := r.ReadMemory(tab, st.Addr); err != nil {
		return 0, err
	}
	want := append([]byte(name), 0)
	buf := make([]byte, len(want))
	for i := uint64(0); i < st.Rows; i++ {
		row := tab[i*st.RowSize:]
		p := st.Order.Uint64(row[st.NameOff:])
		if p == 0 || r.ReadMemory(buf, p) != nil || string(buf) != string(want) {
			continue
		}
		return st.Order.Uint64(row[st.PrintOff:]), nil
	}
	return 0, fmt.Errorf("no setting %s in the settings table at %#x", name, st.Addr)
}
