package gomp_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/gomp"
	"github.com/ompd-go/ompd/internal/omprt"
	"github.com/ompd-go/ompd/target/core"
)

// corruptCore is a real core whose memory reads, once on, have words
// replaced by junk, deterministically by seed and address: runtime memory
// as a wild write or a torn core leaves it.
type corruptCore struct {
	*core.Core
	seed uint64
	on   atomic.Bool
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	return x ^ x>>33
}

func (c *corruptCore) ReadMemory(buf []byte, addr uint64) error {
	if err := c.Core.ReadMemory(buf, addr); err != nil || !c.on.Load() {
		return err
	}
	for w := addr &^ 7; w < addr+uint64(len(buf)); w += 8 {
		h := mix(w ^ c.seed)
		if h%23 != 0 { // about one word in 23
			continue
		}
		junk := []uint64{0, ^uint64(0), h, w, w + 8, 1 << 40, 0x7fffffff, 3}[h>>60&7]
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], junk)
		for i := 0; i < 8; i++ {
			if a := w + uint64(i); a >= addr && a < addr+uint64(len(buf)) {
				buf[a-addr] = b[i]
			}
		}
	}
	return nil
}

// TestCorruptMemory walks everything libgomp's reader answers on cores
// whose runtime memory is corrupted in many ways: errors are fine, a
// panic or a hang is not.
func TestCorruptMemory(t *testing.T) {
	stop := fixtures.CoreWith(t, fixtures.GompRuntime(t, fixtures.GompVersions[1]), fixtures.Tasks)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	failed := 0
	for seed := uint64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			cc := &corruptCore{Core: c, seed: seed * 0x9e3779b97f4a7c15}
			r, err := gomp.Open(cc)
			require.NoError(t, err)
			cc.on.Store(true)
			r.Refresh()
			done := make(chan struct{})
			go func() {
				defer close(done)
				failed += walkAll(r)
			}()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				t.Fatal("the walk did not end")
			}
		})
	}
	require.NotZero(t, failed, "the corruption made some answers fail")
}

// walkAll asks every question of every object it reaches, bounded, and
// counts the threads, regions and tasks that could not be read.
func walkAll(r omprt.Runtime) (failed int) {
	refs, _ := r.Threads()
	_, _ = r.DisplayControlVars()
	_, _ = r.NumProcs()
	_, _ = r.ThreadLimit()
	for _, id := range r.ICVs() {
		_, _ = r.ICV(omprt.ScopeRef{Kind: omprt.ScopeAddressSpace}, id)
	}
	for _, ref := range refs {
		d, err := r.Thread(ref)
		if err != nil || d.Err != nil {
			failed++
			continue
		}
		for _, id := range r.ICVs() {
			_, _ = r.ICV(omprt.ScopeRef{Kind: omprt.ScopeThread, Thread: ref}, id)
		}
		reg := d.Region
		for i := 0; i < 64 && d.RegionErr == nil; i++ {
			rd, err := r.Region(reg)
			if err != nil {
				failed++
				break
			}
			for _, id := range r.ICVs() {
				_, _ = r.ICV(omprt.ScopeRef{Kind: omprt.ScopeParallel, Ref: reg}, id)
			}
			for n := 0; n < rd.TeamSize && n < 8; n++ {
				_, _ = r.RegionThread(reg, n)
				if it, err := r.ImplicitTask(reg, n); err == nil {
					_, _ = r.Task(it)
				}
			}
			if rd.EnclosingErr != nil {
				break
			}
			reg = rd.Enclosing
		}
		task := d.Task
		for i := 0; i < 64 && d.TaskErr == nil; i++ {
			td, err := r.Task(task)
			if err != nil {
				failed++
				break
			}
			for _, id := range r.ICVs() {
				_, _ = r.ICV(omprt.ScopeRef{Kind: omprt.ScopeTask, Ref: task}, id)
			}
			if td.GeneratingErr != nil {
				break
			}
			task = td.Generating
		}
	}
	return failed
}

// TestConcurrentUse walks one runtime from several goroutines while
// another refreshes it (run with -race).
func TestConcurrentUse(t *testing.T) {
	stop := fixtures.CoreWith(t, fixtures.GompRuntime(t, fixtures.GompVersions[0]), fixtures.Nested)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	r, err := gomp.Open(c)
	require.NoError(t, err)
	done := make(chan int)
	for i := 0; i < 4; i++ {
		go func() {
			n := 0
			for j := 0; j < 5; j++ {
				n += walkAll(r)
			}
			done <- n
		}()
	}
	for i := 0; i < 20; i++ {
		r.Refresh()
	}
	for i := 0; i < 4; i++ {
		require.Zero(t, <-done, "every answer of a real core reads")
	}
}
