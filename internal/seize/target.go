package seize

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ompd-go/ompd/internal/errjoin"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/internal/pagecache"
	"github.com/ompd-go/ompd/internal/procfs"
	"github.com/ompd-go/ompd/target"
)

// atEntry is the auxiliary vector's AT_ENTRY: the program's entry point.
const atEntry = 9

// ByteOrder returns binary.LittleEndian (amd64).
func (p *Process) ByteOrder() binary.ByteOrder { return binary.LittleEndian }

// Sizes returns target.LP64.
func (p *Process) Sizes() target.Sizes { return target.LP64 }

// ReadMemory fills buf with the process's memory at addr, through a cache
// of the stop's pages. A range not entirely mapped gives a
// *target.ReadError wrapping target.ErrNoMemory.
func (p *Process) ReadMemory(buf []byte, addr uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.readLocked(buf, addr)
}

func (p *Process) readLocked(buf []byte, addr uint64) error {
	return p.pages.ReadTarget(buf, addr, func() error {
		if err := p.aliveLocked(); err != nil {
			return errjoin.Join(target.ErrNoMemory, err)
		}
		return nil
	}, p.rawRead)
}

func (p *Process) rawRead(buf []byte, addr uint64) error {
	if err := procfs.ReadMemory(p.pid, buf, addr); err != nil {
		if isESRCH(err) {
			if gone := p.goneLocked(); gone != nil {
				return errjoin.Join(target.ErrNoMemory, gone)
			}
		}
		return fmt.Errorf("%w: %w", target.ErrNoMemory, err)
	}
	return nil
}

