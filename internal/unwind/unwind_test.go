package unwind

import (
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd/internal/cfi"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/objfile"
	"github.com/ompd-go/ompd/target"
)

// stack is synthetic memory: one mapped range of bytes.
type stack struct {
	base uint64
	mem  []byte
	unw  target.FrameUnwinder
}

func (s *stack) ReadMemory(buf []byte, addr uint64) error {
	if addr < s.base || addr-s.base > uint64(len(s.mem)) || uint64(len(buf)) > uint64(len(s.mem))-(addr-s.base) {
		return &target.ReadError{Addr: addr, Size: len(buf), Err: target.ErrNoMemory}
	}
	copy(buf, s.mem[addr-s.base:])
	return nil
}

func (s *stack) ByteOrder() binary.ByteOrder { return binary.LittleEndian }

func (s *stack) put(addr, v uint64) {
	binary.LittleEndian.PutUint64(s.mem[addr-s.base:], v)
}

// withCFI is a stack whose code has call-frame information.
type withCFI struct {
	*stack
	cfi FDEFinder
}

func (w withCFI) UnwindFrame(regs target.Registers, caller bool) (target.Registers, uint64, error) {
	return Step(w.cfi, w.stack, binary.LittleEndian, regs, caller)
}

func regs(pc, sp, fp uint64) target.Registers {
	r := target.NewRegisters(elf.EM_X86_64)
	r.Set(16, pc)
	r.Set(7, sp)
	r.Set(6, fp)
	return r
}

const base = 0x7ff000000000

// chain lays out n frame-pointer frames from the bottom of a 64 KiB stack;
// the outermost frame's saved frame pointer is 0.
func chain(n int) (*stack, target.Registers) {
	s := &stack{base: base, mem: make([]byte, 64<<10)}
	fp := uint64(base + 0x100)
	first := fp
	for i := 0; i < n; i++ {
		next := fp + 0x40
		if i == n-1 {
			next = 0
		}
		s.put(fp, next)
		s.put(fp+8, 0x401000+uint64(i)*0x10)
		fp = next
	}
	return s, regs(0x400000, first-0x20, first)
}

func pcs(st Stack) []uint64 {
	var out []uint64
	for _, f := range st.Frames {
		out = append(out, f.PC)
	}
	return out
}

func TestFramePointerChain(t *testing.T) {
	s, r := chain(4)
	st := Walk(context.Background(), s, r, Options{})
	require.ErrorIs(t, st.End, ErrOutermost)
	assert.True(t, st.Complete())
	assert.Equal(t, []uint64{0x400000, 0x401000, 0x401010, 0x401020, 0x401030}, pcs(st))
	for i, f := range st.Frames[1:] {
		assert.Equal(t, FramePointer, f.How, "frame %d", i+1)
		assert.True(t, f.Caller)
		assert.Equal(t, f.PC-1, f.LookupPC())
	}
	assert.Equal(t, uint64(base+0x110), st.Frames[0].CFA)
}

func TestDepthLimit(t *testing.T) {
	s, r := chain(100)
	st := Walk(context.Background(), s, r, Options{MaxDepth: 10})
	require.ErrorIs(t, st.End, ErrMaxDepth)
	assert.Len(t, st.Frames, 10)
}

func TestLoopEnds(t *testing.T) {
	s, r := chain(3)
	// The third frame's saved frame pointer points back at the first.
	s.put(base+0x180, base+0x100)
	st := Walk(context.Background(), s, r, Options{})
	require.ErrorIs(t, st.End, ErrNoProgress)
	assert.LessOrEqual(t, len(st.Frames), 4)
}

func TestUnreadableStackEnds(t *testing.T) {
	s, r := chain(3)
	s.put(base+0x140, base+0x7fff0000) // a saved frame pointer into nowhere
	st := Walk(context.Background(), s, r, Options{})
	require.ErrorIs(t, st.End, target.ErrNoMemory)
	assert.Len(t, st.Frames, 3)
	assert.Contains(t, st.End.Error(), "0x7ff07fff0000")
}

func TestCanceled(t *testing.T) {
	s, r := chain(3)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st := Walk(ctx, s, r, Options{})
	require.ErrorIs(t, st.End, context.Canceled)
}

func TestUnknownRegisters(t *testing.T) {
	s, _ := chain(2)
	st := Walk(context.Background(), s, target.NewRegisters(elf.EM_X86_64), Options{})
	require.Error(t, st.End)
	assert.Empty(t, st.Frames)
	st = Walk(context.Background(), s, target.NewRegisters(elf.EM_MIPS), Options{})
	require.ErrorIs(t, st.End, target.ErrUnsupported)
}

// libc is the C library of this machine, loaded at bias 0: real call-frame
// information (with DWARF expressions in its PLT and signal trampoline
// entries) for the fuzz targets.
var libc = sync.OnceValues(func() (*objfile.Object, error) {
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6", "/lib64/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			return objfile.Open(p, 0)
		}
	}
	return nil, errors.New("no libc.so.6 found")
})

func libcObject(t testing.TB) *objfile.Object {
	o, err := libc()
	if err != nil {
		fixtures.Unavailable(t, "libc: %v", err)
	}
	return o
}

