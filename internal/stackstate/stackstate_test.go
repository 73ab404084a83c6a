package stackstate

import (
	"debug/elf"
	"encoding/binary"
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
	s := &Stack{Frames: frames(NoObject, "", System, "futex_wait", Runtime, "", Runtime, "wait_here", Runtime, "outer_wait", User, "work", Runtime, "", System, "start_thread"), Complete: true}
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

	_, ok = (&Stack{Frames: frames(NoObject, "", User, "main")}).Own()
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
		r.Set(16, pc)
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

// locator places the functions of a map (entry → name), each 16 bytes.
type locator map[uint64]string

func (l locator) LocateCode(pc uint64) (target.CodeLocation, error) {
	for e, n := range l {
		if pc >= e && pc < e+16 {
			return target.CodeLocation{Object: "obj", Function: n, Entry: e}, nil
		}
	}
	return target.CodeLocation{}, target.ErrNotFound
}

func le32(v int32) []byte {
	b := make([]byte, 4)
	binary.LittleEndian.PutUint32(b, uint32(v))
	return b
}
func le64(v uint64) []byte { b := make([]byte, 8); binary.LittleEndian.PutUint64(b, v); return b }

// TestCallTarget decodes the call before a return address: a direct call
// to a function, a call to a PLT stub (with and without endbr64 and the
// bnd prefix) whose GOT slot the dynamic linker filled, and -fno-plt's
// call through the GOT.
func TestCallTarget(t *testing.T) {
	const fn, got, stub, stubIBT = 0x9000, 0x5000, 0x3000, 0x3100
	loc := locator{fn: "GOMP_barrier", 0x1000: "main._omp_fn.0"}
	m := mem{
		got: le64(fn),
		// jmp *disp(%rip): the next instruction at stub+6.
		stub: append([]byte{0xff, 0x25}, append(le32(got-(stub+6)), 0x68, 0, 0, 0, 0)...),
		// endbr64; bnd jmp *disp(%rip): the next at stubIBT+11.
		stubIBT: append([]byte{0xf3, 0x0f, 0x1e, 0xfa, 0xf2, 0xff, 0x25}, le32(got-(stubIBT+11))...),
		// call rel32 to the stub, to the IBT stub, to fn; call *got(%rip);
		// call *%rax.
		0x1000: append(append(append(append(append([]byte{0x90, 0xe8}, le32(stub-0x1006)...), 0xe8), le32(stubIBT-0x100b)...), 0xe8), le32(fn-0x1010)...),
		0x1100: append(append([]byte{0x90, 0x90, 0xff, 0x15}, le32(got-0x1108)...), 0x90, 0xff, 0xd0),
	}
	at := func(ret uint64, caller bool) (string, bool) {
		f := &Frame{Frame: unwind.Frame{PC: ret, Caller: caller, Regs: target.NewRegisters(elf.EM_X86_64)}}
		cl, ok := CallTarget(m, loc, f)
		return cl.Function, ok
	}
	for _, ret := range []uint64{0x1006, 0x100b, 0x1010, 0x1108} {
		name, ok := at(ret, true)
		assert.True(t, ok, "return address %#x", ret)
		assert.Equal(t, "GOMP_barrier", name, "return address %#x", ret)
	}
	_, ok := at(0x110b, true)
	assert.False(t, ok, "an indirect call through a register")
	_, ok = at(0x1006, false)
	assert.False(t, ok, "the innermost frame made no call")
	_, ok = at(0x1003, true)
	assert.False(t, ok, "no call instruction before")
}
