package core

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/internal/regfile"
	"github.com/ompd-go/ompd/internal/targetopt"
	"github.com/ompd-go/ompd/target"
)

// within runs f and fails the test if it has not returned after d: a hang
// on a special file must be a failure, not a stuck test run.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

func mkfifo(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, syscall.Mkfifo(p, 0o600))
	return p
}

// TestSpecialFiles gives Open FIFOs and a directory where it expects
// regular files: as the core, as the executable, and as a library that
// the core's NT_FILE list names. Opening a FIFO for reading blocks until a
// writer comes; Open must refuse it at once and say what it is.
func TestSpecialFiles(t *testing.T) {
	f := getFixture(t)
	dir := t.TempDir()
	fifo := mkfifo(t, dir, "fifo")

	within(t, 10*time.Second, "Open with a FIFO as the core", func() {
		_, err := Open(context.Background(), f.exe, fifo)
		require.Error(t, err)
		assert.ErrorIs(t, err, regfile.ErrNotRegular)
		assert.Contains(t, err.Error(), "a FIFO")
	})
	within(t, 10*time.Second, "Open with a FIFO as the executable", func() {
		_, err := Open(context.Background(), fifo, f.core)
		require.Error(t, err)
		assert.ErrorIs(t, err, regfile.ErrNotRegular)
		assert.Contains(t, err.Error(), "executable")
	})
	_, err := Open(context.Background(), dir, f.core)
	assert.ErrorIs(t, err, regfile.ErrNotRegular)
	assert.Contains(t, err.Error(), "a directory")
	_, err = Open(context.Background(), f.exe, dir)
	assert.ErrorIs(t, err, regfile.ErrNotRegular)

	// A library that NT_FILE names, found as a FIFO (by the file map, as
	// a sysroot prepared by someone else could hold it): left out with
	// a warning, and a lookup of its symbols says why.
	for _, opt := range []Option{WithFileMap(map[string]string{f.lib: fifo}), WithSysroot(fifoSysroot(t, f.lib))} {
		within(t, 10*time.Second, "Open with a FIFO as a library", func() {
			c, err := Open(context.Background(), f.exe, f.core, opt)
			require.NoError(t, err)
			defer c.Close()
			assert.Contains(t, strings.Join(c.Warnings(), "\n"), "a FIFO")
			_, err = c.LookupSymbol("lib_local")
			assert.ErrorIs(t, err, target.ErrNotFound)
			assert.ErrorIs(t, err, target.ErrObjectMissing)
			assert.Contains(t, err.Error(), "a FIFO")
			// Memory mapped from it is not read from the FIFO either.
			buf := make([]byte, 4096)
			for _, e := range c.d.files {
				if e.name == f.lib {
					_ = c.ReadMemory(buf, e.start)
				}
			}
		})
	}
}

// fifoSysroot returns a sysroot in which the path name is a FIFO.
func fifoSysroot(t *testing.T, name string) string {
	root := t.TempDir()
	p := filepath.Join(root, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, syscall.Mkfifo(p, 0o600))
	return root
}

// TestSysrootConfined names files by ".." paths and through symbolic
// links in a core's NT_FILE list: under WithSysroot, none of them is read
// from outside the sysroot.
func TestSysrootConfined(t *testing.T) {
	outside := t.TempDir()
	secret := bytes.Repeat([]byte("SECRET!!"), 1024)
	require.NoError(t, os.WriteFile(filepath.Join(outside, "secret.bin"), secret, 0o644))
	root := t.TempDir()
	require.NoError(t, os.Symlink(outside, filepath.Join(root, "abs")))                  // absolute target
	require.NoError(t, os.Symlink("../../../../../../../..", filepath.Join(root, "up"))) // relative, upwards
	dots := strings.Repeat("/..", 20) + outside + "/secret.bin"
	names := []string{
		dots,
		"/abs/secret.bin",
		"/up" + outside + "/secret.bin",
		"/up/.." + outside + "/secret.bin",
	}
	for i, name := range names {
		s := sampleSynth()
		start := uint64(0x40000 + i*0x10000)
		s.files = []synthFile{{start: start, end: start + 0x2000, name: name}}
		data := s.bytes()
		c, err := newCore(bytes.NewReader(data), int64(len(data)), &config{files: targetopt.Files{Sysroot: root}})
		require.NoError(t, err, name)
		buf := make([]byte, 16)
		err = c.ReadMemory(buf, start)
		assert.ErrorIs(t, err, target.ErrNoMemory, "%s read %q", name, buf)
		for _, p := range (&config{files: targetopt.Files{Sysroot: root}}).paths(name) {
			assert.True(t, strings.HasPrefix(p, root+"/"), "%s looked for as %s", name, p)
		}
		c.Close()
	}
	// The same names, with the file inside the sysroot where they lead
	// when taken as paths of the sysroot: served from there.
	inside := filepath.Join(root, outside)
	require.NoError(t, os.MkdirAll(inside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(inside, "secret.bin"), bytes.Repeat([]byte("inside.."), 1024), 0o644))
	for _, name := range []string{dots, "/up" + outside + "/secret.bin"} {
		s := sampleSynth()
		s.files = []synthFile{{start: 0x40000, end: 0x42000, name: name}}
		data := s.bytes()
		c, err := newCore(bytes.NewReader(data), int64(len(data)), &config{files: targetopt.Files{Sysroot: root}})
		require.NoError(t, err)
		buf := make([]byte, 8)
		require.NoError(t, c.ReadMemory(buf, 0x40000), name)
		assert.Equal(t, "inside..", string(buf), name)
		c.Close()
	}
}

