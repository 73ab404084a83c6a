package objfile

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/arch"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/target"
)

// requireGCC skips the test without gcc, or fails it in CI (CI=true).
func requireGCC(t *testing.T) {
	t.Helper()
	fixtures.RequireTool(t, "gcc")
}

// buildTypes compiles testdata/types.c and dup.c with the given DWARF
// flag, runs the program, and returns its path and printed layout.
func buildTypes(t *testing.T, dwarfFlag string) (string, map[string]uint64) {
	t.Helper()
	requireGCC(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	src, err := filepath.Abs("testdata")
	require.NoError(t, err)
	exe := filepath.Join(t.TempDir(), "types")
	out, err := exec.CommandContext(ctx, "gcc", "-g", dwarfFlag, "-O0", "-o", exe,
		filepath.Join(src, "dup.c"), filepath.Join(src, "types.c")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.CommandContext(ctx, exe).Output()
	require.NoError(t, err)
	layout := make(map[string]uint64)
	for _, kv := range strings.Fields(string(out)) {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, kv)
		n, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, kv)
		layout[k] = n
	}
	return exe, layout
}

func TestTypes(t *testing.T) {
	for _, flag := range []string{"-gdwarf-4", "-gdwarf-5"} {
		t.Run(flag, func(t *testing.T) {
			exe, l := buildTypes(t, flag)
			o, err := Open(exe, 0)
			require.NoError(t, err)
			defer o.Close()
			s := NewSet(o)

			sizes := map[string]uint64{
				"struct outer": l["size_outer"], "outer_t": l["size_outer"], "outer_alias_t": l["size_outer"],
				"outer": l["size_outer"], "struct  outer": l["size_outer"],
				"struct inner": l["size_inner"], "inner_t": l["size_inner"], "cinner_t": l["size_inner"],
				"union value": l["size_value"], "value_t": l["size_value"], "value": l["size_value"],
				"int": 4, "long int": 8, "char": 1,
			}
			for name, want := range sizes {
				got, err := s.TypeSize(name)
				if assert.NoError(t, err, name) {
					assert.Equal(t, want, got, name)
				}
			}
			offsets := map[string]uint64{
				"b": l["b"], "in": l["in"], "v": l["v"], "u2": l["u2"], "s1": l["s1"], "deep": l["deep"],
				"next": l["next"], "v.d": l["v"], "a": 0,
			}
			for field, want := range offsets {
				for _, typ := range []string{"outer_alias_t", "struct outer"} {
					got, err := s.FieldOffset(typ, field)
					if assert.NoError(t, err, "%s.%s", typ, field) {
						assert.Equal(t, want, got, "%s.%s", typ, field)
					}
				}
			}
			got, err := s.FieldOffset("cinner_t", "y")
			require.NoError(t, err)
			assert.EqualValues(t, 2, got)

			for field, want := range map[string]uint64{"f1": 3, "f2": 5, "f3": 20} {
				bit, width, err := s.BitField("outer_t", field)
				if assert.NoError(t, err, field) {
					assert.Equal(t, l[field], bit, field)
					assert.Equal(t, want, width, field)
				}
			}
			bit, width, err := s.BitField("struct outer", "b")
			require.NoError(t, err)
			assert.Equal(t, l["b"]*8, bit)
			assert.EqualValues(t, 64, width)

			for _, c := range [][2]string{{"struct outer", "nope"}, {"struct outer", "in.x"}, {"struct outer", "b.x"}, {"struct nope", "a"}, {"int", "a"}} {
				_, err := s.FieldOffset(c[0], c[1])
				assert.ErrorIs(t, err, target.ErrNotFound, "%v", c)
				var le *target.LookupError
				assert.ErrorAs(t, err, &le)
			}
			_, err = s.TypeSize("struct nope")
			assert.ErrorIs(t, err, target.ErrNotFound)
			_, err = o.TypeSize("union outer")
			assert.ErrorIs(t, err, target.ErrNotFound)
		})
	}
}

