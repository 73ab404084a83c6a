package cfi

import (
	"errors"
	"fmt"
)

// Context is what evaluating an expression of call-frame information
// reads: the frame's registers and the target's memory.
type Context interface {
	// Reg returns DWARF register n of the frame.
	Reg(n uint64) (uint64, bool)
	// Read reads a size-byte word (1, 2, 4 or 8) at addr in the target's
	// byte order.
	Read(addr uint64, size int) (uint64, error)
}

// maxSteps bounds the operations one evaluation executes (branches may
// loop).
const maxSteps = 10000

// maxStack bounds the evaluation stack.
const maxStack = 1000

// Eval evaluates a DWARF expression of call-frame information (the
// operations a location description of a register or the CFA may use:
// constants, register-based addresses, memory reads, arithmetic, logic
// and branches), with initial pushed first when push is set (register
// rules start with the CFA on the stack), and returns the value on top of
// the stack. Operations that call-frame information has no use for
// (composite locations, calls, TLS, entry values) are errors.
func Eval(expr []byte, sec Section, ctx Context, initial uint64, push bool) (uint64, error) {
	b := buf{data: expr, order: sec.Order}
	var st []uint64
	if push {
		st = append(st, initial)
	}
	need := func(n int) bool { return len(st) >= n }
	pop := func() uint64 {
		v := st[len(st)-1]
		st = st[:len(st)-1]
		return v
	}
	mask := ^uint64(0)
	if sec.PtrSize == 4 {
		mask = 0xffffffff
	}
	for steps := 0; b.left() > 0; steps++ {
		if steps >= maxSteps {
			return 0, fmt.Errorf("expression runs more than %d operations", maxSteps)
		}
		if len(st) > maxStack {
			return 0, fmt.Errorf("expression stack deeper than %d", maxStack)
		}
		op := b.u8()
		switch {
		case op >= 0x30 && op <= 0x4f: // DW_OP_lit0..31
			st = append(st, uint64(op-0x30))
			continue
		case op >= 0x70 && op <= 0x8f: // DW_OP_breg0..31
			off := b.sleb()
			v, ok := ctx.Reg(uint64(op - 0x70))
			if !ok {
				return 0, fmt.Errorf("DW_OP_breg%d: register unknown", op-0x70)
			}
			st = append(st, (v+uint64(off))&mask)
			continue
		}
		switch op {
		case 0x03: // DW_OP_addr
			if sec.PtrSize == 4 {
				st = append(st, uint64(b.u32()))
			} else {
				st = append(st, b.u64())
			}
		case 0x08: // const1u
			st = append(st, uint64(b.u8()))
		case 0x09: // const1s
			st = append(st, uint64(int64(int8(b.u8()))))
		case 0x0a: // const2u
			st = append(st, uint64(b.u16()))
		case 0x0b: // const2s
			st = append(st, uint64(int64(int16(b.u16()))))
		case 0x0c: // const4u
			st = append(st, uint64(b.u32()))
		case 0x0d: // const4s
			st = append(st, uint64(int64(int32(b.u32()))))
		case 0x0e, 0x0f: // const8u, const8s
			st = append(st, b.u64())
		case 0x10: // constu
			st = append(st, b.uleb())
		case 0x11: // consts
			st = append(st, uint64(b.sleb()))
		case 0x92: // bregx
			reg, off := b.uleb(), b.sleb()
			v, ok := ctx.Reg(reg)
			if !ok && b.err == nil {
				return 0, fmt.Errorf("DW_OP_bregx %d: register unknown", reg)
			}
			st = append(st, (v+uint64(off))&mask)
		case 0x12: // dup
			if !need(1) {
				return 0, errUnderflow
			}
			st = append(st, st[len(st)-1])
		case 0x13: // drop
			if !need(1) {
				return 0, errUnderflow
			}
			pop()
		case 0x14: // over
			if !need(2) {
				return 0, errUnderflow
			}
			st = append(st, st[len(st)-2])
		case 0x15: // pick
			i := int(b.u8())
			if !need(i + 1) {
				return 0, errUnderflow
			}
			st = append(st, st[len(st)-1-i])
		case 0x16: // swap
			if !need(2) {
				return 0, errUnderflow
			}
			n := len(st)
			st[n-1], st[n-2] = st[n-2], st[n-1]
		case 0x17: // rot
			if !need(3) {
				return 0, errUnderflow
			}
			n := len(st)
			st[n-1], st[n-2], st[n-3] = st[n-2], st[n-3], st[n-1]
		case 0x06, 0x94: // deref, deref_size
			size := sec.PtrSize
			if op == 0x94 {
				size = int(b.u8())
			}
			if !need(1) {
				return 0, errUnderflow
			}
			if size != 1 && size != 2 && size != 4 && size != 8 {
				return 0, fmt.Errorf("DW_OP_deref_size %d", size)
			}
			v, err := ctx.Read(pop(), size)
			if err != nil {
				return 0, err
			}
			st = append(st, v)
		case 0x19, 0x1f, 0x20: // abs, neg, not
			if !need(1) {
				return 0, errUnderflow
			}
			v := pop()
			switch op {
			case 0x19:
				if int64(v) < 0 {
					v = -v
				}
			case 0x1f:
				v = -v
			case 0x20:
				v = ^v
			}
			st = append(st, v&mask)
		case 0x23: // plus_uconst
			if !need(1) {
				return 0, errUnderflow
			}
			st = append(st, (pop()+b.uleb())&mask)
		case 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x21, 0x22, 0x24, 0x25, 0x26, 0x27,
			0x29, 0x2a, 0x2b, 0x2c, 0x2d, 0x2e:
			if !need(2) {
				return 0, errUnderflow
			}
			y, x := pop(), pop()
			v, err := binop(op, x, y)
			if err != nil {
				return 0, err
			}
			st = append(st, v&mask)
		case 0x2f, 0x28: // skip, bra
			off := int64(int16(b.u16()))
			if op == 0x28 {
				if !need(1) {
					return 0, errUnderflow
				}
				if pop() == 0 {
					continue
				}
			}
			to := int64(b.off) + off
			if to < 0 || to > int64(len(b.data)) {
				return 0, fmt.Errorf("branch to %d outside the expression", to)
			}
			b.off = uint64(to)
		case 0x96: // nop
		case 0x9c: // call_frame_cfa
			if !push {
				return 0, errors.New("DW_OP_call_frame_cfa in a CFA expression")
			}
			st = append(st, initial)
		default:
			return 0, fmt.Errorf("operation %#x is not supported in call-frame information", op)
		}
		if b.err != nil {
			return 0, fmt.Errorf("truncated expression: %w", b.err)
		}
	}
	if b.err != nil {
		return 0, fmt.Errorf("truncated expression: %w", b.err)
	}
	if len(st) == 0 {
		return 0, errors.New("expression leaves an empty stack")
	}
	return st[len(st)-1], nil
}

