package delverpc

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"net/rpc"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-delve/delve/service/api"
	"github.com/go-delve/delve/service/rpc2"

	"github.com/ompd-go/ompd/internal/liveobj"
	"github.com/ompd-go/ompd/internal/pagecache"
	"github.com/ompd-go/ompd/internal/targetopt"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/debuginfod"
)

// DefaultTimeout bounds every request to the server unless WithTimeout says
// otherwise.
const DefaultTimeout = 10 * time.Second

// bg is the context of requests made by methods that take none; the
// connection's timeout bounds them.
var bg = context.Background()

// An Option configures Dial.
type Option func(*config)

type config struct {
	files   targetopt.Files
	debug   targetopt.Debug
	timeout time.Duration
	exe     string
}

// WithTimeout bounds each request to the server (default DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithExecutable names the local copy of the debugged program's executable.
// Without it Dial tries the absolute path of the program's command line (as
// the path options map it), then /proc/PID/exe of a server on this machine;
// a candidate whose GNU build-id differs from the one in the process's
// memory is refused.
func WithExecutable(path string) Option {
	return func(c *config) { c.exe = path }
}

// WithSysroot looks for the files the server names (absolute paths on the
// server's machine) under dir, as gdb's "set sysroot" does.
func WithSysroot(dir string) Option { return func(c *config) { c.files.Sysroot = dir } }

// WithFileMap maps paths as the server names them to local paths, one file
// at a time; it wins over WithSysroot and WithSearchPath. The map is copied.
func WithFileMap(m map[string]string) Option { return func(c *config) { c.files.AddMap(m) } }

// WithSearchPath also looks for a file by its base name in each of dirs,
// after the path the server names (gdb's solib-search-path).
func WithSearchPath(dirs ...string) Option { return func(c *config) { c.files.AddSearch(dirs...) } }

// WithDebugDirs sets the global debug directories where the separate debug
// files of stripped objects are looked for (default /usr/lib/debug; none
// if dirs is empty).
func WithDebugDirs(dirs ...string) Option { return func(c *config) { c.debug.SetDirs(dirs...) } }

// WithDebuginfod makes lookups ask the client's debuginfod servers for
// missing debug files; nil (the default) asks none.
func WithDebuginfod(client *debuginfod.Client) Option {
	return func(c *config) { c.debug.SetDebuginfod(client) }
}

// WithDebuginfodFromEnv uses the debuginfod servers of the environment
// (DEBUGINFOD_URLS, ...), read when Dial runs.
func WithDebuginfodFromEnv() Option { return func(c *config) { c.debug.SetDebuginfodFromEnv() } }

// WithDebugContext bounds every search for separate debug files (debuginfod
// downloads in particular) for the Target's whole life.
func WithDebugContext(ctx context.Context) Option { return func(c *config) { c.debug.Ctx = ctx } }

// Target is the process a Delve server holds, stopped, as a target.Target.
// It also implements target.Symbolizer and target.BitFieldLocator.
//
// It reads through the server only: memory (ExamineMemory), threads and
// their registers (State, ListRegisters) and the loaded libraries
// (ListDynamicLibraries). It never resumes, stops, steps or writes the
// process, and sets no breakpoint.
//
// A Target answers for the stop that the last Update (or Dial) saw, and
// caches what it read until Update sees another stop. Its methods are safe
// for concurrent use.
type Target struct {
	c    *conn
	cfg  config
	mu   sync.Mutex // guards everything below
	stop stopInfo   // the stop the caches belong to
	err  error      // why the process cannot be read now (running, exited), or nil

	pages   pagecache.Cache // memory of this stop
	threads []target.Thread // nil until listed in this stop
	regs    map[uint64]target.Registers
	objs    *objects // nil until loaded in this stop
	opened  map[imageKey]*image

	look liveobj.Lookups // the lookups answered from objs

	smu     sync.Mutex // guards pending
	pending *stateCall // the State request under way, or nil
}

// stateCall is a State request, which the server answers once the process
// is stopped (and no core dump is under way).
type stateCall struct {
	ready chan struct{} // closed once answered
	call  *rpc.Call     // the answer, set before ready is closed
	reply *rpc2.StateOut
}

// stateWait is how long Update waits for the server's state before it
// takes the process to be running.
const stateWait = time.Second

