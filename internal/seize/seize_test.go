package seize

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/internal/procfs"
	"github.com/ompd-go/ompd/target"
)

// asSeizer makes the test binary seize the process it names, say
// "seized" on standard output, and wait to be killed.
const asSeizer = "SEIZE_TEST_SEIZE_PID"

func TestMain(m *testing.M) {
	if s := os.Getenv(asSeizer); s != "" {
		pid, _ := strconv.Atoi(s)
		p, err := Attach(context.Background(), pid)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		// Read a little, as a collector does, then hold it.
		if _, err := p.LookupSymbol("ompd_fixture_release"); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("seized")
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

// held is a fixture program waiting in stopme.
type held struct {
	cmd    *exec.Cmd
	exe    string
	truth  string // its truth file
	stderr string // its standard error's
}

// hold starts fixture name held in stopme and waits until it is there.
func hold(t *testing.T, name string) *held {
	t.Helper()
	fixtures.Watchdog(t, fixtures.LiveBound())
	fixtures.Runtime(t)
	exe := fixtures.Build(t, name)
	dir := t.TempDir()
	h := &held{exe: exe, truth: filepath.Join(dir, "truth.json"), stderr: filepath.Join(dir, "stderr")}
	ready := filepath.Join(dir, "ready")
	h.cmd = exec.Command(exe)
	h.cmd.Env = fixtures.Env(name, "OMPD_FIXTURE_HOLD=1", "OMPD_FIXTURE_READY="+ready,
		"OMPD_FIXTURE_TRUTH="+h.truth, "OMPD_FIXTURE_STDERR="+h.stderr)
	require.NoError(t, h.cmd.Start())
	t.Cleanup(func() {
		if h.cmd.ProcessState == nil {
			_ = h.cmd.Process.Kill()
			_ = h.cmd.Wait()
		}
	})
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ready); err == nil {
			return h
		}
		require.True(t, time.Now().Before(deadline), "the fixture did not get ready")
	}
}

func (h *held) pid() int { return h.cmd.Process.Pid }

// attach seizes process pid and lets it go when the test ends, before
// the program is killed and waited for (cleanups run last first): a
// program killed while seized would leave its threads for this process,
// its tracer, to collect, and the wait for it would never end.
func attach(t *testing.T, pid int) *Process {
	t.Helper()
	p, err := Attach(context.Background(), pid)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Detach() })
	return p
}

// loadTruth is what the program recorded, with what its runtime displayed.
func (h *held) loadTruth(t *testing.T) *fixtures.Truth {
	t.Helper()
	tr, err := fixtures.LoadTruth(h.truth)
	require.NoError(t, err)
	require.NoError(t, tr.Validate())
	stderr, err := os.ReadFile(h.stderr)
	require.NoError(t, err)
	tr.Display = fixtures.DisplayBlock(string(stderr))
	return tr
}

// release lets the program return from stopme (through /proc/PID/mem, at
// the address addr of ompd_fixture_release) and expects exit status 0.
func (h *held) release(t *testing.T, addr uint64) {
	t.Helper()
	mem, err := os.OpenFile(fmt.Sprintf("/proc/%d/mem", h.pid()), os.O_RDWR, 0)
	require.NoError(t, err)
	var one [4]byte
	binary.LittleEndian.PutUint32(one[:], 1)
	_, err = mem.WriteAt(one[:], int64(addr))
	mem.Close()
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() { done <- h.cmd.Wait() }()
	select {
	case err := <-done:
		require.NoError(t, err, "the program's exit")
	case <-time.After(2 * time.Minute):
		t.Fatal("the program did not exit after its release")
	}
}

// assertRunning checks that no thread of process pid is stopped (T, t)
// or traced.
func assertRunning(t *testing.T, pid int) {
	t.Helper()
	tids, err := procfs.Tasks(pid)
	require.NoError(t, err)
	for _, tid := range tids {
		dir := fmt.Sprintf("/proc/%d/task/%d", pid, tid)
		st, ok := procfs.ReadStat(dir)
		if !ok {
			continue
		}
		assert.NotContains(t, "Tt", string(st.State), "thread %d", tid)
		tracer, comm := procfs.Tracer(tid)
		assert.Zero(t, tracer, "thread %d traced by %s", tid, comm)
	}
}

// TestAttachTruth seizes the nested fixture, reads it through ompd (every
// thread, region, task and stack against the truth the program recorded),
// detaches, and the program runs on to exit 0.
func TestAttachTruth(t *testing.T) {
	h := hold(t, fixtures.Nested)
	p := attach(t, h.pid())
	truth := h.loadTruth(t)
	ths, err := p.Threads()
	require.NoError(t, err)
	ompdtest.CheckOSThreads(t, ths, truth)
	as, err := ompd.Open(p)
	require.NoError(t, err)
	ompdtest.CheckTruth(t, as, truth)
	ompdtest.CheckBacktraces(t, as, truth)
	release, err := p.LookupSymbol("ompd_fixture_release")
	require.NoError(t, err)
	// Every thread is stopped and ours while it is read.
	for _, th := range ths {
		st, ok := procfs.ReadStat(fmt.Sprintf("/proc/%d/task/%d", h.pid(), th.ID))
		require.True(t, ok)
		assert.Equal(t, "t", string(st.State), "thread %d", th.ID)
	}
	as.Close()
	assert.ErrorIs(t, p.WriteMemory(release, []byte{1}), target.ErrReadOnly)
	require.NoError(t, p.Detach())
	assert.NoError(t, p.Detach(), "a second Detach")
	_, err = p.Threads()
	assert.Error(t, err, "after the detach")
	assertRunning(t, h.pid())
	h.release(t, release)
}

