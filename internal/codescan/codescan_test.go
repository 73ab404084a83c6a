package codescan

import (
	"debug/elf"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// code is x86-64 machine code placed at an address: a CodeReader.
type code struct {
	at  map[uint64][]byte
	end uint64 // reads past it fail, as past a mapping's end
}

func (c code) ReadMemory(buf []byte, addr uint64) error {
	for base, b := range c.at {
		if addr >= base && addr+uint64(len(buf)) <= base+uint64(len(b)) && addr+uint64(len(buf)) <= c.end {
			copy(buf, b[addr-base:])
			return nil
		}
	}
	return errors.New("unmapped")
}

func scanAll(t *testing.T, b []byte, pc uint64) []Ref {
	t.Helper()
	a, err := ForMachine(elf.EM_X86_64)
	require.NoError(t, err)
	var refs []Ref
	n := a.Scan(b, pc, func(r Ref) bool {
		refs = append(refs, r)
		return true
	})
	assert.Equal(t, len(b), n, "every byte decoded")
	return refs
}

// The references of a function as ompd_init's stores show them: an
// address taken into a register and a constant stored through it; a
// constant ORed into a global; a call; a jump; displacements that point
// before the instruction included.
func TestScanX86(t *testing.T) {
	const pc = 0x10000
	b := []byte{
		0x48, 0x8d, 0x05, 0xf9, 0xff, 0xff, 0xff, // lea rax, [rip-7]: the lea itself
		0x48, 0xc7, 0x00, 0x40, 0x02, 0x00, 0x00, // mov qword [rax], 0x240
		0x80, 0x0d, 0x10, 0x00, 0x00, 0x00, 0x01, // or byte [rip+0x10], 1
		0xe8, 0x00, 0x01, 0x00, 0x00, // call +0x100
		0xe9, 0xf0, 0xff, 0xff, 0xff, // jmp -0x10
		0xc3, // ret
	}
	refs := scanAll(t, b, pc)
	require.Len(t, refs, 4)
	assert.Equal(t, Ref{Kind: Data, PC: pc, Target: pc, Store: true, Imm: 0x240, Shape: refs[0].Shape}, refs[0])
	assert.Equal(t, Ref{Kind: Data, PC: pc + 14, Target: pc + 21 + 0x10, Or: true, Imm: 1, Shape: refs[1].Shape}, refs[1])
	assert.Equal(t, Ref{Kind: Call, PC: pc + 21, Target: pc + 26 + 0x100, Shape: refs[2].Shape}, refs[2])
	assert.Equal(t, Ref{Kind: Jump, PC: pc + 26, Target: pc + 31 - 0x10, Shape: refs[3].Shape}, refs[3])
}

// Shapes keep the operations and the kinds of operands, not the
// registers, addresses or constants; and only the last few instructions.
func TestShapes(t *testing.T) {
	a := []byte{0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00, 0x48, 0x8b, 0x00} // lea rax,[rip+16]; mov rax,[rax]
	b := []byte{0x48, 0x8d, 0x0d, 0x20, 0x30, 0x00, 0x00, 0x48, 0x8b, 0x09} // lea rcx,[rip+0x3020]; mov rcx,[rcx]
	c := []byte{0x48, 0x8d, 0x05, 0x10, 0x00, 0x00, 0x00, 0x8b, 0x00}       // lea rax,[rip+16]; mov eax,[rax]
	ra, rb, rc := scanAll(t, a, 0x1000), scanAll(t, b, 0x2000), scanAll(t, c, 0x1000)
	require.Len(t, ra, 1)
	require.Len(t, rb, 1)
	require.Len(t, rc, 1)
	assert.Equal(t, ra[0].Shape, rb[0].Shape, "other registers and addresses, same shape")
	assert.Equal(t, ra[0].Shape, rc[0].Shape, "the lea's shape: the load after it is not in its window")

	// A long run of other instructions before the reference: only the
	// window before it counts.
	nops := make([]byte, 0, 64)
	for i := 0; i < 20; i++ {
		nops = append(nops, 0x48, 0x89, 0xc0) // mov rax, rax
	}
	pre1 := append(append([]byte{0x31, 0xc0}, nops...), a...) // xor eax,eax first
	pre2 := append(append([]byte{0x0f, 0x0b}, nops...), a...) // ud2 first
	s1, s2 := scanAll(t, pre1, 0x1000), scanAll(t, pre2[2:], 0x1002)
	assert.Equal(t, s1[0].Shape, s2[0].Shape, "what lies before the window does not count")
	assert.NotEqual(t, s1[0].Shape, ra[0].Shape, "what lies in the window does")

	// A CET marker (endbr64) at the start leaves the shapes alone.
	cet := scanAll(t, append([]byte{0xf3, 0x0f, 0x1e, 0xfa}, a...), 0x1000)
	require.Len(t, cet, 1)
	assert.Equal(t, ra[0].Shape, cet[0].Shape)
	assert.Equal(t, ra[0].Target+4, cet[0].Target, "and the addresses after it right")
}

// Follow walks a path through a call to the address a function takes;
// shapes that differ make it inexact, a path too long for the code fails.
func TestFollow(t *testing.T) {
	const entry, callee = 0x1000, 0x2000
	pad := func(b []byte) []byte { // int3 up to 64 bytes: a function and what follows it
		for len(b) < 64 {
			b = append(b, 0xcc)
		}
		return b
	}
	c := code{end: 0x3000, at: map[uint64][]byte{
		entry:  pad([]byte{0xe8, 0xfb, 0x0f, 0x00, 0x00, 0xc3}),             // call 0x2000; ret
		callee: pad([]byte{0x48, 0x8d, 0x05, 0xf9, 0x00, 0x00, 0x00, 0xc3}), // lea rax,[rip+0xf9]; ret
	}}
	a, err := ForMachine(elf.EM_X86_64)
	require.NoError(t, err)
	r1 := scanAll(t, c.at[entry], entry)
	r2 := scanAll(t, c.at[callee], callee)
	p := Path{Entry: "f", Steps: []Step{{Ref: 0, Shape: r1[0].Shape}, {Ref: 0, Shape: r2[0].Shape}}}
	got, exact, err := Follow(a, c, entry, p)
	require.NoError(t, err)
	assert.True(t, exact)
	assert.Equal(t, uint64(callee+7+0xf9), got)

	p.Steps[1].Shape++
	got2, exact, err := Follow(a, c, entry, p)
	require.NoError(t, err)
	assert.False(t, exact, "a shape that differs")
	assert.Equal(t, got, got2)

	p.Steps[1].Ref = 5
	_, _, err = Follow(a, c, entry, p)
	assert.ErrorIs(t, err, ErrPath)

	_, _, err = Follow(a, c, entry, Path{Entry: "f"})
	assert.ErrorIs(t, err, ErrPath, "no steps")
}

// ReadCode reads less where the mapping ends, and fails where nothing is
// mapped.
func TestReadCode(t *testing.T) {
	c := code{end: 0x1100, at: map[uint64][]byte{0x1000: make([]byte, 0x1000)}}
	b, err := ReadCode(c, 0x1000, 2048)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), 0x100)
	assert.GreaterOrEqual(t, len(b), 16)
	_, err = ReadCode(c, 0x9000, 64)
	assert.Error(t, err)

	_, err = ForMachine(elf.EM_S390)
	assert.ErrorIs(t, err, ErrUnsupported)
}
