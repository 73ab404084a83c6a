package delve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-delve/delve/pkg/proc"
	"github.com/go-delve/delve/pkg/proc/native"
	"github.com/go-delve/delve/pkg/version"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/target"
)

// Process is a process that this package controls through Delve: one it
// launched or attached to. It embeds the Target that reads it.
//
// Process methods are safe for concurrent use; they share the Target's
// mutex, so that while Continue runs, other methods wait for the process
// to stop (except Kill, which works at any time).
type Process struct {
	*Target
	grp   *proc.TargetGroup
	pid   int
	child bool // we started it: we reap it

	// Guarded by Target.mu.
	bps    map[uint64]int // our breakpoints: address -> Delve logical id
	nextID int
	status *ExitError // set once the process ended

	// gone is set once the process ended or was detached: Kill reads it
	// without the mutex, so as not to signal a pid that is not ours.
	gone atomic.Bool
	// running is set while Continue runs the process.
	running atomic.Bool
	// nudges counts the times Continue woke Delve from its lost wait
	// (wedge.go).
	nudges atomic.Int64
}

// firstLogicalID numbers our Delve breakpoints far from those of a Delve
// session (which counts from 1).
const firstLogicalID = 1 << 20

// Launch starts the program argv[0] (searched in PATH if it contains no
// slash) with arguments argv[1:] under Delve, and returns it stopped at its
// entry point: the dynamic loader has mapped its libraries, the program's
// own code has not run yet.
//
// Delve 1.27's launcher cannot pass an environment of its own to the
// program, so Launch starts the program itself, stopped right after
// execve, with the environment and working directory of the options, and
// attaches Delve to it. The program is a child of the caller, in its own
// process group.
//
// ctx bounds the launch: when it is done before the program reaches its
// entry point, Launch kills the program and returns ctx's error.
func Launch(ctx context.Context, argv []string, opts ...Option) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("delve: launch: empty command line")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := checkDelveVersion(version.DelveVersion); err != nil {
		return nil, err
	}
	var c launchConfig
	for _, o := range opts {
		o(&c)
	}
	argv = append([]string(nil), argv...)
	if !strings.Contains(argv[0], "/") {
		p, err := exec.LookPath(argv[0])
		if err != nil {
			return nil, fmt.Errorf("delve: launch: %w", err)
		}
		argv[0] = p
	}
	env := c.env
	if !c.envSet {
		env = os.Environ()
	}
	env = mergeEnv(env, c.extraEnv)
	files := []*os.File{c.stdin, c.stdout, c.stderr}
	if files[0] == nil {
		devnull, err := os.Open(os.DevNull)
		if err != nil {
			return nil, fmt.Errorf("delve: launch: %w", err)
		}
		defer devnull.Close()
		files[0] = devnull
	}
	if files[1] == nil {
		files[1] = os.Stdout
	}
	if files[2] == nil {
		files[2] = os.Stderr
	}
	pid, err := startStopped(argv, env, c.dir, files)
	if err != nil {
		return nil, fmt.Errorf("delve: launch: %w", err)
	}
	grp, err := native.Attach(pid, nil, c.debug.Dirs)
	if err != nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		reap(pid)
		return nil, fmt.Errorf("delve: launch %s: attach: %w", argv[0], err)
	}
	p := newProcess(grp, pid, true, c.objOptions())
	if err := p.runToEntry(ctx); err != nil {
		_ = p.Kill()
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("delve: launch %s: %w", argv[0], err)
	}
	return p, nil
}

