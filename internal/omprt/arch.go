package omprt

import (
	"debug/elf"

	"github.com/ompd-go/ompd/internal/arch"
	"github.com/ompd-go/ompd/target"
)

// Arch returns the machine of the program t stopped: from its Machine
// method (target/core has one) unless that says EM_NONE (unknown), else
// from the registers of one of its threads (target.RegisterReader), which
// say whose numbering they use. A target that tells neither, or a machine
// the arch package has no file for, gives an error matching
// ErrUnsupported.
func Arch(t target.Target) (*arch.Arch, error) {
	var m elf.Machine
	if mt, ok := t.(interface{ Machine() elf.Machine }); ok {
		m = mt.Machine()
	}
	if rr, ok := t.(target.RegisterReader); ok && m == elf.EM_NONE {
		ths, err := t.Threads()
		if err != nil {
			return nil, Wrap(ErrUnsupported, err, "the target's machine: listing its threads")
		}
		for _, th := range ths {
			if r, err := rr.ThreadRegisters(th.ID); err == nil {
				m = r.Machine
				break
			}
		}
	}
	if m == elf.EM_NONE {
		return nil, Errorf(ErrUnsupported, "the target tells neither its machine nor its threads' registers")
	}
	a := arch.Numbered(m)
	if a == nil {
		return nil, Errorf(ErrUnsupported, "the target's machine %v is not supported", m)
	}
	return a, nil
}
