package core_test

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target/core"
)

// zstdCLI compresses src with the zstd command, as systemd-coredump
// stores cores (it uses libzstd's defaults).
func zstdCLI(t *testing.T, src string) string {
	t.Helper()
	fixtures.RequireTool(t, "zstd")
	dst := filepath.Join(t.TempDir(), "core.prog.0.boot.1234.1700000000000000.zst")
	out, err := exec.Command("zstd", "-q", "-T1", "-o", dst, src).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return dst
}

// TestZstdCore opens a real core compressed by the zstd command and reads
// it as the uncompressed one: every answer matches the program's truth,
// and every thread's memory at its stack pointer is the same.
func TestZstdCore(t *testing.T) {
	stop := fixtures.Core(t, fixtures.Nested)
	zst := zstdCLI(t, stop.Core)
	c, err := core.Open(context.Background(), stop.Exe, zst, core.WithTempDir(t.TempDir()))
	require.NoError(t, err)
	defer c.Close()
	as, err := ompd.Open(c)
	require.NoError(t, err)
	defer as.Close()
	ompdtest.CheckTruth(t, as, stop.Truth)

	plain, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer plain.Close()
	a, err := c.Threads()
	require.NoError(t, err)
	b, err := plain.Threads()
	require.NoError(t, err)
	require.Equal(t, b, a)
	for _, th := range a {
		sym, err := c.LookupSymbol("stopme")
		require.NoError(t, err)
		for _, addr := range []uint64{th.Pointer, sym} {
			x, y := make([]byte, 256), make([]byte, 256)
			require.NoError(t, c.ReadMemory(x, addr))
			require.NoError(t, plain.ReadMemory(y, addr))
			assert.Equal(t, y, x)
		}
	}
}

// TestZstdCoreStreamed: a large core (256 threads) compressed with the Go
// library, in several frames, is decompressed to a file, not into memory:
// Open allocates far less than the core's size, and leaves no file in the
// temporary directory.
func TestZstdCoreStreamed(t *testing.T) {
	stop := fixtures.Core(t, fixtures.Many, "256")
	st, err := os.Stat(stop.Core)
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), "core.zst")
	out, err := os.Create(dst)
	require.NoError(t, err)
	in, err := os.Open(stop.Core)
	require.NoError(t, err)
	defer in.Close()
	// Two frames: the decoder must go on past the first.
	half := st.Size() / 2
	for _, r := range []io.Reader{io.LimitReader(in, half), in} {
		enc, err := zstd.NewWriter(out, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
		require.NoError(t, err)
		_, err = io.Copy(enc, r)
		require.NoError(t, err)
		require.NoError(t, enc.Close())
	}
	require.NoError(t, out.Close())

	tmp := t.TempDir()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c, err := core.Open(context.Background(), stop.Exe, dst, core.WithTempDir(tmp))
	runtime.ReadMemStats(&after)
	require.NoError(t, err)
	defer c.Close()
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("core %d bytes, Open allocated %d bytes", st.Size(), alloc)
	assert.Less(t, alloc, uint64(st.Size()/4), "Open must not hold the core in memory")
	entries, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, entries, "the decompressed file is unlinked")

	as, err := ompd.Open(c)
	require.NoError(t, err)
	defer as.Close()
	ompdtest.CheckTruth(t, as, stop.Truth)
}

// TestCompressedCoreErrors: a truncated zstd core, a cancelled Open, and
// cores compressed in formats this package does not read fail with errors
// that say so.
func TestCompressedCoreErrors(t *testing.T) {
	stop := fixtures.Core(t, fixtures.Nested)
	zst := zstdCLI(t, stop.Core)
	data, err := os.ReadFile(zst)
	require.NoError(t, err)
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}

	_, err = core.Open(context.Background(), stop.Exe, write("cut.zst", data[:len(data)/2]), core.WithTempDir(dir))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "decompressing")
	assert.Contains(t, err.Error(), "cut.zst")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = core.Open(ctx, stop.Exe, zst, core.WithTempDir(dir))
	assert.ErrorIs(t, err, context.Canceled)
	// Cancelled while it decompresses.
	_, err = core.Open(&lateCancel{Context: context.Background()}, stop.Exe, zst, core.WithTempDir(dir))
	assert.ErrorIs(t, err, context.Canceled)
	assert.ErrorContains(t, err, "decompressing")

	_, err = core.Open(context.Background(), stop.Exe, write("core.xz", []byte("\xfd7zXZ\x00rest")))
	assert.ErrorContains(t, err, "compressed with xz")
	_, err = core.Open(context.Background(), stop.Exe, write("core.lz4", []byte("\x04\x22\x4d\x18rest")))
	assert.ErrorContains(t, err, "compressed with lz4")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 3, "no temporary file left behind")
}

