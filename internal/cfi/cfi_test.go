package cfi

import (
	"encoding/binary"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// order is a byte order that appends.
type order interface {
	binary.ByteOrder
	binary.AppendByteOrder
}

// section builds a call-frame section in a byte order, for the tests.
type section struct {
	order order
	eh    bool
	b     []byte
}

func uleb(v uint64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v != 0 {
			c |= 0x80
		}
		out = append(out, c)
		if v == 0 {
			return out
		}
	}
}

func sleb(v int64) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		done := v == 0 && c&0x40 == 0 || v == -1 && c&0x40 != 0
		if !done {
			c |= 0x80
		}
		out = append(out, c)
		if done {
			return out
		}
	}
}

func cat(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// entry appends an entry with the given id word and body; it returns the
// entry's offset.
func (s *section) entry(id uint32, body []byte) uint64 {
	off := uint64(len(s.b))
	for (len(body)+4)%8 != 0 {
		body = append(body, cfaNop)
	}
	s.b = s.order.AppendUint32(s.b, uint32(4+len(body)))
	s.b = s.order.AppendUint32(s.b, id)
	s.b = append(s.b, body...)
	return off
}

// cie appends a CIE (code alignment 1, data alignment -8, return address
// column ra, FDE addresses as absolute 8-byte words) with the initial
// instructions.
func (s *section) cie(ra byte, initial ...byte) uint64 {
	id := uint32(0xffffffff)
	aug := []byte{0}
	var augData []byte
	if s.eh {
		id = 0
		aug = []byte("zR\x00")
		augData = cat(uleb(1), []byte{peUdata8})
	}
	return s.entry(id, cat([]byte{1}, aug, uleb(1), sleb(-8), []byte{ra}, augData, initial))
}

// fde appends an FDE of the CIE at cieOff for [begin, begin+n).
func (s *section) fde(cieOff, begin, n uint64, ins ...byte) {
	id := uint32(cieOff)
	if s.eh {
		id = uint32(uint64(len(s.b)) + 4 - cieOff)
	}
	body := s.order.AppendUint64(nil, begin)
	body = s.order.AppendUint64(body, n)
	if s.eh {
		body = append(body, uleb(0)...)
	}
	s.entry(id, cat(body, ins))
}

func (s *section) sec() Section {
	return Section{Order: s.order, PtrSize: 8, EH: s.eh, Addr: 0x10000, Bias: 0x7000000}
}

// TestRows: the rows of a typical function's FDE, in both byte orders and
// both section formats.
func TestRows(t *testing.T) {
	for _, order := range []order{binary.LittleEndian, binary.BigEndian} {
		for _, eh := range []bool{false, true} {
			t.Run(fmt.Sprintf("%v/eh=%v", order, eh), func(t *testing.T) {
				s := &section{order: order, eh: eh}
				// CFA = r7+8, return address (16) at CFA-8.
				c := s.cie(16, cfaDefCFA, 7, 8, cfaOffset|16, 1)
				ins := cat(
					[]byte{cfaAdvanceLoc | 1, cfaDefCFAOffset, 16, cfaOffset | 6, 2}, // push rbp
					[]byte{cfaAdvanceLoc | 3, cfaDefCFARegister, 6},                  // mov rsp, rbp
					[]byte{cfaAdvanceLoc2}, order.AppendUint16(nil, 0x100),           // the body
					[]byte{cfaRememberState, cfaRestore | 6, cfaDefCFA, 7, 8}, // pop rbp
					[]byte{cfaAdvanceLoc | 1, cfaRestoreState},                // after ret
					[]byte{cfaSameValue, 3, cfaUndefined, 5, cfaRegister, 4, 9},
					[]byte{cfaValOffsetSF, 12}, sleb(2),
					[]byte{cfaOffsetExtendedSF, 13}, sleb(-1),
					[]byte{cfaRestoreExtended, 16},
				)
				s.fde(c, 0x1000, 0x200, ins...)
				s.fde(c, 0x1200, 0x10) // another function
				tab, err := Parse(s.b, s.sec())
				require.NoError(t, err)
				require.Len(t, tab, 2)
				f := tab.Lookup(0x7001050)
				require.NotNil(t, f)
				assert.Equal(t, uint64(0x7001000), f.Begin)
				assert.Equal(t, uint64(0x7001200), f.End)
				assert.Nil(t, tab.Lookup(0x7000fff))
				assert.Nil(t, tab.Lookup(0x7001210))
				assert.Equal(t, uint64(0x7001200), tab.Lookup(0x7001200).Begin)

				row := func(pc uint64) *Row {
					t.Helper()
					r, err := f.Row(0x7000000 + pc)
					require.NoError(t, err)
					return r
				}
				r := row(0x1000)
				assert.Equal(t, Rule{Kind: CFARegOffset, Reg: 7, Offset: 8}, r.CFA)
				assert.Equal(t, Rule{Kind: Offset, Offset: -8}, r.Regs[16])
				assert.Equal(t, uint64(16), r.RetAddr)
				r = row(0x1001)
				assert.Equal(t, Rule{Kind: CFARegOffset, Reg: 7, Offset: 16}, r.CFA)
				assert.Equal(t, Rule{Kind: Offset, Offset: -16}, r.Regs[6])
				r = row(0x1004)
				assert.Equal(t, Rule{Kind: CFARegOffset, Reg: 6, Offset: 16}, r.CFA)
				r = row(0x1104)
				assert.Equal(t, Rule{Kind: CFARegOffset, Reg: 7, Offset: 8}, r.CFA)
				_, saved := r.Regs[6]
				assert.False(t, saved, "DW_CFA_restore of a register the CIE gave no rule leaves it unspecified, not undefined")
				r = row(0x1105)
				assert.Equal(t, Rule{Kind: CFARegOffset, Reg: 6, Offset: 16}, r.CFA, "the remembered state, CFA included")
				assert.Equal(t, Rule{Kind: Offset, Offset: -16}, r.Regs[6])
				assert.Equal(t, Rule{Kind: SameValue}, r.Regs[3])
				assert.Equal(t, Rule{Kind: Undefined}, r.Regs[5])
				assert.Equal(t, Rule{Kind: Register, Reg: 9}, r.Regs[4])
				assert.Equal(t, Rule{Kind: ValOffset, Offset: -16}, r.Regs[12])
				assert.Equal(t, Rule{Kind: Offset, Offset: 8}, r.Regs[13])
				assert.Equal(t, Rule{Kind: Offset, Offset: -8}, r.Regs[16], "restored to the CIE's rule")
				_, err = f.Row(0x7001200)
				assert.Error(t, err, "outside the FDE")
			})
		}
	}
}

// TestSignalAndExpressions: the 'S' augmentation and expression rules.
func TestSignalAndExpressions(t *testing.T) {
	s := &section{order: binary.BigEndian, eh: true}
	off := s.entry(0, cat([]byte{1}, []byte("zRS\x00"), uleb(1), sleb(-8), []byte{14}, uleb(1), []byte{peSdata4 | pePCRel},
		[]byte{cfaDefCFAExpression}, uleb(3), []byte{0x7f, 0x10, 0x06}, // *(r15+16)
		[]byte{cfaExpression, 14}, uleb(2), []byte{0x23, 0x08}, // at CFA+8
		[]byte{cfaValExpression, 2}, uleb(1), []byte{0x30 + 7}))
	// An FDE with a pc-relative 4-byte address: the field is at its
	// entry's offset + 8 in the section, at 0x10000.
	id := uint32(uint64(len(s.b)) + 4 - off)
	at := 0x10000 + uint64(len(s.b)) + 8
	rel := int64(0x2000) - int64(at)
	s.entry(id, cat(binary.BigEndian.AppendUint32(nil, uint32(int32(rel))), binary.BigEndian.AppendUint32(nil, 0x40), uleb(0)))
	tab, err := Parse(s.b, Section{Order: binary.BigEndian, PtrSize: 8, EH: true, Addr: 0x10000})
	require.NoError(t, err)
	require.Len(t, tab, 1)
	f := tab[0]
	assert.Equal(t, uint64(0x2000), f.Begin)
	assert.True(t, f.CIE.Signal)
	r, err := f.Row(0x2010)
	require.NoError(t, err)
	assert.True(t, r.Signal)
	require.Equal(t, CFAExpression, r.CFA.Kind)

	ctx := &memCtx{regs: map[uint64]uint64{15: 0x8000}, mem: map[uint64]uint64{0x8010: 0x9000}}
	sec := Section{Order: binary.BigEndian, PtrSize: 8}
	cfa, err := Eval(r.CFA.Expr, sec, ctx, 0, false)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x9000), cfa)
	addr, err := Eval(r.Regs[14].Expr, sec, ctx, cfa, true)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x9008), addr)
	v, err := Eval(r.Regs[2].Expr, sec, ctx, cfa, true)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), v)
}

