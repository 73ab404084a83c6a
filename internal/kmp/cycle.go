package kmp

import "github.com/ompd-go/ompd/internal/omprt"

// chain is one kind of link between tasks (the generating or the
// scheduling ancestor) with what is known at this stop about cycles of it:
// for each task looked at, nil if its chain ends, an omprt.ErrCorrupt error if
// the task lies on a cycle.
type chain struct {
	name  string
	next  func(s *stop, td uint64) uint64
	known omprt.Cache[uint64, error]
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
	if err, ok := c.known.Load(td); ok {
		return err
	}
	var buf [16]uint64
	path := buf[:0]
	var index map[uint64]int // once the path is long
	cycleAt := -1
	for cur := td; cur != 0; cur = c.next(s, cur) {
		if _, ok := c.known.Load(cur); ok {
			break // the rest of the chain is known: the path only leads into it
		}
		if i, ok := pathIndex(path, index, cur); ok {
			cycleAt = i
			break
		}
		if len(path) == maxChain {
			// Too long to be real: call the task that starts it corrupt.
			c.known.Store(td, errorf(omprt.ErrCorrupt, "task %#x: its %s chain has no end within %d links", td, c.name, maxChain))
			path = path[1:]
			break
		}
		path = append(path, cur)
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
		c.known.Store(p, err)
	}
	err, _ := c.known.Load(td)
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
