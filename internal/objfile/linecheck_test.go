package objfile

import (
	"debug/dwarf"
	"debug/elf"
	"encoding/binary"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
)

// TestCheckLineHeader passes every line table of LLVM's libomp (DWARF 5),
// and refuses one whose file count was corrupted, which debug/dwarf would
// loop over for minutes; the object's line lookups then fail at once.
func TestCheckLineHeader(t *testing.T) {
	info := fixtures.Runtime(t)
	f, err := elf.Open(info.LibOMP)
	require.NoError(t, err)
	defer f.Close()
	d, line, _, err := lineSections(f)
	require.NoError(t, err)
	require.NotNil(t, line)
	var offs []int64
	r := d.Reader()
	for {
		e, err := r.Next()
		require.NoError(t, err)
		if e == nil {
			break
		}
		if off, ok := e.Val(dwarf.AttrStmtList).(int64); ok {
			offs = append(offs, off)
		}
		r.SkipChildren()
	}
	require.NotEmpty(t, offs)
	v5 := 0
	for _, off := range offs {
		require.NoError(t, checkLineHeader(line, off, f.ByteOrder), "unit at %#x", off)
		if f.ByteOrder.Uint16(line[off+4:]) >= 5 {
			v5++
		}
	}
	require.NotZero(t, v5, "no DWARF 5 line table to check")

	// The file count of the first DWARF 5 table, made huge: it is the
	// ULEB after the directory entries, which follow the directory
	// format; corrupt the directory count instead, which comes first at
	// a fixed place after the format.
	off := offs[0]
	b := append([]byte(nil), line...)
	p := off + 4 + 2 + 2 + 4 + 5
	opcodeBase := int64(b[p])
	p += opcodeBase // the base itself and its standard_opcode_lengths
	nfmt := int64(b[p])
	p++
	for range nfmt * 2 {
		for b[p]&0x80 != 0 {
			p++
		}
		p++
	}
	// Replace the directory count by a ULEB of 2^40, keeping its length
	// where it was a single byte.
	require.Less(t, b[p], byte(0x80), "directory count longer than a byte")
	huge := binary.AppendUvarint(nil, 1<<40)
	b = append(b[:p:p], append(huge, b[p+1:]...)...)
	err = checkLineHeader(b, off, f.ByteOrder)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "directories")

	// The same through an object's line lookup, under a deadline.
	done := make(chan struct{})
	go func() {
		defer close(done)
		o := &Object{path: "test"}
		o.lines.line, o.lines.order = b, f.ByteOrder
		o.lines.data = d
		o.lines.tables = make(map[dwarf.Offset]*lineTable)
		r := d.Reader()
		e, _ := r.Next()
		tb := o.table(e)
		assert.Error(t, tb.err)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("a corrupt line table header hangs the lookup")
	}
}
