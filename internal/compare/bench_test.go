//go:build cgo

package compare_test

import (
	"fmt"
	"testing"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/libompd"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
)

// BenchmarkSnapshot takes a full snapshot of a stopped program (every
// thread: state, parallel region chain, task chain, every ICV; plus the
// address-space ICVs and display variables) from the core file of the
// "many" fixture, through ompd-go (ompd.Open + Snapshot, a fresh address
// space per iteration so that its cache starts cold) and through LLVM's
// libompd (the same questions through the cgo harness, a fresh address
// space per iteration too). Besides ns/op it reports the target reads per
// snapshot (reads/op) and the bytes they read (read-bytes/op): for
// ompd-go counted by a wrapper around the target, for libompd by the
// harness's read_memory/read_string callback counters.
//
// Each is measured over the core target as it is (target=core: every read
// is a pread of the core file) and over the same target behind a warm page
// cache (target=cached: a read costs a map lookup and a copy, as in a
// debugger that caches target memory), which shows what the libraries
// themselves cost.
//
// See BENCHMARKS.md for the figures.
func BenchmarkSnapshot(b *testing.B) {
	for _, threads := range ompdtest.BenchThreads() {
		b.Run("threads="+threads, func(b *testing.B) {
			fx := openFixture(b, fixtures.Many, threads)
			for _, tk := range []string{"core", "cached"} {
				tgt := func() target.Target {
					if tk == "cached" {
						return ompdtest.NewCachedTarget(fx.target)
					}
					return fx.target
				}
				b.Run("target="+tk+"/impl=ompd-go", func(b *testing.B) { benchOurs(b, tgt()) })
				b.Run("target="+tk+"/impl=libompd", func(b *testing.B) { benchLibompd(b, tgt()) })
			}
		})
	}
}

func benchOurs(b *testing.B, t target.Target) { ompdtest.BenchSnapshot(b, t) }

func benchLibompd(b *testing.B, t target.Target) {
	lib := loadLibompd(b)
	osThreads, err := t.Threads()
	if err != nil {
		b.Fatal(err)
	}
	snapshot := func() int {
		las, err := lib.ProcessInitialize(t)
		if err != nil {
			b.Fatal(err)
		}
		var n int
		lib.Do(func() { n, err = libompdSnapshot(las, osThreads) })
		if err != nil {
			b.Fatal(err)
		}
		if err := las.Release(); err != nil {
			b.Fatal(err)
		}
		return n
	}
	snapshot() // the same warm-up as for ompd-go
	before := lib.Counters()
	var threads int
	ompdtest.Settle()
	cpu := ompdtest.CPUTime()
	for b.Loop() {
		threads = snapshot()
	}
	ompdtest.ReportCPU(b, cpu)
	c := lib.Counters().Sub(before)
	ompdtest.ReportReads(b, c.Reads(), c.BytesRead(), threads)
}

// maxChain bounds the chains the libompd walk follows, as in the differential test.
const maxChain = chainLimit

// libompdSnapshot asks libompd what ompd.AddressSpace.Snapshot gathers:
// the OpenMP version, the address-space ICVs, the display control
// variables, and for every OpenMP thread (found, as libompd must, through
// ompd_get_thread_handle for every OS thread) its pthread id, state and
// wait id, thread ICVs, parallel region chain (level, active level, team
// size, entry function through the region's implicit task 0), current
// task ICVs and generating task chain (function, frames, final and
// implicit flags). It returns the number of OpenMP threads. Answers that
// libompd refuses are not errors; failed calls of another kind are.
func libompdSnapshot(las *libompd.AddressSpace, osThreads []target.Thread) (int, error) {
	icvs, err := las.ICVs()
	if err != nil {
		return 0, err
	}
	soft := func(err error) error {
		switch libompd.Code(err) {
		case libompd.OK, libompd.Unavailable, libompd.Unsupported, libompd.Incomplete,
			libompd.Incompatible, libompd.BadInput, libompd.NeedsStateTracking:
			return nil
		}
		return err
	}
	// String ICVs and list ICVs are read as strings, the others as
	// integers: libompd refuses the other form.
	asString := map[string]bool{"run-sched-var": true, "nthreads-var": true, "bind-var": true,
		"affinity-format-var": true, "tool-libraries-var": true, "tool-verbose-init-var": true}
	read := func(h interface {
		ICV(uint64) (int64, error)
		ICVString(uint64) (string, error)
	}, scope libompd.Scope) error {
		for _, i := range icvs {
			if i.Scope != scope {
				continue
			}
			var err error
			if asString[i.Name] {
				_, err = h.ICVString(i.ID)
			} else {
				_, err = h.ICV(i.ID)
			}
			if err := soft(err); err != nil {
				return fmt.Errorf("ICV %s: %w", i.Name, err)
			}
		}
		return nil
	}
	if _, err := las.OMPVersion(); err != nil {
		return 0, err
	}
	if err := read(las, libompd.ScopeAddressSpace); err != nil {
		return 0, err
	}
	if _, err := las.DisplayControlVars(); err != nil {
		return 0, err
	}
	n := 0
	for _, ot := range osThreads {
		th, err := las.ThreadHandle(libompd.PthreadID, ot.Pointer)
		if libompd.Code(err) == libompd.Unavailable {
			continue
		}
		if err != nil {
			return n, err
		}
		n++
		if err := libompdThread(las, th, read, soft); err != nil {
			th.Release()
			return n, fmt.Errorf("thread %d: %w", ot.ID, err)
		}
		if err := th.Release(); err != nil {
			return n, err
		}
	}
	return n, nil
}

type icvReader func(h interface {
	ICV(uint64) (int64, error)
	ICVString(uint64) (string, error)
}, scope libompd.Scope) error

func libompdThread(las *libompd.AddressSpace, th *libompd.Thread, read icvReader, soft func(error) error) error {
	if _, err := th.PthreadID(); err != nil {
		return err
	}
	if _, _, err := th.State(); soft(err) != nil {
		return err
	}
	if err := read(th, libompd.ScopeThread); err != nil {
		return err
	}
	p, err := th.CurrParallel()
	for i := 0; err == nil && i < maxChain; i++ {
		for _, f := range []func() (int64, error){p.Level, p.ActiveLevel, p.NumThreads} {
			if _, err := f(); soft(err) != nil {
				p.Release()
				return err
			}
		}
		if t0, err := p.TaskIn(0); err == nil {
			_, err = t0.Function()
			t0.Release()
			if soft(err) != nil {
				p.Release()
				return err
			}
		}
		var e *libompd.Parallel
		e, err = p.Enclosing()
		p.Release()
		p = e
	}
	if soft(err) != nil {
		return err
	}
	final, _ := las.ICVByName("final-task-var")
	implicit, _ := las.ICVByName("implicit-task-var")
	tk, err := th.CurrTask()
	if err == nil {
		if err := read(tk, libompd.ScopeTask); err != nil {
			tk.Release()
			return err
		}
	}
	for i := 0; err == nil && i < maxChain; i++ {
		if _, err := tk.Function(); soft(err) != nil {
			tk.Release()
			return err
		}
		if _, _, err := tk.Frame(); soft(err) != nil {
			tk.Release()
			return err
		}
		for _, id := range []uint64{final.ID, implicit.ID} {
			if _, err := tk.ICV(id); soft(err) != nil {
				tk.Release()
				return err
			}
		}
		var g *libompd.Task
		g, err = tk.Generating()
		tk.Release()
		tk = g
	}
	if soft(err) != nil {
		return err
	}
	return nil
}