// mergeEnv appends extra to env; later entries override earlier ones of
// the same name, and each name appears once.
func mergeEnv(env, extra []string) []string {
	all := append(append([]string(nil), env...), extra...)
	seen := make(map[string]bool, len(all))
	out := make([]string, 0, len(all))
	for i := len(all) - 1; i >= 0; i-- {
		k, _, _ := strings.Cut(all[i], "=")
		if seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, all[i])
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// Attach attaches Delve to the running process pid and stops it. Detach
// releases it; Detach(true) or Kill ends it.
//
// If pid is a child of the caller (started with os/exec, say), do not wait
// for it (exec.Cmd.Wait, os.Process.Wait) while it is attached: a wait for a
// traced child consumes the ptrace stops that Delve waits for, and Attach or
// Continue would hang. Wait after Detach.
//
// Of the options, only the debug-information ones (WithDebugDirs,
// WithDebuginfod, WithDebuginfodFromEnv, WithDebugContext) apply to an
// attached process.
//
// ctx bounds the attach: when it is done, Attach returns ctx's error at
// once. Delve's attach waits for every thread to stop, which a thread
// can delay as long as its reason lasts (one in vfork until its child
// execs or exits, one in an uninterruptible sleep): that attach then
// goes on in the background and lets the process go, running, once it
// ends.
func Attach(ctx context.Context, pid int, opts ...Option) (*Process, error) {
	if err := checkDelveVersion(version.DelveVersion); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var c launchConfig
	for _, o := range opts {
		o(&c)
	}
	grp, err := nativeAttach(ctx, pid, c.debug.Dirs)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
			return nil, fmt.Errorf("delve: attach %d: its threads did not all stop in time: %w", pid, err)
		}
		return nil, fmt.Errorf("delve: attach %d: %w", pid, err)
	}
	p := newProcess(grp, pid, false, c.objOptions())
	if err := ctx.Err(); err != nil {
		_ = p.Detach(false)
		return nil, err
	}
	return p, nil
}

// nativeAttach is Delve's attach to process pid, bounded by ctx: when ctx
// is done first it returns ctx's error, and the attach, left to end in
// the background, detaches from the process when it does.
func nativeAttach(ctx context.Context, pid int, debugDirs []string) (*proc.TargetGroup, error) {
	type result struct {
		grp *proc.TargetGroup
		err error
	}
	done := make(chan result, 1)
	go func() {
		grp, err := native.Attach(pid, nil, debugDirs)
		done <- result{grp, err}
	}()
	select {
	case r := <-done:
		return r.grp, r.err
	case <-ctx.Done():
		go func() {
			if r := <-done; r.err == nil {
				_ = r.grp.Detach(false)
			}
		}()
		return nil, ctx.Err()
	}
}

func newProcess(grp *proc.TargetGroup, pid int, child bool, objOpts []objfile.Option) *Process {
	return &Process{
		Target: newTarget(grp.Selected, objOpts),
		grp:    grp,
		pid:    pid,
		child:  child,
		bps:    make(map[uint64]int),
		nextID: firstLogicalID,
	}
}

// Group returns the Delve target group of the process. Use it only while
// no Process or Target method runs.
func (p *Process) Group() *proc.TargetGroup { return p.grp }

// Pid returns the process id.
func (p *Process) Pid() int { return p.pid }

// ExitStatus returns the exit status of the process once it has ended
// while it ran (minus the signal number if a signal killed it), and
// whether it has.
func (p *Process) ExitStatus() (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.status == nil {
		return 0, false
	}
	return p.status.Status, true
}

// runToEntry runs a process stopped at execve to its entry point, where the
// dynamic loader has loaded its libraries.
func (p *Process) runToEntry(ctx context.Context) error {
	const atEntry = 9 // AT_ENTRY
	entry, err := readAuxv(p.pid, atEntry)
	if err != nil {
		return fmt.Errorf("entry point: %w", err)
	}
	_, err = p.RunTo(ctx, entry)
	return err
}

// Continue resumes the process until a thread stops at a breakpoint (any
// breakpoint set in Delve), the process ends, or ctx is done. It drops
// the Target's caches first.
//
// When the process ends, Continue returns an *ExitError (matching
// ErrExited). When ctx is done, it stops the process and returns ctx's
// error. After Continue returns, an ompd.AddressSpace over the Target needs
// Refresh: see ContinueAndRefresh.
func (p *Process) Continue(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.continueLocked(ctx)
}

