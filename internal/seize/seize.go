// Package seize reads a running Linux process the way a job's collector
// must: it stops every thread with PTRACE_SEIZE and PTRACE_INTERRUPT and
// never sends the process a signal, so that the process runs on whatever
// becomes of the reader. A tracer that attached with PTRACE_ATTACH (as
// Delve does) and stopped threads with SIGSTOP leaves them in a group-stop
// when it is killed; a seized thread whose tracer dies simply resumes.
//
// A [Process] is the stopped process as a target.Target (with
// target.RegisterReader, FrameUnwinder, CodeLocator, Symbolizer,
// BitFieldLocator and VectorReader): memory through process_vm_readv,
// every thread's registers read once at the stop, the objects from
// /proc/PID/exe and the dynamic linker's list. It is read-only and knows
// one stop: Detach resumes the process and ends it.
package seize

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/ompd-go/ompd/internal/errjoin"
	"github.com/ompd-go/ompd/internal/liveobj"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/internal/pagecache"
	"github.com/ompd-go/ompd/internal/procfs"
	"github.com/ompd-go/ompd/target"
)

// Errors of Attach and of the reads.
var (
	// ErrExited reports that the process is gone (it ended, or was
	// killed).
	ErrExited = errors.New("process exited")
	// ErrTraced reports a process that another tracer (a debugger,
	// strace) already holds; a *TracedError names it.
	ErrTraced = errors.New("traced by another process")
	// ErrNotStopping reports a thread that did not stop within the
	// bound (StopTimeout), in uninterruptible sleep for instance.
	ErrNotStopping = errors.New("thread did not stop")
)

// StopTimeout bounds how long Attach waits for the threads to stop.
const StopTimeout = 10 * time.Second

// maxRounds bounds the rounds of listing, seizing and stopping threads
// (each round stops the threads the previous one found; only threads not
// stopped yet create new ones).
const maxRounds = 1000

// TracedError reports a process (or one of its threads) that another
// tracer holds. It matches ErrTraced.
type TracedError struct {
	Pid    int    // the process
	Tracer int    // the tracer's process id
	Comm   string // the tracer's command name, if known
}

func (e *TracedError) Error() string {
	who := strconv.Itoa(e.Tracer)
	if e.Comm != "" {
		who += " (" + e.Comm + ")"
	}
	return fmt.Sprintf("process %d is already traced by process %s: another debugger or tracer holds it", e.Pid, who)
}

// Is makes a TracedError match ErrTraced.
func (e *TracedError) Is(target error) bool { return target == ErrTraced }

// Process is a seized, stopped process. Its methods are safe for
// concurrent use.
type Process struct {
	pid int
	tr  *tracer

	mu       sync.Mutex
	threads  []target.Thread          // by id, with fs_base
	regs     map[int]target.Registers // every thread's, at the stop
	pending  map[int]int              // signals that stopped a thread, given back at the detach
	exited   error                    // set once the process is found gone
	detached bool
	pages    pagecache.Cache
	objOpts  []objfile.Option
	set      *objfile.Set // nil until the first lookup
	setErr   error
	look     liveobj.Lookups
}

// Attach seizes every thread of process pid and stops it (threads created
// meanwhile too), and reads their registers. ctx bounds the wait for the
// threads to stop (StopTimeout too) and, with objOpts, the searches for
// separate debug files. On failure every thread seized is let go.
func Attach(ctx context.Context, pid int, objOpts ...objfile.Option) (*Process, error) {
	if pid <= 0 {
		return nil, fmt.Errorf("seize: bad process id %d", pid)
	}
	if procfs.Gone("/proc/" + strconv.Itoa(pid)) {
		return nil, fmt.Errorf("process %d: %w", pid, ErrExited)
	}
	p := &Process{pid: pid, tr: newTracer(), regs: map[int]target.Registers{}, pending: map[int]int{}, objOpts: objOpts}
	p.look = liveobj.Lookups{Mu: &p.mu, Objects: p.setLocked, Memory: lockedMemory{p}, ThreadPointer: p.threadPointerLocked}
	var err error
	p.tr.do(func() { err = p.stopAll(ctx) })
	if err != nil {
		var derr error
		p.tr.do(func() { derr = p.releaseAll() })
		p.tr.close()
		if derr != nil && !errors.Is(derr, ErrExited) {
			err = errjoin.Join(err, derr)
		}
		return nil, err
	}
	return p, nil
}

