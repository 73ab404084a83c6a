package delve

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// startStopped starts argv with the given environment, working directory
// and standard files, stopped before its first instruction, and returns its
// pid. The process is a child of the calling program, in its own process
// group, stopped by SIGSTOP and not traced, ready for Delve to attach.
//
// Delve's native.Launch cannot give the new process an environment of its
// own (it always passes the debugger's), so we start the program ourselves:
// the child asks to be traced (PTRACE_TRACEME), which stops it right after
// execve; we then detach with SIGSTOP, which leaves it stopped, and Delve
// attaches to it.
func startStopped(argv, env []string, dir string, files []*os.File) (pid int, err error) {
	// ptrace requests must come from the thread that traces the child:
	// the one that forked it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	fds := make([]uintptr, len(files))
	for i, f := range files {
		fds[i] = f.Fd()
	}
	pid, err = syscall.ForkExec(argv[0], argv, &syscall.ProcAttr{
		Dir:   dir,
		Env:   env,
		Files: fds,
		Sys:   &syscall.SysProcAttr{Ptrace: true, Setpgid: true},
	})
	runtime.KeepAlive(files)
	if err != nil {
		return 0, fmt.Errorf("start %s: %w", argv[0], err)
	}
	fail := func(err error) (int, error) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(pid, &ws, syscall.WALL, nil)
		return 0, err
	}
	var ws syscall.WaitStatus
	for {
		_, err = syscall.Wait4(pid, &ws, syscall.WALL, nil)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		return fail(fmt.Errorf("start %s: wait for exec: %w", argv[0], err))
	}
	if !ws.Stopped() || ws.StopSignal() != syscall.SIGTRAP {
		return fail(fmt.Errorf("start %s: unexpected status %#x after exec", argv[0], uint32(ws)))
	}
	_, _, errno := syscall.Syscall6(syscall.SYS_PTRACE, syscall.PTRACE_DETACH, uintptr(pid), 0, uintptr(syscall.SIGSTOP), 0, 0)
	if errno != 0 {
		return fail(fmt.Errorf("start %s: detach: %w", argv[0], errno))
	}
	return pid, nil
}

// reap collects the exit status of our child pid, if it is still there to
// collect.
func reap(pid int) {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(pid, &ws, syscall.WALL, nil)
		if err != syscall.EINTR {
			return
		}
	}
}

// waitTraced collects the exit notification of a dying thread (or process)
// tid that we trace.
func waitTraced(tid int) {
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(tid, &ws, syscall.WALL, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil || ws.Exited() || ws.Signaled() {
			return
		}
	}
}

// readAuxv returns the value of the auxiliary vector entry typ of process
// pid.
func readAuxv(pid int, typ uint64) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/auxv", pid))
	if err != nil {
		return 0, err
	}
	for i := 0; i+16 <= len(b); i += 16 {
		k := le64(b[i:])
		if k == typ {
			return le64(b[i+8:]), nil
		}
		if k == 0 {
			break
		}
	}
	return 0, fmt.Errorf("auxv entry %d not found", typ)
}

func le64(b []byte) uint64 {
	_ = b[7]
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}
