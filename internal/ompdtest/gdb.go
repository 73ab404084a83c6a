package ompdtest

import (
	"bufio"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
)

// GDBFrame is one physical frame of gdb's backtrace (with the inline
// frames gdb shows for it folded in: the first one names the position).
type GDBFrame struct {
	pc       uint64 // 0 when gdb did not print it (frame #0 at a line's start)
	function string // of the innermost inline frame
	file     string
	line     int
	inlined  bool // gdb showed more than one frame for this PC
	// logical are gdb's frames for this PC, innermost first (more than
	// one when calls were inlined).
	logical []ompd.InlineFrame
}

// Function is the name gdb gives the frame's innermost function.
func (g GDBFrame) Function() string { return g.function }

var (
	gdbThreadRE = regexp.MustCompile(`^Thread \d+ \(.*\(LWP (\d+)\)[^()]*\):$`)
	gdbFrameRE  = regexp.MustCompile(`^#(\d+)\s+(?:0x([0-9a-f]+) in )?(.+?) \(.*?\)(?: at (\S+):(\d+))?(?: from \S+)?$`)
)

// GDBCoreBacktraces runs gdb's "thread apply all bt" on the core and
// returns the physical frames of each thread by LWP.
func GDBCoreBacktraces(t *testing.T, exe, corePath string) map[uint64][]GDBFrame {
	t.Helper()
	return GDBBacktraces(t, exe, corePath)
}

// GDBBacktraces runs gdb's "thread apply all bt" in batch mode with the
// given arguments (EXE CORE, or -p PID to attach to a process, which gdb
// leaves running when it detaches) and returns the physical frames of
// each thread by LWP.
func GDBBacktraces(t *testing.T, args ...string) map[uint64][]GDBFrame {
	t.Helper()
	fixtures.RequireTool(t, "gdb")
	argv := append([]string{"-batch", "-nx", "-ex", "set pagination off", "-ex", "set width 0",
		"-ex", "thread apply all bt"}, args...)
	out, err := exec.Command("gdb", argv...).CombinedOutput()
	require.NoError(t, err, "gdb: %s", out)
	res := map[uint64][]GDBFrame{}
	var cur []GDBFrame
	var lwp uint64
	flush := func() {
		if lwp != 0 {
			res[lwp] = cur
		}
		cur, lwp = nil, 0
	}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := gdbThreadRE.FindStringSubmatch(line); m != nil {
			flush()
			lwp, _ = strconv.ParseUint(m[1], 10, 64)
			continue
		}
		m := gdbFrameRE.FindStringSubmatch(line)
		if m == nil || lwp == 0 {
			continue
		}
		n, _ := strconv.Atoi(m[1])
		f := GDBFrame{function: m[3], file: m[4]}
		f.line, _ = strconv.Atoi(m[5])
		if m[2] != "" {
			f.pc, _ = strconv.ParseUint(m[2], 16, 64)
		}
		lf := ompd.InlineFrame{Function: f.function, File: f.file, Line: f.line}
		if n > 0 && m[2] == "" && len(cur) > 0 {
			// A frame the previous one was inlined into: same PC.
			p := &cur[len(cur)-1]
			p.inlined = true
			p.logical = append(p.logical, lf)
			continue
		}
		f.logical = []ompd.InlineFrame{lf}
		cur = append(cur, f)
	}
	flush()
	return res
}

// CompareWithGDB compares each backtrace with gdb's of the same thread:
// the same program counters, frame by frame, and for the program's own
// frames the same file, line and function, or where gdb shows inlined
// calls the same inline frames.
// gdb adds virtual frames for tail calls it infers from call-site
// information (no frame on the stack): up to two gdb frames of other code
// than the program's are skipped. gdb stops at main; the walk goes on to
// _start.
func CompareWithGDB(t *testing.T, gdb map[uint64][]GDBFrame, bts map[int]*ompd.Backtrace) {
	t.Helper()
	for tid, bt := range bts {
		want := gdb[uint64(tid)]
		require.NotEmpty(t, want, "gdb shows thread %d", tid)
		compareFrames(t, tid, want, bt.Frames)
	}
}

