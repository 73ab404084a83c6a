// Package arch holds what ompd-go knows of each machine whose programs it
// reads, one file per machine as Delve keeps its own: how DWARF numbers the
// registers, how the Linux kernel lays them out in a core's NT_PRSTATUS
// note, where the thread pointer is and how glibc hangs thread-local
// storage and its thread descriptor (pthread_t) off it, which relocation
// fills an initial-exec TLS offset, how a thread blocked in a futex system
// call shows it, and how to find a caller's frame without call-frame
// information.
//
// Nothing outside this package tells machines apart: the rest of the
// module asks ForMachine (or For, from an ELF file's header) for the Arch
// of a program and uses its fields and methods. Adding a machine is adding
// its file here (and its fixtures); a machine without a file is refused
// with its name (ErrUnknownMachine).
//
// The package imports only the standard library, so that the public
// packages (target) can use it.
package arch

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
)

// ErrUnknownMachine reports a machine this package has no file for.
var ErrUnknownMachine = errors.New("machine not supported")

// MachineError reports a machine, or a word size or byte order of it, that
// this package does not know. It matches ErrUnknownMachine.
type MachineError struct {
	Machine elf.Machine
	Class   elf.Class
	Data    elf.Data
}

func (e *MachineError) Error() string {
	return fmt.Sprintf("%v (%v, %v): %v", e.Machine, e.Class, e.Data, ErrUnknownMachine)
}

// Is makes a MachineError match ErrUnknownMachine.
func (e *MachineError) Is(target error) bool { return target == ErrUnknownMachine }

// TLSVariant is the layout of thread-local storage around the thread
// pointer (Drepper, "ELF Handling For Thread-Local Storage").
type TLSVariant int

// The two TLS layouts.
const (
	// VariantI: the thread pointer points at (or at a fixed distance past)
	// the thread control block, and the static TLS blocks lie above it;
	// glibc's struct pthread lies below (aarch64, ppc64).
	VariantI TLSVariant = 1
	// VariantII: the static TLS blocks lie below the thread pointer,
	// which points at the thread control block, glibc's struct pthread
	// itself (x86-64, s390x).
	VariantII TLSVariant = 2
)

// Regs is a register set numbered as DWARF numbers the machine's
// registers (target.Registers is one).
type Regs interface {
	Get(n int) (uint64, bool)
}

