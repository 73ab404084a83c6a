package delve

import (
	"errors"
	"fmt"
)

// Errors returned by Process and Target methods, besides the sentinels of
// package target (target.ErrNotFound, target.ErrNoMemory, ...), which the
// Target methods wrap as that package documents.
var (
	// ErrExited reports that the process has exited (or was killed). The
	// *ExitError that Continue returns when the program ends matches it,
	// and so does every later operation on the process.
	ErrExited = errors.New("process exited")
	// ErrDetached reports an operation on a process that Detach released.
	ErrDetached = errors.New("process detached")
	// ErrWedged reports that Continue gave up on a process Delve's
	// native backend was lost in: every thread stopped while Delve went
	// on waiting for one (wedge.md). The process is left stopped and
	// detached, for another debugger to attach to; the Process is
	// unusable but for Kill and Wait.
	ErrWedged = errors.New("delve waits forever for a stopped process")
)

// ExitError reports that the process ended while it ran. It matches
// ErrExited with errors.Is.
type ExitError struct {
	Pid int
	// Status is the exit status, or minus the signal number when a signal
	// killed the process (-9 after Kill).
	Status int
}

// Error describes how the process ended.
func (e *ExitError) Error() string {
	if e.Status < 0 {
		return fmt.Sprintf("process %d killed by signal %d", e.Pid, -e.Status)
	}
	return fmt.Sprintf("process %d exited with status %d", e.Pid, e.Status)
}

// Is makes an ExitError match ErrExited.
func (e *ExitError) Is(target error) bool { return target == ErrExited }
