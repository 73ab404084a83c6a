package core

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/target"
)

func openFixture(t *testing.T, opts ...Option) (*fixture, *Core) {
	t.Helper()
	f := getFixture(t)
	c, err := Open(context.Background(), f.exe, f.core, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, c.Close()) })
	for _, w := range c.Warnings() {
		t.Logf("warning: %s", w)
	}
	return f, c
}

func readU64(t *testing.T, c *Core, addr uint64) int64 {
	t.Helper()
	var b [8]byte
	require.NoError(t, c.ReadMemory(b[:], addr))
	return int64(binary.LittleEndian.Uint64(b[:]))
}

func TestCoreSize(t *testing.T) {
	f := getFixture(t)
	t.Logf("core: %d bytes", f.coreSize)
	assert.Less(t, f.coreSize, int64(16<<20), "test core should stay small")
}

func TestObjects(t *testing.T) {
	f, c := openFixture(t)
	objs := objectsOf(t, c)
	require.NotEmpty(t, objs)
	assert.Equal(t, f.exe, objs[0].Path)
	assert.NotZero(t, objs[0].Bias, "gcc builds PIE executables by default")
	var libIdx, dynIdx, libcIdx = -1, -1, -1
	for i, o := range objs {
		switch filepath.Base(o.Path) {
		case "libtls.so":
			libIdx = i
			assert.NotEmpty(t, o.BuildID)
			assert.Equal(t, f.lib, o.Path)
		case "libdyn.so":
			dynIdx = i
		case "libc.so.6":
			libcIdx = i
		}
	}
	require.True(t, libIdx > 0 && dynIdx > 0 && libcIdx > 0, "objects: %+v", objs)
	// Load order: DT_NEEDED libraries before the dlopened one.
	assert.Less(t, libIdx, dynIdx)
	assert.Less(t, libcIdx, dynIdx)
}

func TestThreads(t *testing.T) {
	f, c := openFixture(t)
	ths, err := c.Threads()
	require.NoError(t, err)
	got, gotPthread := make(map[uint64]uint64), make(map[uint64]uint64)
	for _, th := range ths {
		got[th.ID], gotPthread[th.ID] = th.Pointer, th.Pthread
	}
	want := make(map[uint64]uint64)
	for _, r := range f.threads {
		want[r.tid] = r.self
	}
	assert.Equal(t, want, got, "tid -> fs_base must be tid -> pthread_self()")
	assert.Equal(t, want, gotPthread, "tid -> pthread_t must be tid -> pthread_self()")
	_, err = c.ThreadRegisters(1)
	assert.ErrorIs(t, err, target.ErrNoThread)
}

func TestThreadLocal(t *testing.T) {
	f, c := openFixture(t)
	for _, r := range f.threads {
		addr, err := c.LookupThreadLocal(r.tid, "lib_tls")
		require.NoError(t, err, "thread %d", r.idx)
		assert.Equal(t, r.libTLS, addr, "lib_tls of thread %d", r.idx)
		assert.Equal(t, r.libVal, readU64(t, c, addr))

		addr, err = c.LookupThreadLocal(r.tid, "exe_tls")
		require.NoError(t, err, "thread %d", r.idx)
		assert.Equal(t, r.exeTLS, addr, "exe_tls of thread %d", r.idx)
		assert.Equal(t, r.exeVal, readU64(t, c, addr))

		addr, err = c.LookupThreadLocal(r.tid, "dyn_tls")
		if r.dynTLS == 0 {
			assert.ErrorIs(t, err, target.ErrNoMemory, "thread %d never touched dyn_tls", r.idx)
			continue
		}
		require.NoError(t, err, "thread %d", r.idx)
		assert.Equal(t, r.dynTLS, addr, "dyn_tls of thread %d", r.idx)
		assert.Equal(t, r.dynVal, readU64(t, c, addr))
	}

	_, err := c.LookupThreadLocal(999999999, "lib_tls")
	assert.ErrorIs(t, err, target.ErrNoThread)
	_, err = c.LookupThreadLocal(f.threads[0].tid, "no_such_variable")
	assert.ErrorIs(t, err, target.ErrNotFound)
	_, err = c.LookupThreadLocal(f.threads[0].tid, "lib_s")
	assert.ErrorIs(t, err, target.ErrNotFound, "lib_s is not thread-local")
	var le *target.LookupError
	assert.ErrorAs(t, err, &le)
}

