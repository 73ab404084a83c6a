package delve

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
)

// TestLiveBacktraces stops the tasks and nested fixtures live and checks
// every thread's backtrace against what the programs recorded: registers
// from Delve, call-frame information and line tables of the live objects,
// each recorded frame in its task at its level.
func TestLiveBacktraces(t *testing.T) {
	for _, name := range []string{fixtures.Tasks, fixtures.Nested} {
		t.Run(name, func(t *testing.T) {
			r := newRun(t, name)
			p := r.launch(t)
			ctx := testContext(t)
			_, err := p.RunToFunction(ctx, "stopme")
			require.NoError(t, err)
			tr := r.truth(t)
			as, err := ompd.Open(p)
			require.NoError(t, err)
			defer as.Close()
			bts := ompdtest.CheckBacktraces(t, as, tr)
			st := bts[tr.StopTID]
			require.NotNil(t, st)
			require.NotEmpty(t, st.Frames)
			assert.Equal(t, "stopme", st.Frames[0].Function)

			regs, err := p.ThreadRegisters(uint64(tr.StopTID))
			require.NoError(t, err)
			pc, ok := regs.PC()
			require.True(t, ok)
			assert.Equal(t, st.Frames[0].PC, pc)
			_, err = p.ThreadRegisters(1)
			assert.ErrorIs(t, err, target.ErrNoThread)
		})
	}
}

// TestAttachBacktracesMatchGDB: the nested fixture (nested regions) and
// the tasks fixture (explicit task chains, tasks suspended in taskwaits)
// wait in stopme (hold mode); gdb attaches, prints every thread's
// backtrace and detaches; then Delve attaches, every thread's backtrace
// is placed as the truth says, and from the frame that recorded the
// thread's truth outwards it is gdb's.
func TestAttachBacktracesMatchGDB(t *testing.T) {
	fixtures.RequireTool(t, "gdb")
	for _, name := range []string{fixtures.Nested, fixtures.Tasks} {
		t.Run(name, func(t *testing.T) {
			r := newRun(t, name)
			var gdb map[uint64][]ompdtest.GDBFrame
			p, finish := attachHeld(t, r, func(pid int) {
				gdb = ompdtest.GDBBacktraces(t, "-p", strconv.Itoa(pid))
			})
			tr := r.truth(t)
			as, err := ompd.Open(p)
			require.NoError(t, err)
			bts := ompdtest.CheckBacktraces(t, as, tr)
			ompdtest.CompareOuterWithGDB(t, gdb, bts, tr, 8)
			as.Close()
			finish()
		})
	}
}

// TestLiveBacktracesGomp holds gcc programs on GCC's libgomp (the debug
// build, and the distribution's stripped libgomp1 whose .eh_frame is all
// there is) in stopme; gdb attaches, prints every thread's backtrace and
// detaches; then Delve attaches and every OpenMP thread's backtrace,
// from Delve's registers and the live objects' call-frame information,
// is complete, places the frames the program recorded in its own source
// (threads and tasks) in their tasks and regions (read from the stacks,
// as on LLVM's runtime: ompdtest.CheckBacktraces), and matches gdb's:
// from the recorded frame
// outwards for every thread, and entirely (the runtime's frames down to
// the futex wait) for the threads asleep in a barrier, which cannot
// have moved since gdb saw them.
func TestLiveBacktracesGomp(t *testing.T) {
	fixtures.RequireTool(t, "gdb")
	runtimes := []struct {
		name string
		info func(t testing.TB) fixtures.RuntimeInfo
	}{
		{"debug-" + fixtures.GompVersions[0], func(t testing.TB) fixtures.RuntimeInfo {
			return fixtures.GompRuntime(t, fixtures.GompVersions[0])
		}},
		{"system", func(t testing.TB) fixtures.RuntimeInfo { return fixtures.SystemGomp(t) }},
	}
	for _, rt := range runtimes {
		for _, name := range []string{fixtures.Nested, fixtures.Tasks} {
			t.Run(rt.name+"/"+name, func(t *testing.T) {
				r := newRunOf(t, fixtures.BuildWith(t, name, rt.info(t)), name)
				var gdb map[uint64][]ompdtest.GDBFrame
				p, finish := attachHeld(t, r, func(pid int) {
					gdb = ompdtest.GDBBacktraces(t, "-p", strconv.Itoa(pid))
				})
				tr := r.truth(t)
				as, err := ompd.Open(p)
				require.NoError(t, err)
				require.Equal(t, "GNU libgomp", as.Runtime().Name)
				bts := ompdtest.CheckBacktraces(t, as, tr)
				ompdtest.CompareOuterWithGDB(t, gdb, bts, tr, 8)
				barrier := map[int]*ompd.Backtrace{}
				for _, tt := range tr.ThreadsWithRole(fixtures.RoleBarrier) {
					barrier[tt.TID] = bts[tt.TID]
				}
				require.NotEmpty(t, barrier)
				ompdtest.CompareWithGDB(t, gdb, barrier)
				as.Close()
				finish()
			})
		}
	}
}
