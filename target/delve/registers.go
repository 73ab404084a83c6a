package delve

import (
	"debug/elf"
	"fmt"

	"github.com/ompd-go/ompd/target"
)

// ThreadRegisters returns the general registers of thread tid as Delve
// reads them, in DWARF numbering (target.RegisterReader).
func (t *Target) ThreadRegisters(tid uint64) (target.Registers, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.aliveLocked(); err != nil {
		return target.Registers{}, err
	}
	th, ok := t.dt.FindThread(int(tid))
	if !ok || th == nil {
		return target.Registers{}, fmt.Errorf("delve: thread %d: %w", tid, target.ErrNoThread)
	}
	regs, err := th.Registers()
	if err != nil || regs == nil {
		return target.Registers{}, fmt.Errorf("delve: thread %d: registers: %v: %w", tid, err, target.ErrNoMemory)
	}
	dr := t.dt.BinInfo().Arch.RegistersToDwarfRegisters(0, regs)
	out := target.NewRegisters(elf.EM_X86_64)
	for n := 0; n <= 16; n++ {
		if dr.Reg(uint64(n)) != nil {
			out.Set(n, dr.Uint64Val(uint64(n)))
		}
	}
	if _, ok := out.PC(); !ok {
		return target.Registers{}, fmt.Errorf("delve: thread %d: no program counter: %w", tid, target.ErrUnsupported)
	}
	return out, nil
}

// UnwindFrame unwinds one frame with the call-frame information of the
// process's objects (target.FrameUnwinder).
func (t *Target) UnwindFrame(regs target.Registers, caller bool) (target.Registers, uint64, error) {
	return t.look.UnwindFrame(regs, caller)
}

// LocateCode names the object, function, and source file and line of the
// code at pc (target.CodeLocator).
func (t *Target) LocateCode(pc uint64) (target.CodeLocation, error) { return t.look.LocateCode(pc) }

var (
	_ target.RegisterReader = (*Target)(nil)
	_ target.FrameUnwinder  = (*Target)(nil)
	_ target.CodeLocator    = (*Target)(nil)
)