func TestSymbols(t *testing.T) {
	f, c := openFixture(t)

	// lib_local is a static variable: a LOCAL symbol of libtls.so's .symtab.
	lf, err := elf.Open(f.lib)
	require.NoError(t, err)
	defer lf.Close()
	syms, err := lf.Symbols()
	require.NoError(t, err)
	local := false
	for _, s := range syms {
		if s.Name == "lib_local" && elf.ST_BIND(s.Info) == elf.STB_LOCAL {
			local = true
		}
	}
	require.True(t, local, "lib_local must be a local symbol")

	addr, err := c.LookupSymbol("lib_local")
	require.NoError(t, err)
	assert.Equal(t, f.localAddr, addr)
	var b [4]byte
	require.NoError(t, c.ReadMemory(b[:], addr))
	assert.Equal(t, f.localVal, int64(int32(binary.LittleEndian.Uint32(b[:]))), "value from the core, not the file's 0x1234")

	_, err = c.LookupSymbol("no_such_symbol")
	assert.ErrorIs(t, err, target.ErrNotFound)
	var le *target.LookupError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, "symbol", le.Kind)

	_, err = c.LookupSymbol("lib_tls")
	assert.ErrorIs(t, err, target.ErrNotFound, "a TLS symbol has no single address")

	fn, err := c.LookupSymbol("lib_tls_addr")
	require.NoError(t, err)
	name, ok := c.SymbolAt(fn + 1)
	assert.True(t, ok)
	assert.Equal(t, "lib_tls_addr", name)
	// _r_debug comes from the dynamic linker.
	_, err = c.LookupSymbol("_r_debug")
	assert.NoError(t, err)
}

func TestTypes(t *testing.T) {
	f, c := openFixture(t)
	l := f.layout
	for _, name := range []string{"tls_struct_t", "struct tls_struct", "tls_struct"} {
		n, err := c.TypeSize(name)
		require.NoError(t, err, name)
		assert.Equal(t, l["size"], n, name)
	}
	n, err := c.TypeSize("struct tls_inner")
	require.NoError(t, err)
	assert.EqualValues(t, 4, n)
	for field, want := range map[string]uint64{
		"b": l["b"], "in": l["in"], "in.y": l["in.y"], "u2": l["u2"], "s2": l["s2"],
	} {
		off, err := c.FieldOffset("tls_struct_t", field)
		require.NoError(t, err, field)
		assert.Equal(t, want, off, field)
		off, err = c.FieldOffset("struct tls_struct", field)
		require.NoError(t, err, field)
		assert.Equal(t, want, off, field)
	}
	bit, width, err := c.BitField("tls_struct_t", "f2")
	require.NoError(t, err)
	assert.Equal(t, l["f2bit"], bit)
	assert.EqualValues(t, 5, width)

	_, err = c.FieldOffset("tls_struct_t", "nope")
	assert.ErrorIs(t, err, target.ErrNotFound)
	_, err = c.FieldOffset("struct nope", "b")
	assert.ErrorIs(t, err, target.ErrNotFound)
	_, err = c.TypeSize("struct nope")
	assert.ErrorIs(t, err, target.ErrNotFound)
	var le *target.LookupError
	assert.ErrorAs(t, err, &le)
}