// Arch is one machine. Its fields are read-only.
type Arch struct {
	// Name is Go's name of the machine (GOARCH): amd64, arm64, ppc64le,
	// s390x.
	Name string
	// Machine, Class and Data are the ELF identification of its
	// programs.
	Machine elf.Machine
	Class   elf.Class
	Data    elf.Data
	// Order is the byte order, PtrSize the size of a pointer in bytes.
	Order   binary.ByteOrder
	PtrSize int

	// PC, SP and FP are where register sets keep the program counter,
	// the stack pointer and the frame pointer, as DWARF numbers: PC is
	// what the caller's return address becomes when a frame is unwound
	// (x86-64's return address column, 16; aarch64's pc, 32; s390x's
	// PSW address, 65; ppc64's instruction address, which DWARF does
	// not number, at 120). FP is -1 where the ABI has no frame pointer
	// the fallback walks (s390x).
	PC, SP, FP int
	// NumRegs bounds the DWARF numbers the machine's register sets
	// use: every number below it, and no other, may be set.
	NumRegs int

	// SignedRAMask keeps the address bits of a return address that
	// pointer authentication signed (aarch64, where
	// DW_CFA_AARCH64_negate_ra_state marks such code): 48 bits, the
	// size of Linux's user addresses; 0 where nothing is signed.
	SignedRAMask uint64

	// CallerSPOffset is where the caller's stack pointer is from a
	// frame's CFA, when the call-frame information does not restore it:
	// the CFA itself (0) everywhere but on s390x, whose CFA lies 160
	// bytes above the stack pointer at the call (the register save area
	// the caller provides).
	CallerSPOffset int64

	// FrameChain says frames link to their callers' in memory (x86-64's
	// rbp chain, aarch64's frame records, ppc64's back chain): the word
	// at a frame's address is its caller's frame address. s390x code
	// keeps no such chain.
	FrameChain bool

	// LeafCFAAtSP says a frame's canonical frame address may equal its
	// stack pointer: a function that calls nothing need not allocate a
	// frame (aarch64, ppc64). Elsewhere a CFA at or below the stack
	// pointer is corrupt registers.
	LeafCFAAtSP bool

	// TLS is how thread-local storage hangs off the thread pointer.
	TLS TLSVariant
	// TPOffReloc is the dynamic relocation type that fills a GOT slot
	// with the thread-pointer offset of an initial-exec TLS variable
	// (R_X86_64_TPOFF64, R_AARCH64_TLS_TPREL, R_PPC64_TPREL64,
	// R_390_TLS_TPOFF).
	TPOffReloc     uint32
	TPOffRelocName string
	// TCBOffset is how far past the thread control block the thread
	// pointer points, on TLS variant I: 0x7000 on ppc64 (the ABI's
	// bias), 0 on aarch64. glibc's l_tls_offset counts from the TCB.
	TCBOffset uint64
	// TCBSize is the size of the thread control block that precedes
	// the first static TLS block on variant I (16 on aarch64: dtv and
	// a private word; 0 on ppc64, whose TCB lies below the thread
	// pointer). Unused on variant II.
	TCBSize uint64
	// NoTLSOffset is glibc's NO_TLS_OFFSET, the l_tls_offset of a
	// module without static TLS: 0, or -1 on ppc64, where 0 is a
	// valid offset.
	NoTLSOffset int64
	// TLSNote is the type of the note (owner "LINUX") that holds the
	// thread pointer in a kernel's core where NT_PRSTATUS does not
	// (NT_ARM_TLS on aarch64), 0 if none.
	TLSNote uint32

	// LibompLockKinds names the members of LLVM 19 libomp's enum
	// kmp_lock_kind on the machine, by value (kmp_lock.h builds futex
	// locks on x86 and ARM only, kmp_os.h TSX and adaptive locks on x86
	// only); LibompTopMethods those of its enum affinity_top_method
	// (APIC ids on x86 only; built without hwloc or processor groups),
	// as its print functions name them.
	LibompLockKinds, LibompTopMethods []string

	// PrRegs is the number of words of the kernel's register set in an
	// NT_PRSTATUS note (ELF_NGREG).
	PrRegs int
	// PrRegNames names those words, in order, as Delve's thread notes
	// (in cores Delve's dump writes) name registers; nil where Delve
	// writes no such notes. PrTPName is the thread pointer's name among
	// them (it is not in pr_reg everywhere), PrRegAliases maps other
	// names Delve gives to those.
	PrRegNames   []string
	PrTPName     string
	PrRegAliases map[string]string

	m machine
}

// machine is what each machine's file implements.
type machine interface {
	// prstatus decodes the kernel's register set (PrRegs words) into
	// DWARF numbering through set, and returns the thread pointer it
	// holds (0 if it holds none).
	prstatus(pr []uint64, set func(n int, v uint64)) (tp uint64)
	// threadSelf returns how far glibc's struct pthread lies from the
	// thread pointer (pthread_t = thread pointer + bias), reading glibc's
	// libthread_db descriptors through db.
	threadSelf(db Descriptors) (int64, error)
	// futexWait returns the address a thread waits on in a futex system
	// call, from the registers of its innermost frame and the code at
	// its PC.
	futexWait(regs Regs, code CodeReader) (uint64, bool)
	// dumpedFutexWait rewrites pr, the NT_PRSTATUS words of a thread
	// in a futex wait as qemu-user's core holds them, as a kernel's core
	// holds them (see DumpedFutexWait); code is at the PC.
	dumpedFutexWait(pr []uint64, code CodeReader)
	// fallback finds a frame's caller without call-frame information.
	fallback(a *Arch, regs Regs, word WordReader) (Caller, error)
	// tpOffOK reports whether off is a plausible thread-pointer offset
	// of a static TLS variable.
	tpOffOK(off int64) bool
	// call decodes the call instruction that ends at ret.
	call(a *Arch, ret uint64, code CodeReader) (uint64, bool)
	// pltJump decodes a PLT stub at stub.
	pltJump(a *Arch, stub uint64, code CodeReader) (uint64, bool)
}

// machines are the machines this package knows, from their files.
var machines []*Arch

func register(a *Arch) *Arch {
	machines = append(machines, a)
	return a
}

