package kmp

import (
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

// dwarfReader reads the runtime's layout from its debug information through
// the target's TypeSize and FieldOffset, for runtimes built without OMPD
// support. Member sizes are those of the members' C types in LLVM's kmp.h
// and omp-tools.h, in terms of the target's pointer and int sizes; task
// flag masks need a target that implements target.BitFieldLocator.
type dwarfReader struct {
	t        target.Target
	ptr, int uint64
	err      error
}

func (r *dwarfReader) source() omprt.LayoutSource { return omprt.LayoutDWARF }
func (r *dwarfReader) failed() error              { return r.err }

// memberSize gives the size of the members this package decodes; members
// used only as containers of nested ones have size 0.
func (r *dwarfReader) memberSize(typ, member string) uint64 {
	switch member {
	case "ds_thread", "th_team", "th_current_task", "t_threads", "t_parent", "t_pkfn",
		"t_implicit_task_taskdata", "ompt_serialized_team_info", "td_team", "td_parent",
		"scheduling_parent", "routine", "parent", "nth", "bind_types":
		return r.ptr
	case "wait_id", "thread_data", "parallel_data", "exit_frame", "enter_frame", "task_data":
		return 8 // ompt_wait_id_t and ompt_data_t are 64-bit everywhere
	case "dynamic":
		return 1 // bool
	case "ds_tid", "state", "t_nproc", "t_level", "t_active_level", "t_master_tid",
		"max_active_levels", "nproc", "proc_bind", "r_sched_type", "chunk",
		"default_device", "thread_limit", "used":
		return r.int
	case "td_flags":
		return 4 // kmp_tasking_flags_t is exactly 32 bits
	}
	return 0
}

func (r *dwarfReader) access(typ, member string) field {
	if r.err != nil {
		return field{}
	}
	off, err := r.t.FieldOffset(typ, member)
	if err != nil {
		r.err = wrapErr(omprt.ErrIncompatible, err, "runtime debug information: %s.%s", typ, member)
		return field{}
	}
	return field{Off: off, Size: r.memberSize(typ, member)}
}

func (r *dwarfReader) sizeof(name string) uint64 {
	if r.err != nil {
		return 0
	}
	if name == "int" {
		return r.int
	}
	n, err := r.t.TypeSize(name)
	if err != nil {
		r.err = wrapErr(omprt.ErrIncompatible, err, "runtime debug information: sizeof(%s)", name)
		return 0
	}
	return n
}

// mask builds the memory image of a flags struct with only the named
// one-bit member set, from the bit position the debug information gives.
func (r *dwarfReader) mask(typ, member string) []byte {
	if r.err != nil {
		return nil
	}
	bl, ok := r.t.(target.BitFieldLocator)
	if !ok {
		r.err = errorf(omprt.ErrIncompatible, "runtime debug information: the target cannot locate bit-field %s.%s", typ, member)
		return nil
	}
	bit, width, err := bl.BitField(typ, member)
	if err != nil {
		r.err = wrapErr(omprt.ErrIncompatible, err, "runtime debug information: bit-field %s.%s", typ, member)
		return nil
	}
	if width != 1 || bit >= 64 {
		r.err = errorf(omprt.ErrIncompatible, "runtime debug information: bit-field %s.%s at bit %d, %d bits wide", typ, member, bit, width)
		return nil
	}
	m := make([]byte, 8)
	// DWARF counts data_bit_offset from the first byte's least significant
	// bit on little-endian targets and from its most significant bit on
	// big-endian ones.
	if r.t.ByteOrder().String() == "BigEndian" {
		m[bit/8] = 0x80 >> (bit % 8)
	} else {
		m[bit/8] = 1 << (bit % 8)
	}
	return m
}
