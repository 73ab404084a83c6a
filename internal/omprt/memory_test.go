package omprt_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fakeruntime"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target"
)

const page = omprt.PageSize

// Cache hands every caller the same record, however many decode it at once.
func TestCacheOneRecordPerKey(t *testing.T) {
	var c omprt.Cache[int, *int]
	var wg sync.WaitGroup
	got := make([]*int, 16)
	for g := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[g] = c.Get(7, func(k int) *int { v := k; return &v })
		}()
	}
	wg.Wait()
	for _, p := range got {
		assert.Same(t, got[0], p)
	}
	v, ok := c.Load(7)
	assert.True(t, ok)
	assert.Same(t, got[0], v)
	c.Store(7, new(int))
	v, _ = c.Load(7)
	assert.Same(t, got[0], v, "the first record stays")
}

// Errors match their sentinel and cause, say the sentinel once, and cost
// no allocation when tested with errors.Is.
func TestErrors(t *testing.T) {
	cause := errors.New("read of 8 bytes at 0x10: memory not available")
	e1 := omprt.Wrap(omprt.ErrReadFailed, cause, "team at %#x", 0x10)
	assert.EqualError(t, e1, "team at 0x10: ompd: target read failed: "+cause.Error())
	assert.ErrorIs(t, e1, omprt.ErrReadFailed)
	assert.ErrorIs(t, e1, cause)
	e2 := omprt.Wrap(omprt.ErrCorrupt, e1, "region")
	assert.EqualError(t, e2, "region: "+e1.Error(), "the sentinel once")
	assert.ErrorIs(t, e2, omprt.ErrReadFailed)
	assert.NotErrorIs(t, e2, omprt.ErrCorrupt)

	var store omprt.ErrorStore
	ne := store.Error(omprt.ErrUnavailable, omprt.TaskN(omprt.Ref{Addr: 0x40, Level: 2}), " has no generating task")
	assert.EqualError(t, ne, "task/0x40/L2 has no generating task: ompd: unavailable")
	e3 := omprt.Wrap(omprt.ErrCorrupt, ne, "walk")
	assert.EqualError(t, e3, "walk: "+ne.Error())
	assert.ErrorIs(t, e3, omprt.ErrUnavailable)
	for i := 0; i < 8; i++ { // past the store's room
		assert.ErrorIs(t, store.Error(omprt.ErrCorrupt, omprt.RegionN(omprt.Ref{Addr: 1}), " x"), omprt.ErrCorrupt)
	}

	allocs := testing.AllocsPerRun(100, func() {
		_ = errors.Is(e2, omprt.ErrUnavailable)
		_ = errors.Is(ne, omprt.ErrUnavailable)
	})
	assert.Zero(t, allocs, "errors.Is allocates")
	assert.ErrorIs(t, omprt.Errorf(omprt.ErrNoRuntime, "open"), omprt.ErrIncompatible)
}

// topTarget serves the last pages of the 64-bit address space (which
// fakeruntime cannot map: their end wraps to 0) with a pattern of their
// address, and counts the reads of them.
type topTarget struct {
	*fakeruntime.Target
	from  uint64 // first readable address; readable up to 2^64
	reads int
}

func topByte(a uint64) byte { return byte(a ^ a>>12) }

func (t *topTarget) ReadMemory(buf []byte, addr uint64) error {
	t.reads++
	end := addr + uint64(len(buf))
	if addr < t.from || (end < addr && end != 0) {
		return t.Target.ReadMemory(buf, addr) // not mapped there: fails
	}
	for i := range buf {
		buf[i] = topByte(addr + uint64(i))
	}
	return nil
}