func TestMemory(t *testing.T) {
	f, c := openFixture(t)

	// Library text: gcore leaves unwritten file mappings out; the bytes
	// come from the library file.
	fn, err := c.LookupSymbol("lib_tls_addr")
	require.NoError(t, err)
	lf, err := elf.Open(f.lib)
	require.NoError(t, err)
	defer lf.Close()
	var bias uint64
	for _, o := range objectsOf(t, c) {
		if o.Path == f.lib {
			bias = o.Bias
		}
	}
	text := lf.Section(".text")
	require.NotNil(t, text)
	data, err := text.Data()
	require.NoError(t, err)
	got := make([]byte, len(data))
	require.NoError(t, c.ReadMemory(got, text.Addr+bias))
	assert.Equal(t, data, got, "library .text")
	if c.mem.read(make([]byte, 16), fn, layerCore+1) == nil {
		t.Logf("this gdb kept library text in the core; the file fallback was not exercised here")
	}

	// A read spanning the whole library: text (from the file) and data
	// (from the core) in one call.
	start, end := uint64(0), uint64(0)
	for _, p := range lf.Progs {
		if p.Type == elf.PT_LOAD {
			if start == 0 || p.Vaddr+bias < start {
				start = p.Vaddr + bias
			}
			end = max(end, p.Vaddr+p.Memsz+bias)
		}
	}
	// The gaps between segments may be unmapped; read each segment.
	for _, p := range lf.Progs {
		if p.Type == elf.PT_LOAD {
			buf := make([]byte, p.Memsz)
			assert.NoError(t, c.ReadMemory(buf, p.Vaddr+bias), "segment at %#x", p.Vaddr)
		}
	}
	assert.Less(t, start, end)

	err = c.ReadMemory(make([]byte, 8), 0)
	assert.ErrorIs(t, err, target.ErrNoMemory)
	var re *target.ReadError
	require.ErrorAs(t, err, &re)
	assert.EqualValues(t, 0, re.Addr)
	assert.NoError(t, c.ReadMemory(nil, 0))

	err = c.WriteMemory(f.localAddr, []byte{1})
	assert.ErrorIs(t, err, target.ErrReadOnly)
	require.ErrorAs(t, err, &re)
	assert.True(t, re.Write)

	assert.Equal(t, binary.ByteOrder(binary.LittleEndian), c.ByteOrder())
	assert.Equal(t, target.LP64, c.Sizes())
	assert.Equal(t, elf.EM_X86_64, c.Machine())
}

func TestConcurrent(t *testing.T) {
	f, c := openFixture(t)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				r := f.threads[(g+i)%len(f.threads)]
				addr, err := c.LookupThreadLocal(r.tid, "lib_tls")
				if assert.NoError(t, err) {
					assert.Equal(t, r.libTLS, addr)
				}
				n, err := c.TypeSize("tls_struct_t")
				if assert.NoError(t, err) {
					assert.Equal(t, f.layout["size"], n)
				}
				_, err = c.FieldOffset("struct tls_struct", "in.y")
				assert.NoError(t, err)
				var b [64]byte
				assert.NoError(t, c.ReadMemory(b[:], f.localAddr))
				_, err = c.LookupSymbol("lib_local")
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
}

