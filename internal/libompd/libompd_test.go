//go:build cgo

package libompd_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/libompd"
	"github.com/ompd-go/ompd/target"
)

// libraryPath finds the libompd.so that scripts/build-runtime.sh builds.
// Without it the test skips, or fails when CI=true.
func libraryPath(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("bash", "../../scripts/build-runtime.sh", "--print-dir").Output()
	path := filepath.Join(strings.TrimSpace(string(out)), "lib", "libompd.so")
	if err == nil {
		_, err = os.Stat(path)
	}
	if err != nil {
		fixtures.Unavailable(t, "libompd.so not available (run scripts/build-runtime.sh): %v", err)
	}
	return path
}

// fakeTarget is a target with a few symbols in flat memory, in either byte
// order. It counts reads.
type fakeTarget struct {
	order binary.ByteOrder
	syms  map[string]uint64
	mem   map[uint64][]byte // start -> bytes
	tls   map[uint64]uint64 // lwp -> address of its __kmp_gtid
	reads int
}

func (f *fakeTarget) LookupSymbol(name string) (uint64, error) {
	if a, ok := f.syms[name]; ok {
		return a, nil
	}
	return 0, &target.LookupError{Kind: "symbol", Name: name, Err: target.ErrNotFound}
}

func (f *fakeTarget) LookupThreadLocal(th uint64, name string) (uint64, error) {
	if name != "__kmp_gtid" {
		return 0, &target.LookupError{Kind: "thread-local symbol", Name: name, Err: target.ErrNotFound}
	}
	a, ok := f.tls[th]
	if !ok {
		return 0, target.ErrNoThread
	}
	return a, nil
}

func (f *fakeTarget) TypeSize(string) (uint64, error)            { return 0, target.ErrNotFound }
func (f *fakeTarget) FieldOffset(string, string) (uint64, error) { return 0, target.ErrNotFound }

func (f *fakeTarget) ReadMemory(buf []byte, addr uint64) error {
	f.reads++
	for start, b := range f.mem {
		if addr >= start && addr+uint64(len(buf)) <= start+uint64(len(b)) {
			copy(buf, b[addr-start:])
			return nil
		}
	}
	return &target.ReadError{Addr: addr, Size: len(buf), Err: target.ErrNoMemory}
}

func (f *fakeTarget) WriteMemory(uint64, []byte) error { return target.ErrReadOnly }
func (f *fakeTarget) ByteOrder() binary.ByteOrder      { return f.order }
func (f *fakeTarget) Sizes() target.Sizes              { return target.LP64 }
func (f *fakeTarget) Threads() ([]target.Thread, error) {
	return []target.Thread{{ID: 100, Pointer: 0x7000, Pthread: 0x7000}, {ID: 101, Pointer: 0x8000, Pthread: 0x8000}}, nil
}

// newFake lays out ompd_state, its OMPD size entry, __kmp_avail_proc and
// its size entry, __kmp_affinity_format, the display block, and two
// threads' __kmp_gtid (-1: not OpenMP threads) in the given byte order.
func newFake(order binary.ByteOrder) *fakeTarget {
	f := &fakeTarget{order: order, syms: map[string]uint64{}, mem: map[uint64][]byte{}, tls: map[uint64]uint64{}}
	mem := make([]byte, 0x1000)
	const base = 0x10000
	put64 := func(off int, v uint64) { order.PutUint64(mem[off:], v) }
	put32 := func(off int, v uint32) { order.PutUint32(mem[off:], v) }
	f.syms["ompd_state"] = base + 0x00
	put64(0x00, 1)
	f.syms["ompd_sizeof__ompd_state"] = base + 0x08
	put64(0x08, 8)
	f.syms["__kmp_avail_proc"] = base + 0x10
	put32(0x10, 6)
	f.syms["ompd_sizeof____kmp_avail_proc"] = base + 0x18
	put64(0x18, 4)
	f.syms["__kmp_affinity_format"] = base + 0x20
	put64(0x20, base+0x100)
	copy(mem[0x100:], "OMP: pid %P tid %i\x00")
	f.syms["ompd_env_block"] = base + 0x28
	put64(0x28, base+0x200)
	block := "OMP_DYNAMIC='FALSE'\nOMP_NUM_THREADS='4'\n"
	copy(mem[0x200:], block)
	f.syms["ompd_env_block_size"] = base + 0x30
	put64(0x30, uint64(len(block)))
	f.syms["ompd_sizeof____kmp_gtid"] = base + 0x38
	put64(0x38, 4)
	put32(0x40, 0xffffffff)
	put32(0x44, 0xffffffff)
	f.tls[100], f.tls[101] = base+0x40, base+0x44
	f.mem[base] = mem
	return f
}