func TestSymbols(t *testing.T) {
	exe, _ := buildTypes(t, "-gdwarf-5")
	const bias = 0x555500000000
	o, err := Open(exe, bias)
	require.NoError(t, err)
	defer o.Close()
	f := o.File()
	syms, err := f.Symbols()
	require.NoError(t, err)
	val := func(name string, bind elf.SymBind) uint64 {
		for _, s := range syms {
			if s.Name == name && elf.ST_BIND(s.Info) == bind {
				return s.Value
			}
		}
		t.Fatalf("no %v symbol %s", bind, name)
		return 0
	}
	s := NewSet(o)

	// A global beats a local of the same name, wherever it is in .symtab.
	addr, err := s.Lookup("dup_name")
	require.NoError(t, err)
	assert.Equal(t, val("dup_name", elf.STB_GLOBAL)+bias, addr)
	assert.NotEqual(t, val("dup_name", elf.STB_LOCAL)+bias, addr)

	sym, err := o.Lookup("only_local")
	require.NoError(t, err)
	assert.True(t, sym.Local)
	assert.Equal(t, val("only_local", elf.STB_LOCAL)+bias, sym.Addr)

	// TLS symbols keep their offset in the TLS block.
	sym, err = o.Lookup("g_tls")
	require.NoError(t, err)
	assert.True(t, sym.TLS())
	assert.Equal(t, val("g_tls", elf.STB_GLOBAL), sym.Addr)
	_, err = s.Lookup("g_tls")
	assert.ErrorIs(t, err, target.ErrNotFound)

	_, err = s.Lookup("printf") // undefined here
	assert.ErrorIs(t, err, target.ErrNotFound)

	main, err := s.Lookup("main")
	require.NoError(t, err)
	name, ok := s.SymbolAt(main + 4)
	assert.True(t, ok)
	assert.Equal(t, "main", name)
	_, ok = s.SymbolAt(1)
	assert.False(t, ok)

	assert.NotEmpty(t, o.BuildID())
	_, _, ok = o.DebugLink()
	assert.False(t, ok)
	start, end, ok := o.Range()
	assert.True(t, ok)
	assert.True(t, start >= bias && end > start)
}

func TestConcurrentTypes(t *testing.T) {
	exe, l := buildTypes(t, "-gdwarf-5")
	o, err := Open(exe, 0)
	require.NoError(t, err)
	defer o.Close()
	s := NewSet(o)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				n, err := s.TypeSize("outer_t")
				assert.NoError(t, err)
				assert.Equal(t, l["size_outer"], n)
				off, err := s.FieldOffset("struct outer", "deep")
				assert.NoError(t, err)
				assert.Equal(t, l["deep"], off)
				_, err = s.Lookup("dup_name")
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
}

func TestMalformed(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk")
	require.NoError(t, os.WriteFile(junk, []byte("not an ELF file"), 0o644))
	_, err := Open(junk, 0)
	assert.Error(t, err)
	_, err = Open(filepath.Join(dir, "missing"), 0)
	assert.Error(t, err)

	exe, _ := buildTypes(t, "-gdwarf-5")
	data, err := os.ReadFile(exe)
	require.NoError(t, err)

	// Truncations and corrupted debug info: errors or partial answers,
	// never a panic.
	probe := func(b []byte) {
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return
		}
		o := NewObject(f, "corrupt", 0)
		s := NewSet(o)
		s.Lookup("main")
		s.TypeSize("outer_t")
		s.FieldOffset("struct outer", "deep")
		s.BitField("struct outer", "f2")
		s.SymbolAt(0x1000)
		o.BuildID()
		o.DebugLink()
		s.LookupThreadLocal(zeroMem{}, 0x1000, "g_tls")
	}
	for _, n := range []int{len(data) / 4, len(data) / 2, len(data) * 3 / 4, len(data) - 100} {
		probe(data[:n])
	}
	f, err := elf.NewFile(bytes.NewReader(data))
	require.NoError(t, err)
	for _, name := range []string{".debug_info", ".debug_abbrev", ".symtab", ".strtab", ".debug_str"} {
		sec := f.Section(name)
		if sec == nil {
			continue
		}
		for _, seed := range []int{1, 7, 13} {
			b := bytes.Clone(data)
			for i := uint64(0); i < sec.Size; i += uint64(seed) {
				b[sec.Offset+i] ^= byte(i*31 + uint64(seed))
			}
			probe(b)
		}
	}
}

// zeroMem is a memory of zeros everywhere.
type zeroMem struct{}

func (zeroMem) ReadMemory(buf []byte, addr uint64) error {
	clear(buf)
	return nil
}

// fakeMem is a sparse little-endian memory for the TLS tests.
type fakeMem struct {
	m map[uint64]byte
}

func (f *fakeMem) put64(addr, v uint64) {
	if f.m == nil {
		f.m = make(map[uint64]byte)
	}
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	for i, c := range b {
		f.m[addr+uint64(i)] = c
	}
}

func (f *fakeMem) putString(addr uint64, s string) {
	for i := 0; i < len(s); i++ {
		f.m[addr+uint64(i)] = s[i]
	}
	f.m[addr+uint64(len(s))] = 0
}

func (f *fakeMem) ReadMemory(buf []byte, addr uint64) error {
	for i := range buf {
		c, ok := f.m[addr+uint64(i)]
		if !ok {
			return &target.ReadError{Addr: addr, Size: len(buf), Err: target.ErrNoMemory}
		}
		buf[i] = c
	}
	return nil
}