// stopAll seizes and stops the threads, round after round until a round
// finds no new thread, then reads their registers. It runs on the tracer
// thread.
func (p *Process) stopAll(ctx context.Context) error {
	deadline := time.Now().Add(StopTimeout)
	seen := map[int]bool{}
	for round := 0; ; round++ {
		if round == maxRounds {
			return fmt.Errorf("process %d: new threads after %d rounds of stopping them", p.pid, maxRounds)
		}
		tids, err := procfs.Tasks(p.pid)
		if err != nil {
			if os.IsNotExist(err) {
				return fmt.Errorf("process %d: %w", p.pid, ErrExited)
			}
			return fmt.Errorf("process %d: listing threads: %w", p.pid, err)
		}
		var fresh []int
		for _, tid := range tids {
			if !seen[tid] {
				seen[tid] = true
				fresh = append(fresh, tid)
			}
		}
		if len(fresh) == 0 {
			break
		}
		var seized []int
		for _, tid := range fresh {
			switch err := ptraceSeize(tid); {
			case err == nil:
				seized = append(seized, tid)
			case isESRCH(err):
				// It ended meanwhile.
			default:
				if procfs.Gone(p.taskDir(tid)) {
					continue // an exiting thread refuses tracers
				}
				return p.seizeError(tid, err)
			}
		}
		for _, tid := range seized {
			p.threads = append(p.threads, target.Thread{ID: uint64(tid)})
			if err := ptraceInterrupt(tid); err != nil && !isESRCH(err) {
				return fmt.Errorf("process %d: thread %d: PTRACE_INTERRUPT: %w", p.pid, tid, err)
			}
		}
		for _, tid := range seized {
			if err := p.waitStop(ctx, tid, deadline); err != nil {
				return err
			}
		}
	}
	live := p.threads[:0]
	for _, th := range p.threads {
		if th.ID == 0 {
			continue // ended while stopping
		}
		regs, fsBase, err := getRegs(int(th.ID))
		if isESRCH(err) {
			continue // killed while stopped
		}
		if err != nil {
			return fmt.Errorf("process %d: thread %d: registers: %w", p.pid, th.ID, err)
		}
		// getRegs reads x86-64's registers only, where (TLS variant II)
		// pthread_t is the thread pointer itself.
		th.Pointer, th.Pthread = fsBase, fsBase
		p.regs[int(th.ID)] = regs
		live = append(live, th)
	}
	p.threads = live
	slices.SortFunc(p.threads, func(a, b target.Thread) int { return cmp.Compare(a.ID, b.ID) })
	if len(p.threads) == 0 {
		return fmt.Errorf("process %d: %w (no thread left)", p.pid, ErrExited)
	}
	return nil
}

// waitStop waits for seized thread tid to stop, polling so that the wait
// has a bound. A thread that ends meanwhile is dropped; one stopped by a
// signal keeps it for the detach.
func (p *Process) waitStop(ctx context.Context, tid int, deadline time.Time) error {
	sleep := 20 * time.Microsecond
	for {
		st, err := waitNoHang(tid)
		switch {
		case err != nil:
			return fmt.Errorf("process %d: thread %d: wait: %w", p.pid, tid, err)
		case st.gone:
			p.drop(tid)
			return nil
		case st.stopped:
			if st.signal != 0 {
				p.pending[tid] = st.signal
			}
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("process %d: waiting for thread %d to stop: %w", p.pid, tid, err)
		}
		if time.Now().After(deadline) {
			state := "unknown"
			if s, ok := procfs.ReadStat(p.taskDir(tid)); ok {
				state = string(s.State)
			}
			return fmt.Errorf("process %d: thread %d (state %s): %w within %v", p.pid, tid, state, ErrNotStopping, StopTimeout)
		}
		time.Sleep(sleep)
		sleep = min(2*sleep, 5*time.Millisecond)
	}
}

// drop forgets thread tid, which ended.
func (p *Process) drop(tid int) {
	for i := range p.threads {
		if p.threads[i].ID == uint64(tid) {
			p.threads[i].ID = 0
		}
	}
}

