package core

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"unsafe"

	"github.com/klauspost/compress/zstd"
)

// Magic numbers of compressed files.
var (
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
	xzMagic   = []byte{0xfd, '7', 'z', 'X', 'Z', 0}
	lz4Magic  = []byte{0x04, 0x22, 0x4d, 0x18}
)

// maxZstdWindow bounds the memory the zstd decoder may use for its window
// (zstd's own default limit for streams is 8 MiB at most levels; 1 GiB is
// what --long=30 can ask for, more than any core compressor uses).
const maxZstdWindow = 1 << 30

// WithTempDir sets the directory where a compressed core is decompressed
// to (default os.TempDir()). The file is removed from the directory as
// soon as it is created: it lives only while the Core is open.
func WithTempDir(dir string) Option {
	return func(c *config) { c.tempDir = dir }
}

// WithMaxDecompressedSize bounds how many bytes a compressed core may
// decompress to. By default the bound is what the core's own ELF headers
// say its size is (the end of its last segment, program header or section
// header), and never more than the free space of the temporary directory,
// so that a corrupt stream, or one made to expand without end, fails with
// an error instead of filling the disk. n > 0 replaces the free-space part
// of that bound (the headers' size still applies).
func WithMaxDecompressedSize(n int64) Option {
	return func(c *config) { c.maxDecompressed = n }
}

// ErrDecompressedSize is the cause of Open's error when a compressed core
// decompresses to more than its ELF headers say, or to more than the
// temporary directory can hold (see WithMaxDecompressedSize).
var ErrDecompressedSize = errors.New("decompressed core too large")

// decompressed returns f itself when it is not compressed, or else an
// anonymous temporary file holding its decompressed content (f is then
// closed). zstd (systemd-coredump's default) is read; xz and lz4, which
// systemd can also use, are named in the error.
func decompressed(ctx context.Context, f *os.File, cfg *config) (*os.File, error) {
	head := make([]byte, 6)
	n, err := f.ReadAt(head, 0)
	if err != nil && err != io.EOF {
		return nil, err
	}
	head = head[:n]
	switch {
	case bytes.HasPrefix(head, xzMagic):
		return nil, fmt.Errorf("%s is compressed with xz: decompress it first (xz -dk)", f.Name())
	case bytes.HasPrefix(head, lz4Magic):
		return nil, fmt.Errorf("%s is compressed with lz4: decompress it first (lz4 -d)", f.Name())
	case !bytes.HasPrefix(head, zstdMagic):
		return f, nil
	}
	tmp, err := os.CreateTemp(cfg.tempDir, "ompd-core-*")
	if err != nil {
		return nil, fmt.Errorf("decompressing %s: %w", f.Name(), err)
	}
	// Unlinked at once: the space comes back when the file is closed,
	// however the process ends.
	os.Remove(tmp.Name())
	fail := func(err error) (*os.File, error) {
		tmp.Close()
		return nil, fmt.Errorf("decompressing %s (zstd): %w", f.Name(), err)
	}
	dec, err := zstd.NewReader(io.NewSectionReader(f, 0, 1<<62),
		zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(maxZstdWindow))
	if err != nil {
		return fail(err)
	}
	defer dec.Close()
	room := cfg.maxDecompressed
	if room <= 0 {
		room = freeSpace(tmp)
	}
	g := &sizeGuard{f: tmp, room: room, limit: elfHeaderSize}
	if _, err := io.CopyBuffer(g, ctxReader{ctx, dec}, make([]byte, 1<<20)); err != nil {
		return fail(err)
	}
	if err := g.done(); err != nil {
		return fail(err)
	}
	f.Close()
	return tmp, nil
}

// ctxReader stops reading when its context is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (r ctxReader) Read(p []byte) (int, error) {
	if err := r.ctx.Err(); err != nil {
		return 0, err
	}
	return r.r.Read(p)
}

// elfHeaderSize is the size of a 64-bit ELF header (a 32-bit one is
// smaller): what sizeGuard reads first.
const elfHeaderSize = 64