// TestThreadLocalSynthetic lays out glibc's structures by hand: a
// link_map list (found through ld.so's _r_debug), libc's descriptors (read
// from the libc file: the fake memory does not hold them), a thread's dtv.
func TestThreadLocalSynthetic(t *testing.T) {
	libc, ld := "/lib/x86_64-linux-gnu/libc.so.6", "/lib64/ld-linux-x86-64.so.2"
	for _, p := range []string{libc, ld} {
		if _, err := os.Stat(p); err != nil {
			fixtures.Unavailable(t, "needs glibc: %v", err)
		}
	}
	exe, _ := buildTypes(t, "-gdwarf-5")
	const (
		exeBias  = 0x555555554000
		libcBias = 0x7f0000000000
		ldBias   = 0x7f1000000000
		lmBase   = 0x10000 // link_maps, 0x1000 apart
		tp       = 0x40000
		dtv      = 0x50000
		block    = 0x60000
	)
	oe, err := Open(exe, exeBias)
	require.NoError(t, err)
	oc, err := Open(libc, libcBias)
	require.NoError(t, err)
	ol, err := Open(ld, ldBias)
	require.NoError(t, err)
	s := NewSet(oe, oc, ol)
	defer s.Close()

	desc := func(name string) uint32 {
		_, sym, err := s.LookupSymbol(name)
		require.NoError(t, err)
		var b [12]byte
		require.NoError(t, oc.ReadVirtual(b[:], sym.Addr))
		return binary.LittleEndian.Uint32(b[8:])
	}
	modidOff, tlsOffOff := uint64(desc("_thread_db_link_map_l_tls_modid")), uint64(desc("_thread_db_link_map_l_tls_offset"))

	mem := &fakeMem{}
	rdebug, err := s.Lookup("_r_debug")
	require.NoError(t, err)
	mem.put64(rdebug, 1)
	mem.put64(rdebug+8, lmBase)
	objs := []*Object{oe, oc, ol}
	for i, o := range objs {
		lm := uint64(lmBase + i*0x1000)
		dyn, _, _ := o.DynamicAddr()
		mem.put64(lm, o.Bias())
		name := uint64(0)
		if i > 0 {
			name = lm + 0x800
			mem.putString(name, o.Path())
		}
		mem.put64(lm+8, name)
		mem.put64(lm+16, dyn)
		next := uint64(0)
		if i+1 < len(objs) {
			next = lm + 0x1000
		}
		mem.put64(lm+24, next)
		mem.put64(lm+modidOff, 0)
		mem.put64(lm+tlsOffOff, 0)
	}
	// The executable is TLS module 1, dynamically allocated here.
	mem.put64(lmBase+modidOff, 1)
	mem.put64(tp+8, dtv)
	mem.put64(dtv-16, 4) // dtv[-1].counter: 4 slots
	mem.put64(dtv+16, block)

	sym, err := oe.Lookup("g_tls")
	require.NoError(t, err)
	addr, err := s.LookupThreadLocal(mem, tp, "g_tls")
	require.NoError(t, err)
	assert.Equal(t, block+sym.Addr, addr)

	// Unallocated, with a static offset: the static block.
	mem.put64(dtv+16, ^uint64(0))
	mem.put64(lmBase+tlsOffOff, 0x100)
	addr, err = s.LookupThreadLocal(mem, tp, "g_tls")
	require.NoError(t, err)
	assert.Equal(t, tp-0x100+sym.Addr, addr)

	// Unallocated without one: no storage in that thread.
	mem.put64(lmBase+tlsOffOff, 0)
	_, err = s.LookupThreadLocal(mem, tp, "g_tls")
	assert.ErrorIs(t, err, target.ErrNoMemory)

	// A module id past the dtv's length.
	mem.put64(dtv+16, block)
	mem.put64(lmBase+modidOff, 9)
	_, err = s.LookupThreadLocal(mem, tp, "g_tls")
	assert.ErrorIs(t, err, target.ErrNoMemory)
	mem.put64(lmBase+modidOff, 1)

	// A cycle in the list is survived.
	mem.put64(lmBase+2*0x1000+24, lmBase)
	entries, err := s.LinkMap(mem)
	assert.Error(t, err)
	assert.Len(t, entries, 3)
	addr, err = s.LookupThreadLocal(mem, tp, "g_tls")
	require.NoError(t, err)
	assert.Equal(t, block+sym.Addr, addr)

	// Without the link_map, the executable's static TLS offset.
	addr, err = s.LookupThreadLocal(zeroMem{}, tp, "g_tls")
	require.NoError(t, err)
	seg := oe.TLSSegment()
	require.NotNil(t, seg)
	assert.Equal(t, tp-arch.AMD64.FirstStaticOffset(seg)+sym.Addr, addr)

	_, err = s.LookupThreadLocal(mem, tp, "dup_name")
	assert.ErrorIs(t, err, target.ErrNotFound)
	_, err = s.LookupThreadLocal(mem, 0, "g_tls")
	assert.ErrorIs(t, err, target.ErrUnsupported)

	// A machine the arch package does not know: unsupported.
	oe.File().Machine = elf.EM_MIPS
	_, err = s.LookupThreadLocal(mem, tp, "g_tls")
	assert.ErrorIs(t, err, target.ErrUnsupported)
	oe.File().Machine = elf.EM_X86_64
}
