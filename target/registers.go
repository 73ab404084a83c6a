package target

import (
	"debug/elf"
	"fmt"
	"math/bits"

	"github.com/ompd-go/ompd/internal/arch"
)

// MaxRegisters is the number of DWARF register numbers a Registers value
// holds (0 to MaxRegisters-1): every general register of the machines
// ompd-go knows, and the ones their call-frame information restores
// (x86-64 uses 0 to 16, aarch64 0 to 32, ppc64 its link register at 65
// and s390x its PSW address at 65).
const MaxRegisters = 128

// Registers is a register set of one thread, or of one of its call frames,
// numbered as DWARF numbers registers on the machine (for x86-64 the System
// V AMD64 psABI numbering: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp,
// 7 rsp, 8 to 15 r8 to r15, 16 the return address, that is rip; for
// aarch64 0 to 30 x0 to x30, 31 sp, 32 pc; for ppc64 0 to 31 r0 to r31, 65
// lr, 66 ctr, and its instruction address, which DWARF does not number, at
// 120; for s390x 0 to 15 r0 to r15, 64 and 65 the PSW's mask and address).
// A register is known or not: unwinding a frame loses the registers its
// call-frame information does not restore.
//
// Registers is a plain value: copying it copies the registers.
type Registers struct {
	// Machine says whose numbering the registers use.
	Machine elf.Machine
	// Interrupted marks the registers of a frame that a signal
	// interrupted rather than one that made a call: its program counter
	// is the instruction to resume, not a return address. UnwindFrame
	// sets it on the caller of a signal trampoline (a frame whose
	// call-frame information is marked as a signal frame).
	Interrupted bool
	values      [MaxRegisters]uint64
	known       [MaxRegisters / 64]uint64 // bit n%64 of word n/64 set: values[n] is known
}

// NewRegisters returns an empty register set of the given machine.
func NewRegisters(m elf.Machine) Registers { return Registers{Machine: m} }

// Get returns register n and whether it is known.
func (r *Registers) Get(n int) (uint64, bool) {
	if n < 0 || n >= MaxRegisters || r.known[n/64]&(1<<uint(n%64)) == 0 {
		return 0, false
	}
	return r.values[n], true
}

// Set sets register n; numbers out of range are ignored.
func (r *Registers) Set(n int, v uint64) {
	if n < 0 || n >= MaxRegisters {
		return
	}
	r.values[n] = v
	r.known[n/64] |= 1 << uint(n%64)
}

// Forget marks register n unknown.
func (r *Registers) Forget(n int) {
	if n >= 0 && n < MaxRegisters {
		r.known[n/64] &^= 1 << uint(n%64)
	}
}

// RegisterNumbers are the DWARF numbers of a machine's program counter,
// stack pointer and frame pointer (FP is -1 on a machine without a frame
// pointer convention).
type RegisterNumbers struct {
	PC, SP, FP int
}

// NumbersOf returns the DWARF numbers of the program counter, stack pointer
// and frame pointer of machine m: for x86-64 16 (the return address
// column), 7 and 6; for aarch64 32 (the number Delve and LLVM use for pc),
// 31 and 29; for ppc64 120 (see Registers), 1 and 31; for s390x 65, 15
// and -1. Other machines give an error wrapping ErrUnsupported that names
// the machine.
func NumbersOf(m elf.Machine) (RegisterNumbers, error) {
	a := arch.Numbered(m)
	if a == nil {
		return RegisterNumbers{}, fmt.Errorf("registers of machine %v: %w", m, ErrUnsupported)
	}
	return RegisterNumbers{PC: a.PC, SP: a.SP, FP: a.FP}, nil
}

func (r *Registers) special(pick func(RegisterNumbers) int) (uint64, bool) {
	n, err := NumbersOf(r.Machine)
	if err != nil {
		return 0, false
	}
	return r.Get(pick(n))
}

// PC returns the program counter and whether it is known.
func (r *Registers) PC() (uint64, bool) {
	return r.special(func(n RegisterNumbers) int { return n.PC })
}

// SP returns the stack pointer and whether it is known.
func (r *Registers) SP() (uint64, bool) {
	return r.special(func(n RegisterNumbers) int { return n.SP })
}

// FP returns the frame pointer (rbp on x86-64, x29 on aarch64) and
// whether it is known.
func (r *Registers) FP() (uint64, bool) {
	return r.special(func(n RegisterNumbers) int { return n.FP })
}

// String lists the known registers by DWARF number, for messages.
func (r Registers) String() string {
	s := fmt.Sprintf("%v{", r.Machine)
	first := true
	for w, word := range r.known {
		for word != 0 {
			n := w*64 + bits.TrailingZeros64(word)
			word &= word - 1
			if !first {
				s += " "
			}
			first = false
			s += fmt.Sprintf("%d:%#x", n, r.values[n])
		}
	}
	return s + "}"
}

// RegisterReader is implemented by targets that can read the registers of
// their threads. ompd-go needs it to unwind threads' stacks.
type RegisterReader interface {
	// ThreadRegisters returns the general registers of the thread with
	// kernel id tid (a Thread.ID) at the stop, in DWARF numbering. A
	// thread the target does not know wraps ErrNoThread; a machine whose
	// registers the target cannot give wraps ErrUnsupported.
	ThreadRegisters(tid uint64) (Registers, error)
}

// FrameUnwinder is implemented by targets that can unwind one call frame
// with the call-frame information (.eh_frame, .debug_frame) of the object
// holding its code.
type FrameUnwinder interface {
	// UnwindFrame returns the registers of the caller of the frame whose
	// registers are regs, and the frame's canonical frame address (CFA).
	// caller says that regs' program counter is a return address (true
	// for every frame but the innermost of a thread, and not for the
	// frame a signal interrupted), so that the call-frame information of
	// the call instruction, at PC-1, applies. Registers the information
	// does not restore are unknown in the result, except the stack
	// pointer, which is the CFA (on s390x the CFA minus 160, the
	// register save area the caller provides). A PC that no call-frame
	// information covers gives an error wrapping ErrNotFound; unreadable
	// stack memory an error wrapping ErrNoMemory.
	UnwindFrame(regs Registers, caller bool) (Registers, uint64, error)
}

// CodeLocation says where a code address is: object, function, source
// file and line.
type CodeLocation struct {
	// Object is the path of the loaded object holding the code, as the
	// target names it.
	Object string
	// Function is the name of the function symbol containing the
	// address, "" if no symbol does.
	Function string
	// Name is Function as people read it: a C++ name demangled, without
	// its parameters (as gdb shows it); other names unchanged.
	Name string
	// Entry is the function's first address (0 if Function is "").
	Entry uint64
	// File and Line are the source position of the address from the
	// object's DWARF line table ("" and 0 without one).
	File string
	Line int
	// Inline lists the source-level frames at the address when the
	// compiler inlined calls there, innermost first: the inlined
	// function at File:Line, then each function it was inlined into at
	// the call's position, the last being the function the code belongs
	// to. Empty without inlining or without DWARF.
	Inline []InlineFrame
}

// InlineFrame is one source-level frame of code with inlined calls (see
// CodeLocation.Inline).
type InlineFrame struct {
	Function string // from DWARF (DW_AT_name), "" if unnamed
	File     string
	Line     int
}

// CodeLocator is implemented by targets that can place a code address in
// their objects and sources.
type CodeLocator interface {
	// LocateCode returns what the target knows of the code at pc. An
	// address in no loaded object wraps ErrNotFound. Missing symbols or
	// line tables are not errors: those fields are left empty.
	LocateCode(pc uint64) (CodeLocation, error)
}
