package target

import (
	"debug/elf"
	"fmt"
)

// MaxRegisters is the number of DWARF register numbers a Registers value
// holds (0 to MaxRegisters-1): every general register of the machines
// ompd-go knows (x86-64 uses 0 to 16).
const MaxRegisters = 64

// Registers is a register set of one thread, or of one of its call frames,
// numbered as DWARF numbers registers on the machine (for x86-64 the System
// V AMD64 psABI numbering: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp,
// 7 rsp, 8 to 15 r8 to r15, 16 the return address, that is rip). A register
// is known or not: unwinding a frame loses the registers its call-frame
// information does not restore.
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
	known       uint64 // bit n set: values[n] is known
}

// NewRegisters returns an empty register set of the given machine.
func NewRegisters(m elf.Machine) Registers { return Registers{Machine: m} }

// Get returns register n and whether it is known.
func (r *Registers) Get(n int) (uint64, bool) {
	if n < 0 || n >= MaxRegisters || r.known&(1<<uint(n)) == 0 {
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
	r.known |= 1 << uint(n)
}

// Forget marks register n unknown.
func (r *Registers) Forget(n int) {
	if n >= 0 && n < MaxRegisters {
		r.known &^= 1 << uint(n)
	}
}

// RegisterNumbers are the DWARF numbers of a machine's program counter,
// stack pointer and frame pointer.
type RegisterNumbers struct {
	PC, SP, FP int
}

// NumbersOf returns the DWARF numbers of the program counter, stack pointer
// and frame pointer of machine m: for x86-64 16 (the return address
// column), 7 and 6; for i386 8, 4 and 5; for arm64 32 (the number Delve
// and LLVM use for pc), 31 and 29. Other machines give an error wrapping
// ErrUnsupported.
func NumbersOf(m elf.Machine) (RegisterNumbers, error) {
	switch m {
	case elf.EM_X86_64:
		return RegisterNumbers{PC: 16, SP: 7, FP: 6}, nil
	case elf.EM_386:
		return RegisterNumbers{PC: 8, SP: 4, FP: 5}, nil
	case elf.EM_AARCH64:
		return RegisterNumbers{PC: 32, SP: 31, FP: 29}, nil
	}
	return RegisterNumbers{}, fmt.Errorf("registers of machine %v: %w", m, ErrUnsupported)
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

// FP returns the frame pointer (rbp on x86-64) and whether it is known.
func (r *Registers) FP() (uint64, bool) {
	return r.special(func(n RegisterNumbers) int { return n.FP })
}

// String lists the known registers by DWARF number, for messages.
func (r Registers) String() string {
	s := fmt.Sprintf("%v{", r.Machine)
	first := true
	for n := 0; n < MaxRegisters; n++ {
		if v, ok := r.Get(n); ok {
			if !first {
				s += " "
			}
			first = false
			s += fmt.Sprintf("%d:%#x", n, v)
		}
	}
	return s + "}"
}

// AMD64UserRegs converts x86-64 registers in the order of the Linux
// kernel's struct user_regs_struct (what an NT_PRSTATUS note and
// PTRACE_GETREGS hold: r15, r14, r13, r12, rbp, rbx, r11, r10, r9, r8, rax,
// rcx, rdx, rsi, rdi, orig_rax, rip, cs, eflags, rsp, ...) to DWARF
// numbering. It needs at least the first 20 entries.
func AMD64UserRegs(user []uint64) (Registers, error) {
	if len(user) < 20 {
		return Registers{}, fmt.Errorf("x86-64 user_regs_struct: %d registers, want at least 20", len(user))
	}
	r := NewRegisters(elf.EM_X86_64)
	// DWARF number -> index in user_regs_struct.
	for dw, idx := range [17]int{10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16} {
		r.Set(dw, user[idx])
	}
	return r, nil
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
	// pointer, which is the CFA. A PC that no call-frame information
	// covers gives an error wrapping ErrNotFound; unreadable stack memory
	// an error wrapping ErrNoMemory.
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