// stopInfo identifies a stop of the process, as far as the server's state
// tells stops apart.
type stopInfo struct {
	pid     int
	key     string
	threads []int // OS thread ids, ascending
	current int
	cmdline string
	hits    map[int]uint64 // breakpoint id -> total hit count
}

// Dial connects to the Delve server at addr (HOST:PORT of a
// "dlv --headless --accept-multiclient --api-version 2" server) and
// returns its process as it stands. The server must speak API version 2;
// Dial checks that before anything else and never changes the version the
// server serves. It must also accept several clients: a server without
// --accept-multiclient refuses a second client, and, if Dial's connection is
// its first, it ends when that connection closes (Delve's behaviour), so
// Dial fails with ErrNotMulticlient then. Dial succeeds while the process is running, but the
// Target's reads then fail with ErrRunning until Update sees a stop.
//
// Close the Target to close the connection; that leaves the server, its
// other clients and the process as they are.
func Dial(ctx context.Context, addr string, opts ...Option) (*Target, error) {
	cfg := config{timeout: DefaultTimeout}
	for _, o := range opts {
		o(&cfg)
	}
	cfg.debug.Resolve()
	c, err := dial(ctx, addr, cfg.timeout, maxAnswer)
	if err != nil {
		return nil, err
	}
	var v api.GetVersionOut
	if err := c.call(ctx, true, "GetVersion", api.GetVersionIn{}, &v); err != nil {
		c.close()
		if errors.Is(err, ErrTimeout) || errors.Is(err, ErrDisconnected) {
			return nil, fmt.Errorf("%w (is %s a Delve headless server?)", err, addr)
		}
		return nil, err
	}
	if v.APIVersion != 2 {
		c.close()
		return nil, fmt.Errorf("delverpc: %s: %w: version %d (Delve %s); ompd-go needs --api-version 2", addr, ErrAPIVersion, v.APIVersion, v.DelveVersion)
	}
	var mc rpc2.IsMulticlientOut
	if err := c.call(ctx, false, "IsMulticlient", rpc2.IsMulticlientIn{}, &mc); err != nil {
		c.close()
		return nil, err
	}
	if !mc.IsMulticlient {
		// Nothing can be done now: closing this connection ends the
		// server. Say so.
		c.close()
		return nil, fmt.Errorf("delverpc: %s: %w: start it with --accept-multiclient (this connection was its only client: the server ends with it)", addr, ErrNotMulticlient)
	}
	t := &Target{c: c, cfg: cfg, opened: make(map[imageKey]*image)}
	t.look = liveobj.Lookups{Mu: &t.mu, Objects: t.setLocked, Memory: lockedMemory{t}, ThreadPointer: t.threadPointerLocked}
	if _, err := t.Update(ctx); err != nil && !errors.Is(err, ErrRunning) {
		t.Close()
		return nil, err
	}
	return t, nil
}

// Close closes the connection and the object files the Target opened. It
// does not detach the server from the process nor resume it.
func (t *Target) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	errs := []error{t.c.close()}
	for k, im := range t.opened {
		if im.o != nil {
			errs = append(errs, im.o.Close())
		}
		delete(t.opened, k)
	}
	t.objs = nil
	return errors.Join(errs...)
}

