package delve

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"syscall"

	"github.com/go-delve/delve/pkg/proc"

	"github.com/ompd-go/ompd/internal/errjoin"
	"github.com/ompd-go/ompd/internal/liveobj"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/internal/pagecache"
	"github.com/ompd-go/ompd/internal/procfs"
	"github.com/ompd-go/ompd/target"
)

// Target is a stopped process seen through Delve, as a target.Target. It
// also implements target.Symbolizer (SymbolAt) and target.BitFieldLocator.
//
// # Caching
//
// While the process stays stopped, Target caches what it read: memory
// (by 4 KiB page), the thread list with each thread's thread pointer (read
// from glibc's thread descriptors when the program uses glibc, which is
// much cheaper than every thread's registers), and the list of loaded
// images. Process.Continue drops these caches before the
// process resumes. A Target made with New over a Delve session that resumes
// the process by itself must be told with Refresh after each stop.
//
// An ompd.AddressSpace keeps caches of its own: call its Refresh after
// every resume (Process.ContinueAndRefresh does); it calls the Target's
// Refresh too. After a Refresh the next access checks that the process
// still exists, so that one killed from outside answers ErrExited rather
// than from the caches.
//
// # Concurrency
//
// Delve's proc package is not safe for concurrent use; Target serializes
// every access it makes through one mutex, so its methods are safe for
// concurrent use. While Process.Continue runs, they wait until the process
// stops again. Code that uses the underlying *proc.Target directly (a Delve
// session given to New) must not do so while Target methods run.
type Target struct {
	mu sync.Mutex // guards everything below and every use of dt
	dt *proc.Target

	exited error // set once the process is gone (ErrExited or ErrDetached)
	// recheck makes the next access check that the process still exists
	// (it may have been killed from outside, which Delve does not see
	// until it waits for the process); set whenever the caches drop.
	recheck bool

	pages    pagecache.Cache          // memory of this stop
	glibc    *objfile.GlibcThreadList // glibc's threads as of the last stop that read them
	glibcOf  map[int]proc.Thread      // Delve's objects of the threads glibc was last checked against
	threads  []target.Thread          // nil until listed in this stop
	imagesOK bool                     // set is current for this stop
	set      *objfile.Set             // loaded objects, executable first, load order
	linkMap  []objfile.LinkMapEntry   // the dynamic linker's list when set was made
	objs     map[imageKey]*image
	objOpts  []objfile.Option // how objects find separate debug files

	look liveobj.Lookups // the lookups answered from set
}

// New wraps an open, stopped Delve target so that ompd-go can read it. The
// caller keeps control of the process: after the process ran and stopped
// again, call Refresh (and the address space's Refresh) before reading.
// New does not take ownership: Close releases only what Target opened.
//
// Of the options, only the debug-information ones (WithDebugDirs,
// WithDebuginfod, WithDebuginfodFromEnv, WithDebugContext) apply.
func New(t *proc.Target, opts ...Option) (*Target, error) {
	if t == nil {
		return nil, errors.New("delve: New: nil target")
	}
	if ok, err := t.Valid(); !ok {
		return nil, fmt.Errorf("delve: New: target not valid: %w", exitedErr(t.Pid(), err))
	}
	if a := t.BinInfo().Arch; a == nil || a.Name != "amd64" {
		name := "unknown"
		if a != nil {
			name = a.Name
		}
		return nil, fmt.Errorf("delve: New: architecture %s: %w", name, target.ErrUnsupported)
	}
	var c launchConfig
	for _, o := range opts {
		o(&c)
	}
	return newTarget(t, c.objOptions()), nil
}

func newTarget(t *proc.Target, objOpts []objfile.Option) *Target {
	tg := &Target{dt: t, objs: make(map[imageKey]*image), objOpts: objOpts}
	tg.look = liveobj.Lookups{Mu: &tg.mu, Objects: tg.setLocked, Memory: lockedMemory{tg}, ThreadPointer: tg.threadPointerLocked}
	return tg
}

// Delve returns the underlying Delve target. Use it only while no Target
// method runs (see the type's documentation on concurrency).
func (t *Target) Delve() *proc.Target { return t.dt }

