package gomp_test

import (
	"context"
	"encoding/binary"
	"errors"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/gomp"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target/core"
	"github.com/ompd-go/ompd/target/delve"
)

// patchedCore is a real core with some of its memory replaced: a read
// inside one patch is served from it (mapped in the core or not), and a
// read of the core gets the bytes of the patches it overlaps.
type patchedCore struct {
	*core.Core
	patches map[uint64][]byte
}

func (c *patchedCore) ReadMemory(buf []byte, addr uint64) error {
	end := addr + uint64(len(buf))
	for a, p := range c.patches {
		if addr >= a && end <= a+uint64(len(p)) {
			copy(buf, p[addr-a:])
			return nil
		}
	}
	if err := c.Core.ReadMemory(buf, addr); err != nil {
		return err
	}
	for a, p := range c.patches {
		for i := range p {
			if x := a + uint64(i); x >= addr && x < end {
				buf[x-addr] = p[i]
			}
		}
	}
	return nil
}

// put stores v, size bytes little-endian, at off of b.
func put(b []byte, off, size, v uint64) {
	var w [8]byte
	binary.LittleEndian.PutUint64(w[:], v)
	copy(b[off:off+size], w[:size])
}

// idleCore opens the idle fixture's core on the system's libgomp (no
// debug information: the known-layout table, confirmed on live data):
// main serial again, two workers idle in the pool. It returns the core,
// the layout the table gave, main's gomp_thread address and the
// workers'.
func idleCore(t *testing.T) (*core.Core, *gomp.Layout, uint64, []uint64) {
	s := setups()[len(setups())-1]
	require.Equal(t, "system", s.name)
	stop := fixtures.CoreWith(t, s.info(t), fixtures.Idle)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core, s.opts(t)...)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	r, err := gomp.Open(c)
	require.NoError(t, err)
	confirmed, failed, err := gomp.Confirmations(r)
	require.NoError(t, err)
	// Before the checks of threads in no team, none of these confirmed
	// the layout and a wrong one passed unchecked.
	assert.Equal(t, 3, confirmed, "main by its pool, each idle worker by its pool and its last team")
	assert.Zero(t, failed)
	refs, err := r.Threads()
	require.NoError(t, err)
	require.Len(t, refs, 3)
	main, err := r.ThreadByOS(omprt.IDLWP, uint64(stop.Truth.StopTID))
	require.NoError(t, err)
	var workers []uint64
	for _, ref := range refs {
		if ref != main {
			workers = append(workers, ref.Addr)
		}
	}
	return c, gomp.LayoutOf(r), main.Addr, workers
}

// threadBytes returns a copy of the gomp_thread at addr.
func threadBytes(t *testing.T, c *core.Core, l *gomp.Layout, addr uint64) []byte {
	b := make([]byte, l.Sizes[gomp.TypeThread])
	require.NoError(t, c.ReadMemory(b, addr))
	return b
}

