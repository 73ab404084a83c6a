package core

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

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

// WithContext bounds the long work of Open itself: decompressing a
// compressed core can take a while for a large one. Cancelling ctx makes
// Open return its error. (Debug-file searches after Open are bounded by
// WithDebugContext.)
func WithContext(ctx context.Context) Option {
	return func(c *config) { c.openCtx = ctx }
}

// WithTempDir sets the directory where a compressed core is decompressed
// to (default os.TempDir()). The file is removed from the directory as
// soon as it is created: it lives only while the Core is open.
func WithTempDir(dir string) Option {
	return func(c *config) { c.tempDir = dir }
}

// decompressed returns f itself when it is not compressed, or else an
// anonymous temporary file holding its decompressed content (f is then
// closed). zstd (systemd-coredump's default) is read; xz and lz4, which
// systemd can also use, are named in the error.
func decompressed(f *os.File, cfg *config) (*os.File, error) {
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
	ctx := cfg.openCtx
	if ctx == nil {
		ctx = context.Background()
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
	if _, err := io.CopyBuffer(tmp, ctxReader{ctx, dec}, make([]byte, 1<<20)); err != nil {
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
