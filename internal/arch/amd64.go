package arch

import (
	"debug/elf"
	"encoding/binary"
)

// AMD64 is x86-64 (System V AMD64 psABI; Linux, glibc).
//
// DWARF numbers 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp, 8
// to 15 r8 to r15, 16 the return address, that is rip. NT_PRSTATUS holds
// struct user_regs_struct (27 words: r15, r14, r13, r12, rbp, rbx, r11,
// r10, r9, r8, rax, rcx, rdx, rsi, rdi, orig_rax, rip, cs, eflags, rsp,
// ss, fs_base, gs_base, ds, es, fs, gs). The thread pointer is fs_base,
// and on TLS variant II it is the thread's struct pthread itself. A
// futex wait is a syscall instruction (0f 05) with rax 202 (SYS_futex)
// before it runs, or an error after (-ERESTARTSYS once a signal
// interrupted it), and the address in rdi.
var AMD64 = register(&Arch{
	Name:           "amd64",
	Machine:        elf.EM_X86_64,
	Class:          elf.ELFCLASS64,
	Data:           elf.ELFDATA2LSB,
	Order:          binary.LittleEndian,
	PtrSize:        8,
	PC:             16,
	SP:             7,
	FP:             6,
	NumRegs:        17,
	TLS:            VariantII,
	TPOffReloc:     uint32(elf.R_X86_64_TPOFF64),
	TPOffRelocName: "R_X86_64_TPOFF64",
	LibompLockKinds: []string{"default", "tas", "futex", "hle", "rtm_queuing", "rtm_spin",
		"ticket", "queuing", "drdpa", "adaptive"},
	LibompTopMethods: []string{"all", "APIC id", "x2APIC id leaf 0xb", "x2APIC id leaf 0x1f",
		"cpuinfo", "flat", "default"},
	FrameChain: true,
	PrRegs:     27,
	PrRegNames: []string{"r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10",
		"r9", "r8", "rax", "rcx", "rdx", "rsi", "rdi", "orig_rax", "rip", "cs",
		"eflags", "rsp", "ss", "fs_base", "gs_base", "ds", "es", "fs", "gs"},
	PrTPName:     "fs_base",
	PrRegAliases: map[string]string{"rflags": "eflags"},
	m:            amd64{},
})

type amd64 struct{}

// amd64DWARF maps DWARF numbers 0 to 16 to indexes of user_regs_struct.
var amd64DWARF = [17]int{10, 12, 11, 5, 13, 14, 4, 19, 9, 8, 7, 6, 3, 2, 1, 0, 16}

func (amd64) prstatus(pr []uint64, set func(int, uint64)) uint64 {
	for dw, idx := range amd64DWARF {
		set(dw, pr[idx])
	}
	return pr[21] // fs_base
}

// threadSelf: glibc's DB_THREAD_SELF on x86-64 is CONST_THREAD_AREA(64,
// FS), "the thread area of fs", fs_base itself.
func (amd64) threadSelf(Descriptors) (int64, error) { return 0, nil }

func (amd64) futexWait(regs Regs, code CodeReader) (uint64, bool) {
	pc, ok := regs.Get(16)
	if !ok || pc < 2 {
		return 0, false
	}
	b, err := code(pc-2, 2)
	if err != nil || b[0] != 0x0f || b[1] != 0x05 {
		return 0, false
	}
	rax, ok1 := regs.Get(0)
	rdi, ok2 := regs.Get(5)
	// rax holds the syscall's number before it runs, its result after;
	// a stopped futex wait shows SYS_futex (202) or -EINTR/-ERESTARTSYS.
	if !ok2 || (ok1 && rax != 202 && int64(rax) >= 0) {
		return 0, false
	}
	return rdi, true
}

// dumpedFutexWait: x86-64 programs are not run under qemu-user.
func (amd64) dumpedFutexWait([]uint64, CodeReader) {}

func (amd64) fallback(a *Arch, regs Regs, word WordReader) (Caller, error) {
	return frameRecord(a, regs, word)
}

func (amd64) tpOffOK(off int64) bool { return tpOffVariantII(off) }

// call: call rel32 (e8), or call *disp32(%rip) (ff 15), whose GOT slot it
// reads.
func (amd64) call(a *Arch, ret uint64, code CodeReader) (uint64, bool) {
	if ret < 6 {
		return 0, false
	}
	b, err := code(ret-6, 6)
	if err != nil || len(b) < 6 {
		return 0, false
	}
	disp := signExtend(uint64(binary.LittleEndian.Uint32(b[2:])), 32)
	switch {
	case b[0] == 0xff && b[1] == 0x15:
		return a.readPtr(code, ret+disp)
	case b[1] == 0xe8:
		return ret + disp, true
	}
	return 0, false
}

// pltJump: [endbr64] [bnd] jmp *disp32(%rip) (f3 0f 1e fa, f2, ff 25).
func (amd64) pltJump(a *Arch, stub uint64, code CodeReader) (uint64, bool) {
	b, err := code(stub, 11)
	if err != nil || len(b) < 11 {
		return 0, false
	}
	i := 0
	if b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa {
		i = 4
	}
	if b[i] == 0xf2 {
		i++
	}
	if b[i] != 0xff || b[i+1] != 0x25 {
		return 0, false
	}
	next := stub + uint64(i) + 6
	return a.readPtr(code, next+signExtend(uint64(binary.LittleEndian.Uint32(b[i+2:i+6])), 32))
}