func TestOptions(t *testing.T) {
	f := getFixture(t)

	// WithFileMap: a copy of libtls.so elsewhere.
	other := t.TempDir()
	data, err := os.ReadFile(f.lib)
	require.NoError(t, err)
	moved := filepath.Join(other, "libtls-copy.so")
	require.NoError(t, os.WriteFile(moved, data, 0o644))
	c, err := Open(context.Background(), f.exe, f.core, WithFileMap(map[string]string{f.lib: moved}))
	require.NoError(t, err)
	found := false
	for _, o := range objectsOf(t, c) {
		if o.Path == moved {
			found = true
			assert.Equal(t, f.lib, o.Name)
		}
	}
	assert.True(t, found, "%+v", objectsOf(t, c))
	addr, err := c.LookupThreadLocal(f.threads[0].tid, "lib_tls")
	assert.NoError(t, err)
	assert.Equal(t, f.threads[0].libTLS, addr)
	fn, err := c.LookupSymbol("lib_tls_addr")
	require.NoError(t, err)
	require.NoError(t, c.Close())

	// WithSysroot: an empty sysroot hides every library.
	c, err = Open(context.Background(), f.exe, f.core, WithSysroot(t.TempDir()))
	require.NoError(t, err)
	assert.Len(t, objectsOf(t, c), 1)
	assert.NotEmpty(t, c.Warnings())
	_, err = c.LookupSymbol("lib_local")
	assert.ErrorIs(t, err, target.ErrNotFound)
	// Library text is not in the core (with this gdb) and its file is
	// not found: unavailable, not zeros.
	if c.mem.read(make([]byte, 4), fn, layerCore+1) != nil {
		err = c.ReadMemory(make([]byte, 4), fn)
		assert.ErrorIs(t, err, target.ErrNoMemory)
	}
	require.NoError(t, c.Close())

	// WithSearchPath: found by base name.
	c, err = Open(context.Background(), f.exe, f.core, WithSysroot(t.TempDir()), WithSearchPath(f.dir))
	require.NoError(t, err)
	_, err = c.LookupSymbol("lib_local")
	assert.NoError(t, err)
	require.NoError(t, c.Close())
}

func TestWrongExecutable(t *testing.T) {
	f := getFixture(t)
	_, err := Open(context.Background(), f.exeOther, f.core)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this core was not made from the executable")
	assert.NotContains(t, err.Error(), "bytes apart")

	// An empty or non-ELF executable: said so, not a bare EOF.
	for _, content := range []string{"", "#!/bin/sh\n"} {
		p := filepath.Join(t.TempDir(), "exe")
		require.NoError(t, os.WriteFile(p, []byte(content), 0o755))
		_, err = Open(context.Background(), p, f.core)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "not an ELF file")
		assert.NotContains(t, err.Error(), "EOF")
	}

	_, err = Open(context.Background(), filepath.Join(f.dir, "missing"), f.core)
	assert.Error(t, err)
	_, err = Open(context.Background(), f.exe, filepath.Join(f.dir, "missing"))
	assert.Error(t, err)
}

func TestCorruptCores(t *testing.T) {
	f := getFixture(t)
	data, err := os.ReadFile(f.core)
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	expectErr := func(name string, b []byte, substr string) {
		t.Helper()
		c, err := Open(context.Background(), f.exe, write(name, b))
		if err == nil {
			c.Close()
			t.Errorf("%s: Open succeeded", name)
			return
		}
		if substr != "" {
			assert.Contains(t, err.Error(), substr, name)
		}
	}

	expectErr("text", []byte("this is not an ELF file at all\n"), "not an ELF file")
	expectErr("empty", nil, "not an ELF file")
	exe, err := os.ReadFile(f.exe)
	require.NoError(t, err)
	expectErr("exe", exe, "not a core file")

	// Truncations: inside the ELF header, the program headers, the notes
	// and the memory segments.
	phoff := binary.LittleEndian.Uint64(data[32:])
	noteOff, noteSize := noteSegment(t, data)
	for _, n := range []uint64{1, 10, 63, 64, phoff + 10, phoff + 56*2 + 3, noteOff + 5, noteOff + noteSize/2,
		noteOff + noteSize - 1} {
		if n >= uint64(len(data)) {
			continue
		}
		expectErr("trunc", data[:n], "")
	}
	// Cut in the memory segments (a full disk, a core size limit): what
	// is there is read, the cut is reported, the rest is an error.
	// (gdb writes the notes after the memory: a cut before their end
	// loses them, and the core is refused above.)
	for _, n := range []uint64{uint64(len(data)) / 2, segmentsEnd(data) - 1} {
		if n < noteOff+noteSize {
			expectErr("cut before the notes", data[:n], "PT_NOTE")
			continue
		}
		c, err := Open(context.Background(), f.exe, write("cut", data[:n]))
		if !assert.NoError(t, err, "cut at %d", n) {
			continue
		}
		assert.True(t, slices.ContainsFunc(c.Warnings(), func(w string) bool { return strings.Contains(w, "cut short") }), "%q", c.Warnings())
		lost := c.d.cuts[len(c.d.cuts)-1]
		err = c.ReadMemory(make([]byte, 8), lost.end-8)
		assert.ErrorIs(t, err, target.ErrNoMemory)
		assert.Contains(t, err.Error(), "cut short")
		c.Close()
	}
	// Bytes after the last segment (gdb's section headers) are not needed.
	c, err := Open(context.Background(), f.exe, write("trailer", data[:segmentsEnd(data)]))
	if assert.NoError(t, err) {
		c.Close()
	}

	// A note whose name size runs past the segment.
	bad := bytes.Clone(data)
	binary.LittleEndian.PutUint32(bad[noteOff:], 0xffffff00)
	expectErr("badnote", bad, "note 0")
	// A note whose descriptor size runs past the segment.
	bad = bytes.Clone(data)
	binary.LittleEndian.PutUint32(bad[noteOff+4:], uint32(noteSize))
	expectErr("baddesc", bad, "runs past the end")
	// Garbage over the whole note segment.
	bad = bytes.Clone(data)
	for i := noteOff; i < noteOff+noteSize; i++ {
		bad[i] = byte(i*7 + 3)
	}
	expectErr("garbage", bad, "note")
	// A PT_NOTE pointing past the end of the file.
	bad = bytes.Clone(data)
	binary.LittleEndian.PutUint64(bad[noteHeader(t, data)+8:], uint64(len(data)))
	expectErr("badphdr", bad, "extends past end of file")
	// Too many program headers.
	bad = bytes.Clone(data)
	binary.LittleEndian.PutUint16(bad[56:], 0xfffe)
	expectErr("phnum", bad, "past end of file")
}

