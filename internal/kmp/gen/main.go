// Command gen writes internal/kmp's table of known LLVM OpenMP runtime
// releases (known_releases.go) from the project's own builds of them, with
// symbols and OMPD tables, built as Debian builds them
// (scripts/build-releases.sh): for each release
//
//   - the values its OMPD layout tables hold (ompd_access__*,
//     ompd_sizeof__*, ompd_bitfield__*), in the order the runtime's
//     ompd_init stores them, read from the immediates of those stores;
//   - the offsets of the few members package kmp reads that no OMPD table
//     gives, from the build's DWARF;
//   - the exported functions that no older release exports (how a stripped
//     library's release is told);
//   - for every hidden global and function kmp reads (stockNames in
//     stocknames.go), up to maxPaths paths from exported functions through
//     calls to the instruction that refers to it (codescan.Path), with the
//     shapes of the code on the way;
//   - the build-ids of Debian's stock binaries of the release
//     (scripts/stock-libomp.sh), which are checked: each path must lead
//     them to one address, and their own ompd_init must store the values
//     recorded.
//
// Run it with go generate in internal/kmp (it runs the scripts, which
// build or fetch what is missing into the cache).
package main

import (
	"bufio"
	"bytes"
	"debug/elf"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/internal/codescan"
	"github.com/ompd-go/ompd/internal/kmp"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/target"
)

// maxPaths bounds the paths recorded per name; maxDepth the calls a path
// goes through.
const (
	maxPaths  = 3
	maxDepth  = 6
	maxVisits = 3
)

// dwarfMembers are the members kmp reads that no OMPD table gives: "type
// member" pairs. A release that lacks one has no entry for it.
var dwarfMembers = [][2]string{
	{"kmp_base_team_t", "t_argv"}, {"kmp_base_info_t", "th_ident"},
	{"kmp_global_t", "g"}, {"kmp_base_global_t", "g_dynamic"}, {"kmp_base_global_t", "g_dynamic_mode"},
	{"kmp_affinity_t", "flags"}, {"kmp_affinity_t", "gran"}, {"kmp_affinity_t", "compact"},
	{"kmp_affinity_t", "offset"}, {"kmp_affinity_t", "type"}, {"kmp_affinity_t", "num_masks"},
	{"kmp_affinity_t", "proclist"}, {"kmp_affinity_t", "core_attr_gran"},
}

// dwarfBitFields are the one-bit (or few-bit) members kmp reads: recorded
// as "type.member#bit", the bit offset shifted left by 8 plus the width.
var dwarfBitFields = [][2]string{
	{"kmp_affinity_flags_t", "verbose"}, {"kmp_affinity_flags_t", "warnings"},
	{"kmp_affinity_flags_t", "respect"}, {"kmp_affinity_flags_t", "reset"},
	{"kmp_affinity_flags_t", "core_types_gran"}, {"kmp_affinity_flags_t", "core_effs_gran"},
	{"kmp_affinity_attrs_t", "valid"},
}

func main() {
	out := flag.String("o", "known_releases.go", "output file")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("kmp/gen: ")
	names, err := readNames("stocknames.go")
	if err != nil {
		log.Fatal(err)
	}
	builds := releaseBuilds()
	stock := stockBuilds()
	var rels []*release
	for _, b := range builds {
		r, err := analyze(b, names)
		if err != nil {
			log.Fatalf("%s: %v", b.path, err)
		}
		r.stock = stock[r.major]
		for _, s := range r.stock {
			if err := check(r, s); err != nil {
				log.Fatalf("stock %s %s: %v", s.pkg, s.version, err)
			}
		}
		rels = append(rels, r)
	}
	markers(rels)
	var b bytes.Buffer
	write(&b, rels)
	src, err := format.Source(b.Bytes())
	if err != nil {
		log.Fatalf("format: %v", err)
	}
	if err := os.WriteFile(*out, src, 0o644); err != nil {
		log.Fatal(err)
	}
}

// build is one of the project's builds of a release.
type build struct {
	major         int
	version, path string
}

