package core

import (
	"fmt"

	"github.com/ompd-go/ompd/target"
)

// resolveThreads gives each thread its thread pointer and pthread_t, once
// the objects are loaded: the thread pointer from the thread's notes
// (NT_PRSTATUS, or the machine's own note, such as aarch64's NT_ARM_TLS),
// its pthread_t from the thread pointer as glibc's descriptors say (see
// objfile.Set.ThreadSelf). A core without the notes that hold thread
// pointers (qemu's cores of aarch64 have no NT_ARM_TLS) takes each thread's
// struct pthread from glibc's own lists of threads instead, and the thread
// pointer from it. What cannot be found stays 0 (unknown), with a warning.
func (c *Core) resolveThreads() {
	out := make([]target.Thread, len(c.d.threads))
	lacking := 0
	var why error
	for i, t := range c.d.threads {
		out[i] = target.Thread{ID: t.tid, Pointer: t.tp}
		if t.tp == 0 {
			lacking++
			continue
		}
		pd, err := c.set.ThreadSelf(c.mem, t.tp)
		if err != nil {
			why = err
			continue
		}
		out[i].Pthread = pd
	}
	if lacking > 0 {
		g, err := c.set.GlibcThreads(c.mem, 4*len(out)+64)
		if err != nil {
			why = err
		}
		for i := range out {
			pd, ok := g.Threads[out[i].ID]
			if out[i].Pointer != 0 || !ok {
				continue
			}
			tp, err := c.set.ThreadPointerOf(c.mem, pd)
			if err != nil {
				why = err
				continue
			}
			out[i].Pointer, out[i].Pthread = tp, pd
			lacking--
		}
	}
	if lacking > 0 {
		c.warnf("%d of %d threads have no thread pointer in the core, and glibc's lists of threads do not give it: %v", lacking, len(out), why)
	} else if why != nil {
		c.warnf("threads' pthread_t unknown: %v", why)
	}
	c.threads = out
}

// osThreads returns the threads with their thread pointers and
// pthread_t (see resolveThreads; before it ran, as the notes give them).
func (c *Core) osThreads() []target.Thread {
	if c.threads != nil {
		return c.threads
	}
	out := make([]target.Thread, len(c.d.threads))
	for i, t := range c.d.threads {
		out[i] = target.Thread{ID: t.tid, Pointer: t.tp}
	}
	return out
}

// threadPointer returns the thread pointer of thread tid.
func (c *Core) threadPointer(tid uint64) (uint64, error) {
	for _, t := range c.osThreads() {
		if t.ID == tid {
			return t.Pointer, nil
		}
	}
	return 0, fmt.Errorf("thread %d: %w", tid, target.ErrNoThread)
}
