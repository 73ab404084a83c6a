package omprt

import (
	"cmp"
	"slices"
	"sync"

	"github.com/ompd-go/ompd/target"
)

// maxRunPages bounds one read of ReadEach, in pages.
const maxRunPages = 64

// maxGap is how many unwanted bytes between two structures ReadEach reads
// to read them with one target read instead of two: about what a read
// costs in copying where reads are cheap (a target that caches memory, a
// machine with cheap system calls). Structures further apart are read
// alone, exactly: a run through long gaps (the per-thread structures of
// LLVM's runtime lie about 12 KB apart, each 584 bytes of it wanted)
// copied twenty times the bytes wanted, a tenth of a snapshot's CPU where
// reads cost little.
const maxGap = PageSize / 2

// scratchRuns holds the buffers ReadEach reads runs with gaps into, which
// it keeps nothing of.
var scratchRuns = sync.Pool{New: func() any { return new([]byte) }}

// ReadEach reads the size bytes at each address of addrs, the structures
// of one kind a runtime allocates one after the other (its per-thread
// structures, a team's implicit tasks), with as few target reads as their
// placement allows without reading much more than them: structures at
// most maxGap bytes apart are read together, the gaps between them
// included, up to maxRunPages pages a read; the others alone. It keeps
// only the structures, next to each other in one allocation, not the
// gaps nor the pages around them.
//
// The extents kept count against the stop's budget (MaxStopBytes).
// A target that reads many ranges at once (target.VectorReader) reads
// just the structures, with one call.
// out[i] and errs[i] receive what View(addrs[i], size, what) would
// return; entries whose address is 0 are left alone. A structure whose
// pages are all cached already is read through the cache; a run the
// target cannot read is read structure by structure, so that an unmapped
// page costs only the structures on it. out and errs must be as long as
// addrs.
func (m *Memory) ReadEach(addrs []uint64, size uint64, what string, out []View, errs []error) {
	m.readEach(addrs, size, what, out, errs, nil)
}

// ReadEachFunc is ReadEach for structures decoded at once: it calls fn
// with the view of each structure whose address is not 0, or why it
// cannot be read, in the order of addrs. The views lie in a
// buffer ReadEachFunc reuses once it returns: fn must keep none of v's
// bytes. What a stop keeps of hundreds of kmp_info_t is a few fields of
// each; keeping their bytes too was a fifth of what a snapshot allocated.
func (m *Memory) ReadEachFunc(addrs []uint64, size uint64, what string, fn func(i int, v View, err error)) {
	sc := scratchEach.Get().(*eachScratch)
	sc.out = slices.Grow(sc.out[:0], len(addrs))[:len(addrs)]
	sc.errs = slices.Grow(sc.errs[:0], len(addrs))[:len(addrs)]
	clear(sc.out)
	clear(sc.errs)
	sc.buf.used = 0
	m.readEach(addrs, size, what, sc.out, sc.errs, &sc.buf)
	for i, a := range addrs {
		if a != 0 {
			fn(i, sc.out[i], sc.errs[i])
		}
	}
	clear(sc.out) // no view of the buffer stays reachable from the pool
	clear(sc.errs)
	scratchEach.Put(sc)
}

// eachScratch is what ReadEachFunc reuses from call to call.
type eachScratch struct {
	out  []View
	errs []error
	buf  arena
}

var scratchEach = sync.Pool{New: func() any { return new(eachScratch) }}

// arena hands out parts of one reused buffer, in order; nil hands out
// new allocations.
type arena struct {
	b    []byte
	used int
}

// take returns n bytes of the arena, or newly allocated ones.
func (a *arena) take(n int) []byte {
	if a == nil {
		return make([]byte, n)
	}
	if len(a.b)-a.used < n {
		if a.used == 0 {
			a.b = make([]byte, n)
		} else {
			return make([]byte, n) // rare: a vectored read that fell short
		}
	}
	b := a.b[a.used : a.used+n : a.used+n]
	a.used += n
	return b
}

func (m *Memory) readEach(addrs []uint64, size uint64, what string, out []View, errs []error, ar *arena) {
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
		order = m.readVec(vr, addrs, size, order, out, errs, ar)
	}
	if len(order) == 0 {
		return
	}
	// The structures kept, in address order, in one allocation; a run
	// that cannot be read leaves its part unused.
	keep := ar.take(int(uint64(len(order)) * size))
	var sp *[]byte
	defer func() {
		if sp != nil {
			scratchRuns.Put(sp)
		}
	}()
	for i := 0; i < len(order); {
		// The run order[i:j]: from the first structure's start to the
		// end of the last, which ends furthest.
		first := addrs[order[i]]
		end := first + size
		j := i + 1
		for ; j < len(order); j++ {
			a := addrs[order[j]]
			if a > end && a-end > maxGap || a+size-first > maxRunPages*PageSize {
				break
			}
			end = max(end, a+size)
		}
		dst := keep[uint64(i)*size : uint64(j)*size]
		n := int(uint64(j-i) * size)
		err := m.reserve(first, n)
		if err == nil {
			if end-first == size {
				// One structure, or several at one address: read it
				// straight where it is kept.
				err = m.T.ReadMemory(dst[:size], first)
				for x := uint64(1); x < uint64(j-i); x++ {
					copy(dst[x*size:(x+1)*size], dst[:size])
				}
			} else {
				if sp == nil {
					sp = scratchRuns.Get().(*[]byte)
				}
				if uint64(cap(*sp)) < end-first {
					*sp = make([]byte, end-first)
				}
				run := (*sp)[:end-first]
				if err = m.T.ReadMemory(run, first); err == nil {
					for x, k := range order[i:j] {
						off := addrs[k] - first
						copy(dst[uint64(x)*size:uint64(x+1)*size], run[off:off+size])
					}
				}
			}
			if err != nil {
				m.used.Add(-int64(n))
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
		for x, k := range order[i:j] {
			b := dst[uint64(x)*size : uint64(x+1)*size : uint64(x+1)*size]
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
func (m *Memory) readVec(vr target.VectorReader, addrs []uint64, size uint64, order []int32, out []View, errs []error, ar *arena) []int32 {
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
	buf := ar.take(keep)
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
