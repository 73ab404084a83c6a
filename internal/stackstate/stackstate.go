// Package stackstate reads what an OpenMP thread is doing from its call
// stack, for runtimes that do not record it (GCC's libgomp never does,
// LLVM's libomp only with OMPT on). It is one mechanism for every runtime:
// a runtime package parameterises it with its Tables (which object is the
// runtime, which of its functions start regions, which mean which wait)
// and keeps only the decisions its runtime alone can make.
//
// Read unwinds a thread (internal/unwind) and places each frame in its
// object and function: the runtime, the system (the C library, the
// dynamic linker, the vDSO), the program, or unknown. On that placed
// stack:
//
//   - Stack.Own finds where the thread's own code starts (past the C
//     library's frames: a futex wait, a clock read), and Stack.RunEnd the
//     run of runtime frames it stands in;
//   - Tables.Wait looks the run's functions up in the runtime's table of
//     waits;
//   - Stack.Entries lists the outlined functions of the regions the
//     thread is in (the program's frames a region starter called);
//   - FutexAddr is the address a thread sleeps on in a futex system call;
//   - CallTarget is the function a program's frame called, read from the
//     call instruction before its return address (through the PLT and the
//     GOT): a wait that ends in an unnamed runtime function reached by a
//     tail call is told by the exported function the program called.
//
// States are ompt_state_t values (the constants below). Nothing here
// guesses: where a stack does not tell, the answers say so (ok false, 0).
package stackstate

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/ompd-go/ompd/internal/arch"
	"github.com/ompd-go/ompd/internal/unwind"
	"github.com/ompd-go/ompd/target"
)

// ompt_state_t values.
const (
	WorkSerial            int64 = 0x000
	WorkParallel          int64 = 0x001
	WorkReduction         int64 = 0x002
	Barrier               int64 = 0x010
	BarrierImplicitPar    int64 = 0x011
	BarrierImplicitWork   int64 = 0x012
	BarrierImplicit       int64 = 0x013
	BarrierExplicit       int64 = 0x014
	BarrierImplementation int64 = 0x015
	BarrierTeams          int64 = 0x016
	Taskwait              int64 = 0x020
	Taskgroup             int64 = 0x021
	Mutex                 int64 = 0x040
	Lock                  int64 = 0x041
	Critical              int64 = 0x042
	Atomic                int64 = 0x043
	Ordered               int64 = 0x044
	Idle                  int64 = 0x100
	Overhead              int64 = 0x101
)

// DefaultMaxFrames bounds a Read when its maxFrames is 0.
const DefaultMaxFrames = 256

// Where says which kind of object a frame's code is in.
type Where uint8

// Kinds of object.
const (
	// NoObject: no loaded object holds the code (the vDSO, which
	// targets do not list, or a corrupt PC), or the target cannot tell.
	NoObject Where = iota
	// Runtime: the OpenMP runtime library.
	Runtime
	// System: the C library, the dynamic linker, the vDSO.
	System
	// User: the program and its other libraries.
	User
)

// Frame is one frame of a stack placed in its object and function.
type Frame struct {
	unwind.Frame
	// Entry is the function's first address, 0 if unknown.
	Entry uint64
	// Function is the function's symbol as Tables.Name gives it, "" if
	// unknown.
	Function string
	// Object is the path of the object holding the code, "" if unknown.
	Object string
	Where  Where
}

// Tables are what one runtime tells the reading.
type Tables struct {
	// IsRuntime reports whether an object (the base name of its path) is
	// the runtime library.
	IsRuntime func(base string) bool
	// Name turns a function symbol into the name the tables use
	// (dropping an alias prefix, a version suffix); nil keeps symbols.
	Name func(symbol string) string
	// Starters are the runtime functions that call a region's outlined
	// function (in the primary thread, and in a worker the function the
	// thread started in).
	Starters map[string]bool
	// Waits maps runtime functions to the state of a thread waiting in
	// them.
	Waits map[string]int64
}

// Stack is one thread's stack, each frame placed.
type Stack struct {
	// Frames, innermost first.
	Frames []Frame
	// Complete tells that the walk reached the thread's first frame.
	Complete bool
	// End is why the walk ended (unwind.Stack.End).
	End error
}

