package ompd_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/internal/summary"
	"github.com/ompd-go/ompd/internal/unwind"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

// TestBacktraceMatchesGDB unwinds every OpenMP thread of each fixture's
// core and compares the frames with gdb's backtrace of the same core:
// the same program counters, frame by frame, and for the program's own
// frames the same file, line and (where gdb shows no inlining) function;
// then it checks the placement of frames in tasks and regions against the
// programs' truth.
func TestBacktraceMatchesGDB(t *testing.T) {
	for _, c := range fixtureCases("8") {
		t.Run(c.String(), func(t *testing.T) {
			stop, as := openCore(t, c.name, c.args...)
			gdb := ompdtest.GDBCoreBacktraces(t, stop.Exe, stop.Core)
			bts := ompdtest.CheckBacktraces(t, as, stop.Truth)
			require.Len(t, bts, len(stop.Truth.Threads))
			ompdtest.CompareWithGDB(t, gdb, bts)
		})
	}
}

// TestBacktraceFoldRuntime folds runtime frames: no two consecutive
// runtime frames of one task remain, and the folded frame is the runtime
// function the program called.
func TestBacktraceFoldRuntime(t *testing.T) {
	stop, as := openCore(t, fixtures.Nested)
	for _, tt := range stop.Truth.ThreadsWithRole(fixtures.RoleBarrier) {
		th, err := as.ThreadByOSThread(ompd.LWPID, uint64(tt.TID))
		require.NoError(t, err)
		full, err := th.Backtrace(context.Background())
		require.NoError(t, err)
		bt, err := th.Backtrace(context.Background(), ompd.WithFoldRuntime())
		require.NoError(t, err)
		assert.Less(t, len(bt.Frames), len(full.Frames))
		n := 0
		for i, f := range bt.Frames {
			if f.Runtime || f.InRuntimeCall {
				assert.Positive(t, f.Folded)
				n += f.Folded
				if i > 0 {
					p := bt.Frames[i-1]
					assert.False(t, (p.Runtime || p.InRuntimeCall) && p.TaskIndex == f.TaskIndex, "%v", f)
				}
			} else {
				assert.Zero(t, f.Folded)
				n++
			}
		}
		assert.Equal(t, len(full.Frames), n, "folded frames stand for all frames")
		assert.Equal(t, "__kmpc_barrier", bt.Frames[0].Function, "the barrier call, folded")
		assert.Equal(t, ompd.WaitBarrier, bt.Tasks[0].Wait)
		assert.Equal(t, "__kmpc_barrier", bt.Tasks[0].Entered)
	}
}

// TestSnapshotBacktraces: a snapshot has frames only when asked; then
// every thread has them, the threads waiting in the same barrier share a
// stack key and the stopper's differs; region and task functions say
// where they are in the sources.
func TestSnapshotBacktraces(t *testing.T) {
	stop, as := openCore(t, fixtures.Many, "8")
	plain, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	for _, th := range plain.Threads {
		assert.Empty(t, th.Frames, "no stacks unless asked")
	}
	s, err := as.Snapshot(context.Background(), ompd.WithBacktraces(ompd.WithFoldRuntime()))
	require.NoError(t, err)
	keys := map[string]int{}
	var stopperKey string
	for _, th := range s.Threads {
		require.NotEmpty(t, th.Frames, th.ID)
		assert.Empty(t, th.StackEnd, th.ID)
		key := strings.Join(summary.StackKey(th.Frames), " < ")
		keys[key]++
		if th.LWP == uint64(stop.Truth.StopTID) {
			stopperKey = key
		}
		for _, p := range th.Parallel {
			if p.FunctionPC != 0 {
				assert.Equal(t, "many.c", filepath.Base(p.File), "%s region %s", th.ID, p.ID)
				assert.Positive(t, p.Line)
			}
		}
		for _, tk := range th.Tasks {
			if tk.FunctionPC != 0 {
				assert.Equal(t, "many.c", filepath.Base(tk.File), "%s task %s", th.ID, tk.ID)
			}
		}
	}
	barrier := len(stop.Truth.ThreadsWithRole(fixtures.RoleBarrier))
	require.Len(t, keys, 2, "%v", keys)
	assert.Equal(t, 1, keys[stopperKey])
	assert.True(t, strings.HasPrefix(stopperKey, "stopme < "), stopperKey)
	for k, n := range keys {
		if k != stopperKey {
			assert.Equal(t, barrier, n, k)
			assert.True(t, strings.HasPrefix(k, "__kmpc_barrier < "), k)
		}
	}
}

// fuzzedRegisters is a real core whose threads' registers are replaced in
// part by fuzzed values.
type fuzzedRegisters struct {
	*core.Core
	pc, sp, fp, bx uint64
	mode           uint8
}