// TestCoreShrinks cuts the core file short after Open, down to nothing:
// reads of what is gone fail, and so does Threads, instead of answering
// from zero-filled layers.
func TestCoreShrinks(t *testing.T) {
	f := getFixture(t)
	data, err := os.ReadFile(f.core)
	require.NoError(t, err)
	for _, size := range []int64{int64(len(data)) / 2, 0} {
		p := filepath.Join(t.TempDir(), "core")
		require.NoError(t, os.WriteFile(p, data, 0o644))
		c, err := Open(context.Background(), f.exe, p)
		require.NoError(t, err)
		_, err = c.Threads()
		require.NoError(t, err)
		// A segment whose bytes the cut removes; its memory must not
		// read as zeros afterwards.
		var lost *prog
		for i := range c.d.progs {
			pg := &c.d.progs[i]
			if pg.typ == elf.PT_LOAD && pg.filesz >= 8 && int64(pg.off) >= size {
				lost = pg
				break
			}
		}
		require.NotNil(t, lost)
		require.NoError(t, os.Truncate(p, size))
		_, err = c.Threads()
		assert.ErrorContains(t, err, "changed since it was opened", "size %d", size)
		buf := make([]byte, 8)
		err = c.ReadMemory(buf, lost.vaddr)
		require.Error(t, err, "size %d: read %x", size, buf)
		assert.Contains(t, err.Error(), "cut short")
		var re *target.ReadError
		assert.True(t, errors.As(err, &re))
		c.Close()
	}
}

// TestCorruptRuntimeNTFile corrupts the NT_FILE entries of the runtime
// library (their start, end and offset, and their names): the core is
// refused with the reason, or the runtime is found (through the dynamic
// linker's list) and read whole; never taken for an uninitialized one.
func TestCorruptRuntimeNTFile(t *testing.T) {
	m := newMutator(t, fixtures.Nested, nil)
	clean, err := ompd.Open(m.clean)
	require.NoError(t, err)
	snap, err := clean.Snapshot(t.Context())
	require.NoError(t, err)
	want := len(snap.Threads)
	clean.Close()

	le := binary.LittleEndian
	nt := m.header[len(m.header)-1]
	data := m.data
	count := int64(le.Uint64(data[nt.off:]))
	pos := nt.off + 16 + count*24
	checked := 0
	for i := int64(0); i < count; i++ {
		name := data[pos : pos+int64(bytes.IndexByte(data[pos:], 0))]
		var patches [][]patch
		if bytes.Contains(name, []byte("libomp")) {
			for _, k := range []int64{1, int64(len(name)) - 2} {
				patches = append(patches, []patch{{off: pos + k, data: []byte{'q'}}})
			}
			e := nt.off + 16 + i*24
			for f := int64(0); f < 3; f++ {
				for _, v := range []uint64{0, 0x1000, 0x100000, 1 << 40} {
					b := le.AppendUint64(nil, le.Uint64(data[e+8*f:])+v)
					if v == 0 {
						b = make([]byte, 8)
					}
					patches = append(patches, []patch{{off: e + 8*f, data: b}})
				}
			}
		}
		pos += int64(len(name)) + 1
		for _, p := range patches {
			ov := &overlay{base: data, size: int64(len(data)), patches: p}
			cfg := &config{}
			c, err := newCore(ov, ov.size, cfg)
			if err != nil {
				assert.Contains(t, err.Error(), "NT_FILE")
				continue
			}
			require.NoError(t, c.loadObjects(cfg, m.exe))
			as, err := ompd.Open(c)
			checked++
			if assert.NoError(t, err, "%+v", p) {
				snap, err := as.Snapshot(t.Context())
				require.NoError(t, err)
				assert.Len(t, snap.Threads, want, "%+v", p)
				as.Close()
			}
			c.Close()
		}
	}
	assert.Greater(t, checked, 20)
}