// sizeGuard writes the decompressed core to f and learns, from the ELF
// headers as they arrive, how large the core says it is; it refuses to
// write past that size or past room. Until the headers are all in (the
// ELF header; section header 0 for a core with more than 65,534 segments;
// the program headers; the section headers), the bound is the end of what
// must be read next, which the headers read so far give.
type sizeGuard struct {
	f     *os.File
	room  int64 // free space of f's directory (or the user's bound); <= 0: unknown
	n     int64 // bytes written
	limit int64 // bytes the content may have, as far as known
	stage int   // headers read so far: one of the stage constants

	order            binary.ByteOrder
	class            elf.Class
	l                *elfLayout
	phoff, shoff     uint64
	phnum, shnum     uint64
	phentsz, shentsz uint64
	end              uint64 // the end of what the headers read so far cover
}

// pnXNum in e_phnum says the count is in section header 0 (elf(5)).
const pnXNum = 0xffff

// What sizeGuard has read (each stage reads the next).
const (
	stageNone = iota
	stageEhdr // ELF header
	stageSh0  // section header 0 (only where needSh0)
	stagePh   // program headers
	stageSh   // section headers: limit is final
)

// Bounds on header fields beyond which the content is no core: entries of
// at most 256 bytes, at most 1<<22 of them (vm.max_map_count is 65,530 by
// default), offsets below 2^62.
const (
	maxHeaderEntry = 256
	maxHeaders     = 1 << 22
	maxOffset      = 1 << 62
)

func (g *sizeGuard) Write(p []byte) (int, error) {
	if g.stage == stageSh && g.n+int64(len(p)) > g.limit {
		return 0, g.tooLarge()
	}
	n, err := g.f.Write(p)
	g.n += int64(n)
	if err != nil {
		return n, err
	}
	for g.stage != stageSh && g.n >= g.limit {
		if err := g.learn(); err != nil {
			return n, err
		}
	}
	if g.stage == stageSh && g.n > g.limit {
		return n, g.tooLarge()
	}
	return n, nil
}

// done checks the end of the content: at least the ELF header.
func (g *sizeGuard) done() error {
	if g.stage == stageNone {
		return formatErr(0, "ELF header", "the decompressed content (%d bytes) is no ELF core", g.n)
	}
	return nil
}

func (g *sizeGuard) tooLarge() error {
	return fmt.Errorf("%w: more than the %d bytes its ELF headers say", ErrDecompressedSize, g.limit)
}

// learn reads the headers of the next stage, which the bytes written so
// far hold, and sets the next limit.
func (g *sizeGuard) learn() error {
	var err error
	switch {
	case g.stage == stageNone:
		err = g.readEhdr()
		g.stage = stageEhdr
	case g.stage == stageEhdr && g.needSh0():
		err = g.readSh0()
		g.stage = stageSh0
	case g.stage < stagePh:
		err = g.readPhdrs()
		g.stage = stagePh
	default:
		err = g.readShdrs()
		g.stage = stageSh
	}
	if err != nil {
		return err
	}
	// The end of what the next stage reads.
	next := g.end
	switch {
	case g.stage == stageEhdr && g.needSh0():
		next = g.shoff + g.shentsz
	case g.stage < stagePh:
		next = g.phoff + g.phnum*g.phentsz
	case g.stage == stagePh && g.shnum > 0:
		next = g.shoff + g.shnum*g.shentsz
	}
	g.end = max(g.end, next)
	g.limit = int64(g.end) // Write goes on to the next stage at once if n is past it
	if g.room > 0 && int64(g.end) > g.room {
		return fmt.Errorf("%w: its ELF headers say %d bytes or more, more than the %d bytes the temporary directory has free (see WithTempDir, WithMaxDecompressedSize)", ErrDecompressedSize, g.end, g.room)
	}
	return nil
}

// needSh0 says whether counts are in section header 0 (elf(5): PN_XNUM,
// and e_shnum 0 with section headers present).
func (g *sizeGuard) needSh0() bool {
	return g.phnum == pnXNum || (g.shnum == 0 && g.shoff != 0)
}