func (p *Process) continueLocked(ctx context.Context) error {
	if err := p.aliveLocked(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	// See workarounds.go.
	if err := pinMemThread(p.dt, p.pid); err != nil {
		return fmt.Errorf("delve: continue process %d: %w", p.pid, err)
	}
	p.dropCachesLocked()
	var (
		runMu   sync.Mutex
		running = true
		halted  bool
	)
	stop := context.AfterFunc(ctx, func() {
		runMu.Lock()
		defer runMu.Unlock()
		if running {
			halted = true
			_ = p.grp.RequestManualStop()
		}
	})
	p.running.Store(true)
	err := p.continueWatched()
	p.running.Store(false)
	runMu.Lock()
	running = false
	runMu.Unlock()
	stop()
	p.dropCachesLocked()
	if err != nil {
		var pe proc.ErrProcessExited
		if errors.As(err, &pe) {
			p.setExitedLocked(&ExitError{Pid: p.pid, Status: pe.Status})
			return p.status
		}
		if ok, verr := p.dt.Valid(); !ok {
			p.setExitedLocked(exitedErr(p.pid, verr))
			return p.exited
		}
		return fmt.Errorf("delve: continue process %d: %w", p.pid, err)
	}
	if halted {
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// setExitedLocked records that the process is gone and releases what Delve
// and the kernel keep for it.
func (p *Process) setExitedLocked(err error) {
	var ee *ExitError
	if errors.As(err, &ee) && p.status == nil {
		p.status = ee
	}
	if p.exited == nil {
		p.exited = err
	}
	p.gone.Store(true)
	clear(p.bps)
	_ = p.closeObjectsLocked()
	if p.child {
		// Delve usually reaped it already; if not (it died between two
		// waits), do it now.
		var ws syscall.WaitStatus
		_, _ = syscall.Wait4(p.pid, &ws, syscall.WALL|syscall.WNOHANG, nil)
	}
}

// ContinueAndRefresh calls Continue, then as.Refresh so that the address
// space reads the new state (as may be nil).
func (p *Process) ContinueAndRefresh(ctx context.Context, as *ompd.AddressSpace) error {
	err := p.Continue(ctx)
	if as != nil {
		as.Refresh()
	}
	return err
}

// SetBreakpoint sets a breakpoint at addr. Setting one where this Process
// already has one does nothing.
func (p *Process) SetBreakpoint(addr uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, err := p.setBreakpointLocked(addr)
	return err
}

// setBreakpointLocked sets a breakpoint at addr and reports whether it is
// new (false if a breakpoint of ours or of a Delve session was there).
func (p *Process) setBreakpointLocked(addr uint64) (bool, error) {
	if err := p.aliveLocked(); err != nil {
		return false, err
	}
	if _, ok := p.bps[addr]; ok {
		return false, nil
	}
	id := p.nextID
	p.nextID++
	if _, err := p.dt.SetBreakpoint(id, addr, proc.UserBreakpoint, nil); err != nil {
		var exists proc.BreakpointExistsError
		if errors.As(err, &exists) {
			return false, nil
		}
		return false, fmt.Errorf("delve: breakpoint at %#x: %w", addr, err)
	}
	p.bps[addr] = id
	return true, nil
}

// ClearBreakpoint removes the breakpoint SetBreakpoint set at addr.
func (p *Process) ClearBreakpoint(addr uint64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.clearBreakpointLocked(addr)
}

func (p *Process) clearBreakpointLocked(addr uint64) error {
	id, ok := p.bps[addr]
	if !ok {
		return fmt.Errorf("delve: no breakpoint at %#x: %w", addr, target.ErrNotFound)
	}
	delete(p.bps, addr)
	if err := p.aliveLocked(); err != nil {
		return nil // gone with the process
	}
	err := p.dt.ClearBreakpoint(addr)
	delete(p.dt.Breakpoints().Logical, id)
	if err != nil {
		return fmt.Errorf("delve: clear breakpoint at %#x: %w", addr, err)
	}
	return nil
}

// BreakAt sets a breakpoint at the function called name (a symbol of the
// executable or of a loaded library, see LookupSymbol) and returns its
// address.
func (p *Process) BreakAt(name string) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	addr, err := p.lookupSymbolLocked(name)
	if err != nil {
		return 0, err
	}
	if _, err := p.setBreakpointLocked(addr); err != nil {
		return 0, err
	}
	return addr, nil
}

// Stop is a thread stopped at a breakpoint.
type Stop struct {
	TID  uint64 // kernel thread id
	Addr uint64 // breakpoint address
}

// Stopped lists the threads that stopped at a breakpoint in the last
// Continue, ascending by thread id. Several threads can hit breakpoints at
// the same time.
func (p *Process) Stopped() []Stop {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stoppedLocked()
}

func (p *Process) stoppedLocked() []Stop {
	if p.aliveLocked() != nil {
		return nil
	}
	var out []Stop
	for _, th := range p.dt.ThreadList() {
		bs := th.Breakpoint()
		if bs == nil || bs.Breakpoint == nil || !bs.Active {
			continue
		}
		out = append(out, Stop{TID: uint64(th.ThreadID()), Addr: bs.Breakpoint.Addr})
	}
	sortStops(out)
	return out
}

func sortStops(s []Stop) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].TID < s[j-1].TID; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// RunTo sets a temporary breakpoint at addr, continues until a thread
// stops there (other breakpoints that are hit on the way are passed over),
// and removes the breakpoint. It returns the threads stopped at addr.
func (p *Process) RunTo(ctx context.Context, addr uint64) ([]Stop, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runToLocked(ctx, addr)
}

func (p *Process) runToLocked(ctx context.Context, addr uint64) ([]Stop, error) {
	isNew, err := p.setBreakpointLocked(addr)
	if err != nil {
		return nil, err
	}
	if isNew {
		defer func() { _ = p.clearBreakpointLocked(addr) }()
	}
	for {
		if err := p.continueLocked(ctx); err != nil {
			return nil, err
		}
		var at []Stop
		for _, s := range p.stoppedLocked() {
			if s.Addr == addr {
				at = append(at, s)
			}
		}
		if len(at) > 0 {
			return at, nil
		}
	}
}

// RunToFunction is RunTo at the function called name (see LookupSymbol),
// for instance "stopme" or "main".
func (p *Process) RunToFunction(ctx context.Context, name string) ([]Stop, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	addr, err := p.lookupSymbolLocked(name)
	if err != nil {
		return nil, err
	}
	return p.runToLocked(ctx, addr)
}

// OpenRuntime returns the OpenMP address space of the process. If the
// OpenMP runtime is not loaded or has not initialized itself yet, it first
// continues the process until it has (until the runtime calls
// ompd_dll_locations_valid); a program that never initializes it runs to
// its end, and OpenRuntime returns an error matching ErrExited.
func (p *Process) OpenRuntime(ctx context.Context) (*ompd.AddressSpace, error) {
	as, err := ompd.Open(p.Target)
	if err == nil || !errors.Is(err, ompd.ErrUnavailable) && !errors.Is(err, ompd.ErrNoRuntime) {
		return as, err
	}
	p.mu.Lock()
	addr, lerr := p.lookupSymbolLocked("ompd_dll_locations_valid")
	if lerr != nil {
		// LLVM 13-16 compile it as a C++ function.
		addr, lerr = p.lookupSymbolLocked(objfile.CXXFuncName("ompd_dll_locations_valid"))
	}
	if lerr != nil {
		p.mu.Unlock()
		// A runtime without OMPD support, or none at all: Open said why.
		return nil, err
	}
	_, rerr := p.runToLocked(ctx, addr)
	p.mu.Unlock()
	if rerr != nil {
		return nil, fmt.Errorf("delve: waiting for the OpenMP runtime to initialize: %w", rerr)
	}
	return ompd.Open(p.Target)
}

// Detach releases the process: it goes on running (kill false) or is
// killed (kill true). The Process (and its Target) cannot be used
// afterwards, except for ExitStatus and Wait. Detaching from a process that
// has ended is not an error.
//
// A program that Launch started and Detach(false) released is still a
// child of the caller: call Wait to collect it once it exits, as with
// exec.Cmd.
func (p *Process) Detach(kill bool) error {
	if kill {
		return p.Kill()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited != nil {
		p.collectLocked()
		return nil
	}
	// Remove our breakpoints from the code first: Delve's Detach removes
	// every breakpoint too, this only forgets our records of them.
	clear(p.bps)
	err := p.grp.Detach(false)
	p.exited = fmt.Errorf("process %d: %w", p.pid, ErrDetached)
	p.gone.Store(true)
	p.dropCachesLocked()
	_ = p.closeObjectsLocked()
	if err != nil {
		return fmt.Errorf("delve: detach process %d: %w", p.pid, err)
	}
	return nil
}

// Kill kills the process and waits until it is gone. It works while
// Continue runs too (Continue then returns an *ExitError). Killing a
// process that has ended is not an error.
func (p *Process) Kill() error {
	if p.running.Load() && !p.gone.Load() {
		// Continue holds the mutex: SIGKILL needs no ptrace, and Delve's
		// wait loop in Continue collects the dying threads.
		_ = syscall.Kill(p.pid, syscall.SIGKILL)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited != nil {
		p.collectLocked()
		return nil
	}
	p.killStoppedLocked()
	p.setExitedLocked(&ExitError{Pid: p.pid, Status: -int(syscall.SIGKILL)})
	return nil
}

// collectLocked collects a process that a read found dead (killed from
// outside) and lets Delve forget it; once gone, it does nothing.
func (p *Process) collectLocked() {
	if !p.gone.Load() {
		p.killStoppedLocked()
		p.setExitedLocked(p.exited)
	}
}

// killStoppedLocked kills the stopped, traced process and collects its
// threads. Delve's own Detach(true) cannot do it for a process it attached
// to: it would send SIGINT, not SIGKILL.
func (p *Process) killStoppedLocked() {
	var tids []int
	for _, th := range p.dt.ThreadList() {
		if th.ThreadID() != p.pid {
			tids = append(tids, th.ThreadID())
		}
	}
	sigPid := p.pid
	if p.child {
		sigPid = -p.pid // Launch made the program a process group leader
	}
	_ = syscall.Kill(sigPid, syscall.SIGKILL)
	// A traced thread that dies waits for its tracer (us) to collect it,
	// and the leader cannot be collected before the other threads are.
	for _, tid := range tids {
		waitTraced(tid)
	}
	waitTraced(p.pid)
	// Now let Delve forget the process; its detach fails on the dead
	// threads, which is what we want.
	_ = p.grp.Detach(false)
}

// Wait waits until a program that Launch started and Detach(false)
// released exits, and returns its exit status (minus the signal number if
// a signal killed it). For a program that ended while Delve controlled it,
// it returns its status at once. It is an error for a process that Attach
// attached to (wait for it where it was started) or one still attached.
//
// Do not Attach again to a released program while Wait runs: a wait for a
// traced child consumes the ptrace stops Delve waits for (this holds for
// exec.Cmd.Wait and os.Process.Wait on a program that Attach attaches to as
// well).
func (p *Process) Wait() (int, error) {
	p.mu.Lock()
	if p.status != nil {
		defer p.mu.Unlock()
		return p.status.Status, nil
	}
	if !p.child {
		p.mu.Unlock()
		return 0, fmt.Errorf("delve: wait for process %d: not started by Launch", p.pid)
	}
	if !errors.Is(p.exited, ErrDetached) && !errors.Is(p.exited, ErrWedged) {
		p.mu.Unlock()
		return 0, fmt.Errorf("delve: wait for process %d: still attached (Detach(false) first)", p.pid)
	}
	p.mu.Unlock()
	var ws syscall.WaitStatus
	for {
		_, err := syscall.Wait4(p.pid, &ws, 0, nil)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("delve: wait for process %d: %w", p.pid, err)
		}
		break
	}
	st := ws.ExitStatus()
	if ws.Signaled() {
		st = -int(ws.Signal())
	}
	p.mu.Lock()
	p.status = &ExitError{Pid: p.pid, Status: st}
	p.mu.Unlock()
	return st, nil
}
