package arch

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// PPC64LE is little-endian 64-bit POWER (ELFv2 ABI; Linux, glibc).
//
// DWARF numbers 0 to 31 r0 to r31 (r1 the stack pointer, r13 the thread
// pointer), 65 the link register (the call-frame information's return
// address column) and 66 ctr; it has no number for the instruction
// address, which register sets keep at 120, a number it leaves unused,
// and orig_gpr3 (the first argument of the system call the thread is in),
// kept at 121.
// NT_PRSTATUS holds struct pt_regs (48 words: r0 to r31, nip, msr,
// orig_gpr3, ctr, link, xer, ccr, ...). TLS is variant I: the thread
// pointer points 0x7000 past the end of the TCB, the static TLS blocks
// start at the TCB's end, and glibc's struct pthread lies below the TCB
// (libthread_db's descriptor _thread_db_register64 gives the thread
// pointer's distance from it). A futex wait is an sc (or scv 0) with r0
// 221 (futex), the address in r3, or, in a kernel's core, which has the
// system call's error in r3 (-ERESTARTSYS: 512 with CR0's summary
// overflow bit after sc, -512 after scv), in orig_gpr3. Leaf
// functions need no frame; the back chain (each frame's first word points
// at its caller's frame, whose third word holds the saved link register)
// links the others.
var PPC64LE = register(&Arch{
	Name:             "ppc64le",
	Machine:          elf.EM_PPC64,
	Class:            elf.ELFCLASS64,
	Data:             elf.ELFDATA2LSB,
	Order:            binary.LittleEndian,
	PtrSize:          8,
	PC:               ppc64PC,
	SP:               1,
	FP:               31,
	NumRegs:          ppc64OrigR3 + 1,
	LeafCFAAtSP:      true,
	TLS:              VariantI,
	TPOffReloc:       uint32(elf.R_PPC64_TPREL64),
	TPOffRelocName:   "R_PPC64_TPREL64",
	TCBOffset:        0x7000,
	NoTLSOffset:      -1,
	LibompLockKinds:  []string{"default", "tas", "ticket", "queuing", "drdpa"},
	LibompTopMethods: []string{"all", "cpuinfo", "flat", "default"},
	FrameChain:       true,
	PrRegs:           48,
	m:                ppc64{},
})

// ppc64PC is where ppc64's register sets keep the instruction address,
// ppc64OrigR3 the first argument of a system call (orig_gpr3).
const (
	ppc64PC     = 120
	ppc64OrigR3 = 121
)

type ppc64 struct{}

func (ppc64) prstatus(pr []uint64, set func(int, uint64)) uint64 {
	for n := 0; n < 32; n++ {
		set(n, pr[n])
	}
	set(ppc64PC, pr[32])     // nip
	set(ppc64OrigR3, pr[34]) // orig_gpr3
	set(66, pr[35])          // ctr
	set(65, pr[36])          // link
	return pr[13]
}

// threadSelf: glibc's DB_THREAD_SELF on ppc64 is REGISTER(64, 64, r13's
// offset in the register set, -TLS_TCB_OFFSET - TLS_PRE_TCB_SIZE): the
// descriptor's second word is the bias.
func (ppc64) threadSelf(db Descriptors) (int64, error) {
	w, err := db("_thread_db_register64", 3)
	if err != nil {
		return 0, err
	}
	if w[0] != 64 || w[2] != 13*8 {
		return 0, fmt.Errorf("_thread_db_register64 {%d, %d, %d} is not r13's", w[0], w[1], w[2])
	}
	bias := int64(int32(w[1]))
	if bias >= 0 || bias < -(1<<20) {
		return 0, fmt.Errorf("_thread_db_register64's bias %d is implausible", bias)
	}
	return bias, nil
}

func (ppc64) futexWait(regs Regs, code CodeReader) (uint64, bool) {
	pc, ok1 := regs.Get(ppc64PC)
	nr, ok2 := regs.Get(0)
	r3, ok3 := regs.Get(3)
	if ok3 && !userAddress(r3) {
		r3, ok3 = regs.Get(ppc64OrigR3)
	}
	if !ok1 || !ok2 || !ok3 || nr != 221 || !userAddress(r3) || pc < 4 {
		return 0, false
	}
	b, err := code(pc-4, 4)
	if err != nil {
		return 0, false
	}
	if i := binary.LittleEndian.Uint32(b); i != 0x44000002 && i != 0x44000001 { // sc, scv 0
		return 0, false
	}
	return r3, true
}

// dumpedFutexWait: the result in r3, the argument in orig_gpr3, the
// summary overflow bit and trap 0xc00 after sc; -512 and trap 0x3000
// after scv.
func (ppc64) dumpedFutexWait(pr []uint64, code CodeReader) {
	pr[34] = pr[3]                                                                              // orig_gpr3
	if b, err := code(pr[32]-4, 4); err == nil && binary.LittleEndian.Uint32(b) == 0x44000001 { // scv 0
		pr[3], pr[40] = negERESTARTSYS, 0x3000
		return
	}
	pr[3], pr[40] = eRESTARTSYS, 0xc00
	pr[38] |= 0x10000000 // ccr: CR0's summary overflow
}

// fallback follows the back chain: the word at the stack pointer is the
// caller's stack pointer (0 at the outermost frame), and the caller's
// frame holds the return address at 16 (the ELFv2 link register save
// slot).
func (ppc64) fallback(a *Arch, regs Regs, word WordReader) (Caller, error) {
	sp, ok := regs.Get(1)
	if !ok {
		return Caller{}, ErrNoChain
	}
	if sp%16 != 0 {
		return Caller{}, fmt.Errorf("%w: stack pointer %#x is not aligned", ErrNoChain, sp)
	}
	back, err := word(sp)
	if err != nil {
		return Caller{}, fmt.Errorf("back chain: %w", err)
	}
	if back == 0 {
		return Caller{}, ErrChainEnd
	}
	if back <= sp {
		return Caller{}, fmt.Errorf("%w: back chain %#x, stack pointer %#x", ErrChainBackwards, back, sp)
	}
	ra, err := word(back + 16)
	if err != nil {
		return Caller{}, fmt.Errorf("saved link register: %w", err)
	}
	return Caller{CFA: back, SP: back, PC: ra}, nil
}

// tpOffOK: static TLS starts at the TCB's end, 0x7000 below the thread
// pointer.
func (ppc64) tpOffOK(off int64) bool { return off >= -0x7000 && off < 1<<32 }

// call: bl (opcode 18, AA 0, LK 1), the instruction before ret. A call to
// another object goes to a call stub of the caller's, which needs the
// caller's TOC pointer to follow: its target is the stub.
func (ppc64) call(a *Arch, ret uint64, code CodeReader) (uint64, bool) {
	i, ok := a.insn(code, ret-4)
	if !ok || i&0xfc000003 != 0x48000001 {
		return 0, false
	}
	return ret - 4 + signExtend(uint64(i&0x03fffffc), 26), true
}

func (ppc64) pltJump(*Arch, uint64, CodeReader) (uint64, bool) { return 0, false }
