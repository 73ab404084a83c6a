package core

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/target"
)

// TestFormatErrors: a malformed core gives a *FormatError that says what
// was read, at which file offset, and why, keeping the cause.
func TestFormatErrors(t *testing.T) {
	good := sampleSynth().bytes()
	le := binary.LittleEndian
	phoff := le.Uint64(good[32:])
	noteOff := le.Uint64(good[phoff+8:]) // program header 0 is the PT_NOTE

	for _, c := range []struct {
		name   string
		mutate func(b []byte) []byte
		off    int64
		what   string
		msg    string
	}{
		{"not ELF", func(b []byte) []byte { return []byte("hello") }, 0, "ELF header", "not an ELF file"},
		{"truncated header", func(b []byte) []byte { return b[:30] }, 0, "ELF header", "truncated"},
		{"bad data encoding", func(b []byte) []byte { b[elf.EI_DATA] = 9; return b }, elf.EI_DATA, "ELF header", "data encoding 9"},
		{"an executable", func(b []byte) []byte { le.PutUint16(b[16:], uint16(elf.ET_EXEC)); return b }, 16, "ELF header", "not a core file"},
		{"no program headers", func(b []byte) []byte { le.PutUint16(b[56:], 0); return b }, int64(phoff), "program header table", "no program headers"},
		{"a segment past the end", func(b []byte) []byte { le.PutUint64(b[phoff+8:], 1<<40); return b }, int64(phoff), "program header 0 (PT_NOTE)", "extends past end of file"},
		{"filesz above memsz", func(b []byte) []byte { le.PutUint64(b[phoff+56+32:], 1<<20); return b }, int64(phoff + 56), "program header 1 (PT_LOAD)", "p_filesz"},
		{"a note's name too long", func(b []byte) []byte { le.PutUint32(b[noteOff:], 0xffffff00); return b }, int64(noteOff), "note 0", "name size"},
		{"a note's descriptor too long", func(b []byte) []byte { le.PutUint32(b[noteOff+4:], 0xffffff00); return b }, int64(noteOff), "note 0 (NT_PRSTATUS)", "descriptor size"},
		{"a short NT_PRSTATUS", func(b []byte) []byte { le.PutUint32(b[noteOff+4:], 100); return b }, int64(noteOff), "note 0 (NT_PRSTATUS)", "100 bytes, want at least 328"},
	} {
		b := c.mutate(bytes.Clone(good))
		_, err := parseCore(bytes.NewReader(b), int64(len(b)))
		require.Error(t, err, c.name)
		var fe *FormatError
		require.ErrorAs(t, err, &fe, c.name)
		assert.Equal(t, c.off, fe.Offset, c.name)
		assert.Equal(t, c.what, fe.What, c.name)
		assert.ErrorContains(t, fe.Err, c.msg, c.name)
		assert.Contains(t, err.Error(), c.what, c.name)
	}

	// A read error is kept as the cause.
	_, err := parseCore(failingReader{bytes.NewReader(good), int64(phoff)}, int64(len(good)))
	var fe *FormatError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "program header table", fe.What)
	assert.ErrorIs(t, err, errDisk)
}

// TestUnknownMachine: a core of a machine without an arch file is refused
// with the machine's name, never read.
func TestUnknownMachine(t *testing.T) {
	b := sampleSynth().bytes()
	binary.LittleEndian.PutUint16(b[18:], uint16(elf.EM_MIPS))
	_, err := parseCore(bytes.NewReader(b), int64(len(b)))
	require.Error(t, err)
	assert.ErrorIs(t, err, target.ErrUnsupported)
	assert.Contains(t, err.Error(), "EM_MIPS")
	var fe *FormatError
	assert.False(t, errors.As(err, &fe), "not a format error: the file is well formed")
}

var errDisk = errors.New("disk on fire")

// failingReader fails every read that reaches past off.
type failingReader struct {
	r   io.ReaderAt
	off int64
}

func (f failingReader) ReadAt(b []byte, off int64) (int, error) {
	if off+int64(len(b)) > f.off {
		return 0, errDisk
	}
	return f.r.ReadAt(b, off)
}