// script runs scripts/NAME with args and returns its standard output.
func script(name string, args ...string) string {
	path, err := filepath.Abs(filepath.Join("..", "..", "scripts", name))
	if err != nil {
		log.Fatal(err)
	}
	cmd := exec.Command("bash", append([]string{path}, args...)...)
	cmd.Stderr = os.Stderr
	outb, err := cmd.Output()
	if err != nil {
		log.Fatalf("%s %s: %v", path, strings.Join(args, " "), err)
	}
	return string(outb)
}

func releaseBuilds() []build {
	script("build-releases.sh")
	dir := strings.TrimSpace(script("build-releases.sh", "--print-dir"))
	var out []build
	for _, line := range strings.Split(strings.TrimSpace(script("build-releases.sh", "--list")), "\n") {
		f := strings.Fields(line)
		major, _ := strconv.Atoi(f[0])
		out = append(out, build{major, f[1], filepath.Join(dir, f[0], "lib", "libomp.so")})
	}
	return out
}

// stockBin is one of Debian's stock binaries of a release.
type stockBin struct {
	pkg, version, buildID, path string
}

func stockBuilds() map[int][]stockBin {
	script("stock-libomp.sh")
	dir := strings.TrimSpace(script("stock-libomp.sh", "--print-dir"))
	out := map[int][]stockBin{}
	for _, line := range strings.Split(strings.TrimSpace(script("stock-libomp.sh", "--list")), "\n") {
		f := strings.Fields(line)
		major, _ := strconv.Atoi(f[1])
		entry := filepath.Join(dir, f[0]+"-"+f[1])
		info := map[string]string{}
		data, err := os.ReadFile(filepath.Join(entry, "info"))
		if err != nil {
			log.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), "=")
			info[k] = v
		}
		out[major] = append(out[major], stockBin{info["package"], info["version"], info["buildid"],
			filepath.Join(entry, info["lib"], "libomp.so.5")})
	}
	return out
}

// release is what the table records of one release.
type release struct {
	major   int
	version string
	stock   []stockBin
	exports map[string]bool
	markers []string
	// ompdNames and ompdValues: the OMPD table entries in ompd_init's
	// order of stores, and what it stores.
	ompdNames  []string
	ompdValues []uint64
	members    map[string]uint64 // "type.member" -> offset
	paths      map[string][]codescan.Path
}

// image is an ELF file read for analysis: its functions, objects and code.
type image struct {
	f       *elf.File
	funcs   []sym // by address
	byName  map[string]sym
	byAddr  map[uint64]sym
	objects map[uint64]sym // objects and functions by start address
	arch    codescan.Arch
	refs    map[uint64][]codescan.Ref
	rel     map[uint64]uint64 // what R_X86_64_RELATIVE relocations write
}

type sym struct {
	name       string
	addr, size uint64
	object     bool
}

func openImage(path string) (*image, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	arch, err := codescan.ForMachine(f.Machine)
	if err != nil {
		return nil, err
	}
	im := &image{f: f, byName: map[string]sym{}, byAddr: map[uint64]sym{}, objects: map[uint64]sym{},
		arch: arch, refs: map[uint64][]codescan.Ref{}}
	syms, err := f.Symbols()
	if err != nil {
		return nil, fmt.Errorf("symbols: %w", err)
	}
	for _, s := range syms {
		t := elf.ST_TYPE(s.Info)
		if s.Section == elf.SHN_UNDEF || s.Value == 0 || (t != elf.STT_FUNC && t != elf.STT_OBJECT) {
			continue
		}
		y := sym{name: s.Name, addr: s.Value, size: s.Size, object: t == elf.STT_OBJECT}
		if _, ok := im.byName[s.Name]; !ok {
			im.byName[s.Name] = y
		}
		if _, ok := im.objects[s.Value]; !ok || elf.ST_BIND(s.Info) == elf.STB_GLOBAL {
			im.objects[s.Value] = y
		}
		if t == elf.STT_FUNC && s.Size > 0 {
			if _, ok := im.byAddr[s.Value]; !ok {
				im.byAddr[s.Value] = y
				im.funcs = append(im.funcs, y)
			}
		}
	}
	sort.Slice(im.funcs, func(i, j int) bool { return im.funcs[i].addr < im.funcs[j].addr })
	return im, nil
}

