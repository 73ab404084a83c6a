package arch

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// ARM64 is aarch64 (AAPCS64; Linux, glibc).
//
// DWARF numbers 0 to 30 x0 to x30 (x29 the frame pointer, x30 the link
// register, the call-frame information's return address column), 31 sp
// and 32 pc. NT_PRSTATUS holds struct user_pt_regs (34 words: x0 to x30,
// sp, pc, pstate); the thread pointer, tpidr_el0, is in a note of its own,
// NT_ARM_TLS, which qemu's cores lack. TLS is variant I: the thread pointer
// points at a 16-byte TCB (dtv, then a private word) with the static TLS
// blocks above it, and glibc's struct pthread right below it (its size is
// the libthread_db descriptor _thread_db_const_thread_area). A futex wait
// is an svc #0 with x8 98 (futex), the address in x0: the PC is past the
// svc in qemu's cores, at it in a kernel's (which rewinds an interrupted
// system call to restart it, restoring x0). Leaf functions need no frame,
// so their CFA is their SP; frame records {x29, x30} chain the others.
var ARM64 = register(&Arch{
	Name:             "arm64",
	Machine:          elf.EM_AARCH64,
	Class:            elf.ELFCLASS64,
	Data:             elf.ELFDATA2LSB,
	Order:            binary.LittleEndian,
	PtrSize:          8,
	PC:               32,
	SP:               31,
	FP:               29,
	NumRegs:          33,
	LeafCFAAtSP:      true,
	SignedRAMask:     1<<48 - 1,
	TLS:              VariantI,
	TPOffReloc:       uint32(elf.R_AARCH64_TLS_TPREL64),
	TPOffRelocName:   "R_AARCH64_TLS_TPREL",
	TCBSize:          16,
	TLSNote:          0x401, // NT_ARM_TLS
	LibompLockKinds:  []string{"default", "tas", "futex", "ticket", "queuing", "drdpa"},
	LibompTopMethods: []string{"all", "cpuinfo", "flat", "default"},
	FrameChain:       true,
	PrRegs:           34,
	m:                arm64{},
})

type arm64 struct{}

func (arm64) prstatus(pr []uint64, set func(int, uint64)) uint64 {
	for n := 0; n <= 32; n++ {
		set(n, pr[n])
	}
	return 0
}

// threadSelf: glibc's DB_THREAD_SELF on aarch64 is CONST_THREAD_AREA(64,
// sizeof (struct pthread)), which gdb's ps_get_thread_area turns into
// tpidr_el0 minus that size.
func (arm64) threadSelf(db Descriptors) (int64, error) {
	w, err := db("_thread_db_const_thread_area", 1)
	if err != nil {
		return 0, err
	}
	if w[0] == 0 || w[0] >= 1<<16 {
		return 0, fmt.Errorf("_thread_db_const_thread_area %d is no size of struct pthread", w[0])
	}
	return -int64(w[0]), nil
}

func (arm64) futexWait(regs Regs, code CodeReader) (uint64, bool) {
	pc, ok1 := regs.Get(32)
	nr, ok2 := regs.Get(8)
	x0, ok3 := regs.Get(0)
	if !ok1 || !ok2 || !ok3 || nr != 98 || !userAddress(x0) {
		return 0, false
	}
	const svc0 = 0xd4000001
	for _, at := range []uint64{pc - 4, pc} {
		if b, err := code(at, 4); err == nil && binary.LittleEndian.Uint32(b) == svc0 {
			return x0, true
		}
	}
	return 0, false
}

// fallback follows the frame records: x29 points at {caller's x29, return
// address}. The caller's SP is not known from them (the record need not
// be at the top of the frame), so it is left unknown.
// dumpedFutexWait: the kernel puts x0 back from orig_x0 before the dump;
// the PC it moves back on the svc is left as qemu wrote it (see
// Arch.DumpedFutexWait).
func (arm64) dumpedFutexWait([]uint64, CodeReader) {}

func (arm64) fallback(a *Arch, regs Regs, word WordReader) (Caller, error) {
	c, err := frameRecord(a, regs, word)
	c.SP = 0
	return c, err
}

func (arm64) tpOffOK(off int64) bool { return off >= 16 && off < 1<<32 }

// call: bl imm26 (0x94000000), the instruction before ret.
func (arm64) call(a *Arch, ret uint64, code CodeReader) (uint64, bool) {
	i, ok := a.insn(code, ret-4)
	if !ok || i&0xfc000000 != 0x94000000 {
		return 0, false
	}
	return ret - 4 + signExtend(uint64(i&0x03ffffff), 26)*4, true
}

// pltJump: [bti c] adrp x16, page; ldr x17, [x16, #off]; add x16, x16,
// #off; br x17 (GNU ld's PLT entry), and the GOT slot's content.
func (arm64) pltJump(a *Arch, stub uint64, code CodeReader) (uint64, bool) {
	pc := stub
	i, ok := a.insn(code, pc)
	if ok && i == 0xd503245f { // bti c
		pc += 4
		i, ok = a.insn(code, pc)
	}
	if !ok || i&0x9f00001f != 0x90000010 { // adrp x16
		return 0, false
	}
	imm := (uint64(i>>29)&3 | uint64(i>>5)&0x7ffff<<2) << 12
	page := pc&^0xfff + signExtend(imm, 33)
	l, ok := a.insn(code, pc+4)
	if !ok || l&0xffc003ff != 0xf9400211 { // ldr x17, [x16, #imm12*8]
		return 0, false
	}
	return a.readPtr(code, page+uint64(l>>10&0xfff)*8)
}
