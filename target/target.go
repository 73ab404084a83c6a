// Package target defines the view of a stopped program that ompd-go reads
// OpenMP runtime state through.
//
// A Target mirrors the callback table of OMPD (ompd_callbacks_t): symbol
// lookup (global and thread-local), type sizes and field offsets, memory
// reads and writes, and the target's byte order and primitive type sizes.
// Go needs no allocation callbacks, and the device-to-host conversion
// callbacks are replaced by ByteOrder and Sizes: decoding happens above the
// Target, once, for every adapter.
//
// Implementations live in subpackages: target/core reads ELF core files in
// pure Go; target/delve reads live processes through Delve. A debugger can
// also bring its own implementation.
//
// A Target describes one stopped state of a program. Implementations over a
// live process must not change the answers of ReadMemory between two calls
// while the process stays stopped; see the adapters for how caches are
// dropped when it resumes.
package target

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Errors returned by Target methods. Implementations wrap them (directly or
// in the typed errors below) so that callers can test with errors.Is.
var (
	// ErrNotFound reports that a symbol, type or field does not exist in
	// the target.
	ErrNotFound = errors.New("not found")
	// ErrUnsupported reports an operation the target cannot perform, for
	// instance a thread-local lookup on a platform the adapter does not
	// know.
	ErrUnsupported = errors.New("unsupported by target")
	// ErrReadOnly reports a write to a target that cannot be written, such
	// as a core file.
	ErrReadOnly = errors.New("target is read-only")
	// ErrNoMemory reports that an address range is not backed by anything
	// the target can read (unmapped, or left out of a core file with no
	// file to fall back on).
	ErrNoMemory = errors.New("memory not available")
	// ErrNoThread reports a thread id that the target does not know.
	ErrNoThread = errors.New("no such thread")
	// ErrObjectMissing comes with ErrNotFound from a lookup in a target
	// that could not load every object (shared library) it names: what
	// was looked for may be in one of those, and the error says which
	// and why (missing, unreadable, of another build).
	ErrObjectMissing = errors.New("some objects of the target could not be loaded")
)

// Refresher is implemented by targets that cache what they read from a
// live process. Refresh drops those caches, and makes the next access
// check that the process is still there; ompd.AddressSpace.Refresh calls
// it.
type Refresher interface {
	Refresh()
}

// ReadError reports a failed memory read or write. It wraps the cause, which
// is usually ErrNoMemory.
type ReadError struct {
	Addr  uint64 // first address of the access
	Size  int    // number of bytes asked for
	Write bool   // true for a write
	Err   error  // the cause
}

func (e *ReadError) Error() string {
	op := "read"
	if e.Write {
		op = "write"
	}
	return fmt.Sprintf("%s of %d bytes at %#x: %v", op, e.Size, e.Addr, e.Err)
}

// Unwrap returns the cause.
func (e *ReadError) Unwrap() error { return e.Err }

// LookupError reports a failed symbol, type or field lookup. It wraps the
// cause, usually ErrNotFound.
type LookupError struct {
	Kind string // "symbol", "thread-local symbol", "type" or "field"
	Name string // what was looked up, e.g. "__kmp_threads" or "kmp_info.th"
	Err  error  // the cause
}

func (e *LookupError) Error() string {
	return fmt.Sprintf("%s %q: %v", e.Kind, e.Name, e.Err)
}

// Unwrap returns the cause.
func (e *LookupError) Unwrap() error { return e.Err }

// Sizes holds the sizes in bytes of the target's primitive C types, as
// OMPD's ompd_device_type_sizes_t does.
type Sizes struct {
	Char, Short, Int, Long, LongLong, Pointer int
}

// LP64 are the sizes of 64-bit Linux targets (x86-64, arm64, ppc64, ...).
var LP64 = Sizes{Char: 1, Short: 2, Int: 4, Long: 8, LongLong: 8, Pointer: 8}

// ILP32 are the sizes of 32-bit Linux targets (i386, arm).
var ILP32 = Sizes{Char: 1, Short: 2, Int: 4, Long: 4, LongLong: 8, Pointer: 4}

// Thread is an operating-system thread of the target.
type Thread struct {
	// ID is the kernel's thread id (LWP, what gettid returns).
	ID uint64
	// Pointer is the thread pointer register, off which the thread's
	// thread-local storage hangs: fs_base on x86-64, tpidr_el0 on
	// aarch64, r13 on ppc64, access registers a0:a1 on s390x. Zero if
	// unknown.
	Pointer uint64
	// Pthread is the thread's pthread_t, on glibc the address of its
	// struct pthread: on x86-64 and s390x (TLS variant II) the thread
	// pointer itself; on aarch64 and ppc64 (TLS variant I) glibc keeps
	// it below the thread pointer, at a distance that glibc's
	// libthread_db descriptors give (target/core reads them). Zero if
	// unknown.
	Pthread uint64
}

// Target is a stopped program as OMPD sees it.
//
// Every method must be safe for concurrent use by several goroutines.
type Target interface {
	// LookupSymbol returns the run-time address of the symbol called
	// name (ompd_tsymbol_addr_fn_t), global or local, in the executable
	// or any loaded shared object. If several objects define it, the executable wins, then
	// the objects in load order; within an object a global (or weak)
	// definition wins over a local one. A missing symbol is an error
	// wrapping ErrNotFound.
	LookupSymbol(name string) (uint64, error)

	// LookupThreadLocal returns the address of the instance, in the given
	// thread, of the thread-local variable called name. A thread the
	// target does not know wraps ErrNoThread; a variable whose storage
	// the thread has not allocated yet wraps ErrNoMemory.
	LookupThreadLocal(thread uint64, name string) (uint64, error)

	// TypeSize returns the size in bytes of the named C type, a typedef
	// name or "struct x" / "union x" (ompd_ttype_sizeof_fn_t, and
	// ompd_ttype_fn_t: the type is named, not looked up first), from the
	// target's debug information. A missing type wraps ErrNotFound.
	TypeSize(typeName string) (uint64, error)

	// FieldOffset returns the byte offset of the named member within the
	// named C struct or union type (ompd_ttype_offset_fn_t). A missing type or member wraps
	// ErrNotFound.
	FieldOffset(typeName, field string) (uint64, error)

	// ReadMemory fills buf with the target's memory starting at addr
	// (ompd_tmemory_access_fn_t, as the read callback). It either fills
	// all of buf or returns an error (usually a *ReadError wrapping
	// ErrNoMemory); it never returns a partial read as success.
	ReadMemory(buf []byte, addr uint64) error

	// WriteMemory writes data to the target's memory at addr
	// (ompd_tmemory_access_fn_t, as the write callback). Read-only
	// targets return an error wrapping ErrReadOnly.
	WriteMemory(addr uint64, data []byte) error

	// ByteOrder is the target's byte order (for ompd_target_host_fn_t:
	// the library decodes target data with it).
	ByteOrder() binary.ByteOrder

	// Sizes are the target's primitive type sizes (ompd_tsizeof_prim_fn_t).
	Sizes() Sizes

	// Threads lists the target's OS threads.
	Threads() ([]Thread, error)
}

// ReadString reads a NUL-terminated string of at most max bytes at addr,
// reading in chunks so that a string near the end of mapped memory is still
// found. A string with no NUL within max bytes is an error.
func ReadString(t Target, addr uint64, max int) (string, error) {
	const chunk = 256
	var out []byte
	buf := make([]byte, chunk)
	for len(out) < max {
		n := chunk
		if rem := max - len(out); rem < n {
			n = rem
		}
		// Do not cross a page boundary in one read: the next page may be
		// unmapped although the string ends before it.
		if pageRem := int(4096 - (addr+uint64(len(out)))%4096); pageRem < n {
			n = pageRem
		}
		if err := t.ReadMemory(buf[:n], addr+uint64(len(out))); err != nil {
			// The string may end in a mapping smaller than the chunk:
			// go on one byte at a time before giving up.
			if n == 1 {
				return "", err
			}
			n = 1
			if err := t.ReadMemory(buf[:1], addr+uint64(len(out))); err != nil {
				return "", err
			}
		}
		for i := 0; i < n; i++ {
			if buf[i] == 0 {
				return string(append(out, buf[:i]...)), nil
			}
		}
		out = append(out, buf[:n]...)
	}
	return "", fmt.Errorf("string at %#x longer than %d bytes", addr, max)
}

// EnvironReader is implemented by targets that can read the environment
// the program started with (target/core from the core's initial stack,
// target/delve from /proc/PID/environ): what a runtime whose own state
// cannot be read shows of its settings.
type EnvironReader interface {
	// Environ returns the start-up environment, NAME=VALUE each.
	Environ() ([]string, error)
}

// Symbolizer is implemented by targets that can name the function at a
// code address (target/core, target/delve and target/delverpc do): the
// entry functions of regions and tasks get their symbols from it.
type Symbolizer interface {
	// SymbolAt returns the name of the function symbol containing addr.
	SymbolAt(addr uint64) (string, bool)
}

// VectorReader is implemented by targets that read many small ranges of
// memory in one operation (target/delve: one process_vm_readv system call
// for up to 1,024 ranges). A runtime's per-thread structures lie kilobytes
// apart on its heap; ompd-go reads them with one ReadMemoryVec instead of
// reading the pages between them.
type VectorReader interface {
	// ReadMemoryVec reads size bytes at each address of addrs into
	// consecutive size-byte slots of buf (len(buf) >= len(addrs)*size)
	// and returns how many of the ranges, from the first, it read
	// whole: it stops at the first range it cannot read (the caller
	// reads the rest one by one, to tell which fail). An error means
	// it read nothing and says why; a target that can read no ranges
	// this way at all (a wrapper around a target that is no
	// VectorReader) returns an error wrapping ErrUnsupported.
	ReadMemoryVec(buf []byte, addrs []uint64, size int) (int, error)
}

// BitFieldLocator is implemented by targets whose debug information can
// locate bit-field members. ompd-go needs it only to read a runtime built
// without OMPD support, whose task flags it must find in DWARF.
type BitFieldLocator interface {
	// BitField returns the position of the named bit-field member of the
	// named struct type: its offset in bits from the start of the struct,
	// as DWARF's DW_AT_data_bit_offset counts it, and its width in bits.
	BitField(typeName, field string) (bitOffset, bitSize uint64, err error)
}
