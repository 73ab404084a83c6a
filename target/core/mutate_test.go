package core

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
)

// The mutation harness: seeded, deterministic corruptions of the fixtures'
// real cores, on LLVM's runtime and on libgomp 12 and 14 (truncations;
// bytes of the ELF header, the program headers, the notes, the NT_FILE
// list; bytes of the runtime memory that the library reads: for libomp the
// OMPD tables and other runtime globals, the __kmp_threads table,
// kmp_info_t, teams, tasks; for libgomp its image (the slot of its
// thread-local storage offset, the build-id its layout is chosen by, its
// globals), each thread's struct gomp_thread (which confirms the layout),
// teams and tasks; and the innermost 4 KiB of every thread's stack) and of
// copies of their executable, runtime library and C library (headers,
// symbol tables, notes, DWARF, call-frame information), each one opened
// and walked through the whole API (one in 100 by four goroutines at once,
// for the race detector), with backtraces for the stack and object
// mutations and one in 50 others. For every mutation: no panic, every
// call returns within mutationDeadline, allocation stays under
// mutationAllocs, every error matches one of the package's sentinels, and
// every answer keeps the invariants of ompdtest.Invariants and
// ompdtest.BacktraceInvariants.
//
// OMPD_GO_MUTATIONS sets how many mutations run (default
// defaultMutations, spread over the fixtures), or for how long if it is a
// duration ("30m"); OMPD_GO_MUTATIONS_SEED changes the seed (default 1).
// OMPD_GO_MUTATION_ONLY=[fixture:]index runs that one mutation of the
// seed (of every fixture, or of the one named) and nothing else.
// A failure names its fixture, seed and mutation; add it to
// mutationRegressions so that it stays fixed.

const (
	defaultMutations = 3000
	mutationDeadline = 60 * time.Second
	mutationAllocs   = 1 << 30 // bytes allocated by one mutation's walk
	mutationHeap     = 4 << 30 // heap while one mutation runs
// walkLimit bounds the harness's own walks of handle chains: an
// Enclosing or Generating chain longer than this is endless.
)

// mutationRegressions are mutations that once failed (fixture, seed,
// index): they run on every test run. An id names a mutation of the
// fixture's core as the pinned runtime and the compiler build it; a
// fixture rebuilt differently maps it to other bytes, which is why each
// entry says what it found (the same kind of corruption stays in the
// seeded set).
var mutationRegressions = []mutationID{
	{fixtures.Serialized, 7, 3095},        // active level above the level
	{fixtures.Serialized, 3, 2723},        // active level above the level
	{fixtures.Nested, 21, 983},            // a thread table of 32767: the harness itself allocated 1.5 GB
	{fixtures.Serialized, 101, 79049},     // the executable's .debug_line: debug/dwarf looped over a corrupt file count
	{fixtures.Tasks, 4242, 2783},          // __kmp_threads_capacity + 2^18: a kmp_info_t read for each garbage entry, 5 GB heap
	{"gomp12/" + fixtures.Nested, 1, 418}, // a team's level: a region's enclosing error said stale handle in unchanged memory
}

type mutationID struct {
	fixture string
	seed    uint64
	index   int
}

// mutationFixture is a fixture core mutated: of the program name run
// with args, on LLVM's runtime or, if gomp names one of
// fixtures.GompVersions, on that libgomp. key names it in mutation ids.
type mutationFixture struct {
	key, name string
	args      []string
	gomp      string
}

// mutationFixtures are the fixture cores mutated.
var mutationFixtures = []mutationFixture{
	{fixtures.Nested, fixtures.Nested, nil, ""},
	{fixtures.Serialized, fixtures.Serialized, nil, ""},
	{fixtures.Tasks, fixtures.Tasks, nil, ""},
	{fixtures.ICVs, fixtures.ICVs, nil, ""},
	{fixtures.Many, fixtures.Many, []string{"4"}, ""},
	{"gomp12/" + fixtures.Nested, fixtures.Nested, nil, fixtures.GompVersions[0]},
	{"gomp14/" + fixtures.Tasks, fixtures.Tasks, nil, fixtures.GompVersions[1]},
}

