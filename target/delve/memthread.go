package delve

import (
	"errors"
	"fmt"
	"reflect"
	"syscall"
	"unsafe"

	"github.com/go-delve/delve/pkg/proc"
	"github.com/go-delve/delve/pkg/version"
)

// Delve's native Linux backend reads and writes memory, breakpoints
// included, through one thread of the process: the last one that stopped
// (nativeProcess.memthread, set in processGroup.ContinueOnce). When a
// thread exits, trapWaitInternal deletes it from nativeProcess.threads but
// leaves memthread pointing at it. OpenMP programs end their worker
// threads, typically right after a stop in one of them
// (ompd_bp_thread_end): the next stop then fails inside Delve with ESRCH
// when stop1 calls linutil.ElfUpdateSharedObjects through the dead thread,
// before it has rewound the threads that hit breakpoints; Continue returns
// "no such process", and the process is lost. dlv itself shows it (see
// memthread.md, the report for Delve's maintainers).
//
// Delve's exported API has no way to choose that thread, so Process.Continue
// hands Delve the thread group leader (which lives as long as the process,
// unless the program calls pthread_exit in main) as memthread before each
// resume, by reflection on the unexported field, and Target reads through
// the leader when a read through Delve's thread fails with ESRCH. The write
// is made only on the Delve version it was verified against
// (verifiedDelve) and only if the field has the expected layout; on any
// other version Launch, Attach and Continue fail with ErrDelveVersion
// rather than run into the bug silently.

// verifiedDelve is the Delve version whose native backend the memory
// thread workaround was verified against: the version go.mod pins.
const verifiedDelve = "1.27.2"

// ErrDelveVersion reports that the program links a Delve version whose
// native backend this package does not know: the workaround for its stale
// memory thread (see memthread.md) may not apply. Update target/delve
// after checking the bug in that version.
var ErrDelveVersion = errors.New("unverified Delve version")

// checkDelveVersion fails unless v is verifiedDelve.
func checkDelveVersion(v version.Version) error {
	got := v.Major + "." + v.Minor + "." + v.Patch
	if v.Metadata != "" {
		got += "-" + v.Metadata
	}
	if got != verifiedDelve {
		return fmt.Errorf("delve: %w: this program links Delve %s, but the workaround for Delve's stale memory thread (target/delve/memthread.md) was verified with Delve %s only", ErrDelveVersion, got, verifiedDelve)
	}
	return nil
}

// memRW is the memory access of Delve's *native.nativeThread.
type memRW interface {
	ReadMemory(buf []byte, addr uint64) (int, error)
	WriteMemory(addr uint64, data []byte) (int, error)
}

// pinMemThread makes thread tid Delve's memory thread for t. A thread
// Delve does not list (a leader that called pthread_exit) is left alone;
// a Delve version or layout it was not verified with is an error wrapping
// ErrDelveVersion.
func pinMemThread(t *proc.Target, tid int) error {
	if err := checkDelveVersion(version.DelveVersion); err != nil {
		return err
	}
	th, ok := t.FindThread(tid)
	if !ok || th == nil {
		return nil
	}
	np, err := nativeProcess(t)
	if err != nil {
		return err
	}
	f := np.FieldByName("memthread")
	tv := reflect.ValueOf(th)
	if !f.IsValid() || f.Type() != tv.Type() || !f.CanAddr() {
		return layoutError("no memthread field of its thread type")
	}
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(tv)
	return nil
}

// layoutError reports that Delve's native backend does not have the
// unexported layout this package's workarounds were verified with.
func layoutError(what string) error {
	return fmt.Errorf("delve: %w: Delve %s's native backend has %s", ErrDelveVersion, verifiedDelve, what)
}

// nativeProcess returns, addressable, the native backend's process
// structure behind t (proc.Target.proc), after checking the Delve
// version.
func nativeProcess(t *proc.Target) (reflect.Value, error) {
	if err := checkDelveVersion(version.DelveVersion); err != nil {
		return reflect.Value{}, err
	}
	v := reflect.ValueOf(t).Elem().FieldByName("proc")
	if !v.IsValid() || v.Kind() != reflect.Interface || v.IsNil() {
		return reflect.Value{}, layoutError("no proc.Target.proc interface field")
	}
	pv := v.Elem()
	if pv.Kind() != reflect.Pointer || pv.IsNil() || pv.Elem().Kind() != reflect.Struct {
		return reflect.Value{}, layoutError(fmt.Sprintf("a %v in proc.Target.proc, not a pointer to the native process", pv.Type()))
	}
	return pv.Elem(), nil
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