// Refresh drops everything cached from the process (memory, threads, the
// list of loaded images), and makes the next access check that the process
// still exists: one killed from outside then answers ErrExited. Call it
// after the process ran, when it was resumed through Delve directly rather
// than through Process.Continue; ompd.AddressSpace.Refresh calls it too
// (target.Refresher).
func (t *Target) Refresh() {
	t.mu.Lock()
	t.dropCachesLocked()
	t.mu.Unlock()
}

func (t *Target) dropCachesLocked() {
	t.pages.Clear()
	t.threads = nil
	t.imagesOK = false
	t.recheck = true
}

// Close closes the object files Target opened for symbol and type lookups
// (later lookups open them again). It neither detaches from nor kills the
// process: see Process.Detach and Process.Kill, which close them too.
func (t *Target) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.closeObjectsLocked()
}

func (t *Target) closeObjectsLocked() error {
	var errs []error
	for k, im := range t.objs {
		if im.o != nil {
			errs = append(errs, im.o.Close())
		}
		delete(t.objs, k)
	}
	t.set = nil
	t.imagesOK = false
	return errjoin.Join(errs...)
}

// aliveLocked reports an error if the process can no longer be read.
func (t *Target) aliveLocked() error {
	if t.exited != nil {
		return t.exited
	}
	if ok, err := t.dt.Valid(); !ok {
		return exitedErr(t.dt.Pid(), err)
	}
	if t.recheck {
		if err := processGone(t.dt.Pid()); err != nil {
			t.exited = err
			t.dropCachesLocked()
			return err
		}
		t.recheck = false
	}
	return nil
}

// processGone returns an error matching ErrExited if process pid no longer
// runs: it has no /proc entry, or it is a zombie (a process killed while
// Delve held it stopped stays one until Delve waits for it).
func processGone(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("process %d: %w (it is gone: killed or ended outside the debugger)", pid, ErrExited)
		}
		return nil // cannot tell: let the accesses say
	}
	switch statState(b) {
	case 'Z', 'X', 'x':
		return fmt.Errorf("process %d: %w (killed outside the debugger)", pid, ErrExited)
	}
	return nil
}

// exitedErr turns Delve's "not valid" error into ours.
func exitedErr(pid int, err error) error {
	var pe proc.ErrProcessExited
	if errors.As(err, &pe) {
		return &ExitError{Pid: pe.Pid, Status: pe.Status}
	}
	if err == nil {
		return fmt.Errorf("process %d: %w", pid, ErrExited)
	}
	if errors.Is(err, proc.ErrProcessDetached) {
		return fmt.Errorf("process %d: %w", pid, ErrDetached)
	}
	return fmt.Errorf("process %d: %w: %w", pid, ErrExited, err)
}

// ByteOrder returns binary.LittleEndian: Target supports amd64 only.
func (t *Target) ByteOrder() binary.ByteOrder { return binary.LittleEndian }

// Sizes returns target.LP64.
func (t *Target) Sizes() target.Sizes { return target.LP64 }

// ReadMemory fills buf with the process's memory at addr, from the cache of
// this stop where it can. A range not entirely mapped gives a
// *target.ReadError wrapping target.ErrNoMemory.
func (t *Target) ReadMemory(buf []byte, addr uint64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.readLocked(buf, addr)
}

func (t *Target) readLocked(buf []byte, addr uint64) error {
	return t.pages.ReadTarget(buf, addr, func() error {
		if err := t.aliveLocked(); err != nil {
			return errjoin.Join(target.ErrNoMemory, err)
		}
		return nil
	}, t.rawRead)
}

