package objfile

import (
	"fmt"

	"github.com/ompd-go/ompd/target"
)

// GlibcThreads returns the threads glibc keeps descriptors of in the
// program (see GlibcThreadList): each thread's kernel id (the tid of its struct pthread) mapped
// to the address of that struct pthread, which is the thread's pthread_t
// and, on x86-64, its thread pointer (fs_base). Reading a live process's
// registers costs a ptrace request per thread; this costs a couple of
// memory reads per thread.
//
// It walks glibc's two lists of thread descriptors as libthread_db's
// td_ta_thr_iter does: _rtld_global's _dl_stack_used (threads whose stacks
// glibc allocated) and _dl_stack_user (the main thread and threads on
// stacks of their own), the offsets coming from glibc's exported
// descriptors (_thread_db_rtld_global__dl_stack_used, ..._stack_user,
// _thread_db_list_t_next, _thread_db_pthread_list, _thread_db_pthread_tid)
// so that nothing depends on one glibc's layouts. A descriptor whose tid
// is not positive (a thread that exited and was not joined yet, or not
// started) is left out. Every read goes through mem. Without glibc's descriptors (a
// static executable, another libc, glibc before 2.34) the error wraps
// target.ErrNotFound; a list longer than limit entries, or one that does
// not come back to its head, is an error.
func (s *Set) GlibcThreads(mem Memory, limit int) (GlibcThreadList, error) {
	m, off, err := s.glibcThreads(mem, limit)
	return GlibcThreadList{Threads: m, TIDOffset: off}, err
}

// GlibcThreadList is what GlibcThreads found.
type GlibcThreadList struct {
	// Threads maps each thread's kernel id to the address of its
	// struct pthread.
	Threads map[uint64]uint64
	// TIDOffset is the offset of the tid (a 32-bit pid_t) in struct
	// pthread. Reading it again at every address tells whether the list
	// still holds after the program ran: a thread that exited has 0
	// there, a reused descriptor another tid.
	TIDOffset uint64
}

func (s *Set) glibcThreads(mem Memory, limit int) (map[uint64]uint64, uint64, error) {
	descs := make(map[string]dbDesc)
	for _, name := range []string{"rtld_global__dl_stack_used", "rtld_global__dl_stack_user",
		"list_t_next", "pthread_list", "pthread_tid"} {
		d, err := s.readDesc(mem, "_thread_db_"+name)
		if err != nil {
			return nil, 0, fmt.Errorf("glibc's thread list: %w", err)
		}
		descs[name] = d
	}
	if d := descs["pthread_tid"]; d.bits != 32 {
		return nil, 0, fmt.Errorf("glibc's thread list: a tid of %d bits: %w", d.bits, target.ErrUnsupported)
	}
	rtld, err := s.Lookup("_rtld_global")
	if err != nil {
		return nil, 0, fmt.Errorf("glibc's thread list: %w", err)
	}
	if len(s.objs) == 0 {
		return nil, 0, fmt.Errorf("objfile: no objects: %w", target.ErrNotFound)
	}
	f := s.objs[0].f
	r := memReader{mem: mem, order: f.ByteOrder, ptr: ptrSize(f)}
	next, list, tid := uint64(descs["list_t_next"].offset), uint64(descs["pthread_list"].offset), descs["pthread_tid"]
	out := make(map[uint64]uint64)
	// One read per entry covers the list's next pointer and the tid
	// when they are close (they are neighbours in glibc's struct
	// pthread).
	ptr := uint64(r.ptr)
	lo, hi := min(list+next, uint64(tid.offset)), max(list+next+ptr, uint64(tid.offset)+4)
	var win []byte
	if hi-lo <= 256 {
		win = make([]byte, hi-lo)
	}
	entry := func(pd uint64) (id, nextEntry uint64, err error) {
		if win == nil {
			if id, err = r.field(pd, tid); err == nil {
				nextEntry, err = r.word(pd + list + next)
			}
			return id, nextEntry, err
		}
		if err := mem.ReadMemory(win, pd+lo); err != nil {
			return 0, 0, err
		}
		id = uint64(r.order.Uint32(win[uint64(tid.offset)-lo:]))
		w := win[list+next-lo:]
		if ptr == 4 {
			return id, uint64(r.order.Uint32(w)), nil
		}
		return id, r.order.Uint64(w), nil
	}
	seen := 0
	for _, head := range []string{"rtld_global__dl_stack_used", "rtld_global__dl_stack_user"} {
		h := rtld + uint64(descs[head].offset)
		p, err := r.word(h + next)
		if err != nil {
			return nil, 0, fmt.Errorf("glibc's thread list at %#x: %w", h, err)
		}
		for p != h {
			if seen++; seen > limit {
				return nil, 0, fmt.Errorf("glibc's thread lists hold more than %d entries", limit)
			}
			if p < list {
				return nil, 0, fmt.Errorf("glibc's thread list: entry %#x", p)
			}
			pd := p - list
			id, n, err := entry(pd)
			if err != nil {
				return nil, 0, fmt.Errorf("glibc's thread list: struct pthread at %#x: %w", pd, err)
			}
			if int32(id) > 0 {
				out[id] = pd
			}
			p = n
		}
	}
	return out, uint64(tid.offset), nil
}