// Read unwinds thread tid of t (at most maxFrames frames, DefaultMaxFrames
// if 0) and places each frame with t's code locator and tb. A target that
// cannot place code addresses wraps target.ErrUnsupported; a thread whose
// registers cannot be read gives the target's error.
func Read(ctx context.Context, t target.Target, tid uint64, tb *Tables, maxFrames int) (*Stack, error) {
	loc, ok := t.(target.CodeLocator)
	if !ok {
		return nil, fmt.Errorf("stackstate: the target cannot place code addresses: %w", target.ErrUnsupported)
	}
	if maxFrames <= 0 {
		maxFrames = DefaultMaxFrames
	}
	st, err := unwind.Thread(ctx, t, tid, unwind.Options{MaxDepth: maxFrames})
	if err != nil {
		return nil, err
	}
	return Place(st, loc, tb), nil
}

// ReadWhy is Read for a state reading: a stack with no frame is an error
// too (its walk's end), and an error comes with why in a few words for
// the state's StateUnknown reason ("its stack cannot be read", or the
// target cannot place code).
func ReadWhy(ctx context.Context, t target.Target, tid uint64, tb *Tables, maxFrames int) (*Stack, string, error) {
	st, err := Read(ctx, t, tid, tb, maxFrames)
	if err == nil && len(st.Frames) == 0 {
		err = st.End
	}
	if err != nil {
		why := "its stack cannot be read"
		if errors.Is(err, target.ErrUnsupported) {
			why = "the target cannot place code addresses in functions"
		}
		return nil, why, err
	}
	return st, "", nil
}

// Place places the frames of an unwound stack with loc and tb.
func Place(st unwind.Stack, loc target.CodeLocator, tb *Tables) *Stack {
	s := &Stack{Frames: make([]Frame, len(st.Frames)), Complete: st.Complete(), End: st.End}
	for i := range st.Frames {
		f := Frame{Frame: st.Frames[i]}
		if cl, err := loc.LocateCode(f.LookupPC()); err == nil {
			f.Function, f.Entry, f.Object = tb.name(cl.Function), cl.Entry, cl.Object
			f.Where = tb.where(cl.Object)
		}
		s.Frames[i] = f
	}
	return s
}

func (tb *Tables) name(sym string) string {
	if tb.Name == nil {
		return sym
	}
	return tb.Name(sym)
}

func (tb *Tables) where(object string) Where {
	base := path.Base(object)
	switch {
	case object == "":
		return NoObject
	case tb.IsRuntime != nil && tb.IsRuntime(base):
		return Runtime
	case IsSystem(base):
		return System
	}
	return User
}

