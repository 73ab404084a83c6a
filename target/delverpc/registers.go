package delverpc

import (
	"fmt"
	"slices"

	"github.com/ompd-go/ompd/target"
)

// ThreadRegisters returns the general registers of thread tid at the stop,
// as the server reads them, in DWARF numbering (target.RegisterReader).
func (t *Target) ThreadRegisters(tid uint64) (target.Registers, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ths, err := t.threadsLocked()
	if err != nil {
		return target.Registers{}, err
	}
	r, ok := t.regs[tid]
	if !ok {
		if slices.ContainsFunc(ths, func(th target.Thread) bool { return th.ID == tid }) {
			return target.Registers{}, fmt.Errorf("delverpc: thread %d: the server gave no registers: %w", tid, target.ErrNoMemory)
		}
		return target.Registers{}, fmt.Errorf("delverpc: thread %d: %w", tid, target.ErrNoThread)
	}
	if _, ok := r.PC(); !ok {
		return target.Registers{}, fmt.Errorf("delverpc: thread %d: no program counter: %w", tid, target.ErrUnsupported)
	}
	return r, nil
}

// UnwindFrame unwinds one frame with the call-frame information of the
// process's objects, read locally (target.FrameUnwinder).
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
	_ target.Refresher      = (*Target)(nil)
)