// Read and ReadEach at the top page of the address space: a read across
// its last two pages (fill) and a run of structures up to it all end,
// cache what they read, and hand back the target's bytes; a range past
// 2^64 is refused. The page loops once wrapped to page 0 there (1f3e079
// fixed them).
func TestMemoryTopPage(t *testing.T) {
	top := ^uint64(0) &^ (page - 1)
	check := func(t *testing.T, mem *omprt.Memory, tg *topTarget, addr uint64, n int) {
		t.Helper()
		b, err := mem.Read(addr, n)
		require.NoError(t, err)
		require.Len(t, b, n)
		for i := range b {
			if b[i] != topByte(addr+uint64(i)) {
				t.Fatalf("byte at %#x is %#x, want %#x", addr+uint64(i), b[i], topByte(addr+uint64(i)))
			}
		}
	}
	run := func(t *testing.T, name string, f func()) {
		done := make(chan struct{})
		go func() { defer close(done); f() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s at the top page did not return", name)
		}
	}
	t.Run("read across the last two pages", func(t *testing.T) {
		tg := &topTarget{Target: fakeruntime.NewTarget(fakeruntime.Config{}), from: top - 8*page}
		mem := omprt.NewMemory(tg)
		run(t, "Read", func() { check(t, mem, tg, top-100, 200) })
		assert.Equal(t, 1, tg.reads, "one read of both pages")
		check(t, mem, tg, top-page, 2*page-1) // to the last byte, from the cache
		assert.Equal(t, 1, tg.reads)
	})
	t.Run("ReadEach", func(t *testing.T) {
		tg := &topTarget{Target: fakeruntime.NewTarget(fakeruntime.Config{}), from: top - 8*page}
		mem := omprt.NewMemory(tg)
		addrs := []uint64{top + 4000, top - page + 1000, top + 3400, top - page + 3000, top + 1000}
		out, errs := make([]omprt.View, len(addrs)), make([]error, len(addrs))
		run(t, "ReadEach", func() { mem.ReadEach(addrs, 600, "structure", out, errs) })
		assert.Equal(t, 1, tg.reads, "one run up to the last page")
		assert.ErrorIs(t, errs[0], omprt.ErrReadFailed, "past 2^64")
		for i, a := range addrs[1:] {
			require.NoError(t, errs[i+1])
			for k, c := range out[i+1].B {
				require.Equal(t, topByte(a+uint64(k)), c, "byte at %#x", a+uint64(k))
			}
		}
	})
	t.Run("past the end", func(t *testing.T) {
		tg := &topTarget{Target: fakeruntime.NewTarget(fakeruntime.Config{}), from: top - 8*page}
		mem := omprt.NewMemory(tg)
		var err error
		run(t, "Read", func() { _, err = mem.Read(top+4000, 600) })
		assert.Zero(t, tg.reads, "a structure wrapping past 2^64 is not read")
		assert.ErrorIs(t, err, target.ErrNoMemory)
		_, err = mem.View(top+4000, 600, "structure")
		assert.ErrorIs(t, err, omprt.ErrReadFailed)
	})
}

// A stop reads at most Memory.Budget bytes of target memory, however the
// bytes are read (pages, runs, exact reads of small mappings,
// copies) and however long its callers keep what they got; past it every
// read that would allocate fails with ErrStopBudget while cached pages
// still answer, and Refresh starts a new budget.
func TestMemoryStopBudget(t *testing.T) {
	const base = 0x400000
	tg := fakeruntime.NewTarget(fakeruntime.Config{})
	require.NoError(t, tg.Map(base, 64*page))
	small := uint64(base + 80*page)
	require.NoError(t, tg.Map(small, 100)) // not a whole page: read exactly
	require.NoError(t, tg.Poke(small, []byte("ompd\x00")))
	mem := omprt.NewMemory(tg)
	mem.Budget = 8 * page

	var kept [][]byte // a decoder keeps its views for the whole stop
	read := func(addr uint64, n int) error {
		b, err := mem.Read(addr, n)
		if err == nil {
			kept = append(kept, b)
		}
		return err
	}
	for i := uint64(0); i < 6; i++ {
		require.NoError(t, read(base+i*page+8, 64), "page %d", i)
	}
	require.NoError(t, read(base+6*page+8, page), "two pages, one read")
	assert.Equal(t, int64(8*page), mem.Used())
	require.ErrorIs(t, read(base+page-8, 16), omprt.ErrStopBudget, "a copy across two cached pages read apart")
	err := read(base+9*page, 64)
	require.ErrorIs(t, err, omprt.ErrStopBudget, "a ninth page")
	var re *target.ReadError
	require.ErrorAs(t, err, &re)
	assert.Equal(t, uint64(base+9*page), re.Addr)
	_, err = mem.View(base+10*page, 8, "team")
	assert.ErrorIs(t, err, omprt.ErrStopBudget)
	assert.ErrorIs(t, err, omprt.ErrReadFailed)
	assert.ErrorContains(t, err, "team at 0x40a000")
	require.ErrorIs(t, read(small, 16), omprt.ErrStopBudget, "an exact read")
	for range 100 {
		str, err := mem.String(small, "name")
		require.NoError(t, err, "strings are not counted")
		assert.Equal(t, "ompd", str)
	}
	out, errs := make([]omprt.View, 2), make([]error, 2)
	mem.ReadEach([]uint64{base + 20*page, base + 21*page}, 64, "kmp_info_t", out, errs)
	for _, err := range errs {
		assert.ErrorIs(t, err, omprt.ErrStopBudget, "ReadEach")
	}
	assert.Equal(t, int64(8*page), mem.Used())
	require.NoError(t, read(base+8, 64), "a cached page still answers")
	require.NoError(t, read(base+6*page+4000, 200), "so do two cached pages read together")

	mem.Refresh()
	assert.Zero(t, mem.Used())
	require.NoError(t, read(small, 16))
	s, err := mem.String(small, "name")
	require.NoError(t, err)
	assert.Equal(t, "ompd", s)
	for _, a := range []uint64{base + 20*page, base + 23*page, base + 40*page} {
		require.NoError(t, read(a, 64))
	}
	assert.Equal(t, int64(16+3*page), mem.Used(), "a page each")
	for _, a := range []uint64{base + 20*page, base + 23*page, base + 40*page} {
		require.NoError(t, read(a+100, 64))
	}
	assert.Equal(t, int64(16+3*page), mem.Used(), "from the cache")
	out, errs = make([]omprt.View, 2), make([]error, 2)
	mem.ReadEach([]uint64{base + 50*page, base + 51*page}, 64, "kmp_info_t", out, errs)
	require.NoError(t, errors.Join(errs...))
	assert.Equal(t, int64(16+3*page+2*64), mem.Used(), "ReadEach keeps the structures only")

	// Failed reads cost nothing.
	_, err = mem.Read(base+100*page, 64)
	require.Error(t, err)
	assert.NotErrorIs(t, err, omprt.ErrStopBudget)
	assert.Equal(t, int64(16+3*page+2*64), mem.Used())
}

