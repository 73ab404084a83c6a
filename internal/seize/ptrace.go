package seize

import (
	"errors"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

func ptraceSeize(tid int) error     { return unix.PtraceSeize(tid) }
func ptraceInterrupt(tid int) error { return unix.PtraceInterrupt(tid) }

// ptraceDetach detaches from stopped thread tid, delivering signal sig
// (0: none) as it resumes.
func ptraceDetach(tid, sig int) error {
	_, _, e := unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_DETACH, uintptr(tid), 0, uintptr(sig), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

func lockThread() { runtime.LockOSThread() }

func isESRCH(err error) bool { return errors.Is(err, syscall.ESRCH) }

// waitState is what a wait for a thread found.
type waitState struct {
	gone    bool // it ended (or is no child of ours any more)
	stopped bool
	signal  int // the signal of a signal-delivery-stop, to give back
}

// waitNoHang collects the state change of traced thread tid, if any,
// without waiting.
func waitNoHang(tid int) (waitState, error) {
	for {
		var ws unix.WaitStatus
		wpid, err := unix.Wait4(tid, &ws, unix.WNOHANG|unix.WALL, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ECHILD):
			return waitState{gone: true}, nil
		case err != nil:
			return waitState{}, err
		case wpid != tid:
			return waitState{}, nil
		case ws.Exited() || ws.Signaled():
			return waitState{gone: true}, nil
		case !ws.Stopped():
			return waitState{}, nil
		}
		// A seized thread stops for PTRACE_INTERRUPT, or in a
		// group-stop, with PTRACE_EVENT_STOP; any other stop is a
		// signal on its way to the thread, which it must get back.
		if ws.TrapCause() == unix.PTRACE_EVENT_STOP {
			return waitState{stopped: true}, nil
		}
		return waitState{stopped: true, signal: int(ws.StopSignal())}, nil
	}
}
