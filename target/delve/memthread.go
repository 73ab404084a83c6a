package delve

import (
	"errors"
	"reflect"
	"syscall"
	"unsafe"

	"github.com/go-delve/delve/pkg/proc"
)

// Delve 1.27's native Linux backend reads and writes memory, breakpoints
// included, through one thread of the process: the last one that stopped
// (nativeProcess.memthread). It does not replace that thread when it exits.
// OpenMP programs end their worker threads, typically right after a stop
// in one of them (ompd_bp_thread_end): the next stop then fails inside
// Delve with ESRCH while it reads the dynamic linker's data through the
// dead thread, before it has rewound the threads that hit breakpoints, and
// every later read fails the same way.
//
// Process.Continue therefore hands Delve the thread group leader (which
// lives as long as the process, unless the program calls pthread_exit in
// main) as that thread before each resume, and Target reads through the
// leader when a read through Delve's thread fails with ESRCH. The field is
// unexported: memThreadPin sets it by reflection, for the pinned Delve
// version, and does nothing if the layout is not the expected one.

// memRW is the memory access of Delve's *native.nativeThread.
type memRW interface {
	ReadMemory(buf []byte, addr uint64) (int, error)
	WriteMemory(addr uint64, data []byte) (int, error)
}

// pinMemThread makes thread tid Delve's memory thread for t. It reports
// whether it could.
func pinMemThread(t *proc.Target, tid int) bool {
	th, ok := t.FindThread(tid)
	if !ok || th == nil {
		return false
	}
	v := reflect.ValueOf(t).Elem().FieldByName("proc")
	if !v.IsValid() || v.Kind() != reflect.Interface || v.IsNil() {
		return false
	}
	pv := v.Elem()
	if pv.Kind() != reflect.Pointer || pv.IsNil() || pv.Elem().Kind() != reflect.Struct {
		return false
	}
	f := pv.Elem().FieldByName("memthread")
	tv := reflect.ValueOf(th)
	if !f.IsValid() || f.Type() != tv.Type() || !f.CanAddr() {
		return false
	}
	reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(tv)
	return true
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
