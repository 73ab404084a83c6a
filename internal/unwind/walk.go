// Package unwind walks the call stacks of a stopped program's threads.
//
// A walk starts from a thread's registers (target.RegisterReader) and steps
// from each frame to its caller with the call-frame information of the
// object holding the frame's code (target.FrameUnwinder, which target/core
// and target/delve implement with Step over their objects' .eh_frame and
// .debug_frame, read by internal/cfi), falling back
// to the frame-pointer chain where there is none. Every walk is bounded:
// it ends at the outermost frame (a return address the call-frame
// information marks undefined, or zero), at the depth limit, when the CFA
// stops growing (a loop), or at memory it cannot read; Stack.End says
// which. Corrupt registers or stack bytes end a walk with a reason, never
// a panic, a hang or an allocation beyond the depth limit.
//
// The package knows nothing of OpenMP: package ompd places the frames in
// tasks and regions, and a runtime's decoder may read the frames of its
// own functions (the function at the PC, the registers it was called
// with) to infer what a thread waits for.
package unwind

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ompd-go/ompd/internal/arch"
	"github.com/ompd-go/ompd/internal/cfi"
	"github.com/ompd-go/ompd/target"
)

// Reasons a walk ends (Stack.End matches one of them with errors.Is, or
// wraps the target's memory error).
var (
	// ErrOutermost: the walk reached the outermost frame of the thread,
	// the normal end.
	ErrOutermost = errors.New("outermost frame reached")
	// ErrMaxDepth: the walk stopped at the depth limit.
	ErrMaxDepth = errors.New("depth limit reached")
	// ErrNoProgress: a caller's CFA was not above its callee's, so the
	// stack is corrupt or the walk would loop.
	ErrNoProgress = errors.New("CFA did not grow (corrupt stack or loop)")
	// ErrNoUnwindInfo: a frame has neither call-frame information nor a
	// usable frame pointer.
	ErrNoUnwindInfo = errors.New("no call-frame information and no frame pointer")
)

// DefaultMaxDepth is the depth limit of a walk when Options.MaxDepth is 0.
const DefaultMaxDepth = 256

// MaxDepthLimit caps Options.MaxDepth: no real stack is deeper, and a
// corrupt one must not make a walk allocate without bound.
const MaxDepthLimit = 1 << 16

// Method says how a frame was found from the frame below it.
type Method uint8

// Ways a frame is found.
const (
	// Registers: the innermost frame, from the thread's registers.
	Registers Method = iota
	// CFI: the call-frame information of the callee's object.
	CFI
	// FramePointer: the callee's saved frame pointer and return address.
	FramePointer
)

// String names the method: "registers", "cfi" or "framepointer".
func (m Method) String() string {
	switch m {
	case Registers:
		return "registers"
	case CFI:
		return "cfi"
	case FramePointer:
		return "framepointer"
	}
	return fmt.Sprintf("Method(%d)", uint8(m))
}

// Frame is one call frame.
type Frame struct {
	// PC is the frame's program counter: for every frame but the
	// innermost, the return address into it.
	PC uint64
	// CFA is the frame's canonical frame address (the caller's stack
	// pointer before the call), 0 if the walk ended before finding it.
	CFA uint64
	// Regs are the registers known in the frame.
	Regs target.Registers
	// Caller is true when PC is a return address: the code executing is
	// the call instruction before it (symbols and lines of PC-1). It is
	// false for the innermost frame and for a frame a signal interrupted.
	Caller bool
	// How says how the frame was found.
	How Method
}

// LookupPC is the address whose function and line describe the frame: PC,
// or PC-1 for a return address.
func (f *Frame) LookupPC() uint64 {
	if f.Caller && f.PC > 0 {
		return f.PC - 1
	}
	return f.PC
}

// Stack is the result of a walk.
type Stack struct {
	// Frames, innermost first.
	Frames []Frame
	// End says why the walk ended; it matches ErrOutermost on a walk
	// that reached the thread's first frame.
	End error
}

// Complete reports whether the walk reached the outermost frame.
func (s *Stack) Complete() bool { return errors.Is(s.End, ErrOutermost) }

// Options bound a walk.
type Options struct {
	// MaxDepth is the most frames returned (DefaultMaxDepth if 0, at
	// most MaxDepthLimit).
	MaxDepth int
}

// Source is what a walk reads: memory and its byte order. A target.Target
// is one. If it also implements target.FrameUnwinder, the walk steps with
// call-frame information; otherwise it follows frame pointers only.
type Source interface {
	Memory
	ByteOrder() binary.ByteOrder
}

