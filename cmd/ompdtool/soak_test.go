package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/dlvtest"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/internal/procfs"
	"github.com/ompd-go/ompd/internal/seize"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/delve"
)

// The soak tests: the library attached, read and detached many times over
// a running program, a session followed through many stops, an address
// space read by 16 goroutines while another refreshes it. Nothing may grow
// (file descriptors, goroutines, heap), and the program computes what it
// computes alone. CI runs them short; OMPD_GO_SOAK=1 runs them at full
// length (1,000 attaches, 10,000 stops, 1,000 refreshes) and logs the
// figures that BENCHMARKS.md gives.

// soakLong tells whether the soak tests run at full length; then it gives
// the live tests (and their dlv) hours.
func soakLong(t *testing.T) bool {
	if os.Getenv("OMPD_GO_SOAK") != "1" {
		return false
	}
	if os.Getenv("OMPD_GO_LIVE_BOUND") == "" {
		t.Setenv("OMPD_GO_LIVE_BOUND", "4h")
	}
	return true
}

// soakTerms is how many terms each round of the soak program sums.
const soakTerms = 4096

// soakSum is what the soak fixture prints as its sum after rounds rounds of
// terms terms (see internal/fixtures/testdata/soak.c): what it computes
// alone, whatever reads it meanwhile.
func soakSum(rounds int, terms uint64) uint64 {
	var total uint64
	for r := uint64(0); r < uint64(rounds); r++ {
		for i := uint64(0); i < terms; i++ {
			x := r*terms + i
			x ^= x >> 33
			x *= 0xff51afd7ed558ccd
			total += x ^ x>>33
		}
	}
	return total
}

// usage is what the test process holds: open files, goroutines, live heap
// (after a collection).
type usage struct {
	fds, goroutines int
	heap            uint64
}

func (u usage) String() string {
	return fmt.Sprintf("%d fds, %d goroutines, %.1f MiB heap", u.fds, u.goroutines, float64(u.heap)/(1<<20))
}

func measure(t *testing.T) usage {
	t.Helper()
	// Goroutines that are ending (a detached target's helpers) get a
	// moment to go.
	time.Sleep(200 * time.Millisecond)
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return usage{fds: len(fds), goroutines: runtime.NumGoroutine(), heap: ms.HeapAlloc}
}

// assertNoGrowth checks that after holds no more than before: a couple of
// descriptors and goroutines of the test's own, and the heap's noise,
// allowed.
func assertNoGrowth(t *testing.T, before, after usage, what string) {
	t.Helper()
	t.Logf("%s: before %v; after %v", what, before, after)
	assert.LessOrEqual(t, after.fds, before.fds+2, "%s: file descriptors", what)
	assert.LessOrEqual(t, after.goroutines, before.goroutines+4, "%s: goroutines", what)
	assert.LessOrEqual(t, after.heap, before.heap+before.heap/2+32<<20, "%s: heap", what)
}

// soakRun is the soak program running until told to stop.
type soakRun struct {
	cmd       *exec.Cmd
	out, stop string
}

// startSoak starts the soak fixture: 64 threads, rounds until stopped
// (see soakRun.finish).
func startSoak(t *testing.T) *soakRun {
	t.Helper()
	fixtures.Watchdog(t, fixtures.LiveBound())
	fixtures.Runtime(t)
	exe := fixtures.Build(t, fixtures.Soak)
	dir := t.TempDir()
	s := &soakRun{out: filepath.Join(dir, "stdout"), stop: filepath.Join(dir, "stop")}
	s.cmd = exec.Command(exe, "0", "64", strconv.Itoa(soakTerms), s.stop)
	s.cmd.Env = fixtures.Env(fixtures.Soak, "OMPD_FIXTURE_STDOUT="+s.out, "OMPD_FIXTURE_TIMEOUT=7200")
	require.NoError(t, s.cmd.Start())
	t.Cleanup(func() {
		if s.cmd.ProcessState == nil {
			_ = s.cmd.Process.Kill()
			_ = s.cmd.Wait()
		}
	})
	// Running once its 64 threads are.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if tids, err := procfs.Tasks(s.cmd.Process.Pid); err == nil && len(tids) >= 64 {
			return s
		}
		require.True(t, time.Now().Before(deadline), "the soak program did not start its threads")
	}
}

// finish tells the program to stop, waits for it, and checks that its sum
// is the one it computes alone; it returns the rounds it ran.
func (s *soakRun) finish(t *testing.T) int {
	t.Helper()
	require.NoError(t, os.WriteFile(s.stop, nil, 0o644))
	require.NoError(t, s.cmd.Wait(), "the soak program")
	return checkSoakOutput(t, s.out)
}