func TestStepWithCFI(t *testing.T) {
	o := libcObject(t)
	start, end, ok := o.Range()
	require.True(t, ok)
	// Every FDE's first instruction: the CFA is rsp+8 and the return
	// address is at the CFA-8, for a function entered by a call.
	s := &stack{base: base, mem: make([]byte, 4096)}
	s.put(base+0x800, 0x1234)
	checked := 0
	for pc := start; pc < end && checked < 200; pc += 0x1000 {
		fde, err := o.FDE(pc)
		if err != nil || fde.Begin < start {
			continue
		}
		if st, ok := o.SymbolAt(fde.Begin); !ok || st.Addr != fde.Begin || strings.Contains(st.Name, ".cold") {
			continue // not a function's entry (PLT, a function's cold part)
		}
		out, cfa, err := Step(o, s, binary.LittleEndian, regs(fde.Begin, base+0x800, 0), false)
		require.NoError(t, err, "pc %#x", fde.Begin)
		assert.Equal(t, uint64(base+0x808), cfa, "pc %#x", fde.Begin)
		ra, ok := out.PC()
		require.True(t, ok)
		assert.Equal(t, uint64(0x1234), ra)
		checked++
	}
	assert.Greater(t, checked, 20)
	_, _, err := Step(o, s, binary.LittleEndian, regs(end+0x100000, base+0x800, 0), false)
	assert.ErrorIs(t, err, target.ErrNotFound)
}

// FuzzWalk walks fuzzed stacks with fuzzed registers through libc's real
// call-frame information: every walk must end with a reason, within the
// depth limit, without a panic.
func FuzzWalk(f *testing.F) {
	o := libcObject(f)
	start, end, _ := o.Range()
	f.Add(uint64(0x100), uint64(0x200), uint64(0x208), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	f.Add(uint64(0x28000), uint64(0x10), uint64(0x0), make([]byte, 512))
	f.Fuzz(func(t *testing.T, pcOff, spOff, fpOff uint64, mem []byte) {
		if len(mem) > 1<<16 {
			mem = mem[:1<<16]
		}
		s := &stack{base: base, mem: mem}
		pc := start + pcOff%(end-start)
		if pcOff&1 == 1 {
			pc = pcOff // anywhere, mostly in no object
		}
		r := regs(pc, base+spOff%0x20000, base+fpOff%0x20000)
		r.Set(3, base+spOff/3%0x20000)
		st := Walk(context.Background(), withCFI{stack: s, cfi: o}, r, Options{MaxDepth: 64})
		require.Error(t, st.End)
		require.LessOrEqual(t, len(st.Frames), 64)
		for i := 1; i < len(st.Frames); i++ {
			if st.Frames[i].CFA != 0 {
				require.Greater(t, st.Frames[i].CFA, st.Frames[i-1].CFA, "CFA must grow")
			}
		}
	})
}

// TestSignalFrame steps through libc's signal trampoline, whose
// call-frame information reads the interrupted registers from the signal
// frame's ucontext with DWARF expressions: the caller is the interrupted
// frame, its PC not a return address.
func TestSignalFrame(t *testing.T) {
	o := libcObject(t)
	// __restore_rt, found by its call-frame information (marked 'S'),
	// not by its local symbol, which needs libc's debug file. Its entry
	// starts one byte before the function, at a nop.
	sec := o.File().Section(".eh_frame")
	require.NotNil(t, sec)
	data, err := sec.Data()
	require.NoError(t, err)
	fdes, err := cfi.Parse(data, cfi.Section{Order: o.File().ByteOrder, PtrSize: 8, EH: true, Addr: sec.Addr})
	require.NoError(t, err)
	var trampoline uint64
	for _, fde := range fdes {
		if strings.ContainsRune(fde.CIE.Augmentation, 'S') {
			trampoline = fde.Begin + 1
			break
		}
	}
	require.NotZero(t, trampoline, "libc has a signal frame")
	s := &stack{base: base, mem: make([]byte, 4096)}
	// struct ucontext_t at the stack pointer: uc_mcontext.gregs at 40,
	// REG_RBP 10, REG_RSP 15, REG_RIP 16.
	s.put(base+40+10*8, base+0x900)
	s.put(base+40+15*8, base+0x800)
	s.put(base+40+16*8, 0x401234)
	out, cfa, err := Step(o, s, binary.LittleEndian, regs(trampoline, base, 0), false)
	require.NoError(t, err)
	assert.Equal(t, uint64(base+0x800), cfa)
	pc, _ := out.PC()
	sp, _ := out.SP()
	fp, _ := out.FP()
	assert.Equal(t, uint64(0x401234), pc)
	assert.Equal(t, uint64(base+0x800), sp)
	assert.Equal(t, uint64(base+0x900), fp)
	assert.True(t, out.Interrupted, "the frame below a signal trampoline was interrupted")

	// A walk marks that frame as no caller: its own lookups use its PC.
	st := Walk(context.Background(), withCFI{stack: s, cfi: o}, regs(trampoline, base, 0), Options{MaxDepth: 2})
	require.Len(t, st.Frames, 2)
	assert.False(t, st.Frames[1].Caller)
	assert.Equal(t, uint64(0x401234), st.Frames[1].LookupPC())
}
