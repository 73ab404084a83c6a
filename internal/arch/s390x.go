package arch

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// S390X is IBM Z (big-endian; s390x ELF ABI; Linux, glibc).
//
// DWARF numbers 0 to 15 r0 to r15 (r15 the stack pointer, r14 the return
// address column of the call-frame information, r11 GCC's frame pointer),
// 64 and 65 the PSW's mask and address (the program counter); register
// sets keep orig_gpr2 (the first argument of the system call the thread
// is in) at 66, a number DWARF leaves unused.
// NT_PRSTATUS holds struct s390_regs (27 words: psw mask and address, r0
// to r15, the sixteen 32-bit access registers, orig_gpr2); the thread
// pointer is access registers a0:a1, the first access-register word read
// big-endian. TLS is variant II, the thread pointer glibc's struct pthread.
// A futex wait is an svc 238 (or svc 0 with r1 238), the address in r2,
// or, in a kernel's core, which has the system call's error in r2
// (-ERESTARTSYS), in orig_gpr2. A frame's CFA is 160 bytes above its stack pointer
// (the register save area its caller provides), and there is no frame
// chain to follow without call-frame information (code is built without
// -mbackchain).
var S390X = register(&Arch{
	Name:             "s390x",
	Machine:          elf.EM_S390,
	Class:            elf.ELFCLASS64,
	Data:             elf.ELFDATA2MSB,
	Order:            binary.BigEndian,
	PtrSize:          8,
	PC:               65,
	SP:               15,
	FP:               11,
	NumRegs:          s390xOrigGPR2 + 1,
	CallerSPOffset:   -160,
	TLS:              VariantII,
	TPOffReloc:       uint32(elf.R_390_TLS_TPOFF),
	TPOffRelocName:   "R_390_TLS_TPOFF",
	LibompLockKinds:  []string{"default", "tas", "ticket", "queuing", "drdpa"},
	LibompTopMethods: []string{"all", "cpuinfo", "flat", "default"},
	PrRegs:           27,
	m:                s390x{},
})

// s390xOrigGPR2 is where s390x's register sets keep orig_gpr2.
const s390xOrigGPR2 = 66

type s390x struct{}

func (s390x) prstatus(pr []uint64, set func(int, uint64)) uint64 {
	set(64, pr[0]) // PSW mask
	set(65, pr[1]) // PSW address
	for n := 0; n < 16; n++ {
		set(n, pr[2+n])
	}
	set(s390xOrigGPR2, pr[26])
	return pr[18] // a0:a1
}

// threadSelf: variant II, the thread pointer is the struct pthread (glibc's
// DB_THREAD_SELF on s390x reads a0:a1 with no bias).
func (s390x) threadSelf(Descriptors) (int64, error) { return 0, nil }

func (s390x) futexWait(regs Regs, code CodeReader) (uint64, bool) {
	pc, ok1 := regs.Get(65)
	r2, ok2 := regs.Get(2)
	if ok2 && !userAddress(r2) {
		r2, ok2 = regs.Get(s390xOrigGPR2)
	}
	if !ok1 || !ok2 || !userAddress(r2) || pc < 2 {
		return 0, false
	}
	b, err := code(pc-2, 2)
	if err != nil || b[0] != 0x0a {
		return 0, false
	}
	nr := uint64(b[1])
	if nr == 0 {
		if nr, ok1 = regs.Get(1); !ok1 {
			return 0, false
		}
	}
	if nr != 238 {
		return 0, false
	}
	return r2, true
}

// dumpedFutexWait: the result in r2, the argument in orig_gpr2.
func (s390x) dumpedFutexWait(pr []uint64, _ CodeReader) {
	pr[26] = pr[4]
	pr[4] = negERESTARTSYS
}

func (s390x) fallback(*Arch, Regs, WordReader) (Caller, error) { return Caller{}, ErrNoChain }

func (s390x) tpOffOK(off int64) bool { return tpOffVariantII(off) }

// call: brasl rN, rel32 (c0 N5), the six bytes before ret; the offset
// counts halfwords.
func (s390x) call(a *Arch, ret uint64, code CodeReader) (uint64, bool) {
	if ret < 6 {
		return 0, false
	}
	b, err := code(ret-6, 6)
	if err != nil || len(b) < 6 || b[0] != 0xc0 || b[1]&0x0f != 0x5 {
		return 0, false
	}
	return ret - 6 + signExtend(uint64(binary.BigEndian.Uint32(b[2:])), 32)*2, true
}

// pltJump: larl %r1, slot; lg %r1, 0(%r1); br %r1 (GNU ld's PLT entry,
// c0 10 ..., e3 10 10 00 00 04, 07 f1), and the GOT slot's content.
func (s390x) pltJump(a *Arch, stub uint64, code CodeReader) (uint64, bool) {
	b, err := code(stub, 14)
	if err != nil || len(b) < 14 || b[0] != 0xc0 || b[1] != 0x10 ||
		!bytes.Equal(b[6:14], []byte{0xe3, 0x10, 0x10, 0x00, 0x00, 0x04, 0x07, 0xf1}) {
		return 0, false
	}
	return a.readPtr(code, stub+signExtend(uint64(binary.BigEndian.Uint32(b[2:])), 32)*2)
}
