package fakeruntime

import (
	"debug/elf"
	"fmt"

	"github.com/ompd-go/ompd/target"
)

// StackFrame is one frame of a call stack that SetStack lays out.
type StackFrame struct {
	// Function names the frame's function: a function the target has
	// (AddFunction, Runtime.Function), or a new one SetStack adds.
	Function string
	// CFA is the frame's canonical frame address: the frame pointer the
	// frame saves its caller's in sits two words below it. It must be
	// word-aligned and above the CFA of the frame before it.
	CFA uint64
}

// stackSlack is the room SetStack maps below the innermost frame's frame
// pointer (its stack pointer points there) and above the outermost CFA.
const stackSlack = 64

// SetStack lays out the call stack of the OS thread tid, innermost frame
// first, as a frame-pointer chain in the target's memory (a stack mapped
// for it), so that the thread's registers (ThreadRegisters: its program
// counter in the innermost frame's function, its stack and frame pointers
// that frame's) unwind through every frame with its CFA, by frame
// pointers: the target has no call-frame information. The outermost
// frame's saved frame pointer is 0, the end of the chain; its own CFA is
// not found by an unwinder (nothing tells it), so a stack whose last CFA
// matters ends with one more frame. The registers are x86-64's; a 32-bit
// target gives an error wrapping target.ErrUnsupported (no 32-bit machine
// is known to package target).
func (t *Target) SetStack(tid uint64, frames []StackFrame) error {
	if len(frames) == 0 {
		return fmt.Errorf("fakeruntime: empty stack for thread %d", tid)
	}
	w := uint64(t.sizes.Pointer)
	if w != 8 {
		return fmt.Errorf("fakeruntime: call stacks of %d-byte pointers: no such machine: %w", w, target.ErrUnsupported)
	}
	for i, f := range frames {
		if f.CFA%w != 0 || f.CFA < 2*w+stackSlack {
			return fmt.Errorf("fakeruntime: frame %d: CFA %#x is no stack address", i, f.CFA)
		}
		if i > 0 && f.CFA <= frames[i-1].CFA+2*w {
			return fmt.Errorf("fakeruntime: frame %d: CFA %#x not above the previous frame's %#x by its frame record", i, f.CFA, frames[i-1].CFA)
		}
	}
	lo := frames[0].CFA - 2*w - stackSlack
	hi := frames[len(frames)-1].CFA + stackSlack
	if err := t.Map(lo, int(hi-lo)); err != nil {
		return err
	}
	pcs := make([]uint64, len(frames))
	for i, f := range frames {
		entry, err := t.LookupSymbol(f.Function)
		if err != nil {
			entry = t.AddFunction(f.Function, 64)
		}
		// Inside the function: for a caller, the return address of a
		// call made from it.
		pcs[i] = entry + 8
	}
	for i, f := range frames {
		fp := f.CFA - 2*w
		saved, ra := uint64(0), uint64(0)
		if i+1 < len(frames) {
			saved, ra = frames[i+1].CFA-2*w, pcs[i+1]
		}
		t.PutPtr(fp, saved)
		t.PutPtr(fp+w, ra)
	}
	m := elf.EM_X86_64
	nums, err := target.NumbersOf(m)
	if err != nil {
		return err
	}
	regs := target.NewRegisters(m)
	fp := frames[0].CFA - 2*w
	regs.Set(nums.PC, pcs[0])
	regs.Set(nums.FP, fp)
	regs.Set(nums.SP, fp-stackSlack/2)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stacks == nil {
		t.stacks = make(map[uint64]target.Registers)
	}
	t.stacks[tid] = regs
	return nil
}

// ThreadRegisters implements target.RegisterReader for the threads whose
// stack SetStack laid out; for the others it answers an error wrapping
// target.ErrUnsupported, as a target that reads no registers would.
func (t *Target) ThreadRegisters(tid uint64) (target.Registers, error) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	regs, ok := t.stacks[tid]
	if !ok {
		return target.Registers{}, fmt.Errorf("fakeruntime: thread %d has no stack laid out: %w", tid, target.ErrUnsupported)
	}
	return regs, nil
}

var _ target.RegisterReader = (*Target)(nil)
