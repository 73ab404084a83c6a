package unwind

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ompd-go/ompd/internal/arch"
	"github.com/ompd-go/ompd/internal/cfi"
	"github.com/ompd-go/ompd/target"
)

// FDEFinder finds the frame description entry (parsed by internal/cfi)
// that covers a run-time code address. objfile.Set and objfile.Object
// implement it. An address no entry covers must give an error wrapping
// target.ErrNotFound.
type FDEFinder interface {
	FDE(pc uint64) (*cfi.FDE, error)
}

// RowFinder is an FDEFinder that also gives the call-frame row at a PC
// directly, typically from a cache (objfile.Set and objfile.Object keep
// the rows they computed). Step uses Row when its FDEFinder has it.
type RowFinder interface {
	Row(pc uint64) (*cfi.Row, error)
}

// Memory reads the stopped program's memory, with the contract of
// target.Target.ReadMemory.
type Memory interface {
	ReadMemory(buf []byte, addr uint64) error
}

// Step unwinds one frame with call-frame information: from the registers
// of a frame it computes those of its caller, and the frame's CFA. It is
// what target/core and target/delve use to implement
// target.FrameUnwinder, with their objects as cfi and their memory as mem.
// caller says that regs' PC is a return address (see
// target.FrameUnwinder). A PC without call-frame information wraps
// target.ErrNotFound; a register the rules need that is unknown, or an
// unreadable saved register, gives an error (the latter wrapping
// target.ErrNoMemory). Malformed call-frame information gives an error,
// never a panic.
func Step(finder FDEFinder, mem Memory, order binary.ByteOrder, regs target.Registers, caller bool) (out target.Registers, cfa uint64, err error) {
	a, err := archOf(regs)
	if err != nil {
		return target.Registers{}, 0, err
	}
	pc, ok := regs.PC()
	if !ok {
		return target.Registers{}, 0, errors.New("unwind: program counter unknown")
	}
	look := pc
	if caller && look > 0 {
		look--
	}
	var row *cfi.Row
	if rf, ok := finder.(RowFinder); ok {
		row, err = rf.Row(look)
	} else {
		var fde *cfi.FDE
		if fde, err = finder.FDE(look); err == nil {
			row, err = fde.Row(look)
		}
	}
	if err != nil {
		return target.Registers{}, 0, err
	}
	ev := evaluator{regs: &regs, mem: mem, sec: cfi.Section{Order: order, PtrSize: a.PtrSize}}

	switch row.CFA.Kind {
	case cfi.CFARegOffset:
		v, ok := regs.Get(int(row.CFA.Reg))
		if row.CFA.Reg >= target.MaxRegisters || !ok {
			return target.Registers{}, 0, fmt.Errorf("unwind: CFA at %#x needs register %d, which is unknown", pc, row.CFA.Reg)
		}
		cfa = v + uint64(row.CFA.Offset)
	case cfi.CFAExpression:
		v, err := cfi.Eval(row.CFA.Expr, ev.sec, &ev, 0, false)
		if err != nil {
			return target.Registers{}, 0, fmt.Errorf("unwind: CFA expression at %#x: %w", pc, err)
		}
		cfa = v
	default:
		return target.Registers{}, 0, fmt.Errorf("unwind: no CFA rule at %#x", pc)
	}
	if a.PtrSize == 4 {
		cfa = uint64(uint32(cfa))
	}

	// The stack grows down: a CFA below the stack pointer (or at it,
	// on machines whose leaf functions need no frame) is corrupt
	// registers, not a frame.
	if err := checkCFA(a, &regs, cfa, pc); err != nil {
		return target.Registers{}, 0, fmt.Errorf("unwind: %w", err)
	}
	out = regs // registers without a rule keep their value
	out.Forget(a.PC)
	out.Set(a.SP, cfa+uint64(a.CallerSPOffset))
	for reg, rule := range row.Regs {
		if reg >= target.MaxRegisters {
			continue
		}
		r := int(reg)
		switch rule.Kind {
		case cfi.Undefined:
			out.Forget(r)
		case cfi.SameValue:
		case cfi.Offset:
			v, err := ev.word(cfa + uint64(rule.Offset))
			if err != nil {
				return target.Registers{}, cfa, fmt.Errorf("unwind: register %d saved at CFA%+d: %w", r, rule.Offset, err)
			}
			out.Set(r, v)
		case cfi.ValOffset:
			out.Set(r, cfa+uint64(rule.Offset))
		case cfi.Register:
			if v, ok := regs.Get(int(rule.Reg)); ok && rule.Reg < target.MaxRegisters {
				out.Set(r, v)
			} else {
				out.Forget(r)
			}
		case cfi.Expression, cfi.ValExpression:
			v, err := cfi.Eval(rule.Expr, ev.sec, &ev, cfa, true)
			if err != nil {
				return target.Registers{}, cfa, fmt.Errorf("unwind: register %d expression: %w", r, err)
			}
			if rule.Kind == cfi.Expression {
				if v, err = ev.word(v); err != nil {
					return target.Registers{}, cfa, fmt.Errorf("unwind: register %d saved by expression: %w", r, err)
				}
			}
			out.Set(r, v)
		default:
			out.Forget(r)
		}
	}
	// Below a signal trampoline ('S' in its CIE's augmentation) is the
	// interrupted frame, whose PC is no return address.
	out.Interrupted = row.Signal
	// The caller's PC is the return address column's value.
	ra := row.RetAddr
	if rule, ok := row.Regs[ra]; ok && rule.Kind == cfi.Undefined || ra >= target.MaxRegisters {
		out.Forget(a.PC)
		return out, cfa, nil
	}
	if v, ok := out.Get(int(ra)); ok {
		if row.RASigned {
			v = a.StripPAC(v)
		}
		out.Set(a.PC, v)
	} else {
		out.Forget(a.PC)
	}
	return out, cfa, nil
}

