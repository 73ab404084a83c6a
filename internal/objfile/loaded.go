package objfile

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"strconv"

	"github.com/ompd-go/ompd/target"
)

// Limits on what is read of a loaded object's headers.
const (
	maxDynEntries = 512
	maxPhdrs      = 64
	maxNoteBytes  = 4096
)

// RDebug finds the dynamic linker's struct r_debug in t: through the
// DT_DEBUG entry of the executable's dynamic section (_DYNAMIC, in the
// executable's own symbol table, found at once), else the _r_debug symbol
// (whose lookup may have to read every library's symbols, separate debug
// files included, before it reaches the dynamic linker's: too slow to pay
// on every open of a program without the runtime looked for). Only 64-bit
// dynamic sections are read through _DYNAMIC; mem reads t's memory (a
// cache of it, say).
func RDebug(t target.Target, mem Memory, order binary.ByteOrder) (uint64, error) {
	if dyn, err := t.LookupSymbol("_DYNAMIC"); err == nil && dyn != 0 {
		var e [16]byte
		for i := uint64(0); i < maxDynEntries; i++ {
			if mem.ReadMemory(e[:], dyn+16*i) != nil {
				break
			}
			tag := elf.DynTag(order.Uint64(e[:8]))
			if tag == elf.DT_NULL {
				break
			}
			if tag == elf.DT_DEBUG {
				if p := order.Uint64(e[8:]); p != 0 {
					return p, nil
				}
				break
			}
		}
	}
	return t.LookupSymbol("_r_debug")
}

// LoadedBuildID reads the GNU build-id note of the 64-bit ELF object
// loaded at base (its l_addr: the ELF header and program headers are
// mapped there) through its PT_NOTE segments; nil if it cannot.
func LoadedBuildID(mem Memory, base uint64, order binary.ByteOrder) []byte {
	var h [64]byte
	if mem.ReadMemory(h[:], base) != nil || !bytes.Equal(h[:4], []byte(elf.ELFMAG)) {
		return nil
	}
	phoff, phentsize, phnum := order.Uint64(h[32:]), uint64(order.Uint16(h[54:])), uint64(order.Uint16(h[56:]))
	if phentsize != 56 || phnum > maxPhdrs {
		return nil
	}
	ph := make([]byte, phentsize*phnum)
	if mem.ReadMemory(ph, base+phoff) != nil {
		return nil
	}
	for i := uint64(0); i < phnum; i++ {
		p := ph[i*phentsize:]
		if elf.ProgType(order.Uint32(p)) != elf.PT_NOTE {
			continue
		}
		size := order.Uint64(p[32:])
		if size > maxNoteBytes {
			continue
		}
		notes := make([]byte, size)
		if mem.ReadMemory(notes, base+order.Uint64(p[16:])) != nil {
			continue
		}
		if id := ParseBuildID(notes, order); id != nil {
			return id
		}
	}
	return nil
}

// CXXFuncName returns the Itanium C++ ABI (GCC, clang) name of a function
// called name that takes no parameters, as a C++ compiler names a function
// not declared extern "C": "ompd_bp_parallel_begin" is
// "_Z22ompd_bp_parallel_beginv" (LLVM 13-16 compile the OpenMP runtime's
// OMPD breakpoint functions so).
func CXXFuncName(name string) string { return "_Z" + strconv.Itoa(len(name)) + name + "v" }