// ReadMemoryVec reads size bytes at each of addrs with as few
// process_vm_readv calls as 1,024 ranges a call allow, without the page
// cache: only the pages the ranges touch are read (see
// target.VectorReader).
func (t *Target) ReadMemoryVec(buf []byte, addrs []uint64, size int) (int, error) {
	if len(addrs) == 0 || size <= 0 {
		return 0, nil
	}
	if len(buf) < len(addrs)*size {
		return 0, fmt.Errorf("ReadMemoryVec: buffer of %d bytes for %d ranges of %d", len(buf), len(addrs), size)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.aliveLocked(); err != nil {
		return 0, &target.ReadError{Addr: addrs[0], Size: size, Err: errjoin.Join(target.ErrNoMemory, err)}
	}
	n, err := procfs.ReadVectored(t.dt.Pid(), buf, addrs, size)
	if err != nil && n == 0 {
		return 0, &target.ReadError{Addr: addrs[0], Size: size, Err: fmt.Errorf("%w: %w", target.ErrNoMemory, err)}
	}
	return n, nil
}

// rawRead reads through Delve, failing unless all of buf was read.
func (t *Target) rawRead(buf []byte, addr uint64) error {
	n, err := t.dt.Memory().ReadMemory(buf, addr)
	if isESRCH(err) {
		if m := t.leaderMemory(); m != nil {
			n, err = m.ReadMemory(buf, addr)
		}
	}
	if err != nil {
		if isESRCH(err) {
			if gone := processGone(t.dt.Pid()); gone != nil {
				t.exited = gone
				return fmt.Errorf("%w: %w", target.ErrNoMemory, gone)
			}
		}
		return fmt.Errorf("%w: %w", target.ErrNoMemory, err)
	}
	if n != len(buf) {
		return fmt.Errorf("%w: short read (%d of %d bytes)", target.ErrNoMemory, n, len(buf))
	}
	return nil
}

// WriteMemory writes data to the process's memory at addr and updates the
// cache.
func (t *Target) WriteMemory(addr uint64, data []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.writeLocked(addr, data)
}

func (t *Target) writeLocked(addr uint64, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	if err := t.aliveLocked(); err != nil {
		return &target.ReadError{Addr: addr, Size: len(data), Write: true, Err: errjoin.Join(target.ErrNoMemory, err)}
	}
	n, err := t.dt.Memory().WriteMemory(addr, data)
	if isESRCH(err) {
		if m := t.leaderMemory(); m != nil {
			n, err = m.WriteMemory(addr, data)
		}
	}
	if err == nil && n != len(data) {
		err = fmt.Errorf("short write (%d of %d bytes)", n, len(data))
	}
	// Drop the pages touched, whatever happened.
	t.pages.Drop(addr, len(data))
	if err != nil {
		return &target.ReadError{Addr: addr, Size: len(data), Write: true, Err: fmt.Errorf("%w: %w", target.ErrNoMemory, err)}
	}
	return nil
}

// Threads lists the process's threads by kernel thread id, each with its
// thread pointer (fs_base), ascending by id.
func (t *Target) Threads() ([]target.Thread, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ths, err := t.threadsLocked()
	return slices.Clone(ths), err
}

func (t *Target) threadsLocked() ([]target.Thread, error) {
	if err := t.aliveLocked(); err != nil {
		return nil, err
	}
	if t.threads != nil {
		return t.threads, nil
	}
	list := t.dt.ThreadList()
	glibc := t.glibcPointersLocked(list)
	out := make([]target.Thread, 0, len(list))
	for _, th := range list {
		tt := target.Thread{ID: uint64(th.ThreadID())}
		if p, ok := glibc[tt.ID]; ok {
			tt.Pointer = p
		} else if regs, err := th.Registers(); err == nil && regs != nil {
			tt.Pointer = regs.TLS()
		}
		// Live processes are x86-64's, where glibc's struct pthread is
		// the thread pointer.
		tt.Pthread = tt.Pointer
		out = append(out, tt)
	}
	slices.SortFunc(out, func(a, b target.Thread) int { return compareUint(a.ID, b.ID) })
	t.threads = out
	return out, nil
}

// glibcPointersLocked returns the thread pointers of the process's
// threads as glibc's thread lists give them (see
// objfile.Set.GlibcThreads), or nil if they cannot be read or disagree
// with the registers of the thread group leader. Each thread's registers
// cost a ptrace request handed to Delve's ptrace thread (about 15 to 50 µs
// of CPU each: 4 to 14 ms of every stop at 256 threads); the lists cost a
// small read per thread. On x86-64 a glibc thread's pointer (fs_base) is
// its struct pthread, unless the program moved it with arch_prctl, which
// the check of the leader catches for programs that do it to every
// thread.
//
// The lists of the previous stop are kept. When Delve holds the same
// thread objects as when they were last confirmed, the process has the
// same threads and they are kept as they are: Delve drops a thread's
// object when it sees the thread exit and makes a new one for each thread
// it sees created, whoever resumed the process (a Refresh without a resume,
// or a stop where no thread started or ended, reads nothing). Otherwise,
// when the process has as many threads with the same ids, one
// process_vm_readv of every descriptor's tid (a thread that exited has 0
// there, a reused descriptor another tid) confirms them instead of a walk
// of the lists: 256 reads on as many pages, a few percent of a snapshot.
func (t *Target) glibcPointersLocked(list []proc.Thread) map[uint64]uint64 {
	if prev := t.glibc; prev != nil && len(prev.Threads) == len(list) {
		if sameThreadObjects(t.glibcOf, list) {
			return prev.Threads
		}
		addrs := make([]uint64, 0, len(list))
		for _, th := range list {
			pd, ok := prev.Threads[uint64(th.ThreadID())]
			if !ok {
				break
			}
			addrs = append(addrs, pd+prev.TIDOffset)
		}
		if len(addrs) == len(list) {
			buf := make([]byte, 4*len(addrs))
			if n, err := procfs.ReadVectored(t.dt.Pid(), buf, addrs, 4); err == nil && n == len(addrs) {
				same := true
				for i, th := range list {
					if binary.LittleEndian.Uint32(buf[4*i:]) != uint32(th.ThreadID()) {
						same = false
						break
					}
				}
				if same {
					t.glibcOf = threadObjects(list)
					return prev.Threads
				}
			}
		}
	}
	t.glibc, t.glibcOf = nil, nil
	s, err := t.setLocked()
	if err != nil {
		return nil
	}
	// Uncached reads: the walk needs a few bytes of one page per thread,
	// which the snapshot itself never reads.
	g, err := s.GlibcThreads(directMemory{t}, 4*len(list)+64)
	if err != nil || len(g.Threads) == 0 {
		return nil
	}
	leader, ok := t.dt.FindThread(t.dt.Pid())
	if !ok {
		return nil
	}
	regs, err := leader.Registers()
	if err != nil || regs == nil || g.Threads[uint64(t.dt.Pid())] != regs.TLS() {
		return nil
	}
	t.glibc, t.glibcOf = &g, threadObjects(list)
	return g.Threads
}

// threadObjects returns Delve's thread objects of list by thread id.
func threadObjects(list []proc.Thread) map[int]proc.Thread {
	m := make(map[int]proc.Thread, len(list))
	for _, th := range list {
		m[th.ThreadID()] = th
	}
	return m
}

// sameThreadObjects reports whether list holds exactly the thread objects
// of m (Delve's are pointers: the same object is the same thread).
func sameThreadObjects(m map[int]proc.Thread, list []proc.Thread) bool {
	if len(m) != len(list) {
		return false
	}
	for _, th := range list {
		if o, ok := m[th.ThreadID()]; !ok || o != th {
			return false
		}
	}
	return true
}

func compareUint(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// threadPointerLocked returns the thread pointer of the thread with kernel
// id tid.
func (t *Target) threadPointerLocked(tid uint64) (uint64, error) {
	ths, err := t.threadsLocked()
	if err != nil {
		return 0, err
	}
	return pagecache.ThreadPointer(ths, tid)
}

// directMemory reads target memory with t.mu already held, bypassing the
// page cache.
type directMemory struct{ t *Target }

func (m directMemory) ReadMemory(buf []byte, addr uint64) error {
	if err := m.t.rawRead(buf, addr); err != nil {
		return &target.ReadError{Addr: addr, Size: len(buf), Err: err}
	}
	return nil
}

// lockedMemory reads target memory with t.mu already held.
type lockedMemory struct{ t *Target }

func (m lockedMemory) ReadMemory(buf []byte, addr uint64) error { return m.t.readLocked(buf, addr) }

var (
	_ target.Target          = (*Target)(nil)
	_ target.BitFieldLocator = (*Target)(nil)
	_ target.ObjectLister    = (*Target)(nil)
	_ target.Symbolizer      = (*Target)(nil)
	_ target.VectorReader    = (*Target)(nil)
)

// memRW is the memory access of Delve's *native.nativeThread.
type memRW interface {
	ReadMemory(buf []byte, addr uint64) (int, error)
	WriteMemory(addr uint64, data []byte) (int, error)
}

// leaderMemory returns the memory access of the thread group leader, or
// nil.
func (t *Target) leaderMemory() memRW {
	th, ok := t.dt.FindThread(t.dt.Pid())
	if !ok {
		return nil
	}
	m, _ := th.(memRW)
	return m
}

func isESRCH(err error) bool { return errors.Is(err, syscall.ESRCH) }