func (f *fuzzedRegisters) ThreadRegisters(tid uint64) (target.Registers, error) {
	r, err := f.Core.ThreadRegisters(tid)
	if err != nil {
		return r, err
	}
	sp, _ := r.SP()
	if f.mode&1 != 0 {
		r.Set(16, f.pc)
	}
	if f.mode&2 != 0 {
		r.Set(7, f.sp)
	} else if f.mode&4 != 0 {
		r.Set(7, sp+f.sp%4096) // somewhere in the real stack
	}
	if f.mode&8 != 0 {
		r.Set(6, f.fp)
	} else if f.mode&16 != 0 {
		r.Set(6, sp+f.fp%4096)
	}
	if f.mode&32 != 0 {
		r.Set(3, f.bx)
	}
	if f.mode&64 != 0 {
		r.Forget(int(f.bx % 17))
	}
	return r, nil
}

// FuzzBacktraceRegisters unwinds every thread of a real core (real
// call-frame information and stack memory) from fuzzed registers: each
// walk ends, within its depth limit, with or without a reason, never with
// a panic.
func FuzzBacktraceRegisters(f *testing.F) {
	stop := fixtures.Core(f, fixtures.Tasks)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(f, err)
	f.Cleanup(func() { c.Close() })
	f.Add(uint64(0x7ffff7efbde6), uint64(8), uint64(16), uint64(0), uint8(4|16))
	f.Add(uint64(0), uint64(0), uint64(0), uint64(0), uint8(0xff))
	f.Add(uint64(0x555555556468), uint64(0x7fffffffd000), uint64(0x7fffffffd000), uint64(1), uint8(1|2|8))
	f.Fuzz(func(t *testing.T, pc, sp, fp, bx uint64, mode uint8) {
		fr := &fuzzedRegisters{Core: c, pc: pc, sp: sp, fp: fp, bx: bx, mode: mode}
		as, err := ompd.Open(fr)
		require.NoError(t, err)
		ths, err := ompd.Collect(as.Threads())
		require.NoError(t, err)
		for _, th := range ths {
			bt, err := th.Backtrace(context.Background(), ompd.WithMaxFrames(64))
			if err != nil {
				require.ErrorIs(t, err, ompd.ErrReadFailed)
				continue
			}
			require.LessOrEqual(t, len(bt.Frames), 64)
			for i := 1; i < len(bt.Frames); i++ {
				if bt.Frames[i].CFA != 0 {
					require.Greater(t, bt.Frames[i].CFA, bt.Frames[i-1].CFA)
				}
			}
		}
	})
}

// TestBacktraceCorruptStack: a thread whose stack and frame pointers point
// at unmapped memory, or into its own stack out of order, gets the frames
// that could be found and a reason, not an error.
func TestBacktraceCorruptStack(t *testing.T) {
	stop := fixtures.Core(t, fixtures.Tasks)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	require.NoError(t, err)
	defer c.Close()
	for _, tc := range []struct {
		fr   fuzzedRegisters
		want error
	}{
		{fuzzedRegisters{sp: 0x1000, fp: 0x1000, mode: 2 | 8}, target.ErrNoMemory},
		{fuzzedRegisters{fp: 0x10, mode: 8}, unwind.ErrNoProgress}, // CFA = rbp+16 below the stack pointer
	} {
		fr := tc.fr
		fr.Core = c
		as, err := ompd.Open(&fr)
		require.NoError(t, err)
		th, err := as.ThreadByOSThread(ompd.LWPID, uint64(stop.Truth.StopTID))
		require.NoError(t, err)
		bt, err := th.Backtrace(context.Background())
		require.NoError(t, err)
		require.NotEmpty(t, bt.Frames)
		assert.Equal(t, "stopme", bt.Frames[0].Function)
		assert.ErrorIs(t, bt.End, tc.want, "%v", bt.End)
	}
}

// TestBacktraceGomp unwinds gcc programs on GCC's libgomp (the debug build
// and the distribution's stripped libgomp1, whose .eh_frame is all there
// is): every thread's walk is complete and matches gdb's, and its frames
// are placed in their tasks and regions as the program recorded them
// (libgomp records no task frames: its runtime package reads them from
// the stacks), the same checks as on LLVM's runtime.
func TestBacktraceGomp(t *testing.T) {
	runtimes := map[string]func(testing.TB) fixtures.RuntimeInfo{
		"system": func(t testing.TB) fixtures.RuntimeInfo { return fixtures.SystemGomp(t) },
		"debug-" + fixtures.GompVersions[0]: func(t testing.TB) fixtures.RuntimeInfo {
			return fixtures.GompRuntime(t, fixtures.GompVersions[0])
		},
	}
	for rname, info := range runtimes {
		for _, name := range []string{fixtures.Tasks, fixtures.Nested, fixtures.Hung, fixtures.TaskWaits, fixtures.EndBarrier, fixtures.FNested, fixtures.FModule, fixtures.Cxx} {
			t.Run(rname+"/"+name, func(t *testing.T) {
				stop := fixtures.CoreWith(t, info(t), name)
				as := openStop(t, stop)
				bts := ompdtest.CheckBacktraces(t, as, stop.Truth)
				ompdtest.CompareWithGDB(t, ompdtest.GDBCoreBacktraces(t, stop.Exe, stop.Core), bts)
			})
		}
	}
}