// ReadMemory reads the file's loaded image at a virtual address, with
// the relocations in rel applied.
func (im *image) ReadMemory(buf []byte, addr uint64) error {
	for _, p := range im.f.Progs {
		if p.Type != elf.PT_LOAD || addr < p.Vaddr || addr+uint64(len(buf)) > p.Vaddr+p.Filesz {
			continue
		}
		if _, err := p.ReadAt(buf, int64(addr-p.Vaddr)); err != nil {
			return err
		}
		for a := addr &^ 7; a < addr+uint64(len(buf)); a += 8 {
			if v, ok := im.rel[a]; ok && a >= addr && a+8 <= addr+uint64(len(buf)) {
				im.f.ByteOrder.PutUint64(buf[a-addr:], v)
			}
		}
		return nil
	}
	return fmt.Errorf("%#x: not in the file's loaded segments", addr)
}

// scan returns the references of a function, whole.
func (im *image) scan(fn sym) []codescan.Ref {
	if r, ok := im.refs[fn.addr]; ok {
		return r
	}
	code := make([]byte, fn.size)
	var refs []codescan.Ref
	if err := im.ReadMemory(code, fn.addr); err == nil {
		im.arch.Scan(code, fn.addr, func(r codescan.Ref) bool {
			refs = append(refs, r)
			return true
		})
	}
	im.refs[fn.addr] = refs
	return refs
}

// exported returns the defined functions of the dynamic symbol table, by
// name without version.
func exported(f *elf.File) (map[string]uint64, error) {
	dyn, err := f.DynamicSymbols()
	if err != nil {
		return nil, err
	}
	out := map[string]uint64{}
	for _, s := range dyn {
		if elf.ST_TYPE(s.Info) != elf.STT_FUNC || s.Section == elf.SHN_UNDEF {
			continue
		}
		name, _, _ := strings.Cut(s.Name, "@")
		out[name] = s.Value
	}
	return out, nil
}

