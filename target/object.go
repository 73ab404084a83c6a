package target

import "errors"

// Object is one object (the executable or a shared library) loaded in a
// target's program, as a target that lists them (ObjectLister) reports
// it: target/core, target/delve and target/delverpc report the same
// fields.
type Object struct {
	// Name is the object's path as the program names it: in a core's
	// NT_FILE note or link_map list, as Delve or its server reports it
	// (for a live process the executable may be /proc/PID/exe).
	Name string
	// Path is the local file opened for it, "" when none could be used
	// (Err says why).
	Path string
	// Bias is the load bias: run-time address minus ELF virtual address.
	Bias uint64
	// BuildID is the GNU build-id of the file opened, nil if it has none
	// or none was opened.
	BuildID []byte
	// DebugFile is the separate debug file the object's symbols or DWARF
	// come from, "" if the file has both itself or none was found.
	DebugFile string
	// DebugErr says why an object lacking its own symbol table or DWARF
	// has no separate debug file: it matches ErrNoDebugFile,
	// ErrDebugServer or ErrDebugMismatch. Nil otherwise.
	DebugErr error
	// Err says why no local file could be used for the object (missing,
	// unreadable, of another build), nil when one was.
	Err error
}

// ObjectLister is implemented by targets that list the objects loaded in
// their program: the executable first, then the shared libraries in load
// order. For an object that lacks its own symbol table or DWARF, Objects
// reports its separate debug file, searching for it first if no lookup has
// yet (which may ask a debuginfod server, when the target was given one).
type ObjectLister interface {
	Objects() ([]Object, error)
}

// MissingObjectLister is implemented by targets that may fail to load
// objects their program loaded (target/core: a shared library not found
// under its sysroot or file map, unreadable, or of another build), which
// ObjectLister then leaves out.
type MissingObjectLister interface {
	// MissingObjects lists those objects: Name as the program names
	// them, Err why no local file could be used.
	MissingObjects() []Object
}

// Errors of the search for separate debug files (Object.DebugErr).
var (
	// ErrNoDebugFile: no separate debug file was found anywhere.
	ErrNoDebugFile = errors.New("debuginfo: no debug file found")
	// ErrDebugServer: no debuginfod server could give the file (errors,
	// timeouts, unreachable servers), which is not the same as no server
	// having it (ErrNoDebugFile).
	ErrDebugServer = errors.New("debuginfod: no server could give the file")
	// ErrDebugMismatch: a candidate debug file was found but belongs to
	// another build of the object.
	ErrDebugMismatch = errors.New("debuginfo: debug file does not match the object")
)