// read returns the n bytes at off of what was written.
func (g *sizeGuard) read(off, n uint64) ([]byte, error) {
	b := make([]byte, n)
	if _, err := g.f.ReadAt(b, int64(off)); err != nil {
		return nil, fmt.Errorf("reading back the decompressed core at %d: %w", off, err)
	}
	return b, nil
}

// elfLayout places the header fields sizeGuard reads, for one ELF class,
// taken from debug/elf's structures as debug/elf itself does.
type elfLayout struct {
	phoff, shoff, phentsize, phnum, shentsize, shnum uintptr // in the ELF header
	prog, progOff, progFilesz                        uintptr // program header size, fields
	sect, sectType, sectOff, sectSize, sectInfo      uintptr // section header size, fields
}

var (
	elfLayout64 = elfLayout{
		unsafe.Offsetof(elf.Header64{}.Phoff), unsafe.Offsetof(elf.Header64{}.Shoff),
		unsafe.Offsetof(elf.Header64{}.Phentsize), unsafe.Offsetof(elf.Header64{}.Phnum),
		unsafe.Offsetof(elf.Header64{}.Shentsize), unsafe.Offsetof(elf.Header64{}.Shnum),
		unsafe.Sizeof(elf.Prog64{}), unsafe.Offsetof(elf.Prog64{}.Off), unsafe.Offsetof(elf.Prog64{}.Filesz),
		unsafe.Sizeof(elf.Section64{}), unsafe.Offsetof(elf.Section64{}.Type), unsafe.Offsetof(elf.Section64{}.Off),
		unsafe.Offsetof(elf.Section64{}.Size), unsafe.Offsetof(elf.Section64{}.Info),
	}
	elfLayout32 = elfLayout{
		unsafe.Offsetof(elf.Header32{}.Phoff), unsafe.Offsetof(elf.Header32{}.Shoff),
		unsafe.Offsetof(elf.Header32{}.Phentsize), unsafe.Offsetof(elf.Header32{}.Phnum),
		unsafe.Offsetof(elf.Header32{}.Shentsize), unsafe.Offsetof(elf.Header32{}.Shnum),
		unsafe.Sizeof(elf.Prog32{}), unsafe.Offsetof(elf.Prog32{}.Off), unsafe.Offsetof(elf.Prog32{}.Filesz),
		unsafe.Sizeof(elf.Section32{}), unsafe.Offsetof(elf.Section32{}.Type), unsafe.Offsetof(elf.Section32{}.Off),
		unsafe.Offsetof(elf.Section32{}.Size), unsafe.Offsetof(elf.Section32{}.Info),
	}
)

// word reads an address-sized field of a header.
func (g *sizeGuard) word(b []byte) uint64 {
	if g.class == elf.ELFCLASS32 {
		return uint64(g.order.Uint32(b))
	}
	return g.order.Uint64(b)
}

// span adds off+size to the size the headers give, if both are sane: the
// header what, at file offset at, gives part (a table, a segment or a
// section) of size bytes at off.
func (g *sizeGuard) span(at uint64, what, part string, off, size uint64) error {
	if off > maxOffset || size > maxOffset {
		return formatErr(at, what, "%w: %s of %d bytes at offset %#x", ErrDecompressedSize, part, size, off)
	}
	g.end = max(g.end, off+size)
	return nil
}