func analyze(b build, names []string) (*release, error) {
	im, err := openImage(b.path)
	if err != nil {
		return nil, err
	}
	defer im.f.Close()
	r := &release{major: b.major, version: b.version, members: map[string]uint64{}, paths: map[string][]codescan.Path{}}
	exp, err := exported(im.f)
	if err != nil {
		return nil, err
	}
	r.exports = map[string]bool{}
	for n := range exp {
		r.exports[n] = true
	}

	// The OMPD tables, from ompd_init's stores.
	initSym, ok := im.byName[objfile.CXXFuncName("ompd_init")]
	if !ok {
		initSym, ok = im.byName["ompd_init"]
	}
	if !ok {
		return nil, fmt.Errorf("no ompd_init")
	}
	r.ompdNames, r.ompdValues = ompdStores(im.scan(initSym), func(a uint64) string { return im.objects[a].name })
	if len(r.ompdNames) < 50 {
		return nil, fmt.Errorf("ompd_init stores only %d table entries", len(r.ompdNames))
	}

	o, err := objfile.Open(b.path, 0)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	for _, m := range dwarfMembers {
		off, err := o.FieldOffset(m[0], m[1])
		if errors.Is(err, target.ErrNotFound) {
			continue // not in this release
		}
		if err != nil {
			return nil, err
		}
		r.members[m[0]+"."+m[1]] = off
	}
	for _, m := range dwarfBitFields {
		bit, width, err := o.BitField(m[0], m[1])
		if errors.Is(err, target.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		r.members[m[0]+"."+m[1]+"#bit"] = bit<<8 | width
	}

	if im.rel, err = relative(im.f); err != nil {
		return nil, err
	}
	// The settings table: the print function of each environment
	// variable is an entry too ("setting:NAME"), reached through the
	// table's rows.
	if err := settings(im, o, r, exp); err != nil {
		return nil, err
	}

	// Paths to every name, from the exported functions.
	targets := map[uint64]string{}
	for _, n := range names {
		if s, ok := symbolOf(im, n); ok {
			targets[s.addr] = n
		}
	}
	found := findPaths(im, exp, targets)
	for _, n := range names {
		if p := found[n]; len(p) > 0 {
			r.paths[n] = p
		} else if _, ok := symbolOf(im, n); ok && !r.exports[n] {
			// (An exported function needs no path: its symbol is there.)
			log.Printf("%s: no path to %s", b.version, n)
		}
	}
	return r, nil
}

// settings adds the print function of each row of the runtime's settings
// table (__kmp_stg_table, kmp_setting_t rows: the environment variable's
// name and its parse and print functions) to the entries, as
// "setting:NAME", and records the table's layout in the release's members:
// those functions are the only code that names many of the globals the
// display control variables come from.
func settings(im *image, o *objfile.Object, r *release, entries map[string]uint64) error {
	tab, ok := symbolOf(im, "__kmp_stg_table")
	if !ok {
		return fmt.Errorf("no __kmp_stg_table")
	}
	size, err := o.TypeSize("kmp_setting_t")
	if err != nil {
		return err
	}
	nameOff, err := o.FieldOffset("kmp_setting_t", "name")
	if err != nil {
		return err
	}
	printOff, err := o.FieldOffset("kmp_setting_t", "print")
	if err != nil {
		return err
	}
	r.members["kmp_setting_t"] = size
	r.members["kmp_setting_t.name"] = nameOff
	r.members["kmp_setting_t.print"] = printOff
	r.members["__kmp_stg_table.rows"] = tab.size / size
	for row := tab.addr; row+size <= tab.addr+tab.size; row += size {
		name, fn := im.rel[row+nameOff], im.rel[row+printOff]
		if name == 0 || fn == 0 {
			continue
		}
		buf := make([]byte, 64)
		if err := im.ReadMemory(buf, name); err != nil {
			return err
		}
		n, _, _ := bytes.Cut(buf, []byte{0})
		entries["setting:"+string(n)] = fn
	}
	return nil
}

// relative returns the values R_X86_64_RELATIVE relocations put at each
// address: what a pointer in initialized data holds once loaded.
func relative(f *elf.File) (map[uint64]uint64, error) {
	out := map[uint64]uint64{}
	s := f.Section(".rela.dyn")
	if s == nil {
		return out, nil
	}
	d, err := s.Data()
	if err != nil {
		return nil, err
	}
	for o := 0; o+24 <= len(d); o += 24 {
		info := f.ByteOrder.Uint64(d[o+8:])
		if elf.R_X86_64(elf.R_TYPE64(info)) == elf.R_X86_64_RELATIVE {
			out[f.ByteOrder.Uint64(d[o:])] = f.ByteOrder.Uint64(d[o+16:])
		}
	}
	return out, nil
}

// symbolOf finds a name's symbol: as it is, or compiled as C++ (a
// function, its parameters' types after its name, or a file-static
// variable or function).
func symbolOf(im *image, n string) (sym, bool) {
	if s, ok := im.byName[n]; ok {
		return s, true
	}
	l := strconv.Itoa(len(n))
	var best sym
	found := false
	for name, s := range im.byName {
		if strings.HasPrefix(name, "_Z"+l+n) || strings.HasPrefix(name, "_ZL"+l+n) {
			if !found || name < best.name {
				best, found = s, true
			}
		}
	}
	return best, found
}

// ompdStores returns the OMPD table entries a scan of ompd_init stores
// constants in, and the constants, in order. name names an address.
func ompdStores(refs []codescan.Ref, name func(uint64) string) ([]string, []uint64) {
	var names []string
	var vals []uint64
	for _, ref := range refs {
		if ref.Kind != codescan.Data || !ref.Store {
			continue
		}
		n := name(ref.Target)
		if strings.HasPrefix(n, "ompd_access__") || strings.HasPrefix(n, "ompd_sizeof__") || strings.HasPrefix(n, "ompd_bitfield__") {
			names = append(names, n)
			vals = append(vals, uint64(ref.Imm))
		}
	}
	return names, vals
}

// candidate is a path to a name with its cost: the references decoded on
// the way (fewer is sturdier against another compiler's code).
type candidate struct {
	path codescan.Path
	cost int
	via  uint64 // the function whose reference names the target
}

// findPaths finds, for every target address, the cheapest paths from the
// exported functions: a shortest-path search over the call graph, each
// function reached by its maxVisits cheapest paths (several, so that a
// name only one function refers to still has paths that part early: one
// function compiled otherwise then breaks only some of them).
func findPaths(im *image, exp map[string]uint64, targets map[uint64]string) map[string][]codescan.Path {
	type node struct {
		fn    sym
		entry string
		steps []codescan.Step
		cost  int
	}
	var entries []string
	for n := range exp {
		entries = append(entries, n)
	}
	sort.Strings(entries)
	visits := map[uint64]int{}
	var queue []node
	for _, n := range entries {
		fn, ok := im.byAddr[exp[n]]
		if !ok {
			continue
		}
		queue = append(queue, node{fn: fn, entry: n})
	}
	cands := map[string][]candidate{}
	for len(queue) > 0 {
		// The cheapest node first (the queue is small: a linear pick).
		i := 0
		for j := range queue {
			if queue[j].cost < queue[i].cost {
				i = j
			}
		}
		nd := queue[i]
		queue = append(queue[:i], queue[i+1:]...)
		if visits[nd.fn.addr] >= maxVisits {
			continue
		}
		visits[nd.fn.addr]++
		for k, ref := range im.scan(nd.fn) {
			steps := append(slices.Clone(nd.steps), codescan.Step{Ref: k, Shape: ref.Shape})
			cost := nd.cost + k + 1
			if name, ok := targets[ref.Target]; ok {
				cands[name] = append(cands[name], candidate{codescan.Path{Entry: nd.entry, Steps: steps}, cost, nd.fn.addr})
			}
			if len(steps) >= maxDepth {
				continue
			}
			// A function called, jumped to, or whose address the code
			// takes (a thread's start routine, say).
			callee, ok := im.byAddr[ref.Target]
			if !ok {
				continue
			}
			cost += 20 // each call a path goes through is another function to match
			if visits[callee.addr] >= maxVisits {
				continue
			}
			queue = append(queue, node{fn: callee, entry: nd.entry, steps: steps, cost: cost})
		}
	}
	out := map[string][]codescan.Path{}
	for name, cs := range cands {
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].cost < cs[j].cost })
		// Paths through different functions first: one function
		// compiled differently then fails one path, not all.
		used := map[uint64]bool{}
		var picked []codescan.Path
		for pass := 0; pass < 2 && len(picked) < maxPaths; pass++ {
			for _, c := range cs {
				if len(picked) == maxPaths {
					break
				}
				if pass == 0 && used[c.via] || slices.ContainsFunc(picked, func(p codescan.Path) bool { return samePath(p, c.path) }) {
					continue
				}
				used[c.via] = true
				picked = append(picked, c.path)
			}
		}
		out[name] = picked
	}
	return out
}