// TestLayoutUnconfirmed: a known-layout table that no thread can confirm
// is refused with a clear ErrIncompatible, and the checks of threads in
// no team (a serial thread's task ICVs and pool, an idle worker's pool)
// refuse a wrong one, on fake memory over a real system-libgomp core.
func TestLayoutUnconfirmed(t *testing.T) {
	c, l, main, workers := idleCore(t)
	zero := func(p map[uint64][]byte, addrs ...uint64) {
		for _, a := range addrs {
			p[a] = make([]byte, l.Sizes[gomp.TypeThread])
		}
	}
	open := func(p map[uint64][]byte) (omprt.Runtime, error) {
		return gomp.Open(&patchedCore{Core: c, patches: p})
	}

	t.Run("no OpenMP thread", func(t *testing.T) {
		// A program before its first parallel region: every gomp_thread
		// is zeros, whatever the layout, and nothing read needs it. The
		// thread whose stack holds main is the initial thread, serial.
		p := map[uint64][]byte{}
		zero(p, append(workers, main)...)
		r, err := open(p)
		require.NoError(t, err)
		refs, err := r.Threads()
		require.NoError(t, err)
		require.Len(t, refs, 1, "the initial thread alone")
		assert.Equal(t, main, refs[0].Addr)
		d, err := r.Thread(refs[0])
		require.NoError(t, err)
		require.NoError(t, d.StateErr)
		assert.EqualValues(t, gomp.StateWorkSerial, d.State)
		require.NoError(t, d.RegionErr)
		assert.EqualValues(t, 0, d.Region.Level)
		require.NoError(t, d.TaskErr)
		confirmed, failed, err := gomp.Confirmations(r)
		require.NoError(t, err)
		assert.Equal(t, []int{0, 0}, []int{confirmed, failed}, "nothing confirms the layout, nothing needs it")

		// A thread with state that confirms nothing (a pool with no
		// threads array) needs the layout: refused.
		th := make([]byte, l.Sizes[gomp.TypeThread])
		put(th, l.Fields[gomp.ThreadPoolField].Off, 8, 0x10000)
		p[main] = th
		p[0x10000] = make([]byte, 256)
		_, err = open(p)
		require.ErrorIs(t, err, omprt.ErrIncompatible)
		assert.ErrorContains(t, err, "could not be confirmed")
		assert.ErrorContains(t, err, "debug file")
	})

	// main alone, serial with a task of its own (as omp_set_num_threads
	// gives it) at an address the core does not map, and no pool.
	const fakeTask = 0x10000
	serialTask := func(edit func(task []byte)) map[uint64][]byte {
		p := map[uint64][]byte{}
		zero(p, workers...)
		th := threadBytes(t, c, l, main)
		put(th, l.Fields[gomp.ThreadTaskField].Off, 8, fakeTask)
		put(th, l.Fields[gomp.ThreadPoolField].Off, 8, 0)
		p[main] = th
		task := make([]byte, l.Sizes[gomp.TypeTask])
		put(task, l.Fields[gomp.TaskNthreadsField].Off, 8, 2)
		put(task, l.Fields[gomp.TaskThreadLimitField].Off, 4, 0xffffffff)
		put(task, l.Fields[gomp.TaskBindField].Off, 1, 1)
		if edit != nil {
			edit(task)
		}
		p[fakeTask] = task
		return p
	}
	t.Run("serial task ICVs in range", func(t *testing.T) {
		r, err := open(serialTask(nil))
		require.NoError(t, err)
		confirmed, failed, err := gomp.Confirmations(r)
		require.NoError(t, err)
		assert.Equal(t, []int{1, 0}, []int{confirmed, failed})
	})
	for name, edit := range map[string]func(task []byte){
		"nthreads-var 0":        func(b []byte) { put(b, l.Fields[gomp.TaskNthreadsField].Off, 8, 0) },
		"nthreads-var huge":     func(b []byte) { put(b, l.Fields[gomp.TaskNthreadsField].Off, 8, 0x7f0000001000) },
		"thread-limit-var 0":    func(b []byte) { put(b, l.Fields[gomp.TaskThreadLimitField].Off, 4, 0) },
		"dyn-var 2":             func(b []byte) { put(b, l.Fields[gomp.TaskDynField].Off, 1, 2) },
		"bind-var out of enum":  func(b []byte) { put(b, l.Fields[gomp.TaskBindField].Off, 1, 5) },
		"task kind out of enum": func(b []byte) { put(b, l.Fields[gomp.TaskKindField].Off, 4, 9) },
	} {
		t.Run("serial task "+name, func(t *testing.T) {
			_, err := open(serialTask(edit))
			require.ErrorIs(t, err, omprt.ErrIncompatible)
			assert.ErrorContains(t, err, "fails its checks")
		})
	}

	t.Run("serial primary thread's pool", func(t *testing.T) {
		p := map[uint64][]byte{}
		zero(p, workers...)
		r, err := open(p)
		require.NoError(t, err)
		confirmed, failed, err := gomp.Confirmations(r)
		require.NoError(t, err)
		assert.Equal(t, []int{1, 0}, []int{confirmed, failed}, "main, by threads[0] of its pool")

		// threads[0] of the pool names another thread.
		th := threadBytes(t, c, l, main)
		pool := binary.LittleEndian.Uint64(th[l.Fields[gomp.ThreadPoolField].Off:])
		var threads [8]byte
		require.NoError(t, c.ReadMemory(threads[:], pool+l.Fields[gomp.PoolThreadsField].Off))
		p[binary.LittleEndian.Uint64(threads[:])] = make([]byte, 8)
		_, err = open(p)
		require.ErrorIs(t, err, omprt.ErrIncompatible)
		assert.ErrorContains(t, err, "threads[0]")
	})

	t.Run("wrong pool layout", func(t *testing.T) {
		// The pool's threads array read where last_team is: nothing but
		// the pool checks notices it on this core, where no thread is in
		// a team.
		saved := gomp.KnownLayouts()
		t.Cleanup(func() { gomp.SetKnownLayouts(saved) })
		var wrong []*gomp.Layout
		for _, k := range saved {
			k := *k
			k.Fields[gomp.PoolThreadsField].Off = k.Fields[gomp.PoolLastTeamField].Off
			wrong = append(wrong, &k)
		}
		gomp.SetKnownLayouts(wrong)
		_, err := gomp.Open(c)
		require.ErrorIs(t, err, omprt.ErrIncompatible)
		assert.ErrorContains(t, err, "fails its checks")
	})
}