// Walk unwinds the stack whose innermost frame has registers regs, reading
// src. It stops early if ctx is done (End is then ctx's error).
func Walk(ctx context.Context, src Source, regs target.Registers, opts Options) Stack {
	unw, _ := src.(target.FrameUnwinder)
	max := opts.MaxDepth
	if max <= 0 {
		max = DefaultMaxDepth
	}
	max = min(max, MaxDepthLimit)
	a, err := archOf(regs)
	if err != nil {
		return Stack{End: err}
	}
	pc, ok := regs.PC()
	if !ok {
		return Stack{End: errors.New("unwind: the thread's program counter is unknown")}
	}
	ev := evaluator{mem: src, sec: cfi.Section{Order: src.ByteOrder(), PtrSize: a.PtrSize}}
	frames := make([]Frame, 0, min(max, 16))
	frames = append(frames, Frame{PC: pc, Regs: regs, How: Registers})
	for {
		if err := ctx.Err(); err != nil {
			return Stack{Frames: frames, End: err}
		}
		cur := &frames[len(frames)-1]
		next, cfa, how, err := step(a, &ev, unw, cur)
		if err != nil {
			return Stack{Frames: frames, End: err}
		}
		// The stack grows down: a frame's CFA must be above its stack
		// pointer (or at it, in a leaf function of a machine whose
		// leaves need no frame) and above its callee's CFA. The
		// outermost frame (a program's or a thread's start, which
		// never returns) need make no frame of its own: its CFA may
		// equal its callee's.
		if err := checkCFA(a, &cur.Regs, cfa, cur.PC); err != nil {
			return Stack{Frames: frames, End: err}
		}
		npc, ok := next.PC()
		outermost := !ok || npc == 0
		if n := len(frames); n > 1 {
			prev := frames[n-2].CFA
			if cfa < prev || cfa == prev && !outermost {
				return Stack{Frames: frames, End: fmt.Errorf("%w: CFA %#x at or below the callee's %#x at PC %#x", ErrNoProgress, cfa, prev, cur.PC)}
			}
		}
		cur.CFA = cfa
		if outermost {
			return Stack{Frames: frames, End: ErrOutermost}
		}
		if len(frames) >= max {
			return Stack{Frames: frames, End: fmt.Errorf("%w (%d frames)", ErrMaxDepth, max)}
		}
		frames = append(frames, Frame{PC: npc, Regs: next, Caller: !next.Interrupted, How: how})
	}
}

// step finds the caller of cur: with call-frame information, or else the
// frame pointer.
func step(a *arch.Arch, ev *evaluator, unw target.FrameUnwinder, cur *Frame) (target.Registers, uint64, Method, error) {
	var cfiErr error
	if unw != nil {
		next, cfa, err := unw.UnwindFrame(cur.Regs, cur.Caller)
		if err == nil {
			return next, cfa, CFI, nil
		}
		if !errors.Is(err, target.ErrNotFound) {
			cfiErr = err
		}
	}
	next, cfa, err := fallbackStep(a, ev, cur.Regs)
	if errors.Is(err, ErrOutermost) && cfiErr == nil {
		return target.Registers{}, 0, 0, err
	}
	if err != nil {
		if cfiErr != nil {
			return target.Registers{}, 0, 0, fmt.Errorf("at PC %#x: %w (and no frame pointer: %v)", cur.PC, cfiErr, err)
		}
		return target.Registers{}, 0, 0, fmt.Errorf("at PC %#x: %w", cur.PC, err)
	}
	return next, cfa, FramePointer, nil
}

// fallbackStep finds the caller without call-frame information, through
// the machine's frame-pointer or back chain (see arch.Arch.Fallback).
func fallbackStep(a *arch.Arch, ev *evaluator, regs target.Registers) (target.Registers, uint64, error) {
	c, err := a.Fallback(&regs, ev.word)
	switch {
	case errors.Is(err, arch.ErrChainEnd):
		return target.Registers{}, 0, ErrOutermost
	case errors.Is(err, arch.ErrChainBackwards):
		return target.Registers{}, 0, fmt.Errorf("%w: %v", ErrNoProgress, err)
	case errors.Is(err, arch.ErrNoChain):
		if err == arch.ErrNoChain {
			return target.Registers{}, 0, ErrNoUnwindInfo
		}
		return target.Registers{}, 0, fmt.Errorf("%w: %v", ErrNoUnwindInfo, err)
	case err != nil:
		return target.Registers{}, 0, err
	}
	next := regs
	next.Interrupted = false
	if c.HasFP {
		next.Set(a.FP, c.FP)
	}
	if c.SP != 0 {
		next.Set(a.SP, c.SP)
	} else {
		next.Forget(a.SP)
	}
	next.Set(a.PC, c.PC)
	return next, c.CFA, nil
}

// Thread walks the stack of the thread with kernel id tid of t. It needs a
// target that implements target.RegisterReader (ErrUnsupported
// otherwise) and uses its target.FrameUnwinder when it has one.
func Thread(ctx context.Context, t target.Target, tid uint64, opts Options) (Stack, error) {
	rr, ok := t.(target.RegisterReader)
	if !ok {
		return Stack{}, fmt.Errorf("unwind: the target cannot read registers: %w", target.ErrUnsupported)
	}
	regs, err := rr.ThreadRegisters(tid)
	if err != nil {
		return Stack{}, err
	}
	return Walk(ctx, t, regs, opts), nil
}
