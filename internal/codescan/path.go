package codescan

import (
	"errors"
	"fmt"
)

// Step is one step of a Path: the Ref-th reference (counting from 0, in
// Scan order) of the function the path is in.
type Step struct {
	Ref int
	// Shape is that reference's Shape in the build the path was recorded
	// from: Follow compares it.
	Shape uint64
}

// Path leads from an exported function, through the functions its steps
// but the last name (each called, jumped to, or its address taken: a
// function pointer the code passes on), to the address the last step
// refers to: a global variable the code addresses, or a function.
type Path struct {
	Entry string // the exported function the path starts in
	Steps []Step
}

// CodeReader reads code from a target's memory.
type CodeReader interface {
	ReadMemory(buf []byte, addr uint64) error
}

// Limits of Follow: how much code one function may take, and how many
// steps a path may have.
const (
	maxFunction = 64 << 10
	maxSteps    = 8
	firstRead   = 2 << 10
)

// ErrPath is what Follow's errors match when the code does not lead where
// the path says (too few references in a function).
var ErrPath = errors.New("codescan: the code does not follow the path")

// Follow walks p in the code at entry, the address of p.Entry, and returns
// the address its last step refers to. exact says every step's Shape
// matched: the code is laid out as in the build the path was recorded
// from, step for step. Without exact, the address is only as good as the
// code's likeness to that build: callers confirm it otherwise.
func Follow(a Arch, r CodeReader, entry uint64, p Path) (addr uint64, exact bool, err error) {
	if len(p.Steps) == 0 || len(p.Steps) > maxSteps {
		return 0, false, fmt.Errorf("%w: %d steps", ErrPath, len(p.Steps))
	}
	exact = true
	fn := entry
	for i, st := range p.Steps {
		ref, err := nthRef(a, r, fn, st.Ref)
		if err != nil {
			return 0, false, fmt.Errorf("%s step %d (reference %d of the function at %#x): %w", p.Entry, i, st.Ref, fn, err)
		}
		if ref.Shape != st.Shape {
			exact = false
		}
		fn = ref.Target
	}
	return fn, exact, nil
}

// nthRef returns the n-th reference of the function at fn, reading more
// of its code until it has it.
func nthRef(a Arch, r CodeReader, fn uint64, n int) (Ref, error) {
	if n < 0 {
		return Ref{}, fmt.Errorf("%w: reference %d", ErrPath, n)
	}
	size := firstRead
	for {
		code, err := ReadCode(r, fn, size)
		if err != nil {
			return Ref{}, err
		}
		var got Ref
		count := 0
		decoded := a.Scan(code, fn, func(ref Ref) bool {
			if count == n {
				got = ref
				count++
				return false
			}
			count++
			return true
		})
		if count > n {
			return got, nil
		}
		// Stopped short of the reference: at undecodable bytes (not
		// code: past the function), or at the end of what was read.
		if decoded < len(code)-16 || len(code) < size || size >= maxFunction {
			return Ref{}, fmt.Errorf("%w: only %d references in %d bytes of code", ErrPath, count, decoded)
		}
		size *= 2
	}
}

// ReadCode reads up to size bytes of code at addr: fewer where the mapping
// ends sooner, at least 16.
func ReadCode(r CodeReader, addr uint64, size int) ([]byte, error) {
	for {
		buf := make([]byte, size)
		err := r.ReadMemory(buf, addr)
		if err == nil {
			return buf, nil
		}
		// The code may end in a mapping shorter than size: read up to
		// the page boundary, then less.
		if size <= 16 {
			return nil, err
		}
		if toPage := int(4096 - addr%4096); toPage < size {
			size = toPage
		} else {
			size /= 2
		}
	}
}
