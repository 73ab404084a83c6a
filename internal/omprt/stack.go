package omprt

import (
	"context"
	"errors"
	"strings"

	"github.com/ompd-go/ompd/internal/unwind"
	"github.com/ompd-go/ompd/target"
)

// StackFrame is one frame of a thread's call stack, placed in the code of
// the program: the answer of Runtime.Stack.
type StackFrame struct {
	PC, CFA uint64 // the frame's code address (a return address for callers) and CFA, 0 if unknown
	// Function is the function as people read it (demangled), Symbol the
	// ELF symbol as the object spells it; "" if unknown.
	Function, Symbol string
	Entry            uint64 // the function's first address, 0 if unknown
	File             string // source position, "" and 0 without line information
	Line             int
	Object           string // the loaded object holding the code
	Inline           []target.InlineFrame
	// Runtime is true for the runtime's own code: the runtime package
	// says which code is its own.
	Runtime bool
	// Called is, for a frame of the program that called the runtime,
	// the runtime's entry point it called, when the runtime package
	// decodes it at the call ("" otherwise): the name a frame inside
	// the call may lack (an unnamed function of a stripped runtime that
	// the entry point tail-called).
	Called string
}

// Stack is a thread's call stack, innermost frame first.
type Stack struct {
	Frames []StackFrame
	// End is why the unwinding ended before the thread's outermost frame
	// (unreadable stack, depth limit, corrupt stack), nil if it reached it.
	End error
}

// Wait says what a task waits in when it called the runtime: the answer of
// Runtime.Wait. The values are package ompd's WaitKind.
type Wait int

// Waits.
const (
	WaitNone      Wait = iota // some other runtime call, or none
	WaitTaskwait              // a taskwait
	WaitTaskgroup             // the end of a taskgroup
	WaitBarrier               // a barrier
	WaitParallel              // a parallel region the task started
)

// WaitNames are the substrings of runtime entry points (in lower case)
// that name what a call to them waits in, in the order they are tried.
type WaitNames []struct {
	Sub  string
	Wait Wait
}

// Of returns the wait of the first substring fn holds (case ignored),
// WaitNone when none.
func (w WaitNames) Of(fn string) Wait {
	l := strings.ToLower(fn)
	for _, n := range w {
		if strings.Contains(l, n.Sub) {
			return n.Wait
		}
	}
	return WaitNone
}

// Unwind unwinds the stack of the OS thread lwp of t, at most maxDepth
// frames (0 means the unwinder's default), and places each frame in its
// object, function and source line as the target can tell
// (target.CodeLocator, else target.Symbolizer). own says which objects
// hold the runtime's code (StackFrame.Runtime); it is called only when the
// target places frames in objects. It is what runtime packages answer
// Runtime.Stack with.
//
// A target that cannot read registers gives an error matching
// ErrUnsupported (and target.ErrUnsupported); registers that cannot be
// read, ErrReadFailed with the target's error. A stack that cannot be
// unwound to its end is no error: End says why.
func Unwind(ctx context.Context, t target.Target, lwp uint64, maxDepth int, own func(object string) bool) (*Stack, error) {
	st, err := unwind.Thread(ctx, t, lwp, unwind.Options{MaxDepth: maxDepth})
	if err != nil {
		kind := ErrReadFailed
		if errors.Is(err, target.ErrUnsupported) {
			kind = ErrUnsupported
		}
		return nil, Wrap(kind, err, "backtrace")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := &Stack{Frames: make([]StackFrame, len(st.Frames))}
	if !st.Complete() {
		out.End = st.End
	}
	loc, _ := t.(target.CodeLocator)
	sym, _ := t.(target.Symbolizer)
	owns := map[string]bool{}
	for i := range st.Frames {
		f := &st.Frames[i]
		fr := StackFrame{PC: f.PC, CFA: f.CFA}
		switch {
		case loc != nil:
			l, err := loc.LocateCode(f.LookupPC())
			if err != nil {
				break
			}
			fr.Function, fr.Symbol, fr.Entry, fr.File, fr.Line, fr.Object, fr.Inline = l.Name, l.Function, l.Entry, l.File, l.Line, l.Object, l.Inline
			if fr.Function == "" {
				fr.Function = l.Function
			}
			if l.Object != "" {
				o, ok := owns[l.Object]
				if !ok {
					o = own(l.Object)
					owns[l.Object] = o
				}
				fr.Runtime = o
			}
		case sym != nil:
			fr.Function, _ = sym.SymbolAt(f.LookupPC())
			fr.Symbol = fr.Function
		}
		out.Frames[i] = fr
	}
	return out, nil
}

// ObjectOf returns the object of t holding the code of the first of the
// symbols t finds and places, "" when none: a runtime's own object is the
// one defining its entry points.
func ObjectOf(t target.Target, symbols ...string) string {
	loc, ok := t.(target.CodeLocator)
	if !ok {
		return ""
	}
	for _, name := range symbols {
		if addr, err := t.LookupSymbol(name); err == nil {
			if l, err := loc.LocateCode(addr); err == nil {
				return l.Object
			}
		}
	}
	return ""
}
