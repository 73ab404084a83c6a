package ompd

// LayoutSource says where an address space took the runtime's structure
// layout from.
type LayoutSource int

const (
	// LayoutOMPDTables: the runtime's own OMPD tables (ompd_access__*,
	// ompd_sizeof__*, ompd_bitfield__*), filled in by the runtime at
	// start-up when it is built with OMPD support.
	LayoutOMPDTables LayoutSource = iota + 1 // OMPD tables
	// LayoutDWARF: the runtime's debug information, through the target's
	// TypeSize and FieldOffset (a runtime built without OMPD support).
	LayoutDWARF // DWARF
	// LayoutKnownTable: a table of known layouts built into this package,
	// chosen by the runtime library's identity (version, build-id), for a
	// runtime without OMPD tables or debug information.
	LayoutKnownTable // known layout table
)
