package omprt

import (
	"cmp"
	"slices"
	"sync"

	"github.com/ompd-go/ompd/target"
)

// scratchRuns holds the buffers ReadEach reads runs into, which it keeps
// nothing of: a fresh buffer of a few hundred KB per call costs its
// clearing, and the page faults of the target's copy into it, more than
// the read itself.
// maxRunPages bounds one read of ReadEach, in pages.
const maxRunPages = 64

// maxGapPages is how many unwanted pages ReadEach reads to join two runs
// of wanted structures: a page costs less than a read.
const maxGapPages = 2

var scratchRuns = sync.Pool{New: func() any { return new([]byte) }}

// ReadEach reads the size bytes at each address of addrs, the structures
// of one kind a runtime allocates one after the other (its per-thread
// structures), with as few target reads as their placement allows:
// structures whose pages lie within maxGapPages pages of each other are
// read together, gaps included, up to maxRunPages pages a read. It keeps
// only the structures, copied next to each other into one allocation per
// read, not the pages they lie in: reading a run costs a copy of the
// wanted bytes only, and the gap pages and the rest of each page are not
// kept.
//
// The extents kept count against the stop's budget (MaxStopBytes).
// A target that reads many ranges at once (target.VectorReader) reads
// just the structures, with one call, and no pages around them.
// out[i] and errs[i] receive what View(addrs[i], size, what) would
// return; entries whose address is 0 are left alone. A structure whose
// pages are all cached already is read through the cache; a run the
// target cannot read is read structure by structure, so that an unmapped
// page costs only the structures on it. out and errs must be as long as
// addrs.
func (m *Memory) ReadEach(addrs []uint64, size uint64, what string, out []View, errs []error) {
	if size == 0 || size > maxRunPages*PageSize {
		for i, a := range addrs {
			if a != 0 {
				out[i], errs[i] = m.View(a, size, what)
			}
		}
		return
	}
	// The structures to read in runs, by address; the others through
	// the cache.
	order := make([]int32, 0, len(addrs))
	var direct []int32
	m.mu.RLock()
	for i, a := range addrs {
		switch {
		case a == 0:
		case a+size < a || m.cachedLocked(a, size):
			direct = append(direct, int32(i))
		default:
			order = append(order, int32(i))
		}
	}
	m.mu.RUnlock()
	for _, i := range direct {
		out[i], errs[i] = m.View(addrs[i], size, what)
	}
	slices.SortFunc(order, func(x, y int32) int { return cmp.Compare(addrs[x], addrs[y]) })
	if vr, ok := m.T.(target.VectorReader); ok && len(order) > 0 {
		order = m.readVec(vr, addrs, size, order, out, errs)
	}
	// The runs: order[ends[r-1]:ends[r]], pages firsts[r] to lasts[r].
	var ends []int
	var firsts, lasts []uint64
	biggest := 0
	for i := 0; i < len(order); {
		first := addrs[order[i]] &^ (PageSize - 1)
		last := (addrs[order[i]] + size - 1) &^ (PageSize - 1)
		j := i + 1
		for ; j < len(order); j++ {
			a := addrs[order[j]]
			lo, hi := a&^(PageSize-1), (a+size-1)&^(PageSize-1)
			if (lo > last && lo-last > (maxGapPages+1)*PageSize) || (hi-first)/PageSize >= maxRunPages {
				break
			}
			last = max(last, hi)
		}
		ends, firsts, lasts = append(ends, j), append(firsts, first), append(lasts, last)
		biggest = max(biggest, int(last-first)+PageSize)
		i = j
	}
	sp := scratchRuns.Get().(*[]byte)
	defer scratchRuns.Put(sp)
	if cap(*sp) < biggest {
		*sp = make([]byte, biggest)
	}
	scratch := (*sp)[:biggest]
	i := 0
	for r, j := range ends {
		run := scratch[:lasts[r]-firsts[r]+PageSize]
		keep := int(uint64(j-i) * size)
		err := m.reserve(firsts[r], keep)
		if err == nil {
			if err = m.T.ReadMemory(run, firsts[r]); err != nil {
				m.used.Add(-int64(keep))
			}
		}
		if err != nil {
			// Unreadable, or past the stop's budget: View says which.
			for _, k := range order[i:j] {
				out[k], errs[k] = m.View(addrs[k], size, what)
			}
			i = j
			continue
		}
		buf := make([]byte, keep)
		for x, k := range order[i:j] {
			off := addrs[k] - firsts[r]
			b := buf[uint64(x)*size : uint64(x+1)*size : uint64(x+1)*size]
			copy(b, run[off:off+size])
			out[k], errs[k] = m.view(b), nil
		}
		i = j
	}
}

// Vectored reports whether the target reads many ranges at once
// (target.VectorReader), so that ReadEach reads just the structures.
func (m *Memory) Vectored() bool {
	_, ok := m.T.(target.VectorReader)
	return ok
}

// readVec reads the structures at addrs[order[i]] with vr, into one
// allocation, and returns those of order it did not read, from the first
// it could not.
func (m *Memory) readVec(vr target.VectorReader, addrs []uint64, size uint64, order []int32, out []View, errs []error) []int32 {
	n := len(order)
	if uint64(n) > MaxRead/size {
		n = int(MaxRead / size)
	}
	keep := int(uint64(n) * size)
	if m.reserve(addrs[order[0]], keep) != nil {
		return order // the runs' reads say which structures are past the budget
	}
	want := make([]uint64, n)
	for i, k := range order[:n] {
		want[i] = addrs[k]
	}
	buf := make([]byte, keep)
	got, err := vr.ReadMemoryVec(buf, want, int(size))
	if err != nil || got < 0 || got > n {
		got = 0
	}
	m.used.Add(-int64(uint64(n-got) * size))
	for x, k := range order[:got] {
		out[k], errs[k] = m.view(buf[uint64(x)*size:uint64(x+1)*size:uint64(x+1)*size]), nil
	}
	return order[got:]
}

// cachedLocked reports whether every page of [a, a+size) is cached and
// readable; m.mu must be held.
func (m *Memory) cachedLocked(a, size uint64) bool {
	last := (a + size - 1) &^ (PageSize - 1)
	for pg := a &^ (PageSize - 1); ; pg += PageSize {
		if e, ok := m.pages[pg]; !ok || e.p == nil {
			return false
		}
		if pg == last {
			return true
		}
	}
}
