package core

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/targetopt"
)

// FuzzOpen feeds arbitrary bytes to the core parser, loads the objects it
// names (a small executable and a shared library of this machine, found
// under an otherwise empty sysroot) and then reads the threads, registers,
// symbols and memory of whatever it accepts: it must return errors, never
// panic or allocate without bound. Its seeds are small (a few kilobytes)
// so that the fuzzer spends its time executing, not minimizing.
func FuzzOpen(f *testing.F) {
	exe, lib := fuzzObjects(f)
	// Files the fuzzed NT_FILE notes name are looked for in a sysroot
	// that holds only the library: the fuzzer must not open whatever
	// paths it invents.
	sysroot := f.TempDir()
	if lib != nil {
		require.NoError(f, os.MkdirAll(filepath.Join(sysroot, "lib"), 0o755))
		require.NoError(f, os.WriteFile(filepath.Join(sysroot, fuzzLibName), lib, 0o644))
	}

	s := sampleSynth()
	good := s.bytes()
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add(good[:100])
	bad := bytes.Clone(good)
	binary.LittleEndian.PutUint32(bad[64+56*(1+len(s.segs)):], 0xffffff) // first note's namesz
	f.Add(bad)
	s.threads = append(s.threads, [2]uint64{102, 0})
	s.files = append(s.files, synthFile{start: 0x1000, end: 0x1000 + 1<<40, pgoff: 1 << 50, name: "/"})
	f.Add(s.bytes())
	// A core as Delve's dump writes it: ownerless notes after its header,
	// its own thread notes.
	var dn []byte
	dn = delveNote(dn, "Delve Header", ntDelveHeader, []byte("linux/amd64\nEntry Point: 0x401020\n"))
	dn = delveNote(dn, "", ntDelveThread, dlvThreadNote(100, 0x401000, 0x7ff0, 0x7000, map[string]uint64{"Rip": 0x401000}))
	f.Add(synthCore{segs: []synthSeg{{vaddr: 0x1000, data: fill('a', 0x100)}}, notes: dn}.bytes())
	if exe != "" {
		withObjs := objectsSynth(f, exe, lib)
		f.Add(withObjs)
		f.Add(withObjs[:len(withObjs)-100])
	}
	// The real core costs a gcc and gdb run: only the process that owns
	// the seed corpus needs it, not each fuzzing worker.
	if fl := flag.Lookup("test.fuzzworker"); fl == nil || fl.Value.String() != "true" {
		if real := shrunkRealCore(f); real != nil {
			f.Add(real)
		}
	}

	f.Fuzz(func(t *testing.T, data []byte) {
		cfg := &config{files: targetopt.Files{Sysroot: sysroot}}
		c, err := newCore(bytes.NewReader(data), int64(len(data)), cfg)
		if err != nil {
			return
		}
		defer c.Close()
		if exe != "" && c.loadObjects(cfg, exe) == nil {
			c.LookupSymbol("fuzz_missing")
			c.LookupSymbol("dlopen")
			c.Objects()
		}
		ths, _ := c.Threads()
		for _, th := range ths {
			c.ThreadRegisters(th.ID)
			c.LookupThreadLocal(th.ID, "x")
		}
		buf := make([]byte, 64)
		for _, p := range c.d.progs {
			c.ReadMemory(buf, p.vaddr)
			c.ReadMemory(buf, p.vaddr+p.memsz-1)
		}
		for _, e := range c.d.files {
			c.ReadMemory(buf, e.start)
		}
		c.ReadMemory(buf, 0)
		c.ByteOrder()
		c.Sizes()
	})
}

// fuzzLibName is where FuzzOpen's sysroot holds its shared library.
const fuzzLibName = "/lib/libfuzz.so"

// fuzzObjects returns a small executable and the bytes of a small shared
// library of this machine (glibc's stubs), for FuzzOpen to load. Without
// them (another system) the fuzzer covers the core parser only; under
// CI=true that is a failure.
func fuzzObjects(tb testing.TB) (string, []byte) {
	exe := ""
	for _, p := range []string{"/usr/bin/true", "/bin/true"} {
		if _, err := os.Stat(p); err == nil {
			exe = p
			break
		}
	}
	for _, p := range []string{"/lib/x86_64-linux-gnu/libdl.so.2", "/usr/lib/x86_64-linux-gnu/libdl.so.2", "/lib/x86_64-linux-gnu/libpthread.so.0"} {
		if lib, err := os.ReadFile(p); err == nil && exe != "" {
			return exe, lib
		}
	}
	if os.Getenv("CI") == "true" {
		tb.Fatalf("FuzzOpen: no small executable and shared library found (true, libdl.so.2)")
	}
	return "", nil
}