// overlay is a core file in memory with some bytes changed and possibly
// cut short; base is shared by all mutations of a fixture.
type overlay struct {
	base    []byte
	size    int64
	patches []patch
}

type patch struct {
	off  int64
	data []byte
}

func (o *overlay) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, errors.New("negative offset")
	}
	if off >= o.size {
		return 0, io.EOF
	}
	n := copy(p, o.base[off:o.size])
	for _, pt := range o.patches {
		lo, hi := max(off, pt.off), min(off+int64(n), pt.off+int64(len(pt.data)))
		if lo < hi {
			copy(p[lo-off:hi-off], pt.data[lo-pt.off:hi-pt.off])
		}
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// withReader returns a Core that shares c's objects and mapped files but
// reads the core file through r (which has c's headers and notes): a
// mutation of runtime memory without opening everything again. It must
// not be closed.
func (c *Core) withReader(r io.ReaderAt) *Core {
	m := &memory{layers: c.mem.layers}
	l := make(layer, len(m.layers[layerCore]))
	for i, rg := range m.layers[layerCore] {
		if cs, ok := rg.src.(coreSource); ok {
			rg.src = coreSource{r: r, off: cs.off}
		}
		l[i] = rg
	}
	m.layers[layerCore] = l
	return &Core{r: r, d: c.d, mem: m, set: c.set, files: c.files, infos: c.infos, warnings: c.warnings, missingObjs: c.missingObjs}
}

// span is a range of the core file that a mutation may hit.
type span struct {
	off, size int64
	addr      uint64 // run-time address of off, for memory spans
}

// mutator knows where things are in one fixture's core.
type mutator struct {
	name     string
	exe      string
	data     []byte
	clean    *Core
	regions  map[string][]span      // by kind, for memory mutations
	kinds    []string               // sorted keys of regions
	header   []span                 // ELF header, program headers, notes, NT_FILE
	pointers []uint64               // addresses worth pointing at
	fields   map[string][][2]uint64 // kind -> fields (offset, size) read
	// Private copies of the executable and the runtime library, which
	// object mutations change in place (and restore), and where their
	// parts are.
	objFiles []objFile
	libName  string // the runtime library as the core names it
}

// objFile is a copy of an object file of the core and its parts.
type objFile struct {
	kind  string // "executable file", "runtime library file" or "C library file"
	name  string // as the core names it ("" for the executable)
	path  string
	data  []byte
	parts []span
}

// newMutator is newMutatorFor a fixture on LLVM's runtime.
func newMutator(t *testing.T, name string, args []string) *mutator {
	return newMutatorFor(t, mutationFixture{key: name, name: name, args: args})
}

// newMutatorFor opens the fixture's core, finds the runtime's structures
// (from its symbols, or where a walk reads), the threads' stacks and the
// objects' parts, and sorts them into kinds.
func newMutatorFor(t *testing.T, f mutationFixture) *mutator {
	info := fixtures.Runtime(t)
	lib := "libomp.so"
	if f.gomp != "" {
		info, lib = fixtures.GompRuntime(t, f.gomp), "libgomp.so"
	}
	stop := fixtures.CoreWith(t, info, f.name, f.args...)
	data, err := os.ReadFile(stop.Core)
	require.NoError(t, err)
	c, err := Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	m := &mutator{name: f.key, exe: stop.Exe, data: data, clean: c, regions: make(map[string][]span)}

	as, err := ompd.Open(c)
	require.NoError(t, err)
	defer as.Close()
	require.Empty(t, ompdtest.Invariants(as), "the clean core breaks an invariant")
	require.Empty(t, ompdtest.BacktraceInvariants(context.Background(), as), "the clean core's stacks break an invariant")
	if f.gomp != "" {
		m.gompRegions(t)
	} else {
		m.kmpRegions(t, as)
	}
	m.stackRegions(t)
	for k, s := range m.regions {
		sort.Slice(s, func(i, j int) bool { return s[i].off < s[j].off || s[i].off == s[j].off && s[i].size < s[j].size })
		m.kinds = append(m.kinds, k)
	}
	sort.Strings(m.kinds)
	sort.Slice(m.pointers, func(i, j int) bool { return m.pointers[i] < m.pointers[j] })

	// Copies of the executable, the runtime library and the C library
	// (whose call-frame information unwinds most frames) for the object
	// mutations.
	var libcName, libcPath string
	for _, o := range objectsOf(t, c) {
		switch base := filepath.Base(o.Name); {
		case strings.HasPrefix(base, lib):
			m.libName = o.Name
		case strings.HasPrefix(base, "libc.so"):
			libcName, libcPath = o.Name, o.Path
		}
	}
	require.NotEmpty(t, m.libName)
	require.NotEmpty(t, libcPath)
	dir := t.TempDir()
	for _, f := range []struct{ kind, name, src string }{
		{"executable file", "", stop.Exe}, {"runtime library file", m.libName, stop.Runtime.LibOMP}, {"C library file", libcName, libcPath},
	} {
		b, err := os.ReadFile(f.src)
		require.NoError(t, err)
		of := objFile{kind: f.kind, name: f.name, path: filepath.Join(dir, filepath.Base(f.src)), data: b}
		require.NoError(t, os.WriteFile(of.path, b, 0o644))
		ef, err := elf.Open(f.src)
		require.NoError(t, err)
		le := binary.LittleEndian
		if f.kind != "C library file" { // its CFI only: the others are read as before
			of.parts = append(of.parts, span{off: 0, size: 64},
				span{off: int64(le.Uint64(b[32:])), size: int64(le.Uint16(b[54:])) * int64(le.Uint16(b[56:]))},
				span{off: int64(le.Uint64(b[40:])), size: int64(le.Uint16(b[58:])) * int64(le.Uint16(b[60:]))})
		}
		for _, name := range []string{".note.gnu.build-id", ".dynsym", ".dynstr", ".symtab", ".strtab", ".dynamic", ".gnu.hash", ".gnu_debuglink",
			".debug_info", ".debug_abbrev", ".debug_str", ".debug_line", ".eh_frame", ".eh_frame_hdr", ".debug_frame", ".tdata", ".tbss"} {
			if f.kind == "C library file" && !strings.Contains(name, "frame") {
				continue
			}
			if sec := ef.Section(name); sec != nil && sec.Type != elf.SHT_NOBITS && sec.Size > 0 {
				of.parts = append(of.parts, span{off: int64(sec.Offset), size: int64(sec.Size)})
			}
		}
		ef.Close()
		m.objFiles = append(m.objFiles, of)
	}
	m.header = coreHeaders(data)
	return m
}

// kmpRegions finds LLVM's runtime structures in the core: from its
// symbols and a walk of the clean core, sizes from its DWARF.
func (m *mutator) kmpRegions(t *testing.T, as *ompd.AddressSpace) {
	c := m.clean

	// The runtime's structures, found from its symbols and a walk of the
	// clean core; sizes from its DWARF.
	u64 := func(a uint64) uint64 {
		var b [8]byte
		require.NoError(t, c.ReadMemory(b[:], a))
		return binary.LittleEndian.Uint64(b[:])
	}
	sym := func(s string) uint64 {
		a, err := c.LookupSymbol(s)
		require.NoError(t, err, s)
		return a
	}
	size := func(typ string) uint64 {
		n, err := c.TypeSize(typ)
		require.NoError(t, err, typ)
		return n
	}
	add := func(kind string, addr, n uint64) {
		if off, ok := m.fileOffset(addr, n); ok && n > 0 {
			m.regions[kind] = append(m.regions[kind], span{off: off, size: int64(n), addr: addr})
			m.pointers = append(m.pointers, addr)
		}
	}
	threads := u64(sym("__kmp_threads"))
	capacity := u64(sym("__kmp_threads_capacity")) & 0xffffffff
	add("__kmp_threads", threads, 8*capacity)
	for i := uint64(0); i < capacity; i++ {
		if p := u64(threads + 8*i); p != 0 {
			add("kmp_info_t", p, size("kmp_info_t"))
		}
	}
	ths, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	teams, tasks := make(map[uint64]bool), make(map[uint64]bool)
	for _, th := range ths {
		for p, err := th.CurrentParallel(); err == nil; p, err = p.Enclosing() {
			teams[p.Addr()] = true
		}
		for tk, err := th.CurrentTask(); err == nil; tk, err = tk.Generating() {
			tasks[tk.Addr()] = true
		}
	}
	for a := range teams {
		add("teams", a, size("kmp_team_t"))
	}
	for a := range tasks {
		add("tasks", a, size("kmp_taskdata_t"))
	}
	for _, o := range c.set.Objects() {
		if !strings.Contains(o.Path(), "libomp") {
			continue
		}
		syms, err := o.File().Symbols()
		require.NoError(t, err)
		for _, s := range syms {
			switch {
			case strings.HasPrefix(s.Name, "ompd_access__"), strings.HasPrefix(s.Name, "ompd_sizeof__"):
				add("OMPD tables", s.Value+o.Bias(), 8)
			case strings.HasPrefix(s.Name, "__kmp") && elf.ST_TYPE(s.Info) == elf.STT_OBJECT && s.Size <= 4096:
				add("runtime globals", s.Value+o.Bias(), s.Size)
			}
		}
	}
	// The fields the OMPD tables describe, as offsets into the structure
	// that holds them, so that most mutations of a structure hit what the
	// library reads.
	fields := make(map[string][][2]uint64) // type -> (offset, size)
	for _, o := range c.set.Objects() {
		if !strings.Contains(o.Path(), "libomp") {
			continue
		}
		syms, _ := o.File().Symbols()
		for _, s := range syms {
			typ, field, ok := strings.Cut(strings.TrimPrefix(s.Name, "ompd_access__"), "__")
			if !ok || !strings.HasPrefix(s.Name, "ompd_access__") {
				continue
			}
			off := u64(s.Value + o.Bias())
			n, err := c.LookupSymbol("ompd_sizeof__" + typ + "__" + field)
			sz := uint64(8)
			if err == nil {
				sz = max(1, min(8, u64(n)))
			}
			fields[typ] = append(fields[typ], [2]uint64{off, sz})
		}
	}
	m.fields = map[string][][2]uint64{
		"kmp_info_t": fields["kmp_base_info_t"],
		"teams":      fields["kmp_base_team_t"],
		"tasks":      fields["kmp_taskdata_t"],
	}
	for k, f := range m.fields {
		require.NotEmpty(t, f, "fields of %s", k)
		sort.Slice(f, func(i, j int) bool { return f[i][0] < f[j][0] || f[i][0] == f[j][0] && f[i][1] < f[j][1] })
	}
	require.Len(t, m.regions, 6, "kinds of runtime memory found in the core: %v", m.regions)
}

// coreHeaders are the ELF header, the program headers, each PT_NOTE and
// the NT_FILE note's descriptor of core data.
func coreHeaders(data []byte) []span {
	le := binary.LittleEndian
	phoff, phnum := int64(le.Uint64(data[32:])), int64(le.Uint16(data[56:]))
	header := []span{{off: 0, size: 64}, {off: phoff, size: phnum * 56}}
	for i := int64(0); i < phnum; i++ {
		b := data[phoff+i*56:]
		if elf.ProgType(le.Uint32(b)) == elf.PT_NOTE {
			off, size := int64(le.Uint64(b[8:])), int64(le.Uint64(b[32:]))
			header = append(header, span{off: off, size: size})
			for pos := off; pos+12 <= off+size; {
				namesz, descsz, typ := int64(le.Uint32(data[pos:])), int64(le.Uint32(data[pos+4:])), le.Uint32(data[pos+8:])
				desc := pos + 12 + (namesz+3)&^3
				if typ == ntFile {
					header = append(header, span{off: desc, size: descsz})
				}
				pos = desc + (descsz+3)&^3
			}
		}
	}
	return header
}

// stackRegions adds the innermost 4 KiB of each thread's stack (saved
// registers and return addresses of its innermost frames), and each
// thread's stack pointer as an address worth pointing at (a saved frame
// pointer set to it makes the frames loop).
func (m *mutator) stackRegions(t *testing.T) {
	ths, err := m.clean.Threads()
	require.NoError(t, err)
	for _, th := range ths {
		regs, err := m.clean.ThreadRegisters(th.ID)
		require.NoError(t, err)
		sp, ok := regs.SP()
		require.True(t, ok)
		for n := uint64(4096); n >= 64; n /= 2 {
			if off, ok := m.fileOffset(sp, n); ok {
				m.regions["stacks"] = append(m.regions["stacks"], span{off: off, size: int64(n), addr: sp})
				m.pointers = append(m.pointers, sp, sp+n/2)
				break
			}
		}
	}
	require.NotEmpty(t, m.regions["stacks"])
}

// gompRegions finds what libgomp's reader reads in the core: every read
// of a walk of the clean core (a snapshot and every chain), sorted by
// where it lands: in libgomp's image (its globals, the slot of its
// thread-local storage offset, the build-id the layout table is chosen
// by), in a thread's static thread-local storage (its struct gomp_thread,
// which confirms the layout) or elsewhere (teams, tasks, work shares).
func (m *mutator) gompRegions(t *testing.T) {
	rec := &recordingCore{Core: m.clean}
	as, err := ompd.Open(rec)
	require.NoError(t, err)
	_, err = as.Snapshot(context.Background())
	require.NoError(t, err)
	_ = ompdtest.Invariants(as)
	as.Close()
	var libLo, libHi uint64
	for _, o := range m.clean.set.Objects() {
		if strings.Contains(filepath.Base(o.Path()), "libgomp") {
			lo, hi, ok := o.Range()
			require.True(t, ok)
			libLo, libHi = lo, hi
		}
	}
	require.NotZero(t, libHi)
	ths, err := m.clean.Threads()
	require.NoError(t, err)
	for _, r := range rec.reads {
		kind := "teams and tasks"
		switch {
		case r.addr >= libLo && r.addr < libHi:
			kind = "libgomp image (TLS slot, build-id, globals)"
		default:
			for _, th := range ths {
				if th.Pointer != 0 && r.addr < th.Pointer && r.addr+64<<10 >= th.Pointer {
					kind = "gomp_thread (TLS)"
				}
			}
		}
		if off, ok := m.fileOffset(r.addr, uint64(r.size)); ok && r.size > 0 {
			m.regions[kind] = append(m.regions[kind], span{off: off, size: int64(r.size), addr: r.addr})
			m.pointers = append(m.pointers, r.addr)
		}
	}
	require.Len(t, m.regions, 3, "kinds of libgomp memory read: %v", m.regions)
}

// recordingCore is a Core whose reads are noted.
type recordingCore struct {
	*Core
	mu    sync.Mutex
	reads []struct {
		addr uint64
		size int
	}
}

func (r *recordingCore) ReadMemory(buf []byte, addr uint64) error {
	r.mu.Lock()
	r.reads = append(r.reads, struct {
		addr uint64
		size int
	}{addr, len(buf)})
	r.mu.Unlock()
	return r.Core.ReadMemory(buf, addr)
}

// fileOffset returns the core file offset of [addr, addr+size) if the
// core holds all of it.
func (m *mutator) fileOffset(addr, size uint64) (int64, bool) {
	for _, p := range m.clean.d.progs {
		if p.typ == elf.PT_LOAD && addr >= p.vaddr && addr+size <= p.vaddr+p.filesz {
			return int64(p.off + addr - p.vaddr), true
		}
	}
	return 0, false
}

// mutation is one corruption of a core.
type mutation struct {
	id    mutationID
	kind  string
	what  string
	full  bool // headers changed: open everything again
	size  int64
	patch []patch
	obj   *objFile // patch applies to this file, not to the core
}

func (mu *mutation) String() string {
	return fmt.Sprintf("%s seed %d mutation %d: %s: %s", mu.id.fixture, mu.id.seed, mu.id.index, mu.kind, mu.what)
}

// interesting are values that break assumptions: signs, bounds, sizes.
var interesting = []uint64{0, 1, 2, 0xff, 0x7fff, 0x8000, 0xffff, 65536, 1 << 20, 0x7fffffff, 0x80000000, 0xffffffff, 1 << 32, 1 << 62, ^uint64(0), ^uint64(0) - 1}

// make returns mutation number id.index of the fixture: the same for the
// same id, whatever ran before.
func (m *mutator) make(id mutationID) *mutation {
	h := fnv.New64a()
	h.Write([]byte(id.fixture))
	rng := rand.New(rand.NewPCG(id.seed^h.Sum64(), uint64(id.index)))
	mu := &mutation{id: id, size: int64(len(m.data))}
	pick := func(s []span) span { return s[rng.IntN(len(s))] }
	if id.index%50 == 49 {
		// One in 50 (each costs as much as 20 others): the executable
		// or the runtime library file; the other indices keep the
		// mutations they always meant.
		of := &m.objFiles[rng.IntN(len(m.objFiles))]
		mu.kind, mu.full, mu.obj = of.kind, true, of
		m.corruptIn(rng, mu, pick(of.parts), of.data)
		return mu
	}
	switch r := rng.IntN(100); {
	case r < 6: // truncation
		mu.kind, mu.full = "truncation", true
		switch rng.IntN(3) {
		case 0: // in the headers and notes
			h := pick(m.header)
			mu.size = h.off + rng.Int64N(h.size+1)
		case 1: // anywhere
			mu.size = rng.Int64N(int64(len(m.data)))
		default: // in memory that the walk reads
			s := pick(m.regions[m.kinds[rng.IntN(len(m.kinds))]])
			mu.size = s.off + rng.Int64N(s.size)
		}
		mu.what = fmt.Sprintf("cut to %d of %d bytes", mu.size, len(m.data))
		return mu
	case r < 18: // headers and notes
		mu.full = true
		h := rng.IntN(len(m.header))
		mu.kind = [...]string{"ELF header", "program headers"}[min(h, 1)]
		if h >= 2 {
			mu.kind = "notes"
			if h == len(m.header)-1 {
				mu.kind = "NT_FILE"
			}
		}
		m.corrupt(rng, mu, m.header[h])
	default: // runtime memory
		mu.kind = m.kinds[rng.IntN(len(m.kinds))]
		s := pick(m.regions[mu.kind])
		if f := m.fields[mu.kind]; len(f) > 0 && rng.IntN(4) != 0 {
			// One of the fields the OMPD tables name.
			fl := f[rng.IntN(len(f))]
			if fl[0]+fl[1] <= uint64(s.size) {
				s = span{off: s.off + int64(fl[0]), size: int64(fl[1]), addr: s.addr + fl[0]}
			}
		}
		m.corrupt(rng, mu, s)
	}
	return mu
}

// corrupt adds to mu one change of the bytes of s: a flipped bit, random
// bytes, an interesting value or a pointer to other runtime memory, at an
// aligned or random place.
func (m *mutator) corrupt(rng *rand.Rand, mu *mutation, s span) {
	m.corruptIn(rng, mu, s, m.data)
}

// corruptIn is corrupt for a span of data.
func (m *mutator) corruptIn(rng *rand.Rand, mu *mutation, s span, data []byte) {
	width := []int64{1, 2, 4, 8}[rng.IntN(4)]
	if s.size <= 8 {
		width = s.size // a field: all of it
	}
	width = min(width, s.size)
	off := s.off + rng.Int64N(s.size-width+1)
	if rng.IntN(2) == 0 {
		off = s.off + (off-s.off)&^(width-1)
	}
	b := make([]byte, width)
	copy(b, data[off:])
	var how string
	switch rng.IntN(4) {
	case 0:
		bit := rng.IntN(int(width) * 8)
		b[bit/8] ^= 1 << (bit % 8)
		how = fmt.Sprintf("bit %d flipped", bit)
	case 1:
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		how = "random bytes"
	case 2:
		v := interesting[rng.IntN(len(interesting))]
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], v)
		copy(b, w[:])
		how = fmt.Sprintf("value %#x", v)
	default:
		v := m.pointers[rng.IntN(len(m.pointers))] + uint64(rng.IntN(4))*8
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], v)
		copy(b, w[:])
		how = fmt.Sprintf("pointer %#x", v)
	}
	mu.patch = append(mu.patch, patch{off: off, data: b})
	where := fmt.Sprintf("file offset %#x", off)
	if s.addr != 0 {
		where += fmt.Sprintf(" (address %#x)", s.addr+uint64(off-s.off))
	}
	mu.what = fmt.Sprintf("%d bytes at %s: %s", width, where, how)
}