// ReadMemoryVec reads size bytes at each of addrs with as few
// process_vm_readv calls as it can, without the page cache (see
// target.VectorReader).
func (p *Process) ReadMemoryVec(buf []byte, addrs []uint64, size int) (int, error) {
	if len(addrs) == 0 || size <= 0 {
		return 0, nil
	}
	if len(buf) < len(addrs)*size {
		return 0, fmt.Errorf("ReadMemoryVec: buffer of %d bytes for %d ranges of %d", len(buf), len(addrs), size)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.aliveLocked(); err != nil {
		return 0, &target.ReadError{Addr: addrs[0], Size: size, Err: errjoin.Join(target.ErrNoMemory, err)}
	}
	n, err := procfs.ReadVectored(p.pid, buf, addrs, size)
	if err != nil && n == 0 {
		return 0, &target.ReadError{Addr: addrs[0], Size: size, Err: fmt.Errorf("%w: %w", target.ErrNoMemory, err)}
	}
	return n, nil
}

// WriteMemory refuses: a Process is read-only.
func (p *Process) WriteMemory(addr uint64, data []byte) error {
	return &target.ReadError{Addr: addr, Size: len(data), Write: true, Err: target.ErrReadOnly}
}

// Threads lists the threads stopped, by id, with their fs_base.
func (p *Process) Threads() ([]target.Thread, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.aliveLocked(); err != nil {
		return nil, err
	}
	return slices.Clone(p.threads), nil
}

func (p *Process) threadPointerLocked(tid uint64) (uint64, error) {
	return pagecache.ThreadPointer(p.threads, tid)
}

// ThreadRegisters returns the general registers thread tid had at the
// stop (target.RegisterReader).
func (p *Process) ThreadRegisters(tid uint64) (target.Registers, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.regs[int(tid)]
	if !ok {
		return target.Registers{}, fmt.Errorf("seize: thread %d: %w", tid, target.ErrNoThread)
	}
	return r, nil
}

// setLocked returns the objects loaded in the process: the executable
// (/proc/PID/exe, at the bias its entry point gives), then the libraries
// of the dynamic linker's list. They are opened once, at the first
// lookup.
func (p *Process) setLocked() (*objfile.Set, error) {
	if p.set != nil || p.setErr != nil {
		return p.set, p.setErr
	}
	if err := p.aliveLocked(); err != nil {
		return nil, err
	}
	p.set, p.setErr = p.openObjects()
	return p.set, p.setErr
}

func (p *Process) openObjects() (*objfile.Set, error) {
	exePath := "/proc/" + strconv.Itoa(p.pid) + "/exe"
	exe, err := objfile.Open(exePath, 0, p.objOpts...)
	if err != nil {
		return nil, fmt.Errorf("process %d: executable: %w", p.pid, err)
	}
	if exe.File().Type == elf.ET_DYN {
		entry, err := procfs.Auxv(p.pid, atEntry)
		if err != nil {
			exe.Close()
			return nil, fmt.Errorf("process %d: executable's load bias: %w", p.pid, err)
		}
		vaddr := exe.File().Entry
		exe.Close()
		if exe, err = objfile.Open(exePath, entry-vaddr, p.objOpts...); err != nil {
			return nil, fmt.Errorf("process %d: executable: %w", p.pid, err)
		}
	}
	objs := []*objfile.Object{exe}
	// A static program has no list: the executable is all there is.
	entries, err := objfile.NewSet(exe).LinkMap(lockedMemory{p})
	if err != nil && !errors.Is(err, target.ErrNotFound) {
		exe.Close()
		return nil, fmt.Errorf("process %d: the dynamic linker's list: %w", p.pid, err)
	}
	for i, e := range entries {
		if i == 0 || !strings.HasPrefix(e.Name, "/") {
			continue // the executable; the vDSO
		}
		// A library that cannot be opened is left out: what it
		// defines is then not found, and the lookup says so.
		if o, err := objfile.Open(e.Name, e.LAddr, p.objOpts...); err == nil {
			objs = append(objs, o)
		}
	}
	return objfile.NewSet(objs...), nil
}

// LookupSymbol returns the run-time address of the symbol called name
// (the executable first, then the libraries in load order).
func (p *Process) LookupSymbol(name string) (uint64, error) { return p.look.LookupSymbol(name) }

// LookupThreadLocal returns the address of thread tid's instance of the
// thread-local variable called name.
func (p *Process) LookupThreadLocal(tid uint64, name string) (uint64, error) {
	return p.look.LookupThreadLocal(tid, name)
}

// TypeSize returns the size of the named C type from the objects' DWARF.
func (p *Process) TypeSize(typeName string) (uint64, error) { return p.look.TypeSize(typeName) }

// FieldOffset returns the byte offset of the named member of the named C
// struct or union type.
func (p *Process) FieldOffset(typeName, field string) (uint64, error) {
	return p.look.FieldOffset(typeName, field)
}

// BitField returns the bit position and width of the named member of the
// named struct type (target.BitFieldLocator).
func (p *Process) BitField(typeName, field string) (bitOffset, bitSize uint64, err error) {
	return p.look.BitField(typeName, field)
}

// SymbolAt returns the name of the function symbol containing addr
// (target.Symbolizer).
func (p *Process) SymbolAt(addr uint64) (string, bool) { return p.look.SymbolAt(addr) }

// UnwindFrame unwinds one frame with the call-frame information of the
// process's objects (target.FrameUnwinder).
func (p *Process) UnwindFrame(regs target.Registers, caller bool) (target.Registers, uint64, error) {
	return p.look.UnwindFrame(regs, caller)
}

// LocateCode names the object, function, and source file and line of the
// code at pc (target.CodeLocator).
func (p *Process) LocateCode(pc uint64) (target.CodeLocation, error) { return p.look.LocateCode(pc) }

// lockedMemory reads the process's memory with p.mu already held.
type lockedMemory struct{ p *Process }

func (m lockedMemory) ReadMemory(buf []byte, addr uint64) error { return m.p.readLocked(buf, addr) }

var (
	_ target.Target          = (*Process)(nil)
	_ target.RegisterReader  = (*Process)(nil)
	_ target.FrameUnwinder   = (*Process)(nil)
	_ target.CodeLocator     = (*Process)(nil)
	_ target.Symbolizer      = (*Process)(nil)
	_ target.BitFieldLocator = (*Process)(nil)
	_ target.VectorReader    = (*Process)(nil)
)
