package stackstate

import (
	"debug/elf"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/ompd-go/ompd/internal/unwind"
	"github.com/ompd-go/ompd/target"
)

func frames(ws ...any) []Frame {
	var out []Frame
	for i := 0; i < len(ws); i += 2 {
		out = append(out, Frame{Where: ws[i].(Where), Function: ws[i+1].(string), Entry: uint64(0x1000 * (i + 1))})
	}
	return out
}

var tb = &Tables{
	Starters: map[string]bool{"start_region": true},
	Waits:    map[string]int64{"wait_here": Taskwait, "outer_wait": Taskgroup},
}

// TestOwnAndRuns: the thread's own code starts past the C library and the
// code in no object it called; the run of runtime frames from there.
func TestOwnAndRuns(t *testing.T) {
	s := &Stack{Frames: frames(Unknown, "", System, "futex_wait", Runtime, "", Runtime, "wait_here", Runtime, "outer_wait", User, "work", Runtime, "", System, "start_thread"), Complete: true}
	k, ok := s.Own()
	assert.True(t, ok)
	assert.Equal(t, 2, k)
	end := s.RunEnd(k)
	assert.Equal(t, 5, end)
	st, fn, ok := tb.Wait(s.Frames[k:end])
	assert.True(t, ok)
	assert.Equal(t, "wait_here", fn, "the innermost function the table names")
	assert.Equal(t, Taskwait, st)
	assert.False(t, s.ReachesStart(end), "the program's frame follows")
	assert.True(t, s.ReachesStart(7))
	s.Complete = false
	assert.False(t, s.ReachesStart(7), "an incomplete walk reaches nothing")

	_, ok = (&Stack{Frames: frames(Unknown, "", User, "main")}).Own()
	assert.False(t, ok, "code in no object called by the program")
	_, ok = (&Stack{Frames: frames(System, "a", System, "b")}).Own()
	assert.False(t, ok, "only the C library")
}

// TestEntries: the outlined functions are the program's frames a region
// starter called, or the unnamed runtime frame a worker started in.
func TestEntries(t *testing.T) {
	s := &Stack{Frames: frames(User, "inner._omp_fn.1", Runtime, "start_region", User, "outer._omp_fn.0", Runtime, "", System, "start_thread", System, "clone3"), Complete: true}
	assert.Equal(t, []uint64{0x1000, 0x5000}, s.Entries(tb))
	s.Complete = false
	assert.Equal(t, []uint64{0x1000}, s.Entries(tb), "an unnamed caller counts only when it is the thread's start")
}

type mem map[uint64][]byte

func (m mem) Read(addr uint64, n int) ([]byte, error) {
	for a, b := range m {
		if addr >= a && addr+uint64(n) <= a+uint64(len(b)) {
			return b[addr-a : addr-a+uint64(n)], nil
		}
	}
	return nil, errors.New("no memory")
}

// TestFutexAddr: rdi right after a syscall instruction whose rax is, or
// was, SYS_futex.
func TestFutexAddr(t *testing.T) {
	m := mem{0x100: {0x90, 0x0f, 0x05, 0x90}}
	f := func(pc, rax, rdi uint64) *unwind.Frame {
		r := target.NewRegisters(elf.EM_X86_64)
		r.Set(0, rax)
		r.Set(5, rdi)
		return &unwind.Frame{PC: pc, Regs: r}
	}
	assert.EqualValues(t, 0xabc, FutexAddr(m, f(0x103, 202, 0xabc)), "before the call returns")
	assert.EqualValues(t, 0xabc, FutexAddr(m, f(0x103, uint64(1<<64-4), 0xabc)), "-EINTR")
	assert.Zero(t, FutexAddr(m, f(0x103, 1, 0xabc)), "another system call")
	assert.Zero(t, FutexAddr(m, f(0x102, 202, 0xabc)), "not after a syscall instruction")
	assert.Zero(t, FutexAddr(m, f(0x1, 202, 0xabc)), "unreadable code")
}