// run opens and walks the mutated core and returns what broke, nil if
// nothing did.
func (m *mutator) run(mu *mutation) []string {
	ov := &overlay{base: m.data, size: mu.size, patches: mu.patch}
	cfg := &config{}
	for _, of := range m.objFiles[1:] {
		cfg.files.AddMap(map[string]string{of.name: of.path})
	}
	exe := m.objFiles[0].path
	if mu.obj != nil {
		// The file is changed in place for this run, then restored.
		ov.patches = nil
		f, err := os.OpenFile(mu.obj.path, os.O_WRONLY, 0)
		if err != nil {
			return []string{err.Error()}
		}
		defer f.Close()
		for _, p := range mu.patch {
			if _, err := f.WriteAt(p.data, p.off); err != nil {
				return []string{err.Error()}
			}
			defer f.WriteAt(mu.obj.data[p.off:p.off+int64(len(p.data))], p.off)
		}
	}
	var c *Core
	if mu.full {
		var err error
		c, err = newCore(ov, mu.size, cfg)
		if err != nil {
			return nil // refused: the error is the answer
		}
		defer c.Close()
		if err := c.loadObjects(cfg, exe); err != nil {
			return nil
		}
	} else {
		c = m.clean.withReader(ov)
	}
	as, err := ompd.Open(c)
	if err != nil {
		return ompdtest.SentinelProblems("open", err)
	}
	defer as.Close()
	var stacks []string
	if mu.kind == "stacks" || mu.obj != nil || mu.id.index%50 == 3 {
		// The backtraces: of every stack or object mutation, and of one
		// in 50 others.
		stacks = ompdtest.BacktraceInvariants(context.Background(), as)
	}
	if mu.id.index%100 != 7 {
		return append(ompdtest.Invariants(as), stacks...)
	}
	// One in 100: four walks at once over the same address space, for
	// the race detector (the per-stop decode is shared).
	var wg sync.WaitGroup
	var mtx sync.Mutex
	var out []string
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := ompdtest.Invariants(as)
			mtx.Lock()
			out = append(out, p...)
			mtx.Unlock()
		}()
	}
	wg.Wait()
	return append(out, stacks...)
}