var errUnderflow = errors.New("expression stack underflow")

// binop applies a two-operand operation: x is the second entry, y the
// top.
func binop(op byte, x, y uint64) (uint64, error) {
	b2u := func(c bool) uint64 {
		if c {
			return 1
		}
		return 0
	}
	switch op {
	case 0x1a:
		return x & y, nil
	case 0x1b: // div (signed)
		if y == 0 {
			return 0, errors.New("division by zero")
		}
		if int64(y) == -1 {
			return -x, nil
		}
		return uint64(int64(x) / int64(y)), nil
	case 0x1c:
		return x - y, nil
	case 0x1d: // mod
		if y == 0 {
			return 0, errors.New("division by zero")
		}
		return x % y, nil
	case 0x1e:
		return x * y, nil
	case 0x21:
		return x | y, nil
	case 0x22:
		return x + y, nil
	case 0x24:
		if y >= 64 {
			return 0, nil
		}
		return x << y, nil
	case 0x25:
		if y >= 64 {
			return 0, nil
		}
		return x >> y, nil
	case 0x26:
		if y >= 64 {
			y = 63
		}
		return uint64(int64(x) >> y), nil
	case 0x27:
		return x ^ y, nil
	case 0x29:
		return b2u(int64(x) == int64(y)), nil
	case 0x2a:
		return b2u(int64(x) >= int64(y)), nil
	case 0x2b:
		return b2u(int64(x) > int64(y)), nil
	case 0x2c:
		return b2u(int64(x) <= int64(y)), nil
	case 0x2d:
		return b2u(int64(x) < int64(y)), nil
	case 0x2e:
		return b2u(x != y), nil
	}
	return 0, fmt.Errorf("operation %#x", op)
}