type memCtx struct {
	regs map[uint64]uint64
	mem  map[uint64]uint64
}

func (m *memCtx) Reg(n uint64) (uint64, bool) {
	v, ok := m.regs[n]
	return v, ok
}

func (m *memCtx) Read(addr uint64, size int) (uint64, error) {
	v, ok := m.mem[addr]
	if !ok {
		return 0, errors.New("unmapped")
	}
	return v, nil
}

func TestEval(t *testing.T) {
	sec := Section{Order: binary.LittleEndian, PtrSize: 8}
	ctx := &memCtx{regs: map[uint64]uint64{7: 0x1000, 40: 0x30}, mem: map[uint64]uint64{0x1008: 0xabc}}
	for _, c := range []struct {
		name string
		expr []byte
		want uint64
		err  string
	}{
		{"breg and deref", []byte{0x77, 0x08, 0x06}, 0xabc, ""},
		{"bregx", cat([]byte{0x92}, uleb(40), sleb(-0x10)), 0x20, ""},
		{"arithmetic", []byte{0x35, 0x33, 0x1c, 0x32, 0x1e}, 4, ""}, // (5-3)*2
		{"signed div", cat([]byte{0x11}, sleb(-9), []byte{0x33, 0x1b}), uint64(^uint64(2)), ""},
		{"shifts and logic", []byte{0x31, 0x34, 0x24, 0x4f, 0x1a, 0x30, 0x20, 0x1a}, 0x10, ""},
		{"comparison", []byte{0x33, 0x35, 0x2d}, 1, ""},
		{"stack ops", []byte{0x31, 0x32, 0x33, 0x17, 0x16, 0x14, 0x15, 0x01, 0x13, 0x12, 0x22}, 4, ""},
		{"branch", []byte{0x31, 0x28, 0x02, 0x00, 0x3f, 0x3f, 0x35}, 5, ""},
		{"skip", []byte{0x2f, 0x01, 0x00, 0x3f, 0x36}, 6, ""},
		{"constants", cat([]byte{0x0b}, binary.LittleEndian.AppendUint16(nil, 0xfffe)), ^uint64(1), ""},
		{"unknown register", []byte{0x78, 0x00}, 0, "register unknown"},
		{"unreadable memory", []byte{0x77, 0x00, 0x06}, 0, "unmapped"},
		{"underflow", []byte{0x22}, 0, "underflow"},
		{"branch out", []byte{0x2f, 0xff, 0x7f}, 0, "outside"},
		{"loop", []byte{0x2f, 0xfd, 0xff}, 0, "more than"},
		{"truncated", []byte{0x0c, 0x01}, 0, "truncated"},
		{"unsupported", []byte{0xe0}, 0, "not supported"},
		{"empty", nil, 0, "empty stack"},
		{"division by zero", []byte{0x31, 0x30, 0x1b}, 0, "division by zero"},
		{"call_frame_cfa without one", []byte{0x9c}, 0, "CFA expression"},
	} {
		v, err := Eval(c.expr, sec, ctx, 0, false)
		if c.err != "" {
			assert.ErrorContains(t, err, c.err, c.name)
			continue
		}
		require.NoError(t, err, c.name)
		assert.Equal(t, c.want, v, c.name)
	}
	v, err := Eval([]byte{0x9c, 0x23, 0x10}, sec, ctx, 0x500, true)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x510), v)
}

