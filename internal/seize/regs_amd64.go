package seize

import (
	"debug/elf"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/ompd-go/ompd/internal/arch"
	"github.com/ompd-go/ompd/target"
)

// getRegs reads the general registers of stopped thread tid, in DWARF
// numbering, and its thread pointer (fs_base).
func getRegs(tid int) (target.Registers, uint64, error) {
	var r unix.PtraceRegs
	if err := unix.PtraceGetRegs(tid, &r); err != nil {
		return target.Registers{}, 0, err
	}
	// PtraceRegs is the kernel's struct user_regs_struct, word by word,
	// as an NT_PRSTATUS note holds it.
	words := unsafe.Slice((*uint64)(unsafe.Pointer(&r)), unsafe.Sizeof(r)/8)
	regs := target.NewRegisters(elf.EM_X86_64)
	tp, err := arch.AMD64.PrStatus(words, regs.Set)
	return regs, tp, err
}