func TestHarness(t *testing.T) {
	l, err := libompd.Load(libraryPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if l.APIVersion() != 201811 {
		t.Errorf("API version %d, want 201811", l.APIVersion())
	}
	if _, err := libompd.Load(l.Path() + ".other"); err == nil {
		t.Error("loading a second library succeeded")
	}
	for _, order := range []binary.ByteOrder{binary.LittleEndian, binary.BigEndian} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			f := newFake(order)
			before := l.Counters()
			as, err := l.ProcessInitialize(f)
			if err != nil {
				t.Fatal(err)
			}
			defer as.Release()

			icvs, err := as.ICVs()
			if err != nil {
				t.Fatal(err)
			}
			if len(icvs) != 30 || icvs[0].Name != "dyn-var" || icvs[0].ID != 1 {
				t.Errorf("ICVs: %d, first %+v", len(icvs), icvs[0])
			}
			states, err := as.States()
			if err != nil || len(states) == 0 || states[0].Name != "ompt_state_work_serial" {
				t.Errorf("States: %v, %v", states, err)
			}

			id := func(name string) uint64 {
				i, ok := as.ICVByName(name)
				if !ok {
					t.Fatalf("no ICV %s", name)
				}
				return i.ID
			}
			if v, err := as.ICV(id("num-procs-var")); err != nil || v != 6 {
				t.Errorf("num-procs-var = %d, %v; want 6", v, err)
			}
			if v, err := as.ICV(id("debug-var")); err != nil || v != 1 {
				t.Errorf("debug-var = %d, %v; want 1", v, err)
			}
			if s, err := as.ICVString(id("affinity-format-var")); err != nil || s != "OMP: pid %P tid %i" {
				t.Errorf("affinity-format-var = %q, %v", s, err)
			}
			// libompd gives string forms of string ICVs only.
			if _, err := as.ICVString(id("num-procs-var")); !errors.Is(err, libompd.Unsupported) {
				t.Errorf("string num-procs-var: %v, want unsupported", err)
			}
			vars, err := as.DisplayControlVars()
			if order == binary.BigEndian {
				// libompd reads ompd_env_block and ompd_env_block_size
				// without device_to_host: on a big-endian target the
				// size comes out byte-swapped (huge) and the allocation
				// fails.
				if err == nil {
					t.Errorf("display control vars of a big-endian target: %q, want libompd's failure", vars)
				}
			} else if err != nil || len(vars) < 2 || vars[1] != "OMP_NUM_THREADS='4'" {
				t.Errorf("display control vars: %q, %v", vars, err)
			}
			// Both OS threads have __kmp_gtid -1: not OpenMP threads.
			if _, err := as.ThreadHandle(libompd.PthreadID, 0x8000); libompd.Code(err) != libompd.Unavailable {
				t.Errorf("thread handle of a non-OpenMP thread: %v, want unavailable", err)
			}
			if _, err := as.ThreadHandle(libompd.LWPID, 100); libompd.Code(err) != libompd.Unavailable {
				t.Errorf("thread handle by LWP: %v, want unavailable", err)
			}
			if _, err := as.ThreadHandle(libompd.PthreadID, 0x9999); libompd.Code(err) != libompd.BadInput {
				t.Errorf("thread handle of an unknown thread: %v, want bad input", err)
			}

			c := l.Counters().Sub(before)
			if c.ReadMemory == 0 || c.ReadMemoryBytes == 0 || c.SymbolAddrLookup == 0 || c.ReadString != 1 || c.GetThreadContext != 3 {
				t.Errorf("counters: %+v", c)
			}
			if int(c.Reads()) != f.reads {
				t.Errorf("counted %d reads, target saw %d", c.Reads(), f.reads)
			}
			if c.Calls < c.ReadMemory+c.SymbolAddrLookup+c.AllocMemory {
				t.Errorf("calls %d less than its parts: %+v", c.Calls, c)
			}
		})
	}
}

func TestCode(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", &libompd.CallError{Op: "ompd_x", RC: libompd.StaleHandle})
	if libompd.Code(err) != libompd.StaleHandle || !errors.Is(err, libompd.StaleHandle) {
		t.Errorf("Code(%v) = %v", err, libompd.Code(err))
	}
	if libompd.Code(nil) != libompd.OK || libompd.Code(errors.New("x")) != libompd.Error {
		t.Error("Code of nil or a foreign error")
	}
	if libompd.Incomplete.String() != "ompd_rc_incomplete" {
		t.Error(libompd.Incomplete.String())
	}
}

// BenchmarkCallback measures one read_memory callback from C into Go and
// back (over a trivial target): the cost the harness adds to each of
// libompd's callbacks, which a debugger written in C would not pay.
func BenchmarkCallback(b *testing.B) {
	l, err := libompd.Load(libraryPath(b))
	if err != nil {
		b.Fatal(err)
	}
	as, err := l.ProcessInitialize(newFake(binary.LittleEndian))
	if err != nil {
		b.Fatal(err)
	}
	defer as.Release()
	const batch = 1000
	b.ResetTimer()
	for i := 0; i < b.N; i += batch {
		if err := as.ProbeReads(0x10000, 8, min(batch, b.N-i)); err != nil {
			b.Fatal(err)
		}
	}
}
