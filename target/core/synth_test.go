package core

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/targetopt"
	"github.com/ompd-go/ompd/target"
)

// synthCore describes a small x86-64 core file built in memory.
type synthCore struct {
	segs     []synthSeg
	threads  [][2]uint64 // tid, fs_base
	auxv     [][2]uint64
	files    []synthFile
	pageSize uint64
	notes    []byte // raw notes appended after the generated ones
}

type synthSeg struct {
	vaddr uint64
	data  []byte
	memsz uint64 // 0: len(data)
}

type synthFile struct {
	start, end, pgoff uint64
	name              string
}

func appendNote(b []byte, name string, typ uint32, desc []byte) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(len(name)+1))
	b = le.AppendUint32(b, uint32(len(desc)))
	b = le.AppendUint32(b, typ)
	b = append(b, name...)
	b = append(b, 0)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, desc...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func (s synthCore) bytes() []byte {
	le := binary.LittleEndian
	var notes []byte
	for _, th := range s.threads {
		d := make([]byte, 336)
		le.PutUint32(d[32:], uint32(th[0]))
		le.PutUint64(d[112+21*8:], th[1])
		notes = appendNote(notes, "CORE", ntPrstatus, d)
	}
	if s.auxv != nil {
		var d []byte
		for _, kv := range s.auxv {
			d = le.AppendUint64(le.AppendUint64(d, kv[0]), kv[1])
		}
		d = append(d, make([]byte, 16)...)
		notes = appendNote(notes, "CORE", ntAuxv, d)
	}
	if s.files != nil {
		page := s.pageSize
		if page == 0 {
			page = 4096
		}
		d := le.AppendUint64(nil, uint64(len(s.files)))
		d = le.AppendUint64(d, page)
		for _, f := range s.files {
			d = le.AppendUint64(le.AppendUint64(le.AppendUint64(d, f.start), f.end), f.pgoff)
		}
		for _, f := range s.files {
			d = append(append(d, f.name...), 0)
		}
		notes = appendNote(notes, "CORE", ntFile, d)
	}
	notes = append(notes, s.notes...)

	phnum := 1 + len(s.segs)
	hdr := make([]byte, 64+56*phnum)
	copy(hdr, elf.ELFMAG)
	hdr[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr[elf.EI_VERSION] = 1
	le.PutUint16(hdr[16:], uint16(elf.ET_CORE))
	le.PutUint16(hdr[18:], uint16(elf.EM_X86_64))
	le.PutUint32(hdr[20:], 1)
	le.PutUint64(hdr[32:], 64)
	le.PutUint16(hdr[52:], 64)
	le.PutUint16(hdr[54:], 56)
	le.PutUint16(hdr[56:], uint16(phnum))
	off := uint64(len(hdr))
	ph := func(i int, typ elf.ProgType, flags elf.ProgFlag, off, vaddr, filesz, memsz uint64) {
		b := hdr[64+56*i:]
		le.PutUint32(b[0:], uint32(typ))
		le.PutUint32(b[4:], uint32(flags))
		le.PutUint64(b[8:], off)
		le.PutUint64(b[16:], vaddr)
		le.PutUint64(b[32:], filesz)
		le.PutUint64(b[40:], memsz)
		le.PutUint64(b[48:], 1)
	}
	ph(0, elf.PT_NOTE, elf.PF_R, off, 0, uint64(len(notes)), 0)
	out := append(hdr, notes...)
	for i, sg := range s.segs {
		memsz := sg.memsz
		if memsz == 0 {
			memsz = uint64(len(sg.data))
		}
		ph(i+1, elf.PT_LOAD, elf.PF_R|elf.PF_W, uint64(len(out)), sg.vaddr, uint64(len(sg.data)), memsz)
		out = append(out, sg.data...)
	}
	copy(out, hdr)
	return out
}

func fill(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }

// sampleSynth is a small core: two adjacent segments, one with a tail the
// core left out, a file mapping partly covered by the core, two threads.
func sampleSynth() synthCore {
	return synthCore{
		segs: []synthSeg{
			{vaddr: 0x1000, data: fill('a', 0x1000)},
			{vaddr: 0x2000, data: fill('b', 0x1000)},
			{vaddr: 0x10000, data: fill('t', 0x1000), memsz: 0x3000},
			{vaddr: 0x20000, data: fill('c', 0x100)},
		},
		threads: [][2]uint64{{100, 0x7000}, {101, 0x8000}},
		auxv:    [][2]uint64{{atEntry, 0x1234}},
		files: []synthFile{
			{start: 0x20000, end: 0x23000, pgoff: 1, name: "/synthetic/data.bin"},
		},
	}
}

func TestSyntheticCore(t *testing.T) {
	dir := t.TempDir()
	fileData := make([]byte, 5000)
	for i := range fileData {
		fileData[i] = byte(i)
	}
	path := filepath.Join(dir, "data.bin")
	require.NoError(t, os.WriteFile(path, fileData, 0o644))

	data := sampleSynth().bytes()
	cfg := &config{files: targetopt.Files{Map: map[string]string{"/synthetic/data.bin": path}}}
	c, err := newCore(bytes.NewReader(data), int64(len(data)), cfg)
	require.NoError(t, err)
	defer c.Close()

	ths, err := c.Threads()
	require.NoError(t, err)
	assert.Equal(t, []target.Thread{{ID: 100, Pointer: 0x7000}, {ID: 101, Pointer: 0x8000}}, ths)

	// Across two segments.
	buf := make([]byte, 0x20)
	require.NoError(t, c.ReadMemory(buf, 0x1ff0))
	assert.Equal(t, append(fill('a', 0x10), fill('b', 0x10)...), buf)

	// The tail of a segment that the core left out, with nothing behind it.
	err = c.ReadMemory(buf, 0x11000)
	assert.ErrorIs(t, err, target.ErrNoMemory)
	err = c.ReadMemory(buf, 0x10ff0) // starts in the core, runs into the gap
	assert.ErrorIs(t, err, target.ErrNoMemory)
	assert.NoError(t, c.ReadMemory(buf[:0x10], 0x10ff0))

	// The file mapping: core bytes first, then the file from offset
	// 4096+0x100, zeros from its end to the end of its last page, then
	// nothing.
	buf = make([]byte, 0x200)
	require.NoError(t, c.ReadMemory(buf, 0x20080))
	assert.Equal(t, fill('c', 0x80), buf[:0x80])
	assert.Equal(t, fileData[4096+0x100:4096+0x280], buf[0x80:])
	buf = make([]byte, 0x1000-0x300)
	require.NoError(t, c.ReadMemory(buf, 0x20300))
	assert.Equal(t, fileData[4096+0x300:], buf[:5000-4096-0x300])
	assert.Equal(t, make([]byte, len(buf)-(5000-4096-0x300)), buf[5000-4096-0x300:])
	err = c.ReadMemory(make([]byte, 1), 0x21000)
	assert.ErrorIs(t, err, target.ErrNoMemory)

	// Without the file, only the core's bytes.
	c2, err := newCore(bytes.NewReader(data), int64(len(data)), &config{files: targetopt.Files{Sysroot: dir + "/nowhere"}})
	require.NoError(t, err)
	defer c2.Close()
	assert.NoError(t, c2.ReadMemory(make([]byte, 0x100), 0x20000))
	err = c2.ReadMemory(make([]byte, 0x101), 0x20000)
	assert.ErrorIs(t, err, target.ErrNoMemory)
	assert.Contains(t, err.Error(), "/synthetic/data.bin")

	// Wrap-around.
	assert.ErrorIs(t, c.ReadMemory(make([]byte, 16), ^uint64(0)-4), target.ErrNoMemory)
}

// TestSyntheticCut reads a core cut short in its last segment, as the
// kernel leaves one when the disk fills up: what is there is read, the cut
// is a warning, and the missing bytes are an error, not zeros.
func TestSyntheticCut(t *testing.T) {
	s := sampleSynth()
	data := s.bytes()
	data = data[:len(data)-0x10]
	c, err := newCore(bytes.NewReader(data), int64(len(data)), &config{})
	require.NoError(t, err)
	defer c.Close()
	require.Len(t, c.Warnings(), 1)
	assert.Contains(t, c.Warnings()[0], "cut short")
	require.Len(t, c.d.cuts, 1)
	k := c.d.cuts[0]
	assert.Equal(t, uint64(0x10), k.end-k.start)
	buf := make([]byte, 0x10)
	assert.NoError(t, c.ReadMemory(buf, k.start-0x10))
	err = c.ReadMemory(buf, k.start-8)
	assert.ErrorIs(t, err, target.ErrNoMemory)
	assert.Contains(t, err.Error(), "cut short")
}

func TestSyntheticCorrupt(t *testing.T) {
	le := binary.LittleEndian
	cases := map[string]func(*synthCore){
		"no threads": func(s *synthCore) { s.threads = nil },
		"short prstatus": func(s *synthCore) {
			s.threads = nil
			s.notes = appendNote(nil, "CORE", ntPrstatus, make([]byte, 100))
		},
		"huge NT_FILE count": func(s *synthCore) {
			d := le.AppendUint64(nil, 1<<40)
			d = le.AppendUint64(d, 4096)
			s.notes = appendNote(nil, "CORE", ntFile, d)
		},
		"NT_FILE without names": func(s *synthCore) {
			d := le.AppendUint64(nil, 2)
			d = le.AppendUint64(d, 4096)
			d = append(d, make([]byte, 6*8)...)
			s.notes = appendNote(nil, "CORE", ntFile, d)
		},
		"NT_FILE end before start": func(s *synthCore) {
			s.files = []synthFile{{start: 0x5000, end: 0x4000, name: "/x"}}
		},
	}
	for name, mod := range cases {
		s := sampleSynth()
		mod(&s)
		data := s.bytes()
		_, err := newCore(bytes.NewReader(data), int64(len(data)), &config{})
		assert.Error(t, err, name)
		if err != nil {
			t.Logf("%s: %v", name, err)
		}
	}
}