// mutationBudget reads OMPD_GO_MUTATIONS: a count, or a duration.
func mutationBudget(t *testing.T) (int, time.Duration) {
	v := os.Getenv("OMPD_GO_MUTATIONS")
	if v == "" {
		return defaultMutations, 0
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return n, 0
	}
	d, err := time.ParseDuration(v)
	require.NoError(t, err, "OMPD_GO_MUTATIONS is neither a count nor a duration")
	return 0, d
}

// heapBytes is the memory held by live and unswept heap objects.
func heapBytes() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// TestMutatedCores runs the mutation harness (see the top of this file).
func TestMutatedCores(t *testing.T) {
	count, dur := mutationBudget(t)
	seed := uint64(1)
	if v := os.Getenv("OMPD_GO_MUTATIONS_SEED"); v != "" {
		var err error
		seed, err = strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "OMPD_GO_MUTATIONS_SEED")
	}
	muts := make(map[string]*mutator)
	for _, f := range mutationFixtures {
		muts[f.key] = newMutatorFor(t, f)
	}
	start := time.Now()
	var ran, failed int
	kinds := make(map[string]int)
	pending := make(map[string][]string) // invariant -> mutations that break it
	runOne := func(id mutationID) {
		m := muts[id.fixture]
		mu := m.make(id)
		kinds[mu.kind]++
		ran++
		var problems []string
		done := make(chan struct{})
		before := allocated()
		go func() {
			defer close(done)
			defer func() {
				if r := recover(); r != nil {
					problems = append(problems, fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
				}
			}()
			problems = m.run(mu)
		}()
		// The heap is watched while the mutation runs: one that would
		// take the machine's memory must fail with its name, not be
		// killed by the kernel without one.
		deadline := time.After(mutationDeadline)
		tick := time.NewTicker(50 * time.Millisecond)
	wait:
		for {
			select {
			case <-done:
				break wait
			case <-deadline:
				t.Fatalf("%v: did not return within %v", mu, mutationDeadline)
			case <-tick.C:
				if h := heapBytes(); h > mutationHeap {
					panic(fmt.Sprintf("%v: the heap grew to %d bytes while it ran", mu, h))
				}
			}
		}
		tick.Stop()
		if a := allocated() - before; a > mutationAllocs {
			problems = append(problems, fmt.Sprintf("allocated %d bytes", a))
		}
		var real []string
		for _, p := range dedupe(problems) {
			if inv := ompdtest.InvariantOf(p); ompdtest.PendingInvariants[inv] != "" {
				pending[inv] = append(pending[inv], mu.String())
				continue
			}
			real = append(real, p)
		}
		if len(real) > 0 {
			failed++
			if failed <= 30 {
				if len(real) > 6 {
					real = append(real[:6], fmt.Sprintf("... and %d more", len(real)-6))
				}
				t.Errorf("%v:\n\t%s", mu, strings.Join(real, "\n\t"))
			}
		}
	}
	if v := os.Getenv("OMPD_GO_MUTATION_ONLY"); v != "" {
		name, idx, named := strings.Cut(v, ":")
		if !named {
			name, idx = "", v
		}
		i, err := strconv.Atoi(idx)
		require.NoError(t, err, "OMPD_GO_MUTATION_ONLY")
		for _, f := range mutationFixtures {
			if name == "" || name == f.key {
				runOne(mutationID{fixture: f.key, seed: seed, index: i})
			}
		}
		require.NotZero(t, ran, "OMPD_GO_MUTATION_ONLY names no fixture")
		return
	}
	for _, r := range mutationRegressions {
		runOne(r)
	}
	for i := 0; ; i++ {
		if dur > 0 && time.Since(start) > dur || dur == 0 && ran >= count+len(mutationRegressions) {
			break
		}
		f := mutationFixtures[i%len(mutationFixtures)]
		runOne(mutationID{fixture: f.key, seed: seed, index: i / len(mutationFixtures)})
	}
	el := time.Since(start)
	t.Logf("%d mutations in %v (%.0f/s), %d failed; by kind: %v", ran, el.Round(time.Millisecond), float64(ran)/el.Seconds(), failed, kinds)
	invs := make([]string, 0, len(pending))
	for inv := range pending {
		invs = append(invs, inv)
	}
	sort.Strings(invs)
	for _, inv := range invs {
		ms := dedupe(pending[inv])
		t.Logf("NOT CHECKED (pending, %s): invariant %q broken by %d mutations:\n\t%s", ompdtest.PendingInvariants[inv], inv, len(ms), strings.Join(ms[:min(len(ms), 5)], "\n\t"))
	}
}

func dedupe(s []string) []string {
	seen := make(map[string]bool)
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
