package delve

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/go-delve/delve/pkg/proc"
)

// Delve's native Linux backend can wait forever while it stops a process
// (wedge.md is the report for Delve's maintainers). When a breakpoint
// traps, processGroup.stop sends SIGSTOP to every thread it believes
// running and calls trapWaitInternal(-1, trapWaitHalt) until none is. If
// such a thread exits instead of stopping (an OpenMP worker leaving right
// after another thread hit ompd_bp_thread_end, typically), trapWaitInternal
// deletes it from its thread list and goes on waiting (`continue`) instead
// of returning to stop's loop: every remaining thread is already stopped
// and reported, so wait4 never returns and Continue hangs, with the whole
// program in ptrace-stop. Nothing the caller can do through Delve's API
// wakes it: Continue's context only asks for a manual stop, which that
// loop never looks at.
//
// continueLocked therefore runs Delve's Continue on a locked OS thread and
// watches it. When that thread has been blocked in wait4 for wedgeConfirm,
// every thread of the program is in ptrace-stop the whole time, and the
// blocked goroutine is inside processGroup.stop (so that the wait is the
// halting one, where a stop is what Delve waits for), it has Delve's own
// ptrace thread queue one SIGSTOP to one stopped thread and resume it: the
// thread stops again on the way back to user mode, before it runs an
// instruction, and the report is the SIGSTOP Delve's halting wait expects.
// Delve returns to stop's loop, finds every thread stopped, and Continue
// returns as it would have. Reaching Delve's ptrace thread is reflection
// on unexported fields, like the memory-thread workaround (workarounds.go),
// and runs only on the Delve version both were verified with.
//
// Should the wedge outlast wedgeGiveUp all the same (Delve lost another
// way, nudges that do not help), Continue gives up rather than wait
// forever: it returns ErrWedged, the program left stopped and detached
// (giveUp).

// wedgePoll is how often a running Continue is checked for the wedge, and
// wedgeConfirm how long the wedge must be seen without a break before the
// process is nudged.
const (
	wedgePoll    = 50 * time.Millisecond
	wedgeConfirm = 500 * time.Millisecond
)

// wedgeGiveUp bounds a wedge the nudge does not end (Delve lost another
// way, or a nudge that cannot reach Delve's ptrace thread): counted from
// the first time a call sees every thread of the program stopped while
// Delve waits, Continue then gives up (see giveUp). A variable for tests.
var wedgeGiveUp = 30 * time.Second

// continueWatched runs p.grp.Continue and returns its error, nudging
// Delve out of the wedge described above whenever it is caught in it, and
// giving up past wedgeGiveUp.
func (p *Process) continueWatched() error { return p.watch(p.grp.Continue) }

// watch runs cont (Delve's Continue) as continueWatched does.
func (p *Process) watch(cont func() error) error {
	type result struct{ err error }
	done := make(chan result, 1)
	tidc := make(chan int, 1)
	go func() {
		// Delve's halting wait4 runs on the goroutine that called
		// Continue: locked here, its OS thread can be watched.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		tidc <- syscall.Gettid()
		done <- result{cont()}
	}()
	waiter := <-tidc
	tick := time.NewTicker(wedgePoll)
	defer tick.Stop()
	var since, first time.Time
	for {
		select {
		case r := <-done:
			return r.err
		case now := <-tick.C:
			if !wedged(p.pid, waiter) {
				since = time.Time{}
				continue
			}
			if since.IsZero() {
				since = now
				continue
			}
			if now.Sub(since) < wedgeConfirm {
				continue
			}
			if first.IsZero() {
				first = now
			}
			if now.Sub(first) >= wedgeGiveUp {
				return p.giveUp(now.Sub(first))
			}
			if !haltingWaitInStack() {
				continue
			}
			since = time.Time{}
			// A failed nudge (a thread that vanished meanwhile) is
			// tried again once the wedge is confirmed again.
			if p.nudge() == nil {
				p.nudges.Add(1)
			}
		}
	}
}

// giveUp releases a process Delve is lost in and returns an error
// matching ErrWedged that says so. Through Delve's ptrace thread it puts
// back the code under every breakpoint, moves a thread that trapped on one
// back to it, and detaches every thread, the program stopped by SIGSTOP:
// it is left stopped, traced by no one, as it was at the stop, for another
// debugger to attach to (or for Kill). The goroutine inside Delve's wait stays
// there: nothing wakes it. The Process is unusable afterwards but for
// Kill and Wait.
func (p *Process) giveUp(waited time.Duration) error {
	err := fmt.Errorf("process %d: %w: every thread stopped for %v while Delve's native backend went on waiting for one (wedge.md)",
		p.pid, ErrWedged, waited.Round(time.Second))
	run, rerr := ptraceRunner(p.dt)
	if rerr == nil {
		var bps []*proc.Breakpoint
		for _, bp := range p.dt.Breakpoints().M {
			bps = append(bps, bp)
		}
		run(func() { rerr = releaseWedged(p.pid, bps) })
	}
	if rerr != nil {
		err = fmt.Errorf("%w; releasing it failed: %v", err, rerr)
	} else {
		err = fmt.Errorf("%w; it is left stopped and detached", err)
	}
	p.exited = err
	return err
}

