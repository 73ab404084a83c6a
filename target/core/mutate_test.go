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
// real cores (truncations; bytes of the ELF header, the program headers,
// the notes, the NT_FILE list; and bytes of the runtime memory that the
// library reads: the OMPD tables and other runtime globals, the
// __kmp_threads table, kmp_info_t, teams, tasks) and of copies of their
// executable and runtime library (headers, symbol tables, notes, DWARF,
// unwind tables), each one opened and walked through the whole API (one in
// 100 by four goroutines at once, for the race detector). For every
// mutation: no panic, every call returns within mutationDeadline,
// allocation stays under mutationAllocs, every error matches one of the
// package's sentinels, and every answer keeps the invariants of
// ompdtest.Invariants.
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
	{fixtures.Serialized, 7, 3095},    // active level above the level
	{fixtures.Serialized, 3, 2723},    // active level above the level
	{fixtures.Nested, 21, 983},        // a thread table of 32767: the harness itself allocated 1.5 GB
	{fixtures.Serialized, 101, 79049}, // the executable's .debug_line: debug/dwarf looped over a corrupt file count
	{fixtures.Tasks, 4242, 2783},      // __kmp_threads_capacity + 2^18: a kmp_info_t read for each garbage entry, 5 GB heap
}

type mutationID struct {
	fixture string
	seed    uint64
	index   int
}

// mutationFixtures are the fixture cores mutated, with their arguments.
var mutationFixtures = []struct {
	name string
	args []string
}{
	{fixtures.Nested, nil},
	{fixtures.Serialized, nil},
	{fixtures.Tasks, nil},
	{fixtures.ICVs, nil},
	{fixtures.Many, []string{"4"}},
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
	return &Core{r: r, d: c.d, mem: m, set: c.set, files: c.files, infos: c.infos, warnings: c.warnings, notLoaded: c.notLoaded}
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
	kind  string // "executable file" or "runtime library file"
	path  string
	data  []byte
	parts []span
}

// newMutator opens the fixture's core, walks it once through a recorder,
// and sorts what the walk read into kinds.
func newMutator(t *testing.T, name string, args []string) *mutator {
	stop := fixtures.Core(t, name, args...)
	data, err := os.ReadFile(stop.Core)
	require.NoError(t, err)
	c, err := Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	m := &mutator{name: name, exe: stop.Exe, data: data, clean: c, regions: make(map[string][]span)}

	as, err := ompd.Open(c)
	require.NoError(t, err)
	defer as.Close()
	require.Empty(t, ompdtest.Invariants(as), "the clean core breaks an invariant")

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
	for k, s := range m.regions {
		sort.Slice(s, func(i, j int) bool { return s[i].off < s[j].off || s[i].off == s[j].off && s[i].size < s[j].size })
		m.kinds = append(m.kinds, k)
	}
	sort.Strings(m.kinds)
	sort.Slice(m.pointers, func(i, j int) bool { return m.pointers[i] < m.pointers[j] })
	require.Len(t, m.kinds, 6, "kinds of runtime memory found in the core: %v", m.kinds)

	// Copies of the executable and of the runtime library for the
	// object mutations.
	for _, o := range objectsOf(t, c) {
		if strings.HasPrefix(filepath.Base(o.Name), "libomp.so") {
			m.libName = o.Name
		}
	}
	require.NotEmpty(t, m.libName)
	dir := t.TempDir()
	for _, f := range []struct{ kind, src string }{{"executable file", stop.Exe}, {"runtime library file", stop.Runtime.LibOMP}} {
		b, err := os.ReadFile(f.src)
		require.NoError(t, err)
		of := objFile{kind: f.kind, path: filepath.Join(dir, filepath.Base(f.src)), data: b}
		require.NoError(t, os.WriteFile(of.path, b, 0o644))
		ef, err := elf.Open(f.src)
		require.NoError(t, err)
		le := binary.LittleEndian
		of.parts = append(of.parts, span{off: 0, size: 64},
			span{off: int64(le.Uint64(b[32:])), size: int64(le.Uint16(b[54:])) * int64(le.Uint16(b[56:]))},
			span{off: int64(le.Uint64(b[40:])), size: int64(le.Uint16(b[58:])) * int64(le.Uint16(b[60:]))})
		for _, name := range []string{".note.gnu.build-id", ".dynsym", ".dynstr", ".symtab", ".strtab", ".dynamic", ".gnu.hash", ".gnu_debuglink",
			".debug_info", ".debug_abbrev", ".debug_str", ".debug_line", ".eh_frame", ".eh_frame_hdr", ".tdata", ".tbss"} {
			if sec := ef.Section(name); sec != nil && sec.Type != elf.SHT_NOBITS && sec.Size > 0 {
				of.parts = append(of.parts, span{off: int64(sec.Offset), size: int64(sec.Size)})
			}
		}
		ef.Close()
		m.objFiles = append(m.objFiles, of)
	}

	// Headers: the ELF header, the program headers, each PT_NOTE and
	// the NT_FILE note's descriptor.
	le := binary.LittleEndian
	phoff, phnum := int64(le.Uint64(data[32:])), int64(le.Uint16(data[56:]))
	m.header = append(m.header, span{off: 0, size: 64}, span{off: phoff, size: phnum * 56})
	for i := int64(0); i < phnum; i++ {
		b := data[phoff+i*56:]
		if elf.ProgType(le.Uint32(b)) == elf.PT_NOTE {
			off, size := int64(le.Uint64(b[8:])), int64(le.Uint64(b[32:]))
			m.header = append(m.header, span{off: off, size: size})
			for pos := off; pos+12 <= off+size; {
				namesz, descsz, typ := int64(le.Uint32(data[pos:])), int64(le.Uint32(data[pos+4:])), le.Uint32(data[pos+8:])
				desc := pos + 12 + (namesz+3)&^3
				if typ == ntFile {
					m.header = append(m.header, span{off: desc, size: descsz})
				}
				pos = desc + (descsz+3)&^3
			}
		}
	}
	return m
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
	cfg.files.AddMap(map[string]string{m.libName: m.objFiles[1].path})
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
	if mu.id.index%100 != 7 {
		return ompdtest.Invariants(as)
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
	return out
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
		muts[f.name] = newMutator(t, f.name, f.args)
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
			if name == "" || name == f.name {
				runOne(mutationID{fixture: f.name, seed: seed, index: i})
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
		runOne(mutationID{fixture: f.name, seed: seed, index: i / len(mutationFixtures)})
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