func (p *Process) taskDir(tid int) string {
	return "/proc/" + strconv.Itoa(p.pid) + "/task/" + strconv.Itoa(tid)
}

// seizeError says why thread tid could not be seized: another tracer
// holds it, or ptrace is not allowed.
func (p *Process) seizeError(tid int, err error) error {
	if tracer, comm := procfs.Tracer(tid); tracer != 0 {
		return fmt.Errorf("%w: %w", &TracedError{Pid: p.pid, Tracer: tracer, Comm: comm}, err)
	}
	return fmt.Errorf("process %d: thread %d: PTRACE_SEIZE: %w", p.pid, tid, err)
}

// releaseAll detaches from every thread seized, giving back the signals
// that stopped some. Threads that ended are no error; a process that ended
// as a whole gives ErrExited. It runs on the tracer thread.
func (p *Process) releaseAll() error {
	var errs []error
	gone := 0
	n := 0
	for _, th := range p.threads {
		if th.ID == 0 {
			continue
		}
		n++
		tid := int(th.ID)
		if err := ptraceDetach(tid, p.pending[tid]); err != nil {
			if isESRCH(err) {
				gone++
				p.reap(tid)
				continue
			}
			errs = append(errs, fmt.Errorf("thread %d: PTRACE_DETACH: %w", tid, err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("process %d: %w", p.pid, errjoin.Join(errs...))
	}
	if n > 0 && gone == n && procfs.Gone("/proc/"+strconv.Itoa(p.pid)) {
		return fmt.Errorf("process %d: %w (it ended while it was read)", p.pid, ErrExited)
	}
	return nil
}

// reapBound bounds the wait for an ended thread's exit to reach its
// tracer.
const reapBound = 2 * time.Second

// reap collects the exit of traced thread tid, which ended (killed while
// seized): until its tracer does, a thread other than the leader stays a
// zombie, and the leader, so the whole process, is never reported to its
// parent. The leader's exit is the parent's to collect, so it is left
// alone. It runs on the tracer thread.
func (p *Process) reap(tid int) {
	if tid == p.pid {
		return
	}
	for deadline := time.Now().Add(reapBound); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if st, err := waitNoHang(tid); err != nil || st.gone {
			return
		}
	}
}

// Pid is the process's id.
func (p *Process) Pid() int { return p.pid }

// Detach lets every thread go (each stopped by a signal gets it back) and
// closes the object files. A process that ended while it was read gives
// an error matching ErrExited: what was read before stays valid.
func (p *Process) Detach() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.detached {
		return nil
	}
	p.detached = true
	var err error
	p.tr.do(func() { err = p.releaseAll() })
	p.tr.close()
	p.pages.Clear()
	if p.set != nil {
		err = errjoin.Join(err, p.set.Close())
		p.set = nil
	}
	return err
}

// aliveLocked reports an error if the process can no longer be read.
func (p *Process) aliveLocked() error {
	if p.detached {
		return fmt.Errorf("process %d: detached", p.pid)
	}
	return p.exited
}

// goneLocked records and returns ErrExited if the process has ended.
func (p *Process) goneLocked() error {
	if p.exited == nil && procfs.Gone("/proc/"+strconv.Itoa(p.pid)) {
		p.exited = fmt.Errorf("process %d: %w (killed or ended while it was read)", p.pid, ErrExited)
	}
	return p.exited
}

// tracer is the OS thread every ptrace request of a Process comes from:
// Linux takes ptrace requests only from the thread that seized.
type tracer struct {
	req  chan func()
	once sync.Once
}

func newTracer() *tracer {
	t := &tracer{req: make(chan func())}
	go t.loop()
	return t
}

func (t *tracer) loop() {
	lockThread()
	for f := range t.req {
		f()
	}
	// The thread is not unlocked: it ends with this goroutine, and no
	// other goroutine runs on a thread that was a tracer.
}

// do runs f on the tracer thread and waits for it.
func (t *tracer) do(f func()) {
	done := make(chan struct{})
	t.req <- func() {
		defer close(done)
		f()
	}
	<-done
}

func (t *tracer) close() { t.once.Do(func() { close(t.req) }) }