// Update asks the server for its state and reports whether the process
// stopped again since the last Update (or Dial): then the Target drops what
// it cached, and the caller must call Refresh on an ompd.AddressSpace
// opened over it too. A process that is running gives ErrRunning, one that
// exited ErrExited; reads fail with the same error until a later Update
// sees the process stopped.
//
// Stops are told apart by the process id, the threads and their program
// counters, the selected thread, and the breakpoints' hit counts (one that
// grew; breakpoints the user adds or removes do not count): a stop that
// differs in none of these (an interrupt of a program whose threads all
// wait in the same system calls as at the last stop) counts as the same
// stop. Seeing the process running in between always counts. Refresh
// drops the caches unconditionally.
func (t *Target) Update(ctx context.Context) (changed bool, err error) {
	info, now, err := t.observe(ctx)
	if err != nil {
		return false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if now != nil {
		// Whatever runs now, what was cached belongs to the past.
		wasStopped := t.err == nil
		t.err = now
		t.stop = stopInfo{hits: t.stop.hits}
		t.dropLocked()
		return wasStopped, now
	}
	changed = t.err != nil || info.key != t.stop.key || hitsGrew(t.stop.hits, info.hits)
	t.err = nil
	if changed {
		t.stop = info
		t.dropLocked()
	} else {
		t.stop.hits = info.hits // breakpoints added or removed meanwhile
	}
	return changed, nil
}

// maxObserve bounds the attempts at a consistent view of a stop.
const maxObserve = 5

// observe asks the server for its state and breakpoints. A process that
// cannot be read gives now (ErrRunning, ErrExited); a failed request err.
// The breakpoints are asked between two States that must agree: a stop
// that came in between would mix two stops.
func (t *Target) observe(ctx context.Context) (info stopInfo, now, err error) {
	s1, now, err := t.state(ctx)
	for i := 0; ; i++ {
		if now != nil || err != nil {
			return stopInfo{}, now, err
		}
		var bps rpc2.ListBreakpointsOut
		if err := t.c.call(ctx, false, "ListBreakpoints", rpc2.ListBreakpointsIn{}, &bps); err != nil {
			return stopInfo{}, nil, err
		}
		var s2 *api.DebuggerState
		s2, now, err = t.state(ctx)
		if now == nil && err == nil && (stopOf(s1, nil).key == stopOf(s2, nil).key || i == maxObserve) {
			return stopOf(s2, bps.Breakpoints), nil, nil
		}
		s1 = s2
	}
}

// state asks the server for its state as it is now: stopped (the state),
// or running, dumping a core or exited (now).
//
// It never asks State with NonBlocking: Delve 1.27 answers that, while a
// core dump is under way, without unlocking the dump's mutex, and the
// server is wedged for good (dumpstate.md). A dump the user starts at any
// moment, between any two requests of this client, can meet it, so no
// check beforehand makes it safe. A blocking State waits for the server's
// process lock instead, which the server holds while the process runs or
// a dump is written: state waits for it for stateWait, then says the
// process is running (or, if DumpWait says so, that the server dumps a
// core). The request stays under way; the next call waits for the same
// answer, unless it came before that call, when it may belong to an
// earlier stop and a new request is sent.
func (t *Target) state(ctx context.Context) (*api.DebuggerState, error, error) {
	if err := t.c.ready(true); err != nil {
		return nil, nil, err
	}
	t.smu.Lock()
	p := t.pending
	if p != nil {
		select {
		case <-p.ready:
			p = nil
		default:
		}
	}
	if p == nil {
		p = &stateCall{ready: make(chan struct{}), reply: new(rpc2.StateOut)}
		done := make(chan *rpc.Call, 1)
		t.c.send("State", rpc2.StateIn{}, p.reply, done)
		go func() {
			p.call = <-done
			close(p.ready)
		}()
		t.pending = p
	}
	t.smu.Unlock()

	timer := time.NewTimer(stateWait)
	defer timer.Stop()
	select {
	case <-p.ready:
	case <-ctx.Done():
		return nil, nil, fmt.Errorf("delverpc: %s: State: %w", t.c.addr, ctx.Err())
	case <-timer.C:
		var dw rpc2.DumpWaitOut
		if err := t.c.call(ctx, true, "DumpWait", rpc2.DumpWaitIn{Wait: 0}, &dw); err != nil {
			return nil, nil, err
		}
		if dw.State.Dumping {
			return nil, fmt.Errorf("delverpc: %w: the server is dumping a core", ErrRunning), nil
		}
		return nil, fmt.Errorf("delverpc: %w: the server gave no state within %v, as while the process runs (or the server is busy): stop it in the debugger, then update", ErrRunning, stateWait), nil
	}
	err := t.c.result("State", p.call)
	switch {
	case errors.Is(err, ErrExited):
		return nil, fmt.Errorf("delverpc: %w", err), nil
	case err != nil:
		return nil, nil, err
	}
	s := p.reply.State
	switch {
	case s == nil:
		return nil, nil, &ServerError{Method: "State", Msg: "no state in the answer"}
	case s.Exited:
		return nil, fmt.Errorf("delverpc: process %d: %w (status %d)", s.Pid, ErrExited, s.ExitStatus), nil
	case s.Running:
		return nil, fmt.Errorf("delverpc: %w: stop it in the debugger, then update", ErrRunning), nil
	case s.Recording || s.CoreDumping:
		return nil, fmt.Errorf("delverpc: %w: the server is recording or dumping a core", ErrRunning), nil
	}
	return s, nil, nil
}

// hitsGrew reports whether a breakpoint was hit since before: a count
// grew, or a breakpoint not seen before has hits.
func hitsGrew(before, after map[int]uint64) bool {
	for id, n := range after {
		if n > before[id] {
			return true
		}
	}
	return false
}

// DefaultPoll is how often WaitStop asks the server for its state unless
// told otherwise.
const DefaultPoll = 200 * time.Millisecond

// WaitStop waits until the process stops at a new stop (Update reports a
// change with no error), asking the server every poll (DefaultPoll if
// poll <= 0), and returns nil then; or until ctx ends, or the process
// exits (ErrExited) or the connection fails. While the process runs it
// keeps waiting. It lets a tool follow the user's stops:
//
//	for t.WaitStop(ctx, 0) == nil {
//		as.Refresh()
//		... show the new stop ...
//	}
func (t *Target) WaitStop(ctx context.Context, poll time.Duration) error {
	if poll <= 0 {
		poll = DefaultPoll
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		changed, err := t.Update(ctx)
		switch {
		case err == nil && changed:
			return nil
		case err != nil && !errors.Is(err, ErrRunning):
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// stopOf summarizes a stop.
func stopOf(s *api.DebuggerState, bps []*api.Breakpoint) stopInfo {
	info := stopInfo{pid: s.Pid, cmdline: s.TargetCommandLine}
	var b strings.Builder
	fmt.Fprintf(&b, "pid %d;", s.Pid)
	ths := slices.Clone(s.Threads)
	slices.SortFunc(ths, func(a, b *api.Thread) int { return a.ID - b.ID })
	for _, th := range ths {
		info.threads = append(info.threads, th.ID)
		fmt.Fprintf(&b, "%d@%#x;", th.ID, th.PC)
	}
	if s.CurrentThread != nil {
		info.current = s.CurrentThread.ID
		fmt.Fprintf(&b, "current %d;", s.CurrentThread.ID)
	}
	info.key = b.String()
	info.hits = make(map[int]uint64, len(bps))
	for _, bp := range bps {
		info.hits[bp.ID] = bp.TotalHitCount
	}
	return info
}

// Refresh drops everything cached, whether or not the process ran.
func (t *Target) Refresh() {
	t.mu.Lock()
	t.dropLocked()
	t.mu.Unlock()
}

func (t *Target) dropLocked() {
	t.pages.Clear()
	t.threads = nil
	t.regs = nil
	t.objs = nil
}

// Pid returns the process id of the stop last seen (0 while running).
func (t *Target) Pid() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stop.pid
}

// requests returns how many requests the Target sent to the server so
// far, to see what a query costs in round trips (the benchmarks report it).
func (t *Target) requests() uint64 { return t.c.calls.Load() }

// CurrentThread returns the OS thread id of the thread the debugger has
// selected at the stop last seen (0 if none).
func (t *Target) CurrentThread() uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return uint64(t.stop.current)
}

// ByteOrder returns binary.LittleEndian: Target supports amd64 only.
func (t *Target) ByteOrder() binary.ByteOrder { return binary.LittleEndian }

// Sizes returns target.LP64.
func (t *Target) Sizes() target.Sizes { return target.LP64 }

// ReadMemory fills buf with the process's memory at addr (by 4 KiB page,
// cached for the stop).
func (t *Target) ReadMemory(buf []byte, addr uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.readLocked(buf, addr)
}

func (t *Target) readLocked(buf []byte, addr uint64) error {
	return t.pages.ReadTarget(buf, addr, func() error { return t.err }, t.examine)
}

// examine fills buf with the memory at addr, read through the server. An
// error of the server (an unmapped range, typically) wraps
// target.ErrNoMemory.
func (t *Target) examine(buf []byte, addr uint64) error {
	var out rpc2.ExaminedMemoryOut
	err := t.c.call(bg, false, "ExamineMemory", rpc2.ExamineMemoryIn{Address: addr, Length: len(buf)}, &out)
	if err == nil && len(out.Mem) != len(buf) {
		err = &ServerError{Method: "ExamineMemory", Msg: fmt.Sprintf("%d bytes answered for %d", len(out.Mem), len(buf))}
	}
	var se *ServerError
	if errors.As(err, &se) {
		return fmt.Errorf("%w: %w", target.ErrNoMemory, err)
	}
	if err != nil {
		return err
	}
	copy(buf, out.Mem)
	return nil
}

// WriteMemory returns an error wrapping target.ErrReadOnly: the Target never
// changes the process the user debugs.
func (t *Target) WriteMemory(addr uint64, data []byte) error {
	return &target.ReadError{Addr: addr, Size: len(data), Write: true, Err: fmt.Errorf("%w: delverpc only reads the debugged process", target.ErrReadOnly)}
}

// Threads lists the process's threads by OS thread id, ascending, each with
// its thread pointer (fs_base).
func (t *Target) Threads() ([]target.Thread, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ths, err := t.threadsLocked()
	return slices.Clone(ths), err
}

func (t *Target) threadsLocked() ([]target.Thread, error) {
	if t.threads != nil {
		return t.threads, nil
	}
	if t.err != nil {
		return nil, t.err
	}
	ids := t.stop.threads
	lrs := make([]rpc2.ListRegistersOut, len(ids))
	// One request per thread, pipelined: a server far away costs one
	// round trip per window, not per thread.
	err := t.c.callEach(bg, "ListRegisters", len(ids),
		func(i int) any { return rpc2.ListRegistersIn{ThreadID: ids[i]} },
		func(i int) any { return &lrs[i] })
	var se *ServerError
	if err != nil && !errors.As(err, &se) {
		return nil, fmt.Errorf("registers: %w", err)
	}
	out := make([]target.Thread, 0, len(ids))
	regs := make(map[uint64]target.Registers, len(ids))
	for i, id := range ids {
		th := target.Thread{ID: uint64(id)}
		if tp, err := fsBase(lrs[i].Regs); err == nil {
			// A thread whose registers the server could not give
			// keeps a zero (unknown) thread pointer.
			// Live processes are x86-64's, where glibc's struct
			// pthread is the thread pointer.
			th.Pointer, th.Pthread = tp, tp
			regs[uint64(id)] = dwarfRegs(lrs[i].Regs)
		}
		out = append(out, th)
	}
	t.threads, t.regs = out, regs
	return out, nil
}

// dwarfRegs keeps the registers the server numbers in DWARF's amd64
// numbering as general registers (0-16: rax ... rip).
func dwarfRegs(regs api.Registers) target.Registers {
	out := target.NewRegisters(elf.EM_X86_64)
	for _, r := range regs {
		if r.DwarfNumber < 0 || r.DwarfNumber > 16 {
			continue
		}
		if v, err := strconv.ParseUint(strings.TrimPrefix(r.Value, "0x"), 16, 64); err == nil {
			out.Set(r.DwarfNumber, v)
		}
	}
	return out
}

// fsBase returns the value of register Fs_base (amd64's thread pointer).
func fsBase(regs api.Registers) (uint64, error) {
	for _, r := range regs {
		if strings.EqualFold(r.Name, "fs_base") {
			v, err := strconv.ParseUint(strings.TrimPrefix(r.Value, "0x"), 16, 64)
			if err != nil {
				return 0, fmt.Errorf("register %s = %q: %w", r.Name, r.Value, err)
			}
			return v, nil
		}
	}
	return 0, fmt.Errorf("no fs_base register (not linux/amd64?): %w", target.ErrUnsupported)
}

// threadPointerLocked returns the thread pointer of thread tid.
func (t *Target) threadPointerLocked(tid uint64) (uint64, error) {
	ths, err := t.threadsLocked()
	if err != nil {
		return 0, err
	}
	return pagecache.ThreadPointer(ths, tid)
}

// lockedMemory reads target memory with t.mu already held.
type lockedMemory struct{ t *Target }

// ReadMemory reads through the page cache of the stop.
func (m lockedMemory) ReadMemory(buf []byte, addr uint64) error { return m.t.readLocked(buf, addr) }

var (
	_ target.Target          = (*Target)(nil)
	_ target.BitFieldLocator = (*Target)(nil)
	_ target.ObjectLister    = (*Target)(nil)
	_ target.Symbolizer      = (*Target)(nil)
)