// objectsSynth returns a small core of the executable exe that maps the
// shared library lib as fuzzLibName: the core holds the first page of
// each, as real cores do, so that Open checks their headers and build-ids.
func objectsSynth(tb testing.TB, exe string, lib []byte) []byte {
	ef, err := elf.Open(exe)
	require.NoError(tb, err)
	defer ef.Close()
	head, err := os.ReadFile(exe)
	require.NoError(tb, err)
	const exeBias, libAt = 0x555555554000, 0x7f0000000000
	phdr := progVaddr(ef, elf.PT_PHDR)
	require.NotNil(tb, phdr)
	return synthCore{
		segs: []synthSeg{
			{vaddr: exeBias, data: head[:4096]},
			{vaddr: libAt, data: lib[:4096]},
		},
		threads: [][2]uint64{{100, 0}},
		auxv:    [][2]uint64{{atEntry, exeBias + ef.Entry}, {atPhdr, exeBias + *phdr}},
		files: []synthFile{
			{start: exeBias, end: exeBias + 0x4000, name: exe},
			{start: libAt, end: libAt + 0x4000, name: fuzzLibName},
		},
	}.bytes()
}

// shrunkRealCore returns the gdb core of the test program with its memory
// segments emptied (p_filesz 0) and dropped from the file, and only the
// notes of its first thread, its auxiliary vector and its NT_FILE list
// kept: the headers and notes of a real core in a few kilobytes. It returns nil if the tools
// to make the core are missing.
func shrunkRealCore(tb testing.TB) []byte {
	for _, tool := range []string{"gcc", "gdb"} {
		if _, err := exec.LookPath(tool); err != nil {
			return nil
		}
	}
	fixOnce.Do(func() { fix, fixErr = buildFixture() })
	if fixErr != nil {
		tb.Logf("no real core seed: %v", fixErr)
		return nil
	}
	data, err := os.ReadFile(fix.core)
	if err != nil {
		return nil
	}
	le := binary.LittleEndian
	phoff := le.Uint64(data[32:])
	phnum := uint64(le.Uint16(data[56:]))
	hdr := bytes.Clone(data[:phoff+phnum*56])
	var notes []byte
	for i := uint64(0); i < phnum; i++ {
		b := hdr[phoff+i*56:]
		off, filesz := le.Uint64(b[8:]), le.Uint64(b[32:])
		if le.Uint32(b) == 4 { // PT_NOTE: the first thread, auxv and NT_FILE
			seg := keepNotes(data[off:off+filesz], map[uint32]int{ntPrstatus: 1, ntAuxv: 1, ntFile: 1})
			le.PutUint64(b[8:], uint64(len(hdr)+len(notes)))
			le.PutUint64(b[32:], uint64(len(seg)))
			notes = append(notes, seg...)
		} else {
			le.PutUint64(b[8:], 0)
			le.PutUint64(b[32:], 0)
		}
	}
	le.PutUint64(hdr[40:], 0) // no section headers
	le.PutUint16(hdr[60:], 0)
	return append(hdr, notes...)
}

// TestFuzzOpenSeed checks that FuzzOpen's seed with objects does load
// both of them, so that the fuzzer starts from openExe, openLib and the
// header and build-id checks rather than from an error.
func TestFuzzOpenSeed(t *testing.T) {
	exe, lib := fuzzObjects(t)
	if exe == "" {
		t.Skip("no small executable and shared library on this system")
	}
	sysroot := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(sysroot, "lib"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(sysroot, fuzzLibName), lib, 0o644))
	data := objectsSynth(t, exe, lib)
	t.Logf("seed of %d bytes", len(data))
	cfg := &config{files: targetopt.Files{Sysroot: sysroot}}
	c, err := newCore(bytes.NewReader(data), int64(len(data)), cfg)
	require.NoError(t, err)
	defer c.Close()
	require.NoError(t, c.loadObjects(cfg, exe))
	for _, w := range c.Warnings() {
		assert.Contains(t, w, "dynamic linker's list") // the core has no .dynamic
	}
	require.Len(t, objectsOf(t, c), 2)
	assert.Equal(t, fuzzLibName, objectsOf(t, c)[1].Name)
	// Another library under the same name: refused by its headers.
	require.NoError(t, os.WriteFile(filepath.Join(sysroot, fuzzLibName), append(bytes.Clone(lib[:64]), make([]byte, len(lib)-64)...), 0o644))
	c2, err := newCore(bytes.NewReader(data), int64(len(data)), cfg)
	require.NoError(t, err)
	defer c2.Close()
	require.NoError(t, c2.loadObjects(cfg, exe))
	assert.Len(t, objectsOf(t, c2), 1)
	assert.NotEmpty(t, c2.Warnings())
	if real := shrunkRealCore(t); real != nil {
		t.Logf("real core seed of %d bytes", len(real))
	}
}

// keepNotes returns the notes of seg whose types are in keep, at most
// keep[type] of each.
func keepNotes(seg []byte, keep map[uint32]int) []byte {
	le := binary.LittleEndian
	var out []byte
	for pos := 0; pos+12 <= len(seg); {
		namesz, descsz, typ := int(le.Uint32(seg[pos:])), int(le.Uint32(seg[pos+4:])), le.Uint32(seg[pos+8:])
		end := pos + 12 + (namesz+3)&^3 + (descsz+3)&^3
		if end > len(seg) {
			break
		}
		if keep[typ] > 0 {
			keep[typ]--
			out = append(out, seg[pos:end]...)
		}
		pos = end
	}
	return out
}
