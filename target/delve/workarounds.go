package delve

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/go-delve/delve/pkg/proc"
	"github.com/go-delve/delve/pkg/version"
)

// This file is the one place where the package reaches into Delve's
// unexported state, to work around two bugs of Delve's native Linux
// backend that OpenMP programs run into. Each workaround was verified on
// one Delve version (workarounds); on any other, Launch, Attach and
// Continue fail with ErrDelveVersion instead of running into the bugs
// silently, and TestWorkaroundsVerified fails as soon as go.mod pins
// another Delve, until each workaround is checked again against it.

// workaround is one workaround of a Delve bug.
type workaround struct {
	name     string // what it works around, and how
	doc      string // the report for Delve's maintainers, in this directory
	verified string // the Delve version it was verified with
}

// workarounds are the workarounds of Delve bugs this package makes.
var workarounds = [...]workaround{
	{"a stale memory thread (Continue makes the thread group leader Delve's memory thread; reads go through it)", "memthread.md", "1.27.2"},
	{"a halting wait that never returns (Continue has Delve's ptrace thread nudge one thread)", "wedge.md", "1.27.2"},
}

// ErrDelveVersion reports that the program links a Delve version whose
// native backend this package does not know: its workarounds of Delve's
// bugs (see memthread.md and wedge.md) may not apply. Update target/delve
// after checking the bugs in that version.
var ErrDelveVersion = errors.New("unverified Delve version")

// versionString writes v as Delve's releases are named, "1.27.2".
func versionString(v version.Version) string {
	s := v.Major + "." + v.Minor + "." + v.Patch
	if v.Metadata != "" {
		s += "-" + v.Metadata
	}
	return s
}

// checkDelveVersion fails unless every workaround was verified with v.
func checkDelveVersion(v version.Version) error {
	got := versionString(v)
	var stale []string
	for _, w := range workarounds {
		if w.verified != got {
			stale = append(stale, fmt.Sprintf("%s (target/delve/%s), verified with Delve %s only", w.name, w.doc, w.verified))
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("delve: %w: this program links Delve %s, but the workarounds of %s", ErrDelveVersion, got, strings.Join(stale, "; "))
	}
	return nil
}

// layoutError reports that Delve's native backend does not have the
// unexported layout this package's workarounds were verified with.
func layoutError(what string) error {
	return fmt.Errorf("delve: %w: Delve %s's native backend has %s", ErrDelveVersion, versionString(version.DelveVersion), what)
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
// is made only on the Delve version it was verified against (workarounds)
// and only if the field has the expected layout.

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

// ptraceRunner returns a function that runs fn on Delve's ptrace thread
// of t (nativeProcess.execPtraceFunc), found by reflection on the fields
// of the verified Delve version; any other layout is an error wrapping
// ErrDelveVersion.
func ptraceRunner(t *proc.Target) (func(fn func()), error) {
	np, err := nativeProcess(t)
	if err != nil {
		return nil, err
	}
	pt := np.FieldByName("ptraceThread")
	if !pt.IsValid() || pt.Kind() != reflect.Pointer || pt.IsNil() || pt.Elem().Kind() != reflect.Struct {
		return nil, layoutError("no ptraceThread pointer")
	}
	unexported := func(name string) (reflect.Value, bool) {
		f := pt.Elem().FieldByName(name)
		if !f.IsValid() || !f.CanAddr() {
			return reflect.Value{}, false
		}
		return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem(), true
	}
	fns, ok1 := unexported("ptraceChan")
	dones, ok2 := unexported("ptraceDoneChan")
	if !ok1 || !ok2 {
		return nil, layoutError("no ptraceChan and ptraceDoneChan")
	}
	fc, ok1 := fns.Interface().(chan func())
	dc, ok2 := dones.Interface().(chan interface{})
	if !ok1 || !ok2 || fc == nil || dc == nil {
		return nil, layoutError(fmt.Sprintf("ptrace channels of types %v and %v", fns.Type(), dones.Type()))
	}
	return func(fn func()) {
		fc <- fn
		<-dc
	}, nil
}