// TestZstdCoreSizeBound: a compressed core may decompress to no more than
// its ELF headers say (trailing bytes, a segment claiming a terabyte, a
// bound below the core's size), and to an ELF file only; each fails with
// an error saying so, and leaves no temporary file.
func TestZstdCoreSizeBound(t *testing.T) {
	stop := fixtures.Core(t, fixtures.Nested)
	plain, err := os.ReadFile(stop.Core)
	require.NoError(t, err)
	dir := t.TempDir()
	compress := func(name string, b []byte) string {
		enc, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		require.NoError(t, err)
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, enc.EncodeAll(b, nil), 0o644))
		return p
	}
	f, err := elf.NewFile(bytes.NewReader(plain))
	require.NoError(t, err)
	last := f.Progs[len(f.Progs)-1]

	// The same content opens; one more byte (2 MiB more, in zeros) does not.
	c, err := core.Open(context.Background(), stop.Exe, compress("ok.zst", plain), core.WithTempDir(dir))
	require.NoError(t, err)
	c.Close()
	padded := append(append([]byte(nil), plain...), make([]byte, 2<<20)...)
	_, err = core.Open(context.Background(), stop.Exe, compress("padded.zst", padded), core.WithTempDir(dir))
	assert.ErrorIs(t, err, core.ErrDecompressedSize)
	assert.ErrorContains(t, err, "padded.zst")
	assert.ErrorContains(t, err, fmt.Sprintf("more than the %d bytes its ELF headers say", len(plain)))

	// A segment that claims a terabyte is refused before it is written.
	huge := append([]byte(nil), plain...)
	phdr := f.FileHeader.ByteOrder.Uint64(plain[32:]) + uint64(len(f.Progs)-1)*56
	binary.LittleEndian.PutUint64(huge[phdr+32:], 1<<40) // p_filesz
	_, err = core.Open(context.Background(), stop.Exe, compress("huge.zst", huge), core.WithTempDir(dir), core.WithMaxDecompressedSize(1<<32))
	assert.ErrorIs(t, err, core.ErrDecompressedSize)
	assert.ErrorContains(t, err, "temporary directory")
	require.Less(t, last.Off+last.Filesz, uint64(1<<40))

	// A segment at an offset no file can have: a FormatError at its
	// program header, naming it.
	far := append([]byte(nil), plain...)
	binary.LittleEndian.PutUint64(far[phdr+8:], 1<<63) // p_offset
	_, err = core.Open(context.Background(), stop.Exe, compress("far.zst", far), core.WithTempDir(dir))
	assert.ErrorIs(t, err, core.ErrDecompressedSize)
	var fe *core.FormatError
	if assert.ErrorAs(t, err, &fe) {
		assert.Equal(t, int64(phdr), fe.Offset)
		assert.Equal(t, fmt.Sprintf("program header %d", len(f.Progs)-1), fe.What)
		assert.ErrorIs(t, fe, core.ErrDecompressedSize)
	}

	// A bound below the core's size.
	_, err = core.Open(context.Background(), stop.Exe, compress("small.zst", plain), core.WithTempDir(dir), core.WithMaxDecompressedSize(int64(len(plain)/2)))
	assert.ErrorIs(t, err, core.ErrDecompressedSize)

	// Not ELF at all, and less than an ELF header.
	_, err = core.Open(context.Background(), stop.Exe, compress("text.zst", bytes.Repeat([]byte("not a core\n"), 100)), core.WithTempDir(dir))
	assert.ErrorContains(t, err, "no ELF file")
	assert.ErrorAs(t, err, &fe)
	_, err = core.Open(context.Background(), stop.Exe, compress("short.zst", plain[:40]), core.WithTempDir(dir))
	assert.ErrorContains(t, err, "no ELF core")
	if assert.ErrorAs(t, err, &fe) {
		assert.Equal(t, "ELF header", fe.What)
	}

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 7, "only the compressed files")
}

// lateCancel is a context that is cancelled from its second Err on: after
// Open's first check, in the middle of its work.
type lateCancel struct {
	context.Context
	n atomic.Int32
}

func (c *lateCancel) Err() error {
	if c.n.Add(1) > 1 {
		return context.Canceled
	}
	return nil
}
