package codescan

import (
	"golang.org/x/arch/x86/x86asm"
)

// x86 decodes x86-64 code.
type x86 struct{}

// Scan implements Arch.
func (x86) Scan(code []byte, pc uint64, yield func(Ref) bool) int {
	var sh shape
	var desc []byte
	// A Data ref whose address went into register pendingReg waits in
	// pendingRef: the next instruction may store a constant through it.
	var pending bool
	var pendingReg x86asm.Reg
	var pendingRef Ref
	flush := func() bool {
		if !pending {
			return true
		}
		pending = false
		return yield(pendingRef)
	}
	off := 0
	for off < len(code) {
		if isEndbr(code[off:]) {
			// A CET branch target marker (hardened builds put one at
			// every function's start): no part of the code's shape,
			// so that a build with them and one without match.
			off += 4
			continue
		}
		in, err := x86asm.Decode(code[off:], 64)
		if err != nil || in.Len == 0 {
			break
		}
		at := pc + uint64(off)
		next := at + uint64(in.Len)
		off += in.Len
		desc = describe(desc[:0], &in)
		sh.add(desc)

		if pending {
			// A constant stored, or ORed, through the register that
			// holds the address just taken.
			if m, ok := in.Args[0].(x86asm.Mem); ok && m.Base == pendingReg && m.Index == 0 && m.Disp == 0 {
				setStore(&pendingRef, &in)
			}
			if !flush() {
				return off
			}
		}

		switch in.Op {
		case x86asm.CALL, x86asm.JMP:
			if rel, ok := in.Args[0].(x86asm.Rel); ok {
				k := Call
				if in.Op == x86asm.JMP {
					k = Jump
				}
				if !yield(Ref{Kind: k, PC: at, Target: uint64(int64(next) + int64(rel)), Shape: sh.sum()}) {
					return off
				}
				continue
			}
		}
		for i, a := range in.Args {
			m, ok := a.(x86asm.Mem)
			if !ok || m.Base != x86asm.RIP {
				continue
			}
			// A RIP-relative displacement is 32 bits, signed: x86asm gives it
			// zero-extended.
			r := Ref{Kind: Data, PC: at, Target: uint64(int64(next) + int64(int32(m.Disp))), Shape: sh.sum()}
			if i == 0 {
				setStore(&r, &in)
			}
			if in.Op == x86asm.LEA {
				if reg, ok := in.Args[0].(x86asm.Reg); ok {
					pending, pendingReg, pendingRef = true, reg, r
					break
				}
			}
			if !yield(r) {
				return off
			}
			break
		}
	}
	flush()
	return off
}

// isEndbr reports whether b starts with endbr64 or endbr32 (f3 0f 1e fa,
// f3 0f 1e fb), which x86asm does not decode as one instruction.
func isEndbr(b []byte) bool {
	return len(b) >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && (b[3] == 0xfa || b[3] == 0xfb)
}

// setStore marks r as stored into (or ORed into) by in, a MOV (OR) of a
// constant to the memory its first operand addresses.
func setStore(r *Ref, in *x86asm.Inst) {
	imm, ok := in.Args[1].(x86asm.Imm)
	if !ok {
		return
	}
	switch in.Op {
	case x86asm.MOV:
		r.Store, r.Imm = true, int64(imm)
	case x86asm.OR:
		r.Or, r.Imm = true, int64(imm)
	}
}

// describe writes what Shape keeps of an instruction: its operation and
// the kind and size of each operand.
func describe(b []byte, in *x86asm.Inst) []byte {
	op := uint16(in.Op)
	b = append(b, byte(op), byte(op>>8), byte(in.MemBytes))
	for _, a := range in.Args {
		switch a := a.(type) {
		case nil:
			return b
		case x86asm.Reg:
			b = append(b, 'r', regClass(a))
		case x86asm.Mem:
			k := byte('m')
			if a.Base == x86asm.RIP {
				k = 'p'
			}
			b = append(b, k)
		case x86asm.Imm:
			b = append(b, 'i')
		case x86asm.Rel:
			b = append(b, 'j')
		default:
			b = append(b, '?')
		}
	}
	return b
}

// regClass tells a register's width and kind, not which one it is.
func regClass(r x86asm.Reg) byte {
	switch {
	case r >= x86asm.AL && r <= x86asm.R15B:
		return 1
	case r >= x86asm.AX && r <= x86asm.R15W:
		return 2
	case r >= x86asm.EAX && r <= x86asm.R15L:
		return 4
	case r >= x86asm.RAX && r <= x86asm.R15:
		return 8
	case r >= x86asm.X0 && r <= x86asm.X15:
		return 16
	}
	return 0
}
