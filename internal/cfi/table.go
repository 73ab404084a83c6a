package cfi

import (
	"errors"
	"fmt"
	"maps"
)

// RuleKind says how a register (or the CFA) is found in the caller.
type RuleKind uint8

// Register rules (DWARF 5, 6.4.1), and the two CFA rules.
const (
	// Undefined: the register has no value in the caller (the return
	// address column undefined marks the outermost frame).
	Undefined RuleKind = iota + 1
	// SameValue: the caller's value is the frame's.
	SameValue
	// Offset: saved at CFA+Offset.
	Offset
	// ValOffset: the value CFA+Offset.
	ValOffset
	// Register: in register Reg.
	Register
	// Expression: saved at the address Expr computes (with the CFA
	// pushed first).
	Expression
	// ValExpression: the value Expr computes (with the CFA pushed
	// first).
	ValExpression
	// CFARegOffset: the CFA is register Reg plus Offset.
	CFARegOffset
	// CFAExpression: the CFA is what Expr computes.
	CFAExpression
)

// Rule is one rule of a row.
type Rule struct {
	Kind   RuleKind
	Reg    uint64
	Offset int64
	Expr   []byte
}

// Row is the row of the call-frame table at an address: the CFA's rule and
// those of the registers it gives one (a register without one is
// unspecified, which unwinders take as the same value).
type Row struct {
	CFA  Rule
	Regs map[uint64]Rule
	// RetAddr is the return address column.
	RetAddr uint64
	// Signal is set for a signal trampoline's row (the CIE's 'S').
	Signal bool
	// RASigned is toggled by DW_CFA_AARCH64_negate_ra_state: the return
	// address is signed (aarch64 pointer authentication) and its top
	// bits must be cleared.
	RASigned bool
}

// Call-frame instructions (DW_CFA_*).
const (
	cfaAdvanceLoc        = 0x40
	cfaOffset            = 0x80
	cfaRestore           = 0xc0
	cfaNop               = 0x00
	cfaSetLoc            = 0x01
	cfaAdvanceLoc1       = 0x02
	cfaAdvanceLoc2       = 0x03
	cfaAdvanceLoc4       = 0x04
	cfaOffsetExtended    = 0x05
	cfaRestoreExtended   = 0x06
	cfaUndefined         = 0x07
	cfaSameValue         = 0x08
	cfaRegister          = 0x09
	cfaRememberState     = 0x0a
	cfaRestoreState      = 0x0b
	cfaDefCFA            = 0x0c
	cfaDefCFARegister    = 0x0d
	cfaDefCFAOffset      = 0x0e
	cfaDefCFAExpression  = 0x0f
	cfaExpression        = 0x10
	cfaOffsetExtendedSF  = 0x11
	cfaDefCFASF          = 0x12
	cfaDefCFAOffsetSF    = 0x13
	cfaValOffset         = 0x14
	cfaValOffsetSF       = 0x15
	cfaValExpression     = 0x16
	cfaNegateRAState     = 0x2d // DW_CFA_AARCH64_negate_ra_state (DW_CFA_GNU_window_save elsewhere)
	cfaGNUArgsSize       = 0x2e
	cfaGNUNegOffsetExtSF = 0x2f
)

// maxStates bounds DW_CFA_remember_state nesting.
const maxStates = 64

// Row returns the row of the call-frame table at pc, which the FDE must
// cover: the CIE's initial instructions, then the FDE's up to pc.
// Malformed instructions give an error wrapping ErrMalformed.
func (f *FDE) Row(pc uint64) (*Row, error) {
	if !f.Cover(pc) {
		return nil, fmt.Errorf("cfi: %#x is outside the FDE %#x-%#x", pc, f.Begin, f.End)
	}
	c := f.CIE
	init := &Row{Regs: map[uint64]Rule{}, RetAddr: c.RetAddr, Signal: c.Signal}
	ex := executor{cie: c, row: init, loc: f.Begin}
	if err := ex.run(c.Initial, ^uint64(0)); err != nil {
		return nil, fmt.Errorf("cfi: CIE's initial instructions: %w", err)
	}
	ex.initial = maps.Clone(init.Regs)
	ex.row = &Row{CFA: init.CFA, Regs: maps.Clone(init.Regs), RetAddr: c.RetAddr, Signal: c.Signal, RASigned: init.RASigned}
	if err := ex.run(f.Instructions, pc); err != nil {
		return nil, fmt.Errorf("cfi: instructions of the FDE at %#x: %w", f.Begin, err)
	}
	return ex.row, nil
}

type executor struct {
	cie     *CIE
	row     *Row
	initial map[uint64]Rule // the CIE's rules, for DW_CFA_restore
	loc     uint64
	stack   []*Row
}

