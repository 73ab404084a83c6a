package arch

import (
	"debug/elf"
	"encoding/binary"
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

// TestPrStatus: each machine's register set to DWARF numbering, and the
// thread pointer it holds.
func TestPrStatus(t *testing.T) {
	for _, c := range []struct {
		a    *Arch
		tp   uint64
		want map[int]int // DWARF number -> word index
	}{
		{ARM64, 0, map[int]int{0: 0, 29: 29, 30: 30, 31: 31, 32: 32}},
		{PPC64LE, 0x1000 + 13, map[int]int{1: 1, 13: 13, 31: 31, 120: 32, 121: 34, 66: 35, 65: 36}},
		{S390X, 0x1000 + 18, map[int]int{64: 0, 65: 1, 0: 2, 14: 16, 15: 17, 66: 26}},
	} {
		pr := make([]uint64, c.a.PrRegs)
		for i := range pr {
			pr[i] = uint64(0x1000 + i)
		}
		got := regs{}
		tp, err := c.a.PrStatus(pr, func(n int, v uint64) { got[n] = v })
		require.NoError(t, err, c.a.Name)
		assert.Equal(t, c.tp, tp, "%s: thread pointer", c.a.Name)
		for n, idx := range c.want {
			assert.Equal(t, uint64(0x1000+idx), got[n], "%s: DWARF register %d", c.a.Name, n)
		}
		for n := range got {
			assert.Less(t, n, c.a.NumRegs, "%s: register %d within NumRegs", c.a.Name, n)
		}
		_, ok := got[c.a.PC]
		assert.True(t, ok, "%s: the PC is set", c.a.Name)
	}
}

// descriptors are glibc's libthread_db descriptors of one build.
type descriptors map[string][]uint32

func (d descriptors) read(name string, n int) ([]uint32, error) {
	w, ok := d[name]
	if !ok || len(w) < n {
		return nil, fmt.Errorf("no %s", name)
	}
	return w[:n], nil
}

// TestThreadSelf: where glibc's struct pthread lies from the thread
// pointer, from the descriptors of Debian's glibc 2.36 of each machine.
func TestThreadSelf(t *testing.T) {
	bias, err := ARM64.ThreadSelf(descriptors{"_thread_db_const_thread_area": {0x740}}.read)
	require.NoError(t, err)
	assert.Equal(t, int64(-0x740), bias)
	bias, err = PPC64LE.ThreadSelf(descriptors{"_thread_db_register64": {64, 0xffff8840, 13 * 8}}.read)
	require.NoError(t, err)
	assert.Equal(t, int64(-0x77c0), bias, "0x7000 + the TCB + struct pthread below r13")
	bias, err = S390X.ThreadSelf(nil)
	require.NoError(t, err)
	assert.Zero(t, bias)

	_, err = ARM64.ThreadSelf(descriptors{}.read)
	assert.Error(t, err, "no descriptor: unknown, not guessed")
	_, err = ARM64.ThreadSelf(descriptors{"_thread_db_const_thread_area": {0}}.read)
	assert.Error(t, err)
	_, err = PPC64LE.ThreadSelf(descriptors{"_thread_db_register64": {64, 0xffff8840, 2 * 8}}.read)
	assert.ErrorContains(t, err, "not r13's")
	_, err = PPC64LE.ThreadSelf(descriptors{"_thread_db_register64": {64, 0x100, 13 * 8}}.read)
	assert.ErrorContains(t, err, "implausible")
}

// TestVariantI: static TLS above the thread pointer, past aarch64's TCB;
// ppc64's counted from its TCB, 0x7000 below the thread pointer.
func TestVariantI(t *testing.T) {
	seg := &elf.ProgHeader{Vaddr: 0x10d78, Memsz: 0x8, Align: 8}
	assert.Equal(t, uint64(16), ARM64.FirstStaticOffset(seg))
	assert.Equal(t, uint64(0x7000+16), ARM64.StaticTLSBlock(0x7000, 16))
	assert.Zero(t, PPC64LE.FirstStaticOffset(seg))
	assert.Equal(t, uint64(0x20000-0x7000+0x40), PPC64LE.StaticTLSBlock(0x20000, 0x40))
	assert.True(t, PPC64LE.StaticTLSOffset(0), "0 is an offset on ppc64")
	assert.False(t, PPC64LE.StaticTLSOffset(-1), "NO_TLS_OFFSET")
	assert.False(t, ARM64.StaticTLSOffset(0), "NO_TLS_OFFSET")
	assert.True(t, ARM64.TPOffPlausible(16))
	assert.False(t, ARM64.TPOffPlausible(-16))
	assert.True(t, PPC64LE.TPOffPlausible(-0x7000+0x10))
	assert.False(t, PPC64LE.TPOffPlausible(-0x8000))
	assert.True(t, S390X.TPOffPlausible(-0x40))
}

func TestFutex(t *testing.T) {
	le := binary.LittleEndian
	svc := code{0x1000: le.AppendUint32(nil, 0xd4000001)}
	sc := code{0x1000: le.AppendUint32(nil, 0x44000002), 0x2000: le.AppendUint32(nil, 0x44000001)}
	s390 := code{0x1000: {0x0a, 0xee}, 0x2000: {0x0a, 0x00}}
	for _, c := range []struct {
		name string
		a    *Arch
		mem  code
		r    regs
		want uint64
		ok   bool
	}{
		{"arm64: after the svc (qemu)", ARM64, svc, regs{32: 0x1004, 8: 98, 0: 0xabc0}, 0xabc0, true},
		{"arm64: at the svc (a kernel's restart)", ARM64, svc, regs{32: 0x1000, 8: 98, 0: 0xabc0}, 0xabc0, true},
		{"arm64: another call", ARM64, svc, regs{32: 0x1004, 8: 73, 0: 0xabc0}, 0, false},
		{"arm64: an error in x0", ARM64, svc, regs{32: 0x1004, 8: 98, 0: ^uint64(3)}, 0, false},
		{"arm64: no svc", ARM64, svc, regs{32: 0x1010, 8: 98, 0: 0xabc0}, 0, false},
		{"ppc64: sc", PPC64LE, sc, regs{120: 0x1004, 0: 221, 3: 0xabc0}, 0xabc0, true},
		{"ppc64: scv 0", PPC64LE, sc, regs{120: 0x2004, 0: 221, 3: 0xabc0}, 0xabc0, true},
		{"ppc64: ERESTARTSYS in r3, no orig_gpr3", PPC64LE, sc, regs{120: 0x1004, 0: 221, 3: 512}, 0, false},
		{"ppc64: ERESTARTSYS in r3, the address in orig_gpr3 (a kernel's core, sc)", PPC64LE, sc, regs{120: 0x1004, 0: 221, 3: 512, 121: 0xabc0}, 0xabc0, true},
		{"ppc64: -ERESTARTSYS in r3, the address in orig_gpr3 (a kernel's core, scv)", PPC64LE, sc, regs{120: 0x2004, 0: 221, 3: ^uint64(511), 121: 0xabc0}, 0xabc0, true},
		{"ppc64: r3 the address, orig_gpr3 another (qemu's zero)", PPC64LE, sc, regs{120: 0x1004, 0: 221, 3: 0xabc0, 121: 0}, 0xabc0, true},
		{"ppc64: ERESTARTSYS in r3, no address in orig_gpr3", PPC64LE, sc, regs{120: 0x1004, 0: 221, 3: 512, 121: 0}, 0, false},
		{"s390x: svc 238", S390X, s390, regs{65: 0x1002, 2: 0xabc0}, 0xabc0, true},
		{"s390x: svc 0, r1 238", S390X, s390, regs{65: 0x2002, 1: 238, 2: 0xabc0}, 0xabc0, true},
		{"s390x: svc 0, another call", S390X, s390, regs{65: 0x2002, 1: 7, 2: 0xabc0}, 0, false},
		{"s390x: -ERESTARTSYS in r2, no orig_gpr2", S390X, s390, regs{65: 0x1002, 2: ^uint64(511)}, 0, false},
		{"s390x: -ERESTARTSYS in r2, the address in orig_gpr2 (a kernel's core)", S390X, s390, regs{65: 0x1002, 2: ^uint64(511), 66: 0xabc0}, 0xabc0, true},
		{"s390x: r2 the address, orig_gpr2 qemu's zero", S390X, s390, regs{65: 0x1002, 2: 0xabc0, 66: 0}, 0xabc0, true},
	} {
		got, ok := c.a.FutexWait(c.r, c.mem.read)
		assert.Equal(t, c.ok, ok, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
}

// TestDumpedFutexWait: a futex wait's registers as qemu wrote them become
// a kernel's (the result in the argument's register, the argument beside
// it), which FutexWait reads as it read qemu's; other threads, and the
// machines whose kernel leaves them, are not touched.
func TestDumpedFutexWait(t *testing.T) {
	le := binary.LittleEndian
	sc := code{0x1000: le.AppendUint32(nil, 0x44000002), 0x2000: le.AppendUint32(nil, 0x44000001)}
	s390 := code{0x1000: {0x0a, 0xee}}
	svc := code{0x1000: le.AppendUint32(nil, 0xd4000001)}
	ppc := func(nip uint64) []uint64 {
		pr := make([]uint64, PPC64LE.PrRegs)
		pr[0], pr[3], pr[32], pr[38] = 221, 0xabc0, nip, 0x24000000
		return pr
	}
	s390pr := make([]uint64, S390X.PrRegs)
	s390pr[1], s390pr[4] = 0x1002, 0xabc0
	arm := make([]uint64, ARM64.PrRegs)
	arm[0], arm[8], arm[32] = 0xabc0, 98, 0x1004
	notWaiting := ppc(0x1004)
	notWaiting[0] = 24
	for _, c := range []struct {
		name    string
		a       *Arch
		mem     code
		pr      []uint64
		waiting bool
		want    map[int]uint64 // word index -> value after
	}{
		{"ppc64: sc", PPC64LE, sc, ppc(0x1004), true, map[int]uint64{3: 512, 34: 0xabc0, 38: 0x34000000, 40: 0xc00}},
		{"ppc64: scv", PPC64LE, sc, ppc(0x2004), true, map[int]uint64{3: ^uint64(511), 34: 0xabc0, 38: 0x24000000, 40: 0x3000}},
		{"ppc64: another call", PPC64LE, sc, notWaiting, false, map[int]uint64{3: 0xabc0, 34: 0}},
		{"s390x", S390X, s390, s390pr, true, map[int]uint64{4: ^uint64(511), 26: 0xabc0}},
		{"arm64: as qemu wrote it", ARM64, svc, arm, true, map[int]uint64{0: 0xabc0, 32: 0x1004}},
	} {
		waiting, err := c.a.DumpedFutexWait(c.pr, c.mem.read)
		require.NoError(t, err, c.name)
		assert.Equal(t, c.waiting, waiting, c.name)
		for i, v := range c.want {
			assert.Equal(t, v, c.pr[i], "%s: word %d", c.name, i)
		}
		regs := regs{}
		_, err = c.a.PrStatus(c.pr, func(n int, v uint64) { regs[n] = v })
		require.NoError(t, err)
		addr, ok := c.a.FutexWait(regs, c.mem.read)
		assert.Equal(t, c.waiting, ok, c.name)
		if ok {
			assert.Equal(t, uint64(0xabc0), addr, c.name)
		}
	}
	_, err := PPC64LE.DumpedFutexWait(make([]uint64, 3), sc.read)
	assert.Error(t, err, "a short register set")
}

// TestFallbacks: aarch64's frame records, ppc64's back chain, and none on
// s390x.
func TestFallbacks(t *testing.T) {
	s := stack{0x7000: 0x7100, 0x7008: 0x401234}
	c, err := ARM64.Fallback(regs{29: 0x7000, 31: 0x6f00}, s.word)
	require.NoError(t, err)
	assert.Equal(t, Caller{CFA: 0x7010, PC: 0x401234, FP: 0x7100, HasFP: true}, c, "the caller's SP is not known from a frame record")

	s = stack{0x6f00: 0x7000, 0x7010: 0x401234, 0x7000: 0}
	c, err = PPC64LE.Fallback(regs{1: 0x6f00}, s.word)
	require.NoError(t, err)
	assert.Equal(t, Caller{CFA: 0x7000, SP: 0x7000, PC: 0x401234}, c)
	_, err = PPC64LE.Fallback(regs{1: 0x7000}, s.word)
	assert.ErrorIs(t, err, ErrChainEnd)
	s[0x6f00] = 0x6e00
	_, err = PPC64LE.Fallback(regs{1: 0x6f00}, s.word)
	assert.ErrorIs(t, err, ErrChainBackwards)
	_, err = PPC64LE.Fallback(regs{1: 0x6f08}, s.word)
	assert.ErrorIs(t, err, ErrNoChain, "a misaligned stack pointer")

	_, err = S390X.Fallback(regs{15: 0x7000, 11: 0x7000}, s.word)
	assert.ErrorIs(t, err, ErrNoChain)
	assert.False(t, S390X.FrameChain)
	assert.True(t, AMD64.FrameChain && ARM64.FrameChain && PPC64LE.FrameChain)
}

// TestCallTarget decodes each machine's direct calls, and the PLT stubs
// GNU ld makes.
func TestCallTarget(t *testing.T) {
	le, be := binary.LittleEndian, binary.BigEndian
	got := func(a *Arch, mem code, ret uint64) uint64 {
		t.Helper()
		to, ok := a.CallTarget(ret, mem.read)
		require.True(t, ok, "%s: call before %#x", a.Name, ret)
		return to
	}
	// x86-64: call rel32, call *disp32(%rip) through a GOT slot, and a
	// PLT stub jumping through one.
	x86 := code{
		0x1000: {0x90, 0xe8, 0xfb, 0x0f, 0x00, 0x00},                        // call 0x2000 (from 0x1006)
		0x1100: append([]byte{0xff, 0x15}, le.AppendUint32(nil, 0x0efa)...), // call *0x2000(%rip)
		0x2000: le.AppendUint64(nil, 0x5000),
		0x3000: append([]byte{0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25}, le.AppendUint32(nil, 0xfffff000-11+0x2000-0x3000+0x1000)...),
	}
	assert.Equal(t, uint64(0x2001), got(AMD64, x86, 0x1006))
	assert.Equal(t, uint64(0x5000), got(AMD64, x86, 0x1106))
	to, ok := AMD64.PLTTarget(0x3000, x86.read)
	require.True(t, ok)
	assert.Equal(t, uint64(0x5000), to)

	// aarch64: bl back 0x800, and an adrp/ldr PLT entry.
	a64 := code{
		0x10000: le.AppendUint32(nil, 0x94000000|(0x4000000-0x200)), // bl .-0x800
		0x20000: le.AppendUint32(le.AppendUint32(le.AppendUint32(le.AppendUint32(nil,
			0xd503245f), // bti c
			0x90000010|1<<29), // adrp x16, .+0x1000 page
			0xf9400211|(0x18/8)<<10), // ldr x17, [x16, #0x18]
			0xd61f0220), // br x17
		0x21018: le.AppendUint64(nil, 0x9000),
	}
	assert.Equal(t, uint64(0x10000-0x800), got(ARM64, a64, 0x10004))
	to, ok = ARM64.PLTTarget(0x20000, a64.read)
	require.True(t, ok)
	assert.Equal(t, uint64(0x9000), to)

	// ppc64: bl forward 0x40.
	ppc := code{0x10000: le.AppendUint32(nil, 0x48000001|0x40)}
	assert.Equal(t, uint64(0x10040), got(PPC64LE, ppc, 0x10004))
	_, ok = PPC64LE.PLTTarget(0x10040, ppc.read)
	assert.False(t, ok)

	// s390x: brasl %r14 back 0x100 halfwords, and a larl/lg/br PLT entry.
	s390 := code{
		0x10000: append([]byte{0xc0, 0xe5}, be.AppendUint32(nil, uint32(0x100000000-0x100))...),
		0x20000: append(append([]byte{0xc0, 0x10}, be.AppendUint32(nil, 0x800)...), 0xe3, 0x10, 0x10, 0x00, 0x00, 0x04, 0x07, 0xf1),
		0x21000: be.AppendUint64(nil, 0x9000),
	}
	assert.Equal(t, uint64(0x10000-0x200), got(S390X, s390, 0x10006))
	to, ok = S390X.PLTTarget(0x20000, s390.read)
	require.True(t, ok)
	assert.Equal(t, uint64(0x9000), to)

	// No call before the return address.
	_, ok = ARM64.CallTarget(0x20004, a64.read)
	assert.False(t, ok)
	_, ok = S390X.CallTarget(0x20006, s390.read)
	assert.False(t, ok)
}

func TestStripPAC(t *testing.T) {
	assert.Equal(t, uint64(0x5502843744), ARM64.StripPAC(0x3c005502843744))
	assert.Equal(t, uint64(0x3c005502843744), AMD64.StripPAC(0x3c005502843744))
	assert.Equal(t, uint64(0x0102030405060708), S390X.Word([]byte{1, 2, 3, 4, 5, 6, 7, 8}), "big-endian")
}
