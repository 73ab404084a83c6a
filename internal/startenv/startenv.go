// Package startenv reads the environment a stopped process started with
// from its memory: the strings the kernel copied onto its initial stack at
// execve, which /proc/PID/environ shows of a live process and which a
// core file holds too. A runtime whose own state cannot be read (a
// stripped libgomp without its debug file) can still say what its
// OMP_* variables were at start-up.
//
// The initial stack holds, from the stack pointer at start upwards: argc,
// the argv pointers and a null, the envp pointers and a null, the
// auxiliary vector, and above them the strings. The auxiliary vector's
// values are known (a core's NT_AUXV note, /proc/PID/auxv): its
// AT_EXECFN entry, whose value points at the program's name, the
// topmost string, is found below that string, and the envp pointers right
// below the vector.
package startenv

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Auxiliary vector types read.
const (
	atNull   = 0
	atExecfn = 31
)

// Bounds that keep a corrupt stack from making the search run long or
// allocate much: the strings and pointers the kernel puts on the initial
// stack fit in ARG_MAX-sized space (a quarter of the stack limit, 2 MiB
// with the usual 8 MiB).
const (
	page       = 4096
	maxSearch  = 4 << 20
	maxVars    = 1 << 16
	maxVarSize = 128 << 10
)

// Memory reads the stopped program's memory (target.Target's ReadMemory).
type Memory interface {
	ReadMemory(buf []byte, addr uint64) error
}

// ErrNotFound: the initial stack's environment could not be found (no
// AT_EXECFN entry, or no auxiliary vector below the program's name).
var ErrNotFound = errors.New("startenv: the start-up environment is not on the initial stack where the auxiliary vector says")

// FromStack returns the environment of a 64-bit process with auxiliary
// vector auxv (type to value), "NAME=VALUE" each, in order.
func FromStack(mem Memory, order binary.ByteOrder, auxv map[uint64]uint64) ([]string, error) {
	top, ok := auxv[atExecfn]
	if !ok || top < page {
		return nil, fmt.Errorf("%w: no AT_EXECFN", ErrNotFound)
	}
	// Read pages downwards from the one holding the program's name
	// until the AT_EXECFN entry shows.
	base := top &^ (page - 1)
	var buf []byte
	for len(buf) < maxSearch && base >= page {
		p := make([]byte, page)
		if err := mem.ReadMemory(p, base); err != nil {
			break
		}
		buf = append(p, buf...)
		if at, ok := findEntry(buf, order, top); ok {
			return readEnv(mem, order, auxv, buf, base, at)
		}
		base -= page
	}
	return nil, fmt.Errorf("%w: no AT_EXECFN entry within %d bytes below %#x", ErrNotFound, len(buf), top)
}

// findEntry finds the 8-byte aligned AT_EXECFN entry (type, value) in buf.
func findEntry(buf []byte, order binary.ByteOrder, execfn uint64) (int, bool) {
	for i := len(buf) - 16; i >= 0; i -= 8 {
		if order.Uint64(buf[i:]) == atExecfn && order.Uint64(buf[i+8:]) == execfn {
			return i, true
		}
	}
	return 0, false
}

// readEnv reads the environment below the auxiliary vector whose
// AT_EXECFN entry is at buf[at:] (buf being memory from base up).
func readEnv(mem Memory, order binary.ByteOrder, auxv map[uint64]uint64, buf []byte, base uint64, at int) ([]string, error) {
	word := func(i int) uint64 { return order.Uint64(buf[i:]) }
	// The vector's first entry: walk down over entries that are auxv's.
	start := at
	for start >= 16 {
		typ := word(start - 16)
		if v, ok := auxv[typ]; !ok || typ == atNull || v != word(start-8) {
			break
		}
		start -= 16
	}
	// envp's null, then its pointers down to argv's null.
	if start < 8 || word(start-8) != 0 {
		return nil, fmt.Errorf("%w: no null below the auxiliary vector at %#x", ErrNotFound, base+uint64(start))
	}
	var ptrs []uint64
	for i := start - 16; ; i -= 8 {
		if i < 0 || len(ptrs) >= maxVars {
			return nil, fmt.Errorf("%w: the environment's pointers run past what was read", ErrNotFound)
		}
		p := word(i)
		if p == 0 {
			break
		}
		ptrs = append(ptrs, p)
	}
	env := make([]string, 0, len(ptrs))
	for i := len(ptrs) - 1; i >= 0; i-- {
		s, err := readString(mem, ptrs[i])
		if err != nil {
			return nil, err
		}
		env = append(env, s)
	}
	return env, nil
}

// readString reads a NUL-terminated string of at most maxVarSize bytes.
func readString(mem Memory, addr uint64) (string, error) {
	var out []byte
	for len(out) < maxVarSize {
		n := page - int(addr%page)
		chunk := make([]byte, n)
		if err := mem.ReadMemory(chunk, addr); err != nil {
			return "", fmt.Errorf("startenv: environment string at %#x: %w", addr, err)
		}
		for i, c := range chunk {
			if c == 0 {
				return string(append(out, chunk[:i]...)), nil
			}
		}
		out = append(out, chunk...)
		addr += uint64(n)
	}
	return "", fmt.Errorf("startenv: environment string longer than %d bytes", maxVarSize)
}