// releaseWedged puts back the code under bps in process pid, moves each
// thread that trapped on one back to it, and detaches every thread, the
// process stopped (SIGSTOP). It runs on the tracer's thread.
func releaseWedged(pid int, bps []*proc.Breakpoint) error {
	var errs []error
	at := map[uint64]bool{}
	for _, bp := range bps {
		if len(bp.OriginalData) == 0 {
			continue
		}
		at[bp.Addr] = true
		if _, err := syscall.PtracePokeData(pid, uintptr(bp.Addr), bp.OriginalData); err != nil {
			errs = append(errs, fmt.Errorf("code at %#x: %w", bp.Addr, err))
		}
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return err
	}
	// A SIGSTOP for the process, pending while its threads are in
	// ptrace-stop: each one detached takes it, and the program stops as
	// a whole, traced by no one.
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		errs = append(errs, fmt.Errorf("SIGSTOP: %w", err))
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		var regs syscall.PtraceRegs
		if err := syscall.PtraceGetRegs(tid, &regs); err == nil && at[regs.Rip-1] {
			// Stopped by a breakpoint's int3, one byte past it.
			regs.Rip--
			if err := syscall.PtraceSetRegs(tid, &regs); err != nil {
				errs = append(errs, fmt.Errorf("thread %d: back to its breakpoint: %w", tid, err))
			}
		}
		if err := syscall.PtraceDetach(tid); err != nil && err != syscall.ESRCH {
			errs = append(errs, fmt.Errorf("thread %d: detach: %w", tid, err))
		}
	}
	// The stop reaches each thread as it is scheduled.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		stopped := true
		for _, t := range tasks {
			if st := taskState(pid, t.Name()); st != 'T' && st != 0 && st != 'Z' && st != 'X' {
				stopped = false
			}
		}
		if stopped {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("process %d: threads not stopped 5s after SIGSTOP", pid))
			break
		}
	}
	return errors.Join(errs...)
}

// wedged reports whether thread waiter of this process is blocked in wait4
// while every thread of process pid is in ptrace-stop.
func wedged(pid, waiter int) bool {
	sc, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(waiter) + "/syscall")
	if err != nil {
		return false
	}
	f := strings.Fields(string(sc))
	if len(f) == 0 || f[0] != strconv.Itoa(syscall.SYS_WAIT4) {
		return false
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, t := range tasks {
		if taskState(pid, t.Name()) != 't' {
			return false
		}
	}
	return true
}

// taskState is the state letter of thread tid of process pid, or 0.
func taskState(pid int, tid string) byte {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + tid + "/stat")
	if err != nil {
		return 0
	}
	return statState(b)
}

// statState is the state letter of a /proc stat file's content b, or 0.
func statState(b []byte) byte {
	// pid (comm) state ...: comm may hold spaces and parentheses, so
	// the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// haltingWaitInStack reports whether some goroutine waits in Delve's
// halting wait inside processGroup.stop: the only wait the nudge is meant
// for (elsewhere Delve would pass the SIGSTOP on to the program).
func haltingWaitInStack() bool {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	for _, g := range bytes.Split(buf, []byte("\n\n")) {
		if bytes.Contains(g, []byte("native.trapWaitInternal(")) && bytes.Contains(g, []byte("native.(*processGroup).stop(")) {
			return true
		}
	}
	return false
}

// nudge has Delve's ptrace thread queue a SIGSTOP to one stopped thread
// of the program and resume it, so that it reports a stop again.
func (p *Process) nudge() error {
	run, err := ptraceRunner(p.dt)
	if err != nil {
		return err
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(p.pid) + "/task")
	if err != nil {
		return err
	}
	// Prefer a thread Delve stopped itself (SIGSTOP) over one that
	// trapped; the leader first, since Delve always knows it.
	tids := []int{p.pid}
	for _, t := range tasks {
		if tid, err := strconv.Atoi(t.Name()); err == nil && tid != p.pid {
			tids = append(tids, tid)
		}
	}
	var ferr error
	run(func() {
		pick := -1
		for _, tid := range tids {
			var si [128]byte // siginfo_t
			_, _, e := syscall.Syscall6(syscall.SYS_PTRACE, syscall.PTRACE_GETSIGINFO, uintptr(tid), 0, uintptr(unsafe.Pointer(&si[0])), 0, 0)
			if e != 0 {
				continue
			}
			if pick < 0 {
				pick = tid
			}
			if int32(binary.NativeEndian.Uint32(si[:4])) == int32(syscall.SIGSTOP) {
				pick = tid
				break
			}
		}
		if pick < 0 {
			ferr = fmt.Errorf("no stopped thread of process %d answers ptrace", p.pid)
			return
		}
		if err := syscall.Tgkill(p.pid, pick, syscall.SIGSTOP); err != nil {
			ferr = fmt.Errorf("tgkill %d: %w", pick, err)
			return
		}
		if err := syscall.PtraceCont(pick, 0); err != nil {
			ferr = fmt.Errorf("resume thread %d: %w", pick, err)
		}
	})
	return ferr
}