// ForMachine returns the Arch of machine m in class c with data encoding
// d; a machine (or word size, or byte order of it) without a file here is
// an error matching ErrUnknownMachine that names it.
func ForMachine(m elf.Machine, c elf.Class, d elf.Data) (*Arch, error) {
	for _, a := range machines {
		if a.Machine == m && a.Class == c && a.Data == d {
			return a, nil
		}
	}
	return nil, &MachineError{Machine: m, Class: c, Data: d}
}

// For returns the Arch of the ELF file f.
func For(f *elf.File) (*Arch, error) { return ForMachine(f.Machine, f.Class, f.Data) }

// Numbered returns the Arch of machine m whatever its class and byte
// order, for what depends on the register numbering only (which is the
// same); nil if m has no file here.
func Numbered(m elf.Machine) *Arch {
	for _, a := range machines {
		if a.Machine == m {
			return a
		}
	}
	return nil
}

// All returns the machines this package knows.
func All() []*Arch { return append([]*Arch(nil), machines...) }

func (a *Arch) String() string { return a.Name }

// PrStatus decodes the kernel's register set of one thread, pr (the
// pr_reg words of its NT_PRSTATUS note, at least PrRegs of them), into
// DWARF numbering through set, and returns the thread pointer it holds, 0
// if the machine keeps it elsewhere (TLSNote).
func (a *Arch) PrStatus(pr []uint64, set func(n int, v uint64)) (tp uint64, err error) {
	if len(pr) < a.PrRegs {
		return 0, fmt.Errorf("%s registers: %d words, want %d", a.Name, len(pr), a.PrRegs)
	}
	return a.m.prstatus(pr, set), nil
}

// Descriptors reads glibc's libthread_db descriptors: n 32-bit words of
// the exported symbol name (such as _thread_db_const_thread_area), in the
// target's byte order.
type Descriptors func(name string, n int) ([]uint32, error)

// ThreadSelf returns how far a thread's struct pthread (its pthread_t)
// lies from its thread pointer: pthread_t = thread pointer + bias, as
// glibc's THREAD_SELF and libthread_db's DB_THREAD_SELF say. On TLS
// variant II machines the bias is 0 (the thread pointer is the struct
// pthread); on variant I it depends on the size of glibc's struct pthread
// and is read from glibc's descriptors through db.
func (a *Arch) ThreadSelf(db Descriptors) (int64, error) { return a.m.threadSelf(db) }

// StaticTLSBlock returns the address of the static TLS block at glibc's
// l_tls_offset tlsOffset in the thread whose thread pointer is tp.
func (a *Arch) StaticTLSBlock(tp, tlsOffset uint64) uint64 {
	if a.TLS == VariantII {
		return tp - tlsOffset
	}
	return tp - a.TCBOffset + tlsOffset
}

// StripPAC returns the return address v without the signature pointer
// authentication put in its top bits (see SignedRAMask).
func (a *Arch) StripPAC(v uint64) uint64 {
	if a.SignedRAMask == 0 {
		return v
	}
	return v & a.SignedRAMask
}

// StaticTLSOffset reports whether glibc's l_tls_offset tlsOffset (sign
// extended) places a module in the static TLS block: not NO_TLS_OFFSET nor
// FORCED_DYNAMIC_TLS_OFFSET (the one below it), nor negative.
func (a *Arch) StaticTLSOffset(tlsOffset int64) bool {
	return tlsOffset >= 0 && tlsOffset != a.NoTLSOffset
}

// FirstStaticOffset is the l_tls_offset glibc gives the first module of
// the static TLS block (the executable) whose PT_TLS segment is seg, as
// glibc's _dl_determine_tlsoffset computes it: for programs without
// glibc's descriptors to read it from.
func (a *Arch) FirstStaticOffset(seg *elf.ProgHeader) uint64 {
	align := seg.Align
	if align == 0 {
		align = 1
	}
	firstbyte := (-seg.Vaddr) & (align - 1)
	if align&(align-1) != 0 {
		firstbyte = 0
	}
	if a.TLS == VariantII {
		n := seg.Memsz - firstbyte
		return (n+align-1)/align*align + firstbyte
	}
	off := (a.TCBSize + align - 1) / align * align
	if off-a.TCBSize < firstbyte {
		off += align
	}
	return off - firstbyte
}

