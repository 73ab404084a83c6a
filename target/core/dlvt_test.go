package core

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// delveNote appends a note as Delve's elfwriter writes it: the name's size
// without a terminating NUL.
func delveNote(b []byte, name string, typ uint32, desc []byte) []byte {
	le := binary.LittleEndian
	b = le.AppendUint32(b, uint32(len(name)))
	b = le.AppendUint32(b, uint32(len(desc)))
	b = le.AppendUint32(b, typ)
	b = append(b, name...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	b = append(b, desc...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// dlvThreadNote is Delve's platform-independent thread note.
func dlvThreadNote(tid, pc, sp, tls uint64, regs map[string]uint64) []byte {
	le := binary.LittleEndian
	var b []byte
	for _, v := range []uint64{tid, pc, sp, 0, tls} {
		b = le.AppendUint64(b, v)
	}
	b = append(b, 0)
	b = le.AppendUint64(b, 0)
	b = le.AppendUint32(b, uint32(len(regs)))
	for _, name := range []string{"Rip", "Rsp", "Rflags", "Fs_base", "Xmm0"} {
		v, ok := regs[name]
		if !ok {
			continue
		}
		b = le.AppendUint16(b, uint16(len(name)))
		b = append(b, name...)
		if name == "Xmm0" {
			b = le.AppendUint16(b, 16)
			b = append(b, bytes.Repeat([]byte{7}, 16)...)
			continue
		}
		b = le.AppendUint16(b, 8)
		b = le.AppendUint64(b, v)
	}
	return b
}

// TestDelveThreadNotes reads a core in the form Delve's dump writes for
// backends without native notes (rr, lldb): a header note, then DLVT
// thread notes and no NT_PRSTATUS or auxiliary vector. No backend of this
// machine writes it, so the core is made here.
func TestDelveThreadNotes(t *testing.T) {
	var notes []byte
	notes = delveNote(notes, "Delve Header", ntDelveHeader,
		[]byte("linux/amd64\nVersion: 1.27.2\nTarget Pid: 100\nEntry Point: 0x401020\n"))
	notes = delveNote(notes, "", ntDelveThread, dlvThreadNote(100, 0x401000, 0x7ff0, 0x7000,
		map[string]uint64{"Rip": 0x401000, "Rsp": 0x7ff0, "Rflags": 0x246, "Fs_base": 0x7000, "Xmm0": 0}))
	notes = delveNote(notes, "", ntDelveThread, dlvThreadNote(101, 0x401004, 0x8ff0, 0x8000, nil))
	s := synthCore{segs: []synthSeg{{vaddr: 0x1000, data: fill('a', 0x100)}}, notes: notes}
	data := s.bytes()
	d, err := parseCore(bytes.NewReader(data), int64(len(data)))
	require.NoError(t, err)
	assert.True(t, d.delve)
	require.Len(t, d.threads, 2)
	assert.Equal(t, uint64(100), d.threads[0].tid)
	assert.Equal(t, uint64(0x7000), d.threads[0].tp)
	assert.Equal(t, uint64(0x401000), d.threads[0].regs[16], "rip in pr_reg")
	assert.Equal(t, uint64(0x7ff0), d.threads[0].regs[19], "rsp in pr_reg")
	assert.Equal(t, uint64(0x246), d.threads[0].regs[18], "eflags in pr_reg")
	assert.Equal(t, uint64(0x7000), d.threads[0].regs[21], "fs_base in pr_reg")
	assert.Equal(t, uint64(101), d.threads[1].tid)
	assert.Equal(t, uint64(0x8000), d.threads[1].tp)
	assert.Equal(t, uint64(0x401020), d.auxv[atEntry], "entry point from Delve's header")

	// A truncated thread note is an error naming it, not a panic.
	bad := delveNote(delveNote(nil, "Delve Header", ntDelveHeader, []byte("linux/amd64\n")),
		"", ntDelveThread, dlvThreadNote(100, 1, 2, 3, map[string]uint64{"Rip": 1})[:60])
	s.notes = bad
	data = s.bytes()
	_, err = parseCore(bytes.NewReader(data), int64(len(data)))
	assert.ErrorContains(t, err, "Delve thread note")

	// Without Delve's header, ownerless notes are not taken for the
	// kernel's.
	s.notes = delveNote(nil, "", ntDelveThread, dlvThreadNote(100, 1, 2, 3, nil))
	data = s.bytes()
	_, err = parseCore(bytes.NewReader(data), int64(len(data)))
	assert.ErrorContains(t, err, "no NT_PRSTATUS")
}
