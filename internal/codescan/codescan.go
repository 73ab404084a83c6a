// Package codescan reads what a function's machine code refers to: the
// data it addresses PC-relative, the code it calls or jumps to, and the
// constants it stores into data. A stripped library keeps its exported
// functions' addresses in its dynamic symbol table, and their code still
// names the library's hidden globals and functions: package kmp finds LLVM's
// OpenMP runtime in a stripped libomp this way (see internal/kmp/gen, which
// records from builds with symbols where each global is referred to).
//
// The machine-code knowledge is behind Arch, one implementation per
// machine; ForMachine returns it. Only x86-64 has one so far.
package codescan

import (
	"debug/elf"
	"fmt"
)

// Kind says what a Ref is.
type Kind uint8

// Kinds of references.
const (
	// Data is an instruction that addresses memory PC-relative: a load,
	// a store, a comparison, or an address taken (lea).
	Data Kind = iota + 1
	// Call is a direct call.
	Call
	// Jump is a direct unconditional jump (within the function, or a
	// tail call).
	Jump
)

func (k Kind) String() string {
	switch k {
	case Data:
		return "data"
	case Call:
		return "call"
	case Jump:
		return "jump"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Ref is one reference of a function's code, in the order Scan meets them.
type Ref struct {
	Kind Kind
	// PC is the address of the instruction, Target the address it
	// refers to.
	PC, Target uint64
	// Store says the code stores the constant Imm at Target: in this
	// instruction, or (an address taken into a register) in the next one
	// through that register. Or says it ORs Imm into it instead.
	Store, Or bool
	Imm       int64
	// Shape fingerprints the instructions up to this one (a few of them:
	// shapeWindow): their operations and kinds of operands, not their
	// registers, addresses or constants. Two builds of one source by one
	// compiler give equal shapes; a different compiler usually does not.
	Shape uint64
}

// Arch decodes the machine code of one machine.
type Arch interface {
	// Scan decodes code, which starts at address pc, instruction by
	// instruction from its start, and calls yield with each reference in
	// order. It stops at the end of code, when yield returns false, or at
	// bytes it cannot decode; it returns the number of bytes decoded.
	Scan(code []byte, pc uint64, yield func(Ref) bool) int
}

// ErrUnsupported is returned by ForMachine for a machine without an Arch.
var ErrUnsupported = fmt.Errorf("codescan: machine not supported")

// ForMachine returns the Arch of an ELF machine.
func ForMachine(m elf.Machine) (Arch, error) {
	switch m {
	case elf.EM_X86_64:
		return x86{}, nil
	}
	return nil, fmt.Errorf("%w: %v", ErrUnsupported, m)
}

// shapeWindow is how many instructions a Shape covers: the one with the
// reference and those before it. A window rather than the function's
// whole start, so that what another build adds far before (a stack
// protector's prologue, say) leaves the shape alone.
const shapeWindow = 8

// shape computes Refs' Shapes: a hash of the descriptions of the last
// shapeWindow instructions.
type shape struct {
	ring [shapeWindow]uint64
	n    int
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// add mixes one more instruction's description in.
func (s *shape) add(desc []byte) {
	h := uint64(fnvOffset)
	for _, b := range desc {
		h ^= uint64(b)
		h *= fnvPrime
	}
	s.ring[s.n%shapeWindow] = h
	s.n++
}

// sum is the shape of the window ending at the last instruction added.
func (s *shape) sum() uint64 {
	h := uint64(fnvOffset)
	for i := max(0, s.n-shapeWindow); i < s.n; i++ {
		h ^= s.ring[i%shapeWindow]
		h *= fnvPrime
	}
	return h
}