// TestBacktraceStrippedRuntime: with the runtime stripped as distributions
// ship it, the runtime's frames get their functions, files and lines from
// its separate debug file (found by build-id), and placement works as on
// the unstripped runtime.
func TestBacktraceStrippedRuntime(t *testing.T) {
	stop, s := strippedStop(t, fixtures.VariantOMPD, fixtures.Tasks)
	dir := t.TempDir()
	dbgSymlink(t, s.DebugFile, s.BuildIDPath(dir))
	_, as, err := openStripped(t, stop, core.WithDebugDirs(dir))
	require.NoError(t, err)
	bts := ompdtest.CheckBacktraces(t, as, stop.Truth)
	runtimeLines := 0
	for _, bt := range bts {
		for _, f := range bt.Frames {
			if f.Runtime && f.Object == s.LibOMP {
				assert.NotEmpty(t, f.Function, "%v", f)
				if strings.HasPrefix(filepath.Base(f.File), "kmp_") {
					runtimeLines++
				}
			}
		}
	}
	assert.Positive(t, runtimeLines, "runtime frames with lines from the debug file")
	th, err := as.ThreadByOSThread(ompd.LWPID, uint64(stop.Truth.StopTID))
	require.NoError(t, err)
	bt, err := th.Backtrace(context.Background())
	require.NoError(t, err)
	waits := 0
	for _, tk := range bt.Tasks {
		if tk.Wait == ompd.WaitTaskwait {
			waits++
			assert.Equal(t, "__kmpc_omp_taskwait", tk.Entered)
		}
	}
	assert.Positive(t, waits)
}

// TestBacktraceConcurrent unwinds every thread from several goroutines at
// once on a freshly opened core, whose call-frame information, line tables
// and caches are all read on first use (run with -race): the same frames
// as one at a time.
func TestBacktraceConcurrent(t *testing.T) {
	_, first := openCore(t, fixtures.Many, "8")
	ths, err := ompd.Collect(first.Threads())
	require.NoError(t, err)
	want := map[int][]ompd.Frame{}
	for _, th := range ths {
		bt, err := th.Backtrace(context.Background())
		require.NoError(t, err)
		want[th.GTID()] = bt.Frames
	}
	_, as := openCore(t, fixtures.Many, "8")
	threads, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 4*len(threads))
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, th := range threads {
				bt, err := th.Backtrace(context.Background(), ompd.WithFoldRuntime())
				if err != nil {
					errs <- err
					continue
				}
				n := 0
				for _, f := range bt.Frames {
					n += max(f.Folded, 1)
				}
				if n != len(want[th.GTID()]) {
					errs <- fmt.Errorf("%v: %d frames, want %d", th, n, len(want[th.GTID()]))
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestBacktraceDemangled: the runtime's C++ functions are named as gdb
// names them (demangled, without parameters), their mangled symbols kept.
func TestBacktraceDemangled(t *testing.T) {
	stop, as := openCore(t, fixtures.Tasks)
	th, err := as.ThreadByOSThread(ompd.LWPID, uint64(stop.Truth.StopTID))
	require.NoError(t, err)
	bt, err := th.Backtrace(context.Background())
	require.NoError(t, err)
	found := false
	for _, f := range bt.Frames {
		if f.Function == "__kmp_invoke_task" {
			found = true
			assert.True(t, strings.HasPrefix(f.Symbol, "_Z"), f.Symbol)
		}
		if !strings.HasPrefix(f.Symbol, "_Z") {
			assert.Equal(t, f.Symbol, f.Function)
		}
	}
	assert.True(t, found, "the stopper runs its task through __kmp_invoke_task")
	gdb := ompdtest.GDBCoreBacktraces(t, stop.Exe, stop.Core)
	names := map[string]bool{}
	for _, g := range gdb[uint64(stop.Truth.StopTID)] {
		names[g.Function()] = true
	}
	assert.True(t, names["__kmp_invoke_task"], "gdb names it so too: %v", names)
}