// checkSoakOutput checks the soak program's output in file out: its sum
// is the one of the rounds it ran; it returns them.
func checkSoakOutput(t *testing.T, out string) int {
	t.Helper()
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var rounds, threads int
	var terms, sum uint64
	_, err = fmt.Sscanf(string(b), "soak %d %d %d %d", &rounds, &threads, &terms, &sum)
	require.NoError(t, err, "%s", b)
	require.Equal(t, soakTerms, int(terms))
	assert.Equal(t, soakSum(rounds, terms), sum, "the sum of %d rounds", rounds)
	t.Logf("the program ran %d rounds, its sum %d is the one it computes alone", rounds, sum)
	return rounds
}

// TestSoakAttach attaches to the running 64-thread soak program, takes a
// snapshot with every thread's stack, and detaches: 20 times (1,000 with
// OMPD_GO_SOAK=1), through Delve and, every other time, as the job
// collector does (package seize). Nothing grows; the program's sum is
// the one it computes alone.
func TestSoakAttach(t *testing.T) {
	n := 20
	if soakLong(t) {
		n = 1000
	}
	s := startSoak(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	var before usage
	start := time.Now()
	for i := 0; i < n && !t.Failed(); i++ {
		soakAttachOnce(t, ctx, s.cmd.Process.Pid, i)
		if i == 1 {
			// What the first reads of each kind open stays (debug
			// files' indexes): measured from there.
			before = measure(t)
		}
	}
	el := time.Since(start)
	after := measure(t)
	assertNoGrowth(t, before, after, fmt.Sprintf("%d attaches, snapshots with stacks and detaches in %v", n, el.Round(time.Millisecond)))
	s.finish(t)
}

// soakAttachOnce attaches to process pid (through Delve when i is even,
// seize otherwise), takes a snapshot with stacks and detaches. A failed
// check still detaches: a program left attached would be killed at the
// test's end and waited for in vain, its threads waiting for their
// tracer, this process, to collect them.
func soakAttachOnce(t *testing.T, ctx context.Context, pid, i int) {
	var tgt target.Target
	var detach func() error
	if i%2 == 0 {
		p, err := delve.Attach(ctx, pid)
		require.NoError(t, err, "attach %d", i)
		tgt, detach = p, func() error { return p.Detach(false) }
	} else {
		p, err := seize.Attach(ctx, pid)
		require.NoError(t, err, "seize %d", i)
		tgt, detach = p, p.Detach
	}
	detached := false
	defer func() {
		if !detached {
			_ = detach()
		}
	}()
	as, err := ompd.Open(tgt)
	require.NoError(t, err, "open %d", i)
	defer as.Close()
	snap, err := as.Snapshot(ctx, ompd.WithBacktraces())
	require.NoError(t, err, "snapshot %d", i)
	assert.GreaterOrEqual(t, len(snap.Threads), 64, "threads at attach %d", i)
	for _, th := range snap.Threads {
		if !assert.NotEmpty(t, th.Frames, "attach %d (%T): gtid %d's stack (%v)", i, tgt, th.GTID, snap.Errors) {
			break
		}
	}
	as.Close()
	detached = true
	require.NoError(t, detach(), "detach %d", i)
}

// TestSoakFollow follows a dlv session through 50 stops (10,000 with
// OMPD_GO_SOAK=1) of the soak program at soak_round with `ompdtool
// connect -follow`, run in this process, from the program's entry (a stop
// it cannot read: no runtime yet, which must not end the following): the
// user's client continues once the tool has read the stop and waits for
// the next. Nothing grows; the program's sum is the one it computes alone.
func TestSoakFollow(t *testing.T) {
	n := 50
	if soakLong(t) {
		n = 10000
	}
	dir := t.TempDir()
	out := filepath.Join(dir, "stdout")
	s := dlvtest.StartEnv(t, fixtures.Soak, []string{"OMPD_FIXTURE_STDOUT=" + out, "OMPD_FIXTURE_TIMEOUT=7200"},
		strconv.Itoa(n+1), "64", strconv.Itoa(soakTerms))
	bp := s.BreakAt(t, "soak_round")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderrR, stderrW := io.Pipe()
	var stops, unread atomic.Int64
	var firstUnread atomic.Value
	stopped := make(chan struct{}, 1)
	go func() {
		// A stop is done once the tool has read it (or said it could
		// not) and waits for the next: the user continues only then.
		sc := bufio.NewScanner(stderrR)
		inStop := false
		for sc.Scan() {
			switch l := sc.Text(); {
			case strings.Contains(l, "stopped in thread"):
				stops.Add(1)
				inStop = true
			case strings.Contains(l, "this stop could not be read"):
				if unread.Add(1) == 1 {
					firstUnread.Store(l)
				}
			case inStop && strings.Contains(l, "waiting for the session's next stop"):
				inStop = false
				stopped <- struct{}{}
			}
		}
	}()
	done := make(chan error, 1)
	before := measure(t)
	start := time.Now()
	go func() {
		done <- run(ctx, []string{"-follow", "connect", s.Srv.Addr}, io.Discard, stderrW)
		stderrW.Close()
	}()
	// The program starts stopped at its entry, before its runtime is
	// loaded: the tool says it cannot read that stop, and waits for the
	// next.
	waitStop := func(i int) {
		select {
		case <-stopped:
		case err := <-done:
			t.Fatalf("connect -follow ended at stop %d: %v", i, err)
		case <-time.After(2 * time.Minute):
			t.Fatalf("connect -follow did not print stop %d", i)
		}
	}
	waitStop(0)
	for i := 1; i <= n; i++ {
		st := s.Continue(t)
		require.False(t, st.Exited, "stop %d", i)
		waitStop(i)
		if i == 1 {
			before = measure(t)
		}
	}
	el := time.Since(start)
	after := measure(t)
	// The program's end: the tool sees it and ends.
	_, err := s.User.ClearBreakpoint(bp.ID)
	require.NoError(t, err)
	st := <-s.User.Continue()
	require.True(t, st.Exited, "%+v", st)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(time.Minute):
		t.Fatal("connect -follow did not end with the program")
	}
	assert.Equal(t, int64(n+1), stops.Load())
	// The first stop, at the program's entry, has no runtime yet: said,
	// and followed on; every other stop is read.
	assert.Equal(t, int64(1), unread.Load(), "stops not read")
	if l, ok := firstUnread.Load().(string); assert.True(t, ok, "the entry's stop not named unread") {
		assert.Contains(t, l, "no OpenMP runtime")
	}
	assertNoGrowth(t, before, after, fmt.Sprintf("connect -follow through %d stops in %v", n, el.Round(time.Millisecond)))
	assert.Equal(t, n+1, checkSoakOutput(t, out))
}

