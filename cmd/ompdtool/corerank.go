package main

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"io"
	"strings"

	"github.com/ompd-go/ompd/internal/regfile"
	"github.com/ompd-go/ompd/target"
)

const (
	ntAuxv   = 6  // NT_AUXV: the process's auxiliary vector
	atExecFn = 31 // AT_EXECFN: the address of the program's file name
	// envWindow bounds how much of the stack below the file name is read
	// for the environment strings.
	envWindow = 256 << 10
)

// coreRank is the MPI rank the environment of the process of an
// (uncompressed) core names: the kernel puts the environment strings just
// below the program's file name, at the top of the initial stack, whose
// address the auxiliary vector note gives (AT_EXECFN).
func coreRank(path string, mem target.Target) (int, bool) {
	f, file, err := regfile.OpenELF(path)
	if err != nil {
		return 0, false
	}
	defer file.Close()
	if f.Type != elf.ET_CORE {
		return 0, false
	}
	execFn := uint64(0)
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE || p.Filesz > 64<<20 {
			continue
		}
		b, err := io.ReadAll(io.LimitReader(p.Open(), int64(p.Filesz)))
		if err != nil {
			continue
		}
		if v, ok := auxvEntry(b, f.ByteOrder, atExecFn); ok {
			execFn = v
		}
	}
	if execFn < envWindow {
		return 0, false
	}
	// The window may start below the stack's mapping: halve it until the
	// read succeeds.
	for size := uint64(envWindow); size >= 4096; size /= 2 {
		buf := make([]byte, size)
		if err := mem.ReadMemory(buf, execFn-size); err != nil {
			continue
		}
		env := map[string]string{}
		for _, s := range bytes.Split(buf, []byte{0}) {
			if k, v, ok := strings.Cut(string(s), "="); ok && k != "" {
				env[k] = v
			}
		}
		return envRank(env)
	}
	return 0, false
}

// auxvEntry finds tag in the NT_AUXV note among the notes b (64-bit).
func auxvEntry(b []byte, order binary.ByteOrder, tag uint64) (uint64, bool) {
	for len(b) >= 12 {
		namesz, descsz, typ := order.Uint32(b), order.Uint32(b[4:]), order.Uint32(b[8:])
		off := 12 + align4(uint64(namesz))
		end := off + align4(uint64(descsz))
		if end > uint64(len(b)) {
			return 0, false
		}
		if typ == ntAuxv {
			d := b[off : off+uint64(descsz)]
			for ; len(d) >= 16; d = d[16:] {
				if order.Uint64(d) == tag {
					return order.Uint64(d[8:]), true
				}
			}
		}
		b = b[end:]
	}
	return 0, false
}

func align4(n uint64) uint64 { return (n + 3) &^ 3 }