// TestLayoutUnconfirmedLive: a program stopped at main, before any
// parallel region, has one OpenMP thread, the initial thread, serial: on
// the system's libgomp, where nothing could confirm the known layout yet
// (and nothing read needs it), as with libgomp's DWARF (the debug build).
// Run on to its stop, the program's threads confirm the layout.
func TestLayoutUnconfirmedLive(t *testing.T) {
	for _, c := range []struct {
		name string
		info func(t *testing.T) fixtures.RuntimeInfo
	}{
		{"system", func(t *testing.T) fixtures.RuntimeInfo { return fixtures.SystemGomp(t) }},
		{"debug-" + fixtures.GompVersions[0], func(t *testing.T) fixtures.RuntimeInfo { return fixtures.GompRuntime(t, fixtures.GompVersions[0]) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			fixtures.Watchdog(t, fixtures.LiveBound())
			exe := fixtures.BuildWith(t, fixtures.Nested, c.info(t))
			dir := t.TempDir()
			env := fixtures.Env(fixtures.Nested,
				"OMPD_FIXTURE_STDOUT="+filepath.Join(dir, "stdout.txt"),
				"OMPD_FIXTURE_STDERR="+filepath.Join(dir, "stderr.txt"))
			p, err := delve.Launch(context.Background(), []string{exe}, delve.WithEnv(env), delve.WithDebugDirs())
			if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.EACCES) {
				fixtures.Unavailable(t, "ptrace not allowed: %v", err)
			}
			require.NoError(t, err)
			t.Cleanup(func() { _ = p.Kill() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_, err = p.RunToFunction(ctx, "main")
			require.NoError(t, err)
			r, err := gomp.Open(p)
			require.NoError(t, err)
			refs, err := r.Threads()
			require.NoError(t, err)
			require.Len(t, refs, 1, "the initial thread")
			d, err := r.Thread(refs[0])
			require.NoError(t, err)
			assert.EqualValues(t, p.Pid(), d.LWP, "the program's main thread")
			require.NoError(t, d.StateErr)
			assert.EqualValues(t, gomp.StateWorkSerial, d.State)
			require.NoError(t, d.NumErr)
			assert.Zero(t, d.Num)

			_, err = p.RunToFunction(ctx, "stopme")
			require.NoError(t, err)
			r.Refresh()
			refs, err = r.Threads()
			require.NoError(t, err)
			assert.Len(t, refs, 6, "the nested fixture's threads")
			confirmed, failed, err := gomp.Confirmations(r)
			require.NoError(t, err)
			assert.Positive(t, confirmed)
			assert.Zero(t, failed)
		})
	}
}
