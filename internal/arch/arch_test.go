package arch

import (
	"debug/elf"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// regs is a register set for the tests.
type regs map[int]uint64

func (r regs) Get(n int) (uint64, bool) {
	v, ok := r[n]
	return v, ok
}

func TestForMachine(t *testing.T) {
	for _, a := range All() {
		got, err := ForMachine(a.Machine, a.Class, a.Data)
		require.NoError(t, err, a.Name)
		assert.Same(t, a, got)
		assert.Same(t, a, Numbered(a.Machine))
		assert.Equal(t, a.Name, a.String())
		// Every register the machine's sets use fits target.Registers
		// (128 numbers).
		assert.LessOrEqual(t, a.NumRegs, 128, a.Name)
		for _, n := range []int{a.PC, a.SP} {
			assert.True(t, n >= 0 && n < a.NumRegs, "%s: register %d", a.Name, n)
		}
		assert.Equal(t, a.Order.String() == "BigEndian", a.Data == elf.ELFDATA2MSB, a.Name)
		assert.NotEmpty(t, a.TPOffRelocName, a.Name)
		assert.NotEmpty(t, a.LibompLockKinds, a.Name)
	}
	_, err := ForMachine(elf.EM_MIPS, elf.ELFCLASS64, elf.ELFDATA2MSB)
	require.ErrorIs(t, err, ErrUnknownMachine)
	assert.Contains(t, err.Error(), "EM_MIPS")
	var me *MachineError
	require.ErrorAs(t, err, &me)
	assert.Equal(t, elf.EM_MIPS, me.Machine)
	// A known machine in a word size it is not read in.
	_, err = ForMachine(elf.EM_X86_64, elf.ELFCLASS32, elf.ELFDATA2LSB)
	assert.ErrorIs(t, err, ErrUnknownMachine)
	assert.Nil(t, Numbered(elf.EM_MIPS))
}

// TestAMD64PrStatus: user_regs_struct to DWARF numbering, and fs_base as
// the thread pointer.
func TestAMD64PrStatus(t *testing.T) {
	pr := make([]uint64, 27)
	for i := range pr {
		pr[i] = uint64(0x1000 + i)
	}
	got := regs{}
	tp, err := AMD64.PrStatus(pr, func(n int, v uint64) { got[n] = v })
	require.NoError(t, err)
	assert.Equal(t, uint64(0x1000+21), tp, "fs_base")
	assert.Len(t, got, 17)
	assert.Equal(t, uint64(0x1000+10), got[0], "rax")
	assert.Equal(t, uint64(0x1000+19), got[7], "rsp")
	assert.Equal(t, uint64(0x1000+4), got[6], "rbp")
	assert.Equal(t, uint64(0x1000+16), got[16], "rip")
	assert.Equal(t, uint64(0x1000+0), got[15], "r15")
	_, err = AMD64.PrStatus(pr[:20], func(int, uint64) {})
	assert.Error(t, err)
	assert.Equal(t, "fs_base", AMD64.PrRegNames[21])
}

// code is code memory for the futex tests: bytes at addresses.
type code map[uint64][]byte

func (c code) read(addr uint64, n int) ([]byte, error) {
	for a, b := range c {
		if addr >= a && addr+uint64(n) <= a+uint64(len(b)) {
			return b[addr-a : addr-a+uint64(n)], nil
		}
	}
	return nil, fmt.Errorf("no code at %#x", addr)
}

func TestAMD64Futex(t *testing.T) {
	mem := code{0x1000: {0x90, 0x0f, 0x05, 0x90}}
	for _, c := range []struct {
		name string
		r    regs
		want uint64
		ok   bool
	}{
		{"before the call", regs{16: 0x1003, 0: 202, 5: 0xabc0}, 0xabc0, true},
		{"interrupted", regs{16: 0x1003, 0: uint64(0xfffffffffffffe00), 5: 0xabc0}, 0xabc0, true},
		{"another syscall", regs{16: 0x1003, 0: 7, 5: 0xabc0}, 0, false},
		{"no syscall before the PC", regs{16: 0x1002, 0: 202, 5: 0xabc0}, 0, false},
		{"unreadable code", regs{16: 0x5000, 0: 202, 5: 0xabc0}, 0, false},
		{"rdi unknown", regs{16: 0x1003, 0: 202}, 0, false},
	} {
		got, ok := AMD64.FutexWait(c.r, mem.read)
		assert.Equal(t, c.ok, ok, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
}

// stack is word memory for the fallback tests.
type stack map[uint64]uint64

func (s stack) word(addr uint64) (uint64, error) {
	v, ok := s[addr]
	if !ok {
		return 0, errors.New("unmapped")
	}
	return v, nil
}

func TestFrameRecords(t *testing.T) {
	s := stack{0x7000: 0x7100, 0x7008: 0x401234}
	c, err := AMD64.Fallback(regs{6: 0x7000, 7: 0x6f00}, s.word)
	require.NoError(t, err)
	assert.Equal(t, Caller{CFA: 0x7010, SP: 0x7010, PC: 0x401234, FP: 0x7100, HasFP: true}, c)
	_, err = AMD64.Fallback(regs{6: 0, 7: 0x6f00}, s.word)
	assert.ErrorIs(t, err, ErrChainEnd)
	_, err = AMD64.Fallback(regs{7: 0x6f00}, s.word)
	assert.ErrorIs(t, err, ErrNoChain)
	_, err = AMD64.Fallback(regs{6: 0x6000, 7: 0x6f00}, s.word)
	assert.ErrorIs(t, err, ErrChainBackwards)
	_, err = AMD64.Fallback(regs{6: 0x7003, 7: 0x6f00}, s.word)
	assert.ErrorIs(t, err, ErrNoChain)
	_, err = AMD64.Fallback(regs{6: 0x8000, 7: 0x6f00}, s.word)
	assert.ErrorContains(t, err, "unmapped")
}

// TestStaticTLS: glibc's static TLS offsets of the first module, and the
// blocks they place, on both variants.
func TestStaticTLS(t *testing.T) {
	seg := &elf.ProgHeader{Vaddr: 0x3df0, Memsz: 0x24, Align: 8}
	// Variant II: the block ends at the thread pointer, rounded up.
	assert.Equal(t, uint64(0x28), AMD64.FirstStaticOffset(seg))
	assert.Equal(t, uint64(0x7000-0x28), AMD64.StaticTLSBlock(0x7000, 0x28))
	assert.True(t, AMD64.StaticTLSOffset(0x28))
	assert.False(t, AMD64.StaticTLSOffset(0), "NO_TLS_OFFSET")
	assert.False(t, AMD64.StaticTLSOffset(-1), "FORCED_DYNAMIC_TLS_OFFSET")
	bias, err := AMD64.ThreadSelf(nil)
	require.NoError(t, err)
	assert.Zero(t, bias, "fs_base is the struct pthread")
	assert.True(t, AMD64.TPOffPlausible(-0x28))
	assert.False(t, AMD64.TPOffPlausible(0x28))
	assert.False(t, AMD64.TPOffPlausible(-(1 << 40)))
}