// A real core whose thread table disagrees with what LLVM's runtime allows
// or counts is refused before its entries are read, naming the variables:
// the mutation harness's tasks seed 4242 mutation 2783 (a capacity raised
// by 2^18 made the decoder read a kmp_info_t for every garbage word past
// the array), a __kmp_all_nth below the entries, a capacity above
// __kmp_sys_max_nth. The clean core keeps each bound.
func TestCoreThreadTableBounds(t *testing.T) {
	m := newMutator(t, fixtures.Tasks, nil)
	le := binary.LittleEndian
	global := func(name string) (int64, uint32) {
		a, err := m.clean.LookupSymbol(name)
		require.NoError(t, err, name)
		off, ok := m.fileOffset(a, 4)
		require.True(t, ok, "%s is in the core", name)
		return off, le.Uint32(m.data[off:])
	}
	capOff, capacity := global("__kmp_threads_capacity")
	allOff, allNth := global("__kmp_all_nth")
	sysOff, sysMax := global("__kmp_sys_max_nth")
	clean, err := ompd.Open(m.clean)
	require.NoError(t, err)
	ths, err := ompd.Collect(clean.Threads())
	require.NoError(t, err)
	clean.Close()
	assert.LessOrEqual(t, capacity, sysMax, "the runtime keeps the capacity within __kmp_sys_max_nth")
	assert.LessOrEqual(t, allNth, capacity)
	assert.Len(t, ths, int(allNth), "__kmp_all_nth counts the entries")

	for _, c := range []struct {
		name string
		off  int64
		v    uint32
		msg  string
	}{
		{"capacity + 2^18", capOff, capacity + 1<<18, fmt.Sprintf("but __kmp_all_nth counts %d", allNth)},
		{"__kmp_all_nth 0", allOff, 0, fmt.Sprintf("__kmp_threads holds %d threads among its %d entries, but __kmp_all_nth counts 0", len(ths), capacity)},
		{"__kmp_all_nth above the capacity", allOff, capacity + 1, "outside the thread table's capacity"},
		{"__kmp_sys_max_nth below the capacity", sysOff, capacity - 1, fmt.Sprintf("__kmp_threads_capacity %d above __kmp_sys_max_nth %d", capacity, capacity-1)},
	} {
		ov := &overlay{base: m.data, size: int64(len(m.data)), patches: []patch{{off: c.off, data: le.AppendUint32(nil, c.v)}}}
		as, err := ompd.Open(m.clean.withReader(ov))
		require.NoError(t, err, c.name)
		_, err = ompd.Collect(as.Threads())
		assert.ErrorIs(t, err, ompd.ErrCorrupt, c.name)
		assert.ErrorContains(t, err, c.msg, c.name)
		_, err = as.Snapshot(t.Context())
		assert.ErrorIs(t, err, ompd.ErrCorrupt, c.name)
		as.Close()
	}
}

// TestClimbingLevels: a team whose t_level reads 255 (where the mutation
// harness found it, issue 30) makes the generating chains through it
// climb, from level 1 to 255: an error now, which the snapshot reports;
// every invariant holds, the levels along each chain never climbing. On
// each team of the nested and serialized fixtures.
func TestClimbingLevels(t *testing.T) {
	for _, name := range []string{fixtures.Nested, fixtures.Serialized} {
		m := newMutator(t, name, nil)
		off, err := m.clean.FieldOffset("kmp_base_team_t", "t_level")
		require.NoError(t, err)
		cut := 0
		for _, s := range m.regions["teams"] {
			var b [4]byte
			binary.LittleEndian.PutUint32(b[:], 255)
			c := m.clean.withReader(&overlay{base: m.data, size: int64(len(m.data)), patches: []patch{{off: s.off + int64(off), data: b[:]}}})
			as, err := ompd.Open(c)
			require.NoError(t, err)
			assert.Empty(t, ompdtest.Invariants(as), "%s team %#x", name, s.addr)
			snap, err := as.Snapshot(t.Context())
			require.NoError(t, err)
			for _, e := range snap.Errors {
				if strings.Contains(e, "runs at level 255, not in an enclosing region") {
					cut++
					break
				}
			}
			as.Close()
		}
		assert.NotZero(t, cut, "%s: no chain cut where it climbs", name)
	}
}