// A structure spanning pages cached apart is read again as one run once,
// then served from it: repeated reads neither copy (each copy would count
// against the stop's budget, and a core never refreshes) nor read the
// target again.
func TestReadAcrossPagesReadApart(t *testing.T) {
	const base = 0x500000
	tg, want := pokedTarget(t, base, 4, 3)
	mem := omprt.NewMemory(tg)
	for _, a := range []uint64{base + 8, base + page + 8} {
		_, err := mem.Read(a, 8)
		require.NoError(t, err)
	}
	tg.ResetCounters()
	for range 100 {
		b, err := mem.Read(base+page-50, 100)
		require.NoError(t, err)
		require.Equal(t, want[page-50:page+50], b)
	}
	assert.Equal(t, int64(1), tg.Reads(), "one read of the span")
	assert.Equal(t, int64(4*page), mem.Used(), "two pages, then the two again as one run")
	b, err := mem.Read(base+8, 8)
	require.NoError(t, err)
	assert.Equal(t, want[8:16], b)
	assert.Equal(t, int64(1), tg.Reads())
}

// After Refresh, every read gives the target's bytes now, however often
// and recently the page was read before (the pages read lately are
// remembered apart from the cache), also while other goroutines read and
// refresh at once.
func TestMemoryRefreshNoStalePages(t *testing.T) {
	const base = 0x600000
	tg := fakeruntime.NewTarget(fakeruntime.Config{})
	require.NoError(t, tg.Map(base, 8*page))
	mem := omprt.NewMemory(tg)
	for round := range byte(20) {
		for pg := range uint64(8) {
			require.NoError(t, tg.Poke(base+pg*page+8, []byte{round, byte(pg)}))
		}
		mem.Refresh()
		for range 3 {
			for pg := range uint64(8) {
				v, err := mem.Uint(base+pg*page+8, 2, "word")
				require.NoError(t, err)
				require.Equal(t, uint64(round)|pg<<8, v, "round %d page %d", round, pg)
			}
		}
	}
	// Concurrent readers and refreshes: a read after a refresh that
	// follows a change sees the change.
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				_, err := mem.Uint(base+uint64(g%8)*page, 8, "word")
				assert.NoError(t, err)
				if g == 0 {
					mem.Refresh()
				}
			}
		}()
	}
	wg.Wait()
	require.NoError(t, tg.Poke(base+8, []byte{0xee, 0xee}))
	mem.Refresh()
	v, err := mem.Uint(base+8, 2, "word")
	require.NoError(t, err)
	assert.Equal(t, uint64(0xeeee), v)
}