// TPOffPlausible reports whether off is a plausible thread-pointer offset
// of a static TLS variable (negative on variant II, past the TCB on
// aarch64, within the ABI's bias on ppc64; always within 4 GiB).
func (a *Arch) TPOffPlausible(off int64) bool { return a.m.tpOffOK(off) }

// CodeReader reads n bytes of code at addr.
type CodeReader func(addr uint64, n int) ([]byte, error)

// FutexWait returns the address a thread waits on in a futex system call,
// and true, when the registers of its innermost frame show it stopped in
// one (the system call instruction right before or at its PC, the futex
// system call's number, the address in the register of its first
// argument; in a kernel's core of ppc64 and s390x, where that register
// holds the call's result, -ERESTARTSYS, the argument the kernel kept
// beside it: orig_gpr3, orig_gpr2). Registers that do not show it give
// false: the address is unknown then, not guessed.
func (a *Arch) FutexWait(regs Regs, code CodeReader) (uint64, bool) {
	return a.m.futexWait(regs, code)
}

// DumpedFutexWait reports whether pr, the NT_PRSTATUS register words of a
// thread in a core qemu-user wrote, shows the thread in a futex wait
// (FutexWait; code reads the code at its PC), and if so rewrites pr as a
// Linux kernel's core of the same thread holds it. The kernel writes the
// core while the wait returns -ERESTARTSYS to the fatal signal, with the
// result already where the machine returns it: ppc64's r3 (512 and CR0's
// summary overflow bit after sc, trap 0xc00; -512 after scv, trap
// 0x3000; the argument kept in orig_gpr3) and s390x's r2 (-512; the
// argument kept in orig_gpr2). aarch64's kernel has put x0 back from
// orig_x0 by then (and the PC back on the svc, to restart it: left as
// qemu wrote it, as FutexWait reads either, so that one core's
// backtraces hold for the other); x86-64 programs are not run under
// qemu. Tests make kernel cores from qemu's with it.
func (a *Arch) DumpedFutexWait(pr []uint64, code CodeReader) (bool, error) {
	regs := make(prRegs)
	if _, err := a.PrStatus(pr, func(n int, v uint64) { regs[n] = v }); err != nil {
		return false, err
	}
	if _, ok := a.FutexWait(regs, code); !ok {
		return false, nil
	}
	a.m.dumpedFutexWait(pr, code)
	return true, nil
}

// prRegs is a register set decoded from NT_PRSTATUS.
type prRegs map[int]uint64

func (r prRegs) Get(n int) (uint64, bool) {
	v, ok := r[n]
	return v, ok
}

// eRESTARTSYS is the kernel's ERESTARTSYS, which a system call interrupted
// by a signal returns (negated).
const (
	eRESTARTSYS    = 512
	negERESTARTSYS = ^uint64(eRESTARTSYS - 1) // -512
)

// CallTarget returns where the call instruction that ends at the return
// address ret goes: a direct call (x86-64's call rel32, aarch64's and
// ppc64's bl, s390x's brasl), or on x86-64 an indirect call through a GOT
// slot (call *disp32(%rip), as -fno-plt code makes), whose content it
// reads. ok is false for any other instruction (an indirect call through
// a register cannot be told afterwards) or unreadable code.
func (a *Arch) CallTarget(ret uint64, code CodeReader) (uint64, bool) {
	return a.m.call(a, ret, code)
}

// PLTTarget returns where the PLT stub at stub jumps: the content of the
// GOT slot it jumps through (the dynamic linker has filled it by the time
// a thread is in the function), for the stubs GNU ld makes on x86-64,
// aarch64 and s390x. ok is false for anything else (ppc64's call stubs
// need the caller's TOC pointer).
func (a *Arch) PLTTarget(stub uint64, code CodeReader) (uint64, bool) {
	return a.m.pltJump(a, stub, code)
}

// readPtr reads a pointer at addr through code.
func (a *Arch) readPtr(code CodeReader, addr uint64) (uint64, bool) {
	b, err := code(addr, a.PtrSize)
	if err != nil || len(b) < a.PtrSize {
		return 0, false
	}
	return a.Word(b), true
}