// TestMalformed: broken sections give errors that say where, never a
// panic.
func TestMalformed(t *testing.T) {
	le := binary.LittleEndian
	good := &section{order: le}
	c := good.cie(16, cfaDefCFA, 7, 8)
	good.fde(c, 0x1000, 0x10, cfaAdvanceLoc|1, cfaRestoreState)
	for _, m := range []struct {
		name string
		data []byte
		sec  Section
	}{
		{"length past the end", le.AppendUint32(nil, 100), good.sec()},
		{"truncated length", []byte{1, 2}, good.sec()},
		{"bad version", (&section{order: le}).withEntry(0xffffffff, []byte{9, 0}), good.sec()},
		{"missing CIE", (&section{order: le}).withEntry(0x40, make([]byte, 20)), good.sec()},
		{"no code alignment", (&section{order: le}).withEntry(0xffffffff, cat([]byte{1, 0}, uleb(0), sleb(-8), []byte{16})), good.sec()},
		{"address size", good.b, Section{Order: le, PtrSize: 3}},
	} {
		_, err := Parse(m.data, m.sec)
		assert.ErrorIs(t, err, ErrMalformed, m.name)
	}
	tab, err := Parse(good.b, good.sec())
	require.NoError(t, err)
	_, err = tab[0].Row(0x7001005)
	assert.ErrorIs(t, err, ErrMalformed, "restore_state without remember_state")
	assert.ErrorContains(t, err, "restore_state")
}

func (s *section) withEntry(id uint32, body []byte) []byte {
	s.entry(id, body)
	return s.b
}

// FuzzParse: any section parses or fails, and any row of what parses
// computes or fails, without a panic.
func FuzzParse(f *testing.F) {
	s := &section{order: binary.LittleEndian, eh: true}
	c := s.cie(16, cfaDefCFA, 7, 8, cfaOffset|16, 1)
	s.fde(c, 0x1000, 0x40, cfaAdvanceLoc|1, cfaDefCFAOffset, 16, cfaRememberState, cfaAdvanceLoc|2, cfaRestoreState)
	f.Add(s.b, true, false)
	f.Add(s.b, false, true)
	f.Fuzz(func(t *testing.T, data []byte, eh, big bool) {
		sec := Section{Order: binary.LittleEndian, PtrSize: 8, EH: eh, Addr: 0x10000}
		if big {
			sec.Order = binary.BigEndian
		}
		tab, err := Parse(data, sec)
		if err != nil {
			return
		}
		for _, fde := range tab {
			for _, pc := range []uint64{fde.Begin, fde.Begin + (fde.End-fde.Begin)/2} {
				if fde.Cover(pc) {
					r, err := fde.Row(pc)
					if err == nil && r.CFA.Kind == CFAExpression {
						Eval(r.CFA.Expr, sec, &memCtx{}, 0, false)
					}
				}
			}
		}
	})
}