func samePath(a, b codescan.Path) bool {
	return a.Entry == b.Entry && slices.Equal(a.Steps, b.Steps)
}

// check follows every path of r in a stock binary of the release: each
// name's paths must lead to one address there, and the binary's own
// ompd_init must store r's values.
func check(r *release, s stockBin) error {
	f, err := elf.Open(s.path)
	if err != nil {
		return err
	}
	defer f.Close()
	arch, err := codescan.ForMachine(f.Machine)
	if err != nil {
		return err
	}
	rel, err := relative(f)
	if err != nil {
		return err
	}
	im := &image{f: f, rel: rel}
	exp, err := exported(f)
	if err != nil {
		return err
	}
	var inexact, total, loose int
	found := map[string]uint64{}
	var resolve func(name string) (uint64, bool)
	entry := func(name string) (uint64, error) {
		setting, ok := strings.CutPrefix(name, "setting:")
		if !ok {
			a, ok := exp[name]
			if !ok {
				return 0, fmt.Errorf("does not export %s", name)
			}
			return a, nil
		}
		tab, ok := resolve("__kmp_stg_table")
		if !ok {
			return 0, fmt.Errorf("no __kmp_stg_table")
		}
		m := r.members
		st := kmp.SettingTable{Addr: tab, Rows: m["__kmp_stg_table.rows"], RowSize: m["kmp_setting_t"],
			NameOff: m["kmp_setting_t.name"], PrintOff: m["kmp_setting_t.print"], Order: f.ByteOrder}
		return st.Print(im, setting)
	}
	done := map[string]bool{}
	resolve = func(name string) (uint64, bool) {
		if done[name] {
			a, ok := found[name]
			return a, ok
		}
		done[name] = true
		// As package kmp decides: the exact paths must agree; without
		// one, at least two loose ones must, and none may disagree.
		var exactAt, looseAt []uint64
		for _, p := range r.paths[name] {
			e, err := entry(p.Entry)
			total++
			if err != nil {
				inexact++
				continue
			}
			a, exact, err := codescan.Follow(arch, im, e, p)
			if os.Getenv("KMPGEN_DEBUG") == name {
				log.Printf("%s: %+v: %#x exact %v err %v", name, p, a, exact, err)
			}
			switch {
			case err != nil:
				inexact++
			case exact:
				exactAt = append(exactAt, a)
			default:
				inexact++
				looseAt = append(looseAt, a)
			}
		}
		got := slices.Compact(slices.Sorted(slices.Values(exactAt)))
		if len(got) > 1 {
			log.Fatalf("stock %s: %s: the paths lead to %#x", s.pkg, name, got)
		}
		if len(got) == 0 && len(looseAt) >= 2 {
			if got = slices.Compact(slices.Sorted(slices.Values(looseAt))); len(got) == 1 {
				loose++
			} else {
				got = nil
			}
		}
		if len(got) == 1 {
			found[name] = got[0]
			return got[0], true
		}
		return 0, false
	}
	for _, name := range sortedKeys(r.paths) {
		resolve(name)
	}
	init, ok := found["ompd_init"]
	if !ok {
		log.Printf("%s %s (%s): no path leads to ompd_init: built by another compiler than the table's build? %d of %d names found", s.pkg, s.version, s.buildID, len(found), len(r.paths))
		return nil
	}
	// The stores of the stock ompd_init.
	code := make([]byte, 8192)
	if err := im.ReadMemory(code, init); err != nil {
		return err
	}
	var vals []uint64
	arch.Scan(code, init, func(ref codescan.Ref) bool {
		if ref.Kind == codescan.Data && ref.Store {
			vals = append(vals, uint64(ref.Imm))
		}
		return true
	})
	if len(vals) < len(r.ompdValues) || !slices.Equal(vals[:len(r.ompdValues)], r.ompdValues) {
		return fmt.Errorf("its ompd_init stores other OMPD table values than the build's")
	}
	var missing []string
	for _, n := range sortedKeys(r.paths) {
		if _, ok := found[n]; !ok {
			missing = append(missing, n)
		}
	}
	log.Printf("%s %s (%s): %d of %d names found (%d by loose paths; not: %s), %d of %d paths not exact; OMPD tables agree",
		s.pkg, s.version, s.buildID, len(found), len(r.paths), loose, strings.Join(missing, " "), inexact, total)
	return nil
}

