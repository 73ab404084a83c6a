package unwind

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"

	"github.com/go-delve/delve/pkg/dwarf/frame"
	"github.com/go-delve/delve/pkg/dwarf/op"

	"github.com/ompd-go/ompd/internal/arch"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/target"
)

// FDEFinder finds the frame description entry (parsed by Delve's
// pkg/dwarf/frame) that covers a run-time code address. objfile.Set and
// objfile.Object implement it. An address no entry covers must give an
// error wrapping target.ErrNotFound.
type FDEFinder interface {
	FDE(pc uint64) (*frame.FrameDescriptionEntry, error)
}

// RowFinder is an FDEFinder that also gives the call-frame row at a PC
// directly, typically from a cache (objfile.Set and objfile.Object keep
// the rows they computed). Step uses Row when its FDEFinder has it.
type RowFinder interface {
	Row(pc uint64) (*frame.FrameContext, error)
}

// Memory reads the stopped program's memory, with the contract of
// target.Target.ReadMemory.
type Memory interface {
	ReadMemory(buf []byte, addr uint64) error
}

// implicitValue is DW_OP_implicit_value, whose operand Delve's evaluator
// allocates without bound; it has no place in call-frame information.
const implicitValue = 0x9e

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
func Step(cfi FDEFinder, mem Memory, order binary.ByteOrder, regs target.Registers, caller bool) (out target.Registers, cfa uint64, err error) {
	a, err := archOf(regs)
	if err != nil {
		return target.Registers{}, 0, err
	}
	nums := target.RegisterNumbers{PC: a.PC, SP: a.SP, FP: a.FP}
	pc, ok := regs.PC()
	if !ok {
		return target.Registers{}, 0, errors.New("unwind: program counter unknown")
	}
	look := pc
	if caller && look > 0 {
		look--
	}
	var fc *frame.FrameContext
	if rf, ok := cfi.(RowFinder); ok {
		fc, err = rf.Row(look)
	} else {
		var fde *frame.FrameDescriptionEntry
		if fde, err = cfi.FDE(look); err == nil {
			fc, err = objfile.Establish(fde, look)
		}
	}
	if err != nil {
		return target.Registers{}, 0, err
	}
	ev := evaluator{nums: nums, mem: mem, order: order, ptr: a.PtrSize}

	switch fc.CFA.Rule {
	case frame.RuleCFA:
		v, ok := regs.Get(int(fc.CFA.Reg))
		if fc.CFA.Reg >= target.MaxRegisters || !ok {
			return target.Registers{}, 0, fmt.Errorf("unwind: CFA at %#x needs register %d, which is unknown", pc, fc.CFA.Reg)
		}
		cfa = v + uint64(fc.CFA.Offset)
	case frame.RuleExpression:
		v, err := ev.eval(&regs, fc.CFA.Expression, 0, false)
		if err != nil {
			return target.Registers{}, 0, fmt.Errorf("unwind: CFA expression at %#x: %w", pc, err)
		}
		cfa = v
	default:
		return target.Registers{}, 0, fmt.Errorf("unwind: CFA rule %d at %#x is not supported", fc.CFA.Rule, pc)
	}

	// The stack grows down: a CFA below the stack pointer (or at it,
	// on machines whose leaf functions need no frame) is corrupt
	// registers, not a frame.
	if err := checkCFA(a, &regs, cfa, pc); err != nil {
		return target.Registers{}, 0, fmt.Errorf("unwind: %w", err)
	}
	out = regs // registers without a rule keep their value
	out.Forget(nums.PC)
	out.Set(nums.SP, cfa)
	for reg, rule := range fc.Regs {
		if reg >= target.MaxRegisters {
			continue
		}
		r := int(reg)
		switch rule.Rule {
		case frame.RuleUndefined:
			out.Forget(r)
		case frame.RuleSameVal:
		case frame.RuleOffset:
			v, err := ev.word(cfa + uint64(rule.Offset))
			if err != nil {
				return target.Registers{}, cfa, fmt.Errorf("unwind: register %d saved at CFA%+d: %w", r, rule.Offset, err)
			}
			out.Set(r, v)
		case frame.RuleValOffset:
			out.Set(r, cfa+uint64(rule.Offset))
		case frame.RuleRegister:
			if v, ok := regs.Get(int(rule.Reg)); ok && rule.Reg < target.MaxRegisters {
				out.Set(r, v)
			} else {
				out.Forget(r)
			}
		case frame.RuleExpression, frame.RuleValExpression:
			v, err := ev.eval(&regs, rule.Expression, cfa, true)
			if err != nil {
				return target.Registers{}, cfa, fmt.Errorf("unwind: register %d expression: %w", r, err)
			}
			if rule.Rule == frame.RuleExpression {
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
	out.Interrupted = fc != nil && isSignalFrame(cfi, look)
	// The caller's PC is the return address column's value.
	ra := int(fc.RetAddrReg)
	if rule, ok := fc.Regs[fc.RetAddrReg]; ok && rule.Rule == frame.RuleUndefined || ra >= target.MaxRegisters {
		out.Forget(nums.PC)
		return out, cfa, nil
	}
	if v, ok := out.Get(ra); ok {
		out.Set(nums.PC, v)
	} else {
		out.Forget(nums.PC)
	}
	return out, cfa, nil
}

// isSignalFrame reports whether the call-frame information at pc is a
// signal trampoline's.
func isSignalFrame(cfi FDEFinder, pc uint64) bool {
	fde, err := cfi.FDE(pc)
	return err == nil && fde.CIE != nil && strings.ContainsRune(fde.CIE.Augmentation, 'S')
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

// evaluator evaluates DWARF expressions of call-frame information against
// a frame's registers.
type evaluator struct {
	nums  target.RegisterNumbers
	mem   Memory
	order binary.ByteOrder
	ptr   int
}

func (ev *evaluator) word(addr uint64) (uint64, error) {
	var b [8]byte
	buf := b[:ev.ptr]
	if err := ev.mem.ReadMemory(buf, addr); err != nil {
		return 0, err
	}
	if ev.ptr == 4 {
		return uint64(ev.order.Uint32(buf)), nil
	}
	return ev.order.Uint64(buf), nil
}

// eval runs expr; pushCFA pushes cfa first, as register rules need.
func (ev *evaluator) eval(regs *target.Registers, expr []byte, cfa uint64, pushCFA bool) (v uint64, err error) {
	if bytes.IndexByte(expr, implicitValue) >= 0 {
		return 0, errors.New("expression uses DW_OP_implicit_value")
	}
	defer func() {
		if r := recover(); r != nil {
			v, err = 0, fmt.Errorf("malformed expression: %v", r)
		}
	}()
	dregs := make([]*op.DwarfRegister, 0, 17)
	for n := 0; n < target.MaxRegisters; n++ {
		if val, ok := regs.Get(n); ok {
			for len(dregs) <= n {
				dregs = append(dregs, nil)
			}
			dregs[n] = op.DwarfRegisterFromUint64(val)
		}
	}
	dr := op.NewDwarfRegisters(0, dregs, ev.order, uint64(ev.nums.PC), uint64(ev.nums.SP), uint64(ev.nums.FP), 0)
	dr.CFA = int64(cfa)
	prog := expr
	if pushCFA {
		// DW_OP_call_frame_cfa first: register rules start with the CFA
		// on the stack.
		prog = append([]byte{byte(op.DW_OP_call_frame_cfa)}, expr...)
	}
	read := func(buf []byte, addr uint64) (int, error) {
		if err := ev.mem.ReadMemory(buf, addr); err != nil {
			return 0, err
		}
		return len(buf), nil
	}
	res, pieces, err := op.ExecuteStackProgram(*dr, prog, ev.ptr, read)
	if err != nil {
		return 0, err
	}
	if pieces != nil {
		return 0, errors.New("expression gives a composite location")
	}
	return uint64(res), nil
}