func (g *sizeGuard) readEhdr() error {
	h, err := g.read(0, elfHeaderSize)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(h, []byte(elf.ELFMAG)) {
		return formatErr(0, "ELF header", "the decompressed content is no ELF file")
	}
	switch elf.Data(h[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		g.order = binary.LittleEndian
	case elf.ELFDATA2MSB:
		g.order = binary.BigEndian
	default:
		return formatErr(elf.EI_DATA, "ELF header", "the decompressed ELF header has byte order %d", h[elf.EI_DATA])
	}
	g.class = elf.Class(h[elf.EI_CLASS])
	switch g.class {
	case elf.ELFCLASS64:
		g.l = &elfLayout64
	case elf.ELFCLASS32:
		g.l = &elfLayout32
	default:
		return formatErr(elf.EI_CLASS, "ELF header", "the decompressed ELF header has class %d", h[elf.EI_CLASS])
	}
	l := g.l
	half := func(off uintptr) uint64 { return uint64(g.order.Uint16(h[off:])) }
	g.phoff, g.shoff = g.word(h[l.phoff:]), g.word(h[l.shoff:])
	g.phentsz, g.phnum = half(l.phentsize), half(l.phnum)
	g.shentsz, g.shnum = half(l.shentsize), half(l.shnum)
	ph, sh := uint64(l.prog), uint64(l.sect)
	if g.phnum != 0 && (g.phentsz < ph || g.phentsz > maxHeaderEntry) {
		return formatErr(uint64(l.phentsize), "ELF header", "the decompressed ELF header gives program headers of %d bytes", g.phentsz)
	}
	if (g.shnum != 0 || g.needSh0()) && (g.shentsz < sh || g.shentsz > maxHeaderEntry) {
		return formatErr(uint64(l.shentsize), "ELF header", "the decompressed ELF header gives section headers of %d bytes", g.shentsz)
	}
	if g.phoff > maxOffset || g.shoff > maxOffset {
		return formatErr(uint64(l.phoff), "ELF header", "%w: its ELF header puts its headers at %#x and %#x", ErrDecompressedSize, g.phoff, g.shoff)
	}
	g.end = elfHeaderSize
	return nil
}

// readSh0 takes the real counts from section header 0.
func (g *sizeGuard) readSh0() error {
	s, err := g.read(g.shoff, g.shentsz)
	if err != nil {
		return err
	}
	if g.shnum == 0 {
		g.shnum = g.word(s[g.l.sectSize:])
	}
	if g.phnum == pnXNum {
		g.phnum = uint64(g.order.Uint32(s[g.l.sectInfo:]))
	}
	if g.phnum > maxHeaders || g.shnum > maxHeaders {
		return formatErr(g.shoff, "section header 0", "%w: it gives %d program and %d section headers", ErrDecompressedSize, g.phnum, g.shnum)
	}
	return nil
}

// eachHeader calls fn with each of num headers of size entsz at off,
// reading them a block at a time.
func (g *sizeGuard) eachHeader(off, num, entsz uint64, fn func(i uint64, h []byte) error) error {
	const block = 4096
	for i := uint64(0); i < num; i += block {
		k := min(block, num-i)
		t, err := g.read(off+i*entsz, k*entsz)
		if err != nil {
			return err
		}
		for j := uint64(0); j < k; j++ {
			if err := fn(i+j, t[j*entsz:]); err != nil {
				return err
			}
		}
	}
	return nil
}

// readPhdrs adds the program header table and its segments' contents.
func (g *sizeGuard) readPhdrs() error {
	if err := g.span(uint64(g.l.phoff), "ELF header", "the program header table", g.phoff, g.phnum*g.phentsz); err != nil {
		return err
	}
	return g.eachHeader(g.phoff, g.phnum, g.phentsz, func(i uint64, p []byte) error {
		return g.span(g.phoff+i*g.phentsz, fmt.Sprintf("program header %d", i), "its segment", g.word(p[g.l.progOff:]), g.word(p[g.l.progFilesz:]))
	})
}

// readShdrs adds the section header table and its sections' contents.
func (g *sizeGuard) readShdrs() error {
	if g.shnum == 0 {
		return nil
	}
	if err := g.span(uint64(g.l.shoff), "ELF header", "the section header table", g.shoff, g.shnum*g.shentsz); err != nil {
		return err
	}
	return g.eachHeader(g.shoff, g.shnum, g.shentsz, func(i uint64, s []byte) error {
		if t := elf.SectionType(g.order.Uint32(s[g.l.sectType:])); t == elf.SHT_NOBITS || t == elf.SHT_NULL {
			return nil
		}
		return g.span(g.shoff+i*g.shentsz, fmt.Sprintf("section header %d", i), "its section", g.word(s[g.l.sectOff:]), g.word(s[g.l.sectSize:]))
	})
}