// CompareOuterWithGDB is CompareWithGDB for a live process that gdb saw a
// moment before (attached and detached while the program waited in
// stopme): threads spinning or polling may have moved their innermost
// frames since, so for each truth thread only the frames from the one that
// recorded the truth outwards are compared, and they must all agree.
func CompareOuterWithGDB(t *testing.T, gdb map[uint64][]GDBFrame, bts map[int]*ompd.Backtrace, truth *fixtures.Truth, ptr uint64) {
	t.Helper()
	for _, tt := range truth.Threads {
		bt := bts[tt.TID]
		want := gdb[uint64(tt.TID)]
		require.NotNil(t, bt, "thread %d", tt.TID)
		require.NotEmpty(t, want, "gdb shows thread %d", tt.TID)
		frame, err := fixtures.ParseHex(tt.Frame)
		require.NoError(t, err)
		rec, ok := frameIndex(bt, frame+2*ptr)
		if !assert.True(t, ok, "thread %d: the recorded frame", tt.TID) {
			continue
		}
		f := bt.Frames[rec]
		gi := -1
		for k, g := range want {
			if g.pc == f.PC || g.pc == 0 && k == 0 && g.function == f.Function {
				gi = k
				break
			}
		}
		if !assert.GreaterOrEqual(t, gi, 0, "thread %d: gdb shows the recorded frame %v: %+v", tt.TID, f, want) {
			continue
		}
		compareFrames(t, tt.TID, want[gi:], bt.Frames[rec:])
	}
}

func frameIndex(bt *ompd.Backtrace, cfa uint64) (int, bool) {
	for i, f := range bt.Frames {
		if f.CFA == cfa {
			return i, true
		}
	}
	return 0, false
}

// compareFrames compares one thread's frames with gdb's (see
// CompareWithGDB).
func compareFrames(t *testing.T, tid int, want []GDBFrame, frames []ompd.Frame) {
	t.Helper()
	own, skipped, i, wantOwn := 0, 0, 0, 0
	for _, g := range want {
		if FixtureSource(g.file) {
			wantOwn++
		}
	}
	for _, g := range want {
		if i >= len(frames) {
			t.Errorf("thread %d: walk ended before gdb's frame %+v", tid, g)
			break
		}
		f := frames[i]
		if g.pc != 0 && g.pc != f.PC && !FixtureSource(g.file) && skipped < 2 {
			t.Logf("thread %d: skipping gdb's frame %+v (a tail-call frame?)", tid, g)
			skipped++
			continue
		}
		i++
		if g.pc != 0 {
			assert.Equal(t, g.pc, f.PC, "thread %d frame %d (%s)", tid, f.Index, g.function)
		}
		if !FixtureSource(g.file) {
			continue
		}
		own++
		assert.Equal(t, g.file, f.File, "thread %d frame %d", tid, f.Index)
		assert.Equal(t, g.line, f.Line, "thread %d frame %d", tid, f.Index)
		if sym, ok := gccOutlinedCxx(g.function); ok {
			// gdb names a region GCC outlined from a C++ function by
			// its symbol, "_ZN...Ev._omp_fn.0(void)"; ompd-go demangles
			// it and keeps the suffix, "geo::Grid<double>::relax._omp_fn.0".
			assert.Equal(t, sym, f.Symbol, "thread %d frame %d", tid, f.Index)
			assert.True(t, strings.HasSuffix(f.Function, sym[strings.Index(sym, "._omp_fn."):]) && !strings.HasPrefix(f.Function, "_Z"),
				"thread %d frame %d: %q demangled with its suffix", tid, f.Index, f.Function)
		} else if !g.inlined {
			assert.Equal(t, g.function, f.Function, "thread %d frame %d", tid, f.Index)
			assert.Empty(t, f.Inline, "thread %d frame %d: no inlining", tid, f.Index)
		} else {
			assert.Equal(t, g.logical, f.Inline, "thread %d frame %d: inlined calls", tid, f.Index)
		}
	}
	if i < len(frames) {
		// gdb stops at main, or at a Fortran program's main program
		// (MAIN__, its DWARF's main subprogram), which it names after
		// the program.
		if last := want[len(want)-1].function; last != "main" {
			assert.Equal(t, "MAIN__", frames[i-1].Symbol, "thread %d: frames past gdb's last, %s", tid, last)
		}
	}
	if wantOwn > 0 {
		// (A thread past its region's body, or idle in the pool, has
		// none: neither in gdb's backtrace.)
		assert.Positive(t, own, "thread %d reaches the program's own frames", tid)
	}
}

// gccOutlinedCxx reports whether gdb's function name is the symbol of a
// region GCC outlined from a C++ function, as gdb shows it
// ("_ZN3geo4GridIdE5relaxEv._omp_fn.0(void)"), and returns the symbol.
func gccOutlinedCxx(name string) (string, bool) {
	sym := strings.TrimSuffix(name, "(void)")
	return sym, strings.HasPrefix(sym, "_Z") && strings.Contains(sym, "._omp_fn.")
}