// segmentsEnd returns the end of the last segment's bytes in the core.
func segmentsEnd(data []byte) uint64 {
	phoff := binary.LittleEndian.Uint64(data[32:])
	phnum := binary.LittleEndian.Uint16(data[56:])
	end := uint64(0)
	for i := uint64(0); i < uint64(phnum); i++ {
		b := data[phoff+i*56:]
		end = max(end, binary.LittleEndian.Uint64(b[8:])+binary.LittleEndian.Uint64(b[32:]))
	}
	return end
}

// noteHeader returns the file offset of the program header of the
// core's first PT_NOTE.
func noteHeader(t *testing.T, data []byte) uint64 {
	t.Helper()
	phoff := binary.LittleEndian.Uint64(data[32:])
	phnum := binary.LittleEndian.Uint16(data[56:])
	for i := uint64(0); i < uint64(phnum); i++ {
		if elf.ProgType(binary.LittleEndian.Uint32(data[phoff+i*56:])) == elf.PT_NOTE {
			return phoff + i*56
		}
	}
	t.Fatal("no PT_NOTE")
	return 0
}

// noteSegment returns the file offset and size of the core's first
// PT_NOTE.
func noteSegment(t *testing.T, data []byte) (uint64, uint64) {
	t.Helper()
	phoff := binary.LittleEndian.Uint64(data[32:])
	phnum := binary.LittleEndian.Uint16(data[56:])
	for i := uint64(0); i < uint64(phnum); i++ {
		b := data[phoff+i*56:]
		if elf.ProgType(binary.LittleEndian.Uint32(b)) == elf.PT_NOTE {
			return binary.LittleEndian.Uint64(b[8:]), binary.LittleEndian.Uint64(b[32:])
		}
	}
	t.Fatal("no PT_NOTE")
	return 0, 0
}

func TestErrorsNameTheProblem(t *testing.T) {
	_, err := parseCore(bytes.NewReader([]byte("\x7fELF")), 4)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "core: "), err.Error())
	assert.False(t, errors.Is(err, target.ErrNoMemory))
}

// objectsOf lists c's objects.
func objectsOf(t testing.TB, c *Core) []target.Object {
	t.Helper()
	objs, err := c.Objects()
	require.NoError(t, err)
	return objs
}
