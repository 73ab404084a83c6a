package kmp

import (
	"sync"

	"github.com/ompd-go/ompd/internal/omprt"
)

// chain is one kind of link between tasks (the generating or the
// scheduling ancestor). What is known at this stop about cycles of it is
// kept in the tasks' records (taskRaw.cycle[idx]): for each task looked
// at, nil if its chain ends, an omprt.ErrCorrupt error if the task lies
// on a cycle.
type chain struct {
	name string
	next func(s *stop, td uint64) uint64
	idx  int        // the chain's entry of taskRaw.cycle
	mu   sync.Mutex // guards the tasks' cycle entries of this chain
}

// cycleMark is what a walk of one chain found for one task.
type cycleMark struct {
	known bool
	err   error
}

// known returns what is known of task t's chain.
func (c *chain) known(t *taskRaw) (error, bool) {
	c.mu.Lock()
	m := t.cycle[c.idx]
	c.mu.Unlock()
	return m.err, m.known
}

// mark records err for task t unless something is known already.
func (c *chain) mark(t *taskRaw, err error) {
	c.mu.Lock()
	if !t.cycle[c.idx].known {
		t.cycle[c.idx] = cycleMark{known: true, err: err}
	}
	c.mu.Unlock()
}

// generatingLink is td_parent.
func generatingLink(s *stop, td uint64) uint64 {
	t := s.task(td)
	if t.err != nil {
		return 0
	}
	return t.v.F(s.rt.l.tdParent)
}

// schedulingLink is an explicit task's scheduling_parent and a primary
// thread's implicit task's td_parent (a worker's implicit task has none).
func schedulingLink(s *stop, td uint64) uint64 {
	t := s.task(td)
	if t.err != nil {
		return 0
	}
	if t.explicit {
		return t.v.F(s.rt.l.tdSchedParent)
	}
	if t.team == 0 {
		return 0
	}
	if tm := s.team(t.team); tm.err != nil || tm.implicit != td {
		return 0
	}
	return t.v.F(s.rt.l.tdParent)
}

// onCycle reports (as an omprt.ErrCorrupt error) whether task td lies on a cycle
// of the chain's links. Each task's answer is worked out once per stop:
// a walk stops at the first task already known, so all walks of a stop
// together follow each link once. Pairs of tasks naming each other and
// longer cycles (A, B, C, A) are found alike, so that a loop over
// Generating or Scheduling always ends.
func (s *stop) onCycle(c *chain, td uint64) error {
	first := s.task(td)
	if err, ok := c.known(first); ok {
		return err
	}
	var buf [16]uint64
	var tbuf [16]*taskRaw
	path, recs := buf[:0], tbuf[:0]
	var index map[uint64]int // once the path is long
	cycleAt := -1
	for cur := td; cur != 0; cur = c.next(s, cur) {
		t := s.task(cur)
		if _, ok := c.known(t); ok {
			break // the rest of the chain is known: the path only leads into it
		}
		if i, ok := pathIndex(path, index, cur); ok {
			cycleAt = i
			break
		}
		if len(path) == maxChain {
			// Too long to be real: call the task that starts it corrupt.
			c.mark(first, errorf(omprt.ErrCorrupt, "task %#x: its %s chain has no end within %d links", td, c.name, maxChain))
			path, recs = path[1:], recs[1:]
			break
		}
		path, recs = append(path, cur), append(recs, t)
		if len(path) == 64 {
			index = make(map[uint64]int, 128)
			for i, p := range path {
				index[p] = i
			}
		} else if index != nil {
			index[cur] = len(path) - 1
		}
	}
	for i, p := range path {
		var err error
		if cycleAt >= 0 && i >= cycleAt {
			err = errorf(omprt.ErrCorrupt, "task %#x lies on a cycle of %d %s links", p, len(path)-cycleAt, c.name)
		}
		c.mark(recs[i], err)
	}
	err, _ := c.known(first)
	return err
}

// pathIndex finds x on the path of onCycle: in index once the path is
// long, else among path.
func pathIndex(path []uint64, index map[uint64]int, x uint64) (int, bool) {
	if index != nil {
		i, ok := index[x]
		return i, ok
	}
	for i, p := range path {
		if p == x {
			return i, true
		}
	}
	return 0, false
}