// IsSystem reports whether an object (the base name of its path) is the
// C library, the dynamic linker or the vDSO.
func IsSystem(base string) bool {
	for _, p := range []string{"libc.so", "ld-linux", "libpthread.so", "linux-vdso", "[vdso]"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}

// Own returns the index of the innermost frame of the thread's own code:
// past the C library's frames and what the C library calls in no loaded
// object (the vDSO: clock_gettime, gettimeofday, time and getcpu, which
// targets do not list among the objects). ok is false when no frame is
// the thread's own or the first one's code is in no object: the stack
// does not tell.
func (s *Stack) Own() (k int, ok bool) {
	fr := s.Frames
	for k < len(fr) && (fr[k].Where == System ||
		fr[k].Where == NoObject && k+1 < len(fr) && fr[k+1].Where == System) {
		k++
	}
	if k == len(fr) || fr[k].Where == NoObject {
		return k, false
	}
	return k, true
}

// RunEnd returns the index past the run of runtime frames starting at k.
func (s *Stack) RunEnd(k int) int {
	end := k
	for end < len(s.Frames) && s.Frames[end].Where == Runtime {
		end++
	}
	return end
}

// ReachesStart reports whether the walk reached the thread's first frame
// and only system frames (the C library's thread start) or frames in no
// object follow frames[i:].
func (s *Stack) ReachesStart(i int) bool {
	if !s.Complete {
		return false
	}
	for _, f := range s.Frames[i:] {
		if f.Where != System && f.Where != NoObject {
			return false
		}
	}
	return true
}

// Wait returns the state of the innermost frame of run whose function
// tb.Waits names, and that function.
func (tb *Tables) Wait(run []Frame) (state int64, fn string, ok bool) {
	for _, f := range run {
		if s, ok := tb.Waits[f.Function]; ok {
			return s, f.Function, true
		}
	}
	return 0, "", false
}

// Entries finds the outlined functions on a stack, innermost first: the
// entries of the program's frames that a runtime frame of tb.Starters
// called, or, in a worker, the runtime frame the thread started in (told
// by its place when the runtime's internal names are unknown: only the C
// library's frames are below it).
func (s *Stack) Entries(tb *Tables) []uint64 {
	var out []uint64
	fr := s.Frames
	for i := 0; i+1 < len(fr); i++ {
		f, caller := fr[i], fr[i+1]
		if f.Where != User || caller.Where != Runtime || f.Entry == 0 {
			continue
		}
		start := tb.Starters[caller.Function]
		if !start && caller.Function == "" {
			start = s.ReachesStart(i + 2)
		}
		if start {
			out = append(out, f.Entry)
		}
	}
	return out
}

// Memory reads the stopped program's memory; omprt.Memory is one.
type Memory interface {
	Read(addr uint64, n int) ([]byte, error)
}

// FutexAddr is the address a thread waits on in a futex system call, its
// innermost frame being f: the system call's first argument when the
// thread stopped in one, as its machine's convention tells (see
// arch.Arch.FutexWait: on x86-64 a syscall instruction right before the
// PC with rax SYS_futex, or the error a signal left there, and the
// address in rdi). 0 otherwise (a thread still spinning before its futex
// call has no such address).
func FutexAddr(mem Memory, f *unwind.Frame) uint64 {
	a := arch.Numbered(f.Regs.Machine)
	if a == nil {
		return 0
	}
	addr, ok := a.FutexWait(&f.Regs, mem.Read)
	if !ok {
		return 0
	}
	return addr
}

// maxPLTHops bounds the jumps CallTarget follows from a call's target to
// the function: a PLT stub's jump through the GOT, and nothing more.
const maxPLTHops = 1

// CallTarget returns the function a frame of the program called: f must
// be a caller frame (its PC a return address), its registers of the
// target's machine (Regs.Machine). It decodes the call
// instruction right before the return address as the frame's machine
// makes them (see arch.Arch.CallTarget: a direct call, or on x86-64 an
// indirect one through a GOT slot, as -fno-plt code makes), follows a PLT
// stub's jump through its GOT slot (arch.Arch.PLTTarget; the dynamic
// linker has filled it by the time a thread is inside the function), and
// places the function with loc. ok is false when the instruction is no
// such call or its target is no function's entry: an indirect call
// through a register cannot be told afterwards.
func CallTarget(mem Memory, loc target.CodeLocator, f *Frame) (target.CodeLocation, bool) {
	a := arch.Numbered(f.Regs.Machine)
	if !f.Caller || a == nil {
		return target.CodeLocation{}, false
	}
	to, ok := a.CallTarget(f.PC, mem.Read)
	for hop := 0; ok; hop++ {
		if cl, err := loc.LocateCode(to); err == nil && cl.Function != "" && cl.Entry == to {
			return cl, true
		}
		if hop == maxPLTHops {
			break
		}
		to, ok = a.PLTTarget(to, mem.Read)
	}
	return target.CodeLocation{}, false
}

// CallAddr returns the address a frame of the program called, as
// CallTarget finds it (through a PLT stub too), whether or not a symbol
// names it: a stripped library's internal functions have none, and a
// runtime package that knows them by address names them itself. f must be
// a caller frame.
func CallAddr(mem Memory, f *Frame) (uint64, bool) {
	a := arch.Numbered(f.Regs.Machine)
	if !f.Caller || a == nil {
		return 0, false
	}
	to, ok := a.CallTarget(f.PC, mem.Read)
	if !ok {
		return 0, false
	}
	if via, ok := a.PLTTarget(to, mem.Read); ok {
		return via, true
	}
	return to, true
}