// insn reads the 32-bit instruction at addr (aarch64, ppc64) in the
// machine's byte order.
func (a *Arch) insn(code CodeReader, addr uint64) (uint32, bool) {
	b, err := code(addr, 4)
	if err != nil || len(b) < 4 {
		return 0, false
	}
	return a.Order.Uint32(b), true
}

// signExtend extends the low bits bits of v.
func signExtend(v uint64, bits uint) uint64 {
	return uint64(int64(v<<(64-bits)) >> (64 - bits))
}

// WordReader reads a pointer-sized word of the target.
type WordReader func(addr uint64) (uint64, error)

// Caller is a caller's frame as Fallback finds it.
type Caller struct {
	// CFA is the callee's canonical frame address; SP the caller's
	// stack pointer (0 if the chain does not tell it); PC the return
	// address.
	CFA, SP, PC uint64
	// FP is the caller's frame pointer, when HasFP.
	FP    uint64
	HasFP bool
}

// Errors of Fallback.
var (
	// ErrChainEnd: the frame chain ends here (a zero frame pointer or
	// back chain, as glibc leaves at a thread's start).
	ErrChainEnd = errors.New("end of the frame chain")
	// ErrNoChain: the machine or the registers offer no chain to follow.
	ErrNoChain = errors.New("no frame chain")
	// ErrChainBackwards: the chain leads below the stack pointer, so the
	// registers or the stack are corrupt.
	ErrChainBackwards = errors.New("frame chain goes below the stack pointer")
)

// Fallback finds a frame's caller without call-frame information: through
// the frame-pointer chain (x86-64's rbp, aarch64's frame records) or the
// back chain (ppc64's stack frames). An error matches ErrChainEnd at the
// chain's end, ErrNoChain where there is no chain to follow,
// ErrChainBackwards where it leads below the stack pointer, or wraps the
// failed read.
func (a *Arch) Fallback(regs Regs, word WordReader) (Caller, error) {
	return a.m.fallback(a, regs, word)
}

// Word reads a word of the machine's pointer size and byte order from b.
func (a *Arch) Word(b []byte) uint64 {
	if a.PtrSize == 4 {
		return uint64(a.Order.Uint32(b))
	}
	return a.Order.Uint64(b)
}

// chainError is an error of Fallback that matches kind (ErrNoChain,
// ErrChainBackwards) and says only what is wrong.
type chainError struct {
	kind error
	msg  string
}

func (e *chainError) Error() string        { return e.msg }
func (e *chainError) Is(target error) bool { return target == e.kind }

func chainErr(kind error, format string, args ...any) error {
	return &chainError{kind: kind, msg: fmt.Sprintf(format, args...)}
}

// frameRecord follows a chain of {saved frame pointer, return address}
// records that the frame pointer points at (x86-64, aarch64): the caller's
// CFA is just past the record.
func frameRecord(a *Arch, regs Regs, word WordReader) (Caller, error) {
	fp, ok := regs.Get(a.FP)
	if !ok {
		return Caller{}, ErrNoChain
	}
	if fp == 0 {
		// Threads start with a zero frame pointer (glibc's clone and
		// _start clear it): the end of the chain.
		return Caller{}, ErrChainEnd
	}
	w := uint64(a.PtrSize)
	if fp%w != 0 || fp+2*w < fp {
		return Caller{}, chainErr(ErrNoChain, "frame pointer %#x is not a stack address", fp)
	}
	if sp, ok := regs.Get(a.SP); ok && fp < sp {
		return Caller{}, chainErr(ErrChainBackwards, "frame pointer %#x below the stack pointer %#x", fp, sp)
	}
	saved, err := word(fp)
	if err != nil {
		return Caller{}, fmt.Errorf("saved frame pointer: %w", err)
	}
	ra, err := word(fp + w)
	if err != nil {
		return Caller{}, fmt.Errorf("return address: %w", err)
	}
	cfa := fp + 2*w
	return Caller{CFA: cfa, SP: cfa, PC: ra, FP: saved, HasFP: true}, nil
}

// userAddress reports whether v can be a user-space address a system call
// was given, not an error code the kernel left in its place (a small
// positive errno, as ppc64 returns, or a negative one).
func userAddress(v uint64) bool { return v >= 4096 && int64(v) > 0 }

// tpOffVariantII: static TLS lies below the thread pointer.
func tpOffVariantII(off int64) bool { return off < 0 && off >= -(1<<32) }
