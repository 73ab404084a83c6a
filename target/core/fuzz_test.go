package core

import (
	"bytes"
	"encoding/binary"
	"flag"
	"os"
	"os/exec"
	"testing"
)

// FuzzOpen feeds arbitrary bytes to the core parser and then reads the
// threads, registers and memory of whatever it accepts: it must return
// errors, never panic or allocate without bound.
func FuzzOpen(f *testing.F) {
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
	// The real core costs a gcc and gdb run: only the process that owns
	// the seed corpus needs it, not each fuzzing worker.
	if fl := flag.Lookup("test.fuzzworker"); fl == nil || fl.Value.String() != "true" {
		if real := shrunkRealCore(f); real != nil {
			f.Add(real)
			f.Add(real[:len(real)-7])
		}
	}

	// Files the fuzzed NT_FILE notes name are looked for in an empty
	// sysroot: the fuzzer must not open whatever paths it invents.
	sysroot := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := newCore(bytes.NewReader(data), int64(len(data)), &config{sysroot: sysroot})
		if err != nil {
			return
		}
		defer c.Close()
		ths, _ := c.Threads()
		for _, th := range ths {
			c.Registers(th.ID)
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

// shrunkRealCore returns the gdb core of the test program with its memory
// segments emptied (p_filesz 0) and dropped from the file: headers and notes
// of a real core in a few tens of kilobytes. It returns nil if the tools
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
		if le.Uint32(b) == 4 { // PT_NOTE
			le.PutUint64(b[8:], uint64(len(hdr)+len(notes)))
			notes = append(notes, data[off:off+filesz]...)
		} else {
			le.PutUint64(b[8:], 0)
			le.PutUint64(b[32:], 0)
		}
	}
	le.PutUint64(hdr[40:], 0) // no section headers
	le.PutUint16(hdr[60:], 0)
	return append(hdr, notes...)
}