// archOf returns the machine of regs; an unknown one wraps
// target.ErrUnsupported.
func archOf(regs target.Registers) (*arch.Arch, error) {
	a := arch.Numbered(regs.Machine)
	if a == nil {
		return nil, fmt.Errorf("unwind: registers of machine %v: %w", regs.Machine, target.ErrUnsupported)
	}
	return a, nil
}

// checkCFA checks a frame's CFA against its stack pointer: the stack
// grows down, so the CFA lies above it, or at it on a machine whose leaf
// functions need no frame.
func checkCFA(a *arch.Arch, regs *target.Registers, cfa, pc uint64) error {
	sp, ok := regs.SP()
	if !ok || cfa > sp || cfa == sp && a.LeafCFAAtSP {
		return nil
	}
	return fmt.Errorf("%w: CFA %#x at or below SP %#x at PC %#x", ErrNoProgress, cfa, sp, pc)
}

// evaluator gives expressions of call-frame information a frame's
// registers and the target's memory (cfi.Context), and reads saved
// registers.
type evaluator struct {
	regs *target.Registers
	mem  Memory
	sec  cfi.Section
}

// Reg implements cfi.Context.
func (ev *evaluator) Reg(n uint64) (uint64, bool) {
	if n >= target.MaxRegisters {
		return 0, false
	}
	return ev.regs.Get(int(n))
}

// Read implements cfi.Context.
func (ev *evaluator) Read(addr uint64, size int) (uint64, error) {
	var b [8]byte
	if err := ev.mem.ReadMemory(b[:size], addr); err != nil {
		return 0, err
	}
	o := ev.sec.Order
	switch size {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(o.Uint16(b[:])), nil
	case 4:
		return uint64(o.Uint32(b[:])), nil
	}
	return o.Uint64(b[:]), nil
}

// word reads a pointer-sized word.
func (ev *evaluator) word(addr uint64) (uint64, error) {
	return ev.Read(addr, ev.sec.PtrSize)
}