// maxMarkers bounds the markers recorded per release: a few suffice.
const maxMarkers = 4

// markers sets each release's markers: the functions it exports and no
// older release does (at most maxMarkers of them).
func markers(rels []*release) {
	sort.Slice(rels, func(i, j int) bool { return rels[i].major < rels[j].major })
	older := map[string]bool{}
	for _, r := range rels {
		for n := range r.exports {
			if !older[n] {
				r.markers = append(r.markers, n)
			}
		}
		sort.Strings(r.markers)
		if len(r.markers) > maxMarkers {
			r.markers = r.markers[:maxMarkers]
		}
		for n := range r.exports {
			older[n] = true
		}
	}
	rels[0].markers = nil // the oldest release is what none of the others is
}

func write(b *bytes.Buffer, rels []*release) {
	fmt.Fprintf(b, "// Code generated by internal/kmp/gen from the project's builds of LLVM's OpenMP runtime (scripts/build-releases.sh, scripts/build-runtime.sh) and Debian's stock binaries (scripts/stock-libomp.sh); DO NOT EDIT.\n\npackage kmp\n\nimport \"github.com/ompd-go/ompd/internal/codescan\"\n\n")
	// The OMPD entry names, once per distinct list.
	var lists [][]string
	listName := func(names []string) string {
		i := slices.IndexFunc(lists, func(l []string) bool { return slices.Equal(l, names) })
		if i < 0 {
			i = len(lists)
			lists = append(lists, names)
		}
		return fmt.Sprintf("ompdEntries%d", i)
	}
	for _, r := range rels {
		listName(r.ompdNames)
	}
	for i, l := range lists {
		fmt.Fprintf(b, "// ompdEntries%d are OMPD table entries in the order ompd_init stores them.\nvar ompdEntries%d = []string{\n", i, i)
		for _, n := range l {
			fmt.Fprintf(b, "\t%q,\n", n)
		}
		fmt.Fprintf(b, "}\n\n")
	}
	fmt.Fprintf(b, "// knownReleases are the LLVM releases whose libomp a stripped runtime is read as.\nvar knownReleases = []*release{\n")
	for _, r := range rels {
		fmt.Fprintf(b, "\t{\n\t\tmajor: %d,\n\t\tversion: %q,\n", r.major, r.version)
		if len(r.stock) > 0 {
			fmt.Fprintf(b, "\t\tstock: []stockBuild{\n")
			for _, s := range r.stock {
				fmt.Fprintf(b, "\t\t\t{pkg: %q, version: %q, buildID: %q},\n", s.pkg, s.version, s.buildID)
			}
			fmt.Fprintf(b, "\t\t},\n")
		}
		fmt.Fprintf(b, "\t\tmarkers: %#v,\n", r.markers)
		fmt.Fprintf(b, "\t\tompdEntries: %s,\n\t\tompdValues: []uint64{", listName(r.ompdNames))
		for i, v := range r.ompdValues {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(b, "%#x", v)
		}
		fmt.Fprintf(b, "},\n\t\tmembers: map[string]uint64{\n")
		for _, k := range sortedKeys(r.members) {
			fmt.Fprintf(b, "\t\t\t%q: %#x,\n", k, r.members[k])
		}
		fmt.Fprintf(b, "\t\t},\n\t\tpaths: map[string][]codescan.Path{\n")
		for _, k := range sortedKeys(r.paths) {
			fmt.Fprintf(b, "\t\t\t%q: {", k)
			for _, p := range r.paths[k] {
				fmt.Fprintf(b, "{Entry: %q, Steps: []codescan.Step{", p.Entry)
				for i, s := range p.Steps {
					if i > 0 {
						b.WriteString(", ")
					}
					fmt.Fprintf(b, "{Ref: %d, Shape: %#x}", s.Ref, s.Shape)
				}
				b.WriteString("}}, ")
			}
			b.WriteString("},\n")
		}
		fmt.Fprintf(b, "\t\t},\n\t},\n")
	}
	fmt.Fprintf(b, "}\n")
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// readNames takes the names to find from the package's own list
// (stockNames in stocknames.go), so that the two cannot drift apart.
func readNames(file string) ([]string, error) {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		return nil, err
	}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			if len(vs.Names) != 1 || vs.Names[0].Name != "stockNames" || len(vs.Values) != 1 {
				continue
			}
			cl, ok := vs.Values[0].(*ast.CompositeLit)
			if !ok {
				break
			}
			var out []string
			for _, e := range cl.Elts {
				if bl, ok := e.(*ast.BasicLit); ok {
					v, err := strconv.Unquote(bl.Value)
					if err != nil {
						return nil, err
					}
					out = append(out, v)
				}
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("%s: no stockNames", file)
}