// TestSoakConcurrent reads one address space of the soak program (stopped
// at soak_round under Delve) from 16 goroutines, each walking everything
// (ompdtest.Invariants) in a loop, while another refreshes it, now and then
// after running the program to its next round: 100 refreshes (1,000 with
// OMPD_GO_SOAK=1). Every answer is a sentinel error or keeps the
// invariants; nothing grows; the sum is the one the program computes
// alone. Run with -race, as CI does.
func TestSoakConcurrent(t *testing.T) {
	n := 100
	if soakLong(t) {
		n = 1000
	}
	fixtures.Watchdog(t, fixtures.LiveBound())
	fixtures.Runtime(t)
	exe := fixtures.Build(t, fixtures.Soak)
	out := filepath.Join(t.TempDir(), "stdout")
	rounds := n/10 + 2
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	p, err := delve.Launch(ctx, []string{exe, strconv.Itoa(rounds), "64", strconv.Itoa(soakTerms)},
		delve.WithEnv(fixtures.Env(fixtures.Soak, "OMPD_FIXTURE_STDOUT="+out, "OMPD_FIXTURE_TIMEOUT=7200")))
	ptraceUnavailable(t, err)
	require.NoError(t, err)
	defer p.Kill()
	bp, err := p.BreakAt("soak_round")
	require.NoError(t, err)
	require.NoError(t, p.Continue(ctx))
	as, err := ompd.Open(p)
	require.NoError(t, err)
	defer as.Close()

	before := measure(t)
	var (
		mu       sync.Mutex
		problems []string
		walks    atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
	)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				// A refresh between two reads makes handles stale:
				// that answer is an error (a sentinel), never a
				// broken invariant of the memory read.
				var got []string
				for _, pr := range ompdtest.Invariants(as) {
					if !strings.HasPrefix(pr, "invariant not stale") {
						got = append(got, pr)
					}
				}
				walks.Add(1)
				if len(got) > 0 {
					mu.Lock()
					problems = append(problems, got...)
					mu.Unlock()
				}
			}
		}()
	}
	start := time.Now()
	for i := 0; i < n; i++ {
		if i%10 == 9 {
			require.NoError(t, p.ContinueAndRefresh(ctx, as), "refresh %d", i)
		} else {
			as.Refresh()
		}
		time.Sleep(5 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	el := time.Since(start)
	after := measure(t)
	assert.Empty(t, dedupeStrings(problems))
	assert.Greater(t, walks.Load(), int64(16))
	t.Logf("%d walks by 16 goroutines during %d refreshes", walks.Load(), n)
	assertNoGrowth(t, before, after, fmt.Sprintf("16 readers and %d refreshes in %v", n, el.Round(time.Millisecond)))
	require.NoError(t, p.ClearBreakpoint(bp))
	var ee *delve.ExitError
	require.ErrorAs(t, p.Continue(ctx), &ee)
	assert.Equal(t, 0, ee.Status)
	assert.Equal(t, rounds, checkSoakOutput(t, out))
}

func dedupeStrings(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}