// run executes the instructions until the location passes pc.
func (ex *executor) run(ins []byte, pc uint64) error {
	c := ex.cie
	b := buf{data: ins, order: c.sec.Order}
	for b.left() > 0 {
		op := b.u8()
		r := ex.row
		advance := func(delta uint64) bool {
			ex.loc += delta * c.CodeAlign
			return ex.loc > pc
		}
		switch op & 0xc0 {
		case cfaAdvanceLoc:
			if advance(uint64(op & 0x3f)) {
				return nil
			}
			continue
		case cfaOffset:
			r.Regs[uint64(op&0x3f)] = Rule{Kind: Offset, Offset: int64(b.uleb()) * c.DataAlign}
			continue
		case cfaRestore:
			ex.restore(uint64(op & 0x3f))
			continue
		}
		switch op {
		case cfaNop:
		case cfaSetLoc:
			enc := c.fdeEnc
			if !c.sec.EH {
				enc = peAbsptr
			}
			loc, err := b.pointer(enc, c.sec, false)
			if err != nil {
				return malformed(err)
			}
			ex.loc = loc + c.sec.Bias
			if ex.loc > pc {
				return nil
			}
		case cfaAdvanceLoc1:
			if advance(uint64(b.u8())) {
				return b.err
			}
		case cfaAdvanceLoc2:
			if advance(uint64(b.u16())) {
				return b.err
			}
		case cfaAdvanceLoc4:
			if advance(uint64(b.u32())) {
				return b.err
			}
		case cfaOffsetExtended:
			reg := b.uleb()
			r.Regs[reg] = Rule{Kind: Offset, Offset: int64(b.uleb()) * c.DataAlign}
		case cfaOffsetExtendedSF:
			reg := b.uleb()
			r.Regs[reg] = Rule{Kind: Offset, Offset: b.sleb() * c.DataAlign}
		case cfaGNUNegOffsetExtSF:
			reg := b.uleb()
			r.Regs[reg] = Rule{Kind: Offset, Offset: -int64(b.uleb()) * c.DataAlign}
		case cfaValOffset:
			reg := b.uleb()
			r.Regs[reg] = Rule{Kind: ValOffset, Offset: int64(b.uleb()) * c.DataAlign}
		case cfaValOffsetSF:
			reg := b.uleb()
			r.Regs[reg] = Rule{Kind: ValOffset, Offset: b.sleb() * c.DataAlign}
		case cfaRestoreExtended:
			ex.restore(b.uleb())
		case cfaUndefined:
			r.Regs[b.uleb()] = Rule{Kind: Undefined}
		case cfaSameValue:
			r.Regs[b.uleb()] = Rule{Kind: SameValue}
		case cfaRegister:
			reg := b.uleb()
			r.Regs[reg] = Rule{Kind: Register, Reg: b.uleb()}
		case cfaRememberState:
			if len(ex.stack) >= maxStates {
				return malformed(fmt.Errorf("more than %d remembered states", maxStates))
			}
			ex.stack = append(ex.stack, &Row{CFA: r.CFA, Regs: maps.Clone(r.Regs), RASigned: r.RASigned})
		case cfaRestoreState:
			if len(ex.stack) == 0 {
				return malformed(errors.New("DW_CFA_restore_state without a remembered state"))
			}
			s := ex.stack[len(ex.stack)-1]
			ex.stack = ex.stack[:len(ex.stack)-1]
			// The CFA rule is restored too (DWARF 5: the whole row
			// but the location).
			r.CFA, r.Regs, r.RASigned = s.CFA, s.Regs, s.RASigned
		case cfaDefCFA:
			reg := b.uleb()
			r.CFA = Rule{Kind: CFARegOffset, Reg: reg, Offset: int64(b.uleb())}
		case cfaDefCFASF:
			reg := b.uleb()
			r.CFA = Rule{Kind: CFARegOffset, Reg: reg, Offset: b.sleb() * c.DataAlign}
		case cfaDefCFARegister:
			reg := b.uleb()
			if r.CFA.Kind != CFARegOffset {
				return malformed(errors.New("DW_CFA_def_cfa_register without a register CFA rule"))
			}
			r.CFA.Reg = reg
		case cfaDefCFAOffset:
			off := int64(b.uleb())
			if r.CFA.Kind != CFARegOffset {
				return malformed(errors.New("DW_CFA_def_cfa_offset without a register CFA rule"))
			}
			r.CFA.Offset = off
		case cfaDefCFAOffsetSF:
			off := b.sleb() * c.DataAlign
			if r.CFA.Kind != CFARegOffset {
				return malformed(errors.New("DW_CFA_def_cfa_offset_sf without a register CFA rule"))
			}
			r.CFA.Offset = off
		case cfaDefCFAExpression:
			r.CFA = Rule{Kind: CFAExpression, Expr: b.bytes(b.uleb())}
		case cfaExpression:
			reg := b.uleb()
			r.Regs[reg] = Rule{Kind: Expression, Expr: b.bytes(b.uleb())}
		case cfaValExpression:
			reg := b.uleb()
			r.Regs[reg] = Rule{Kind: ValExpression, Expr: b.bytes(b.uleb())}
		case cfaGNUArgsSize:
			b.uleb()
		case cfaNegateRAState:
			r.RASigned = !r.RASigned
		default:
			return malformed(fmt.Errorf("unknown instruction %#x", op))
		}
		if b.err != nil {
			return malformed(b.err)
		}
	}
	if b.err != nil {
		return malformed(b.err)
	}
	return nil
}

// restore gives reg the rule the CIE's initial instructions gave it, or
// none (unspecified) if they gave it none.
func (ex *executor) restore(reg uint64) {
	if rule, ok := ex.initial[reg]; ok {
		ex.row.Regs[reg] = rule
	} else {
		delete(ex.row.Regs, reg)
	}
}

func malformed(err error) error { return fmt.Errorf("%w: %w", ErrMalformed, err) }
