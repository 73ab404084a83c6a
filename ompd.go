// Package ompd is a pure-Go implementation of OMPD, the OpenMP debugger
// support interface, for LLVM's OpenMP runtime (libomp) and GCC's
// (libgomp).
//
// A debugger hands the package a view of a stopped OpenMP program, a
// [target.Target] (a core file through target/core, a live process through
// target/delve, or its own implementation), and gets back what the OpenMP
// runtime knows: its threads and their states, the nest of parallel regions,
// the task tree, every internal control variable (ICV), the display control
// variables, and the breakpoint addresses where regions and tasks begin and
// end. Where the target can read registers, [Thread.Backtrace] unwinds a
// thread's stack and places each frame in the thread's tasks and regions.
//
// The entry point is [Open], which detects the runtime in the target and
// reads its layout tables:
//
//	as, err := ompd.Open(t)
//	...
//	for th, err := range as.Threads() {
//		if err != nil {
//			return err
//		}
//		state, wait, _ := th.State()
//		par, _ := th.CurrentParallel()
//		...
//	}
//
// Every collection is an iterator: walks that read the target, which can
// fail, are iter.Seq2 of a value and an error (Threads, Thread.Regions,
// Thread.Tasks, Parallel.Threads, ...), which end after yielding an error;
// [Collect] gathers one in a slice. Enumerations of constants (AllICVs,
// States) are iter.Seq.
//
// Handles ([Thread], [Parallel], [Task]) are small comparable values: ==
// and map keys work, Equal compares across address spaces safely, and
// String gives a stable id a person can read. Nothing needs releasing.
//
// Failures are errors that match the sentinels below with errors.Is, wrapped
// with context saying what was being read. Target failures (unreadable
// memory, missing symbols) keep their own sentinels from package target
// reachable through the chain as well.
//
// An AddressSpace caches target memory: a stopped target is read once per
// runtime structure. For a live target, call [AddressSpace.Refresh] after
// the process has run and stopped again; handles obtained before stay valid
// only as long as the runtime objects they name do (see [ErrStaleHandle]).
//
// The package reads the host's runtime only: OMPD's device address spaces
// (ompd_device_initialize, for offload devices) have no counterpart.
//
// All methods are safe for concurrent use by several goroutines.
package ompd

// The String methods of the enumerations are generated; their names are the
// constants' line comments.
//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -linecomment -output enums_string.go -type State,ScopeKind,ScheduleKind,ProcBind,LayoutSource,WaitKind

import (
	"fmt"

	"github.com/ompd-go/ompd/internal/omprt"
)

// Version is the OMPD API version this package implements, as OMPD's
// ompd_get_api_version reports it (ompd_get_api_version, the drafts'
// ompd_get_version and ompd_get_version_compatibility): the _OPENMP value (year and month) of
// the OpenMP specification whose OMPD it follows, OpenMP 5.1's, whose
// additions it has (ErrIncomplete, the teams ICVs, the states
// StateWaitBarrierImplementation and StateWaitBarrierTeams). LLVM's libompd
// 19 and GCC's libgompd report 201811 (OpenMP 5.0).
const Version = 202011

// specVersion is the OpenMP version whose _OPENMP value Version is.
const specVersion = "5.1"

// VersionString describes this implementation
// (ompd_get_version_string).
func VersionString() string {
	return fmt.Sprintf("ompd-go: OMPD %d (OpenMP %s debugging interface) for LLVM's libomp and GCC's libgomp", Version, specVersion)
}

// Errors returned by this package, matching OMPD's return codes. Use
// errors.Is to test for them: every error this package returns wraps one of
// them, with context naming what was being done.
var (
	// ErrUnavailable (ompd_rc_unavailable): the information asked for does
	// not exist, for instance the enclosing region of the outermost one, or
	// a thread that is not an OpenMP thread.
	ErrUnavailable = omprt.ErrUnavailable
	// ErrStaleHandle (ompd_rc_stale_handle): the runtime object a handle
	// names was freed or reused since the handle was made.
	ErrStaleHandle = omprt.ErrStaleHandle
	// ErrBadInput (ompd_rc_bad_input): an argument is out of range or of
	// the wrong kind.
	ErrBadInput = omprt.ErrBadInput
	// ErrUnsupported (ompd_rc_unsupported): the operation is not supported
	// for this target or runtime (a thread id kind the platform
	// lacks).
	ErrUnsupported = omprt.ErrUnsupported
	// ErrNeedsStateTracking (ompd_rc_needs_state_tracking): the runtime
	// was not started with OMP_DEBUG=enabled (or an OMPT tool), so it does
	// not track what is asked for.
	ErrNeedsStateTracking = omprt.ErrNeedsStateTracking
	// ErrIncompatible (ompd_rc_incompatible): the target's OpenMP runtime
	// is not one this package can read, or a value cannot be given in the
	// form asked for (a text ICV read as an integer: use ICVString).
	ErrIncompatible = omprt.ErrIncompatible
	// ErrIncomplete (ompd_rc_incomplete): the answer is only part of the
	// value, and comes with the error: a list-valued ICV (nthreads-var,
	// bind-var) read as one integer gives its first element and
	// ErrIncomplete when the list has more (ICVString and the typed
	// accessors, such as Thread.NthreadsList, give all of it). On libgomp
	// without its debug file, whose global lists are hidden symbols,
	// ICVString and the typed accessors too give only the first element,
	// with ErrIncomplete.
	ErrIncomplete = omprt.ErrIncomplete
	// ErrNoRuntime: the target has no OpenMP runtime at all. It also
	// matches ErrIncompatible, as OMPD reports this case.
	ErrNoRuntime = omprt.ErrNoRuntime
	// ErrReadFailed (ompd_rc_device_read_error): target memory could not
	// be read. The target's own error stays reachable with errors.Is.
	ErrReadFailed = omprt.ErrReadFailed
	// ErrWriteFailed (ompd_rc_device_write_error): target memory could not
	// be written (for instance a core file, which is read-only).
	ErrWriteFailed = omprt.ErrWriteFailed
	// ErrCorrupt: runtime memory is inconsistent (a cycle in a list that
	// must end, an absurd count, a pointer that must not be null). OMPD
	// has no code of its own for it (libompd would answer ompd_rc_error);
	// it is reported instead of looping or allocating without bound.
	ErrCorrupt = omprt.ErrCorrupt
)

// errorf returns an error matching kind, with a context message formatted
// only when the error is read.
func errorf(kind error, format string, args ...any) error { return omprt.Errorf(kind, format, args...) }

// wrapErr returns an error matching kind and cause, with context. If cause
// already matches one of this package's sentinels, it is returned with the
// added context but without a second kind.
func wrapErr(kind error, cause error, format string, args ...any) error {
	return omprt.Wrap(kind, cause, format, args...)
}