// TestTracerKilled: a tracer killed while it holds the process seized
// (SIGKILL, as Slurm ends a step) leaves no thread stopped: the program
// runs on, and exits 0 once released. Killed at once or after a while,
// ten times.
func TestTracerKilled(t *testing.T) {
	h := hold(t, fixtures.Nested)
	self, err := os.Executable()
	require.NoError(t, err)
	for i := 0; i < 10; i++ {
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), asSeizer+"="+strconv.Itoa(h.pid()))
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		if i%2 == 1 {
			// Once it holds every thread.
			line, err := bufio.NewReader(out).ReadString('\n')
			require.NoError(t, err)
			require.Equal(t, "seized\n", line)
		} else {
			// Somewhere while it stops them.
			time.Sleep(time.Duration(i) * time.Millisecond)
		}
		require.NoError(t, cmd.Process.Kill())
		_ = cmd.Wait()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if tracer, _ := procfs.Tracer(h.pid()); tracer == 0 {
				break
			}
			require.True(t, time.Now().Before(deadline), "still traced")
		}
		assertRunning(t, h.pid())
	}
	p := attach(t, h.pid())
	release, err := p.LookupSymbol("ompd_fixture_release")
	require.NoError(t, err)
	require.NoError(t, p.Detach())
	h.release(t, release)
}

// TestTraced: a process another tracer holds (strace) is refused with an
// error naming the tracer.
func TestTraced(t *testing.T) {
	fixtures.RequireTool(t, "strace")
	h := hold(t, fixtures.Nested)
	strace := exec.Command("strace", "-f", "-o", "/dev/null", "-p", strconv.Itoa(h.pid()))
	require.NoError(t, strace.Start())
	defer func() {
		_ = strace.Process.Signal(syscall.SIGTERM)
		_ = strace.Wait()
	}()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if tracer, _ := procfs.Tracer(h.pid()); tracer == strace.Process.Pid {
			break
		}
		require.True(t, time.Now().Before(deadline), "strace does not trace it")
	}
	_, err := Attach(context.Background(), h.pid())
	require.ErrorIs(t, err, ErrTraced)
	var te *TracedError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, strace.Process.Pid, te.Tracer)
	assert.Equal(t, "strace", te.Comm)
	assert.Contains(t, err.Error(), fmt.Sprintf("traced by process %d (strace)", strace.Process.Pid))
}

// TestExitWhileRead: a process killed while it is seized answers
// ErrExited to the reads that follow and to the detach; what was read
// before stays.
func TestExitWhileRead(t *testing.T) {
	h := hold(t, fixtures.Nested)
	p := attach(t, h.pid())
	as, err := ompd.Open(p)
	require.NoError(t, err)
	s, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	require.NoError(t, h.cmd.Process.Kill())
	for deadline := time.Now().Add(10 * time.Second); !procfs.Gone(fmt.Sprintf("/proc/%d", h.pid())); time.Sleep(10 * time.Millisecond) {
		require.True(t, time.Now().Before(deadline), "the process does not end")
	}
	var b [8]byte
	err = p.ReadMemory(b[:], 0x400000) // a page not read yet
	assert.ErrorIs(t, err, ErrExited)
	assert.ErrorIs(t, err, target.ErrNoMemory)
	err = p.Detach()
	assert.ErrorIs(t, err, ErrExited)
	assert.NotEmpty(t, s.Threads, "the snapshot read before")
	as.Close()
}

// TestStoppedStays: a process stopped (SIGSTOP) before it is seized is
// read, and stays stopped after the detach, as its owner left it.
func TestStoppedStays(t *testing.T) {
	h := hold(t, fixtures.Nested)
	require.NoError(t, syscall.Kill(h.pid(), syscall.SIGSTOP))
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if st, _ := procfs.ReadStat(fmt.Sprintf("/proc/%d", h.pid())); st.State == 'T' {
			break
		}
		require.True(t, time.Now().Before(deadline), "the process does not stop")
	}
	p := attach(t, h.pid())
	as, err := ompd.Open(p)
	require.NoError(t, err)
	_, err = as.Snapshot(context.Background())
	require.NoError(t, err)
	as.Close()
	release, err := p.LookupSymbol("ompd_fixture_release")
	require.NoError(t, err)
	require.NoError(t, p.Detach())
	time.Sleep(50 * time.Millisecond)
	tids, err := procfs.Tasks(h.pid())
	require.NoError(t, err)
	for _, tid := range tids {
		st, _ := procfs.ReadStat(fmt.Sprintf("/proc/%d/task/%d", h.pid(), tid))
		assert.Equal(t, "T", string(st.State), "thread %d", tid)
	}
	require.NoError(t, syscall.Kill(h.pid(), syscall.SIGCONT))
	h.release(t, release)
}

// TestAttachErrors: a process that is gone, and a bad id.
func TestAttachErrors(t *testing.T) {
	cmd := fixtures.Sleeper(t, 0)
	require.NoError(t, cmd.Wait())
	_, err := Attach(context.Background(), cmd.Process.Pid)
	assert.ErrorIs(t, err, ErrExited)
	_, err = Attach(context.Background(), -1)
	assert.Error(t, err)
	assert.False(t, errors.Is(err, ErrTraced))
	assert.True(t, strings.Contains(err.Error(), "bad process id"))
}
