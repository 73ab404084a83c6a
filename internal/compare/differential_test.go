//go:build cgo

package compare_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/internal/libompd"
	"github.com/ompd-go/ompd/internal/ompdtest"
	"github.com/ompd-go/ompd/target"
	"github.com/ompd-go/ompd/target/core"
)

// TestDifferential asks LLVM's libompd (through the cgo harness of
// internal/libompd) and this package the same questions about the core
// file of every fixture program, and checks that every answer agrees,
// except the reference's known faults listed in knownFaults. Where an
// answer differs, ours must match what the program itself recorded (the
// fixture's truth); where the program recorded something, ours must match
// it anyway.
//
// The questions: every OS thread's OpenMP thread handle (by pthread id, as
// libompd finds threads, and by LWP), pthread id, state and wait id; its
// parallel region chain from the innermost region out (levels, active
// levels, team sizes, entry functions; the threads and implicit tasks of
// each region); its task chain through generating tasks (functions, frames,
// scheduling tasks, parallel regions); every ICV at every scope, in integer
// and string form; plus the address-space answers (OpenMP version, display
// control variables, the ICV and state enumerations).
//
// Without the runtime, libompd or gdb the test skips, or fails with
// CI=true.
func TestDifferential(t *testing.T) {
	for _, fx := range []struct {
		name string
		args []string
	}{
		{fixtures.Nested, nil},
		{fixtures.Serialized, nil},
		{fixtures.Serialized, []string{"deep"}},
		{fixtures.Tasks, nil},
		{fixtures.ICVs, nil},
		{fixtures.Many, nil},
		{fixtures.Many, []string{"16", "spin"}},
		{fixtures.Workshare, nil},
	} {
		t.Run(fixtureKey(fx.name, fx.args...), func(t *testing.T) {
			lib := loadLibompd(t)
			f := openFixture(t, fx.name, fx.args...)
			diffFixture(t, lib, f)
		})
	}
}

// loadLibompd loads the libompd.so built with the fixtures' runtime. A
// missing runtime ends the test as fixtures.Unavailable says (a failure
// with CI=true).
func loadLibompd(tb testing.TB) *libompd.Library {
	tb.Helper()
	info := fixtures.Runtime(tb)
	lib, err := libompd.Load(info.LibOMPD)
	if err != nil {
		tb.Fatal(err)
	}
	return lib
}

// fixture is a fixture stopped and dumped to a core file, opened as a
// target.
type fixture struct {
	stop   *fixtures.Stop
	target *core.Core
}

func openFixture(tb testing.TB, name string, args ...string) *fixture {
	tb.Helper()
	stop := fixtures.Core(tb, name, args...)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core)
	if err != nil {
		tb.Fatalf("core.Open(context.Background(), %s, %s): %v", stop.Exe, stop.Core, err)
	}
	tb.Cleanup(func() { c.Close() })
	return &fixture{stop: stop, target: c}
}

// ---- answers ---------------------------------------------------------------

// answer is one side's answer to a question: a value, or an OMPD return code
// (with, for ompd_rc_incomplete, the value that came with it).
type answer struct {
	val string
	rc  string // "" when the call succeeded, else the code without "ompd_rc_"
}

func (a answer) String() string {
	switch {
	case a.rc == "":
		return a.val
	case a.val != "":
		return "rc:" + a.rc + "(" + a.val + ")"
	}
	return "rc:" + a.rc
}

func (a answer) ok() bool { return a.rc == "" }

// ourCodes maps this package's errors to OMPD return codes.
var ourCodes = []struct {
	err error
	rc  string
}{
	{ompd.ErrUnavailable, "unavailable"},
	{ompd.ErrStaleHandle, "stale_handle"},
	{ompd.ErrBadInput, "bad_input"},
	{ompd.ErrUnsupported, "unsupported"},
	{ompd.ErrNeedsStateTracking, "needs_state_tracking"},
	{ompd.ErrIncompatible, "incompatible"},
	{ompd.ErrIncomplete, "incomplete"},
	{ompd.ErrReadFailed, "device_read_error"},
	{ompd.ErrWriteFailed, "device_write_error"},
}

// ourRC is the OMPD return code of one of this package's errors.
func ourRC(err error) string {
	if err == nil {
		return ""
	}
	for _, c := range ourCodes {
		if errors.Is(err, c.err) {
			return c.rc
		}
	}
	return "error"
}

func ours(val string, err error) answer {
	if errors.Is(err, ompd.ErrIncomplete) {
		return answer{val: val, rc: "incomplete"}
	}
	if err != nil {
		return answer{rc: ourRC(err)}
	}
	return answer{val: val}
}

func theirs(val string, err error) answer {
	if err == nil {
		return answer{val: val}
	}
	rc := strings.TrimPrefix(libompd.Code(err).String(), "ompd_rc_")
	if libompd.Code(err) == libompd.Incomplete {
		return answer{val: val, rc: rc}
	}
	return answer{rc: rc}
}

func hex(v uint64) string { return fmt.Sprintf("%#x", v) }

// ---- the program's truth ---------------------------------------------------

// truth checks our answer against what the program recorded.
type truth struct {
	desc string // what the program recorded, for messages
	ok   func(answer) bool
	want *answer // the exact answer, where the truth is one
	// lib is libompd's documented wrong answer, computed from the
	// program's truth, for a known fault listed as "exact".
	lib *answer
}

func truthIs(desc string, want answer) *truth {
	return &truth{desc: fmt.Sprintf("%s: %v", desc, want), ok: func(a answer) bool { return a == want }, want: &want}
}

func truthVal(desc, want string) *truth { return truthIs(desc, answer{val: want}) }

func boolVal(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// ---- the reference's known faults ------------------------------------------

// fixtureKey names a fixture run with its arguments, as the known faults
// list it: "serialized", "serialized-deep", "many-16-spin".
func fixtureKey(name string, args ...string) string {
	return strings.Join(append([]string{name}, args...), "-")
}

// The fixture variants TestDifferential runs with arguments: four
// serialized levels in a row, and 16 spinning threads.
var (
	serializedDeep = fixtureKey(fixtures.Serialized, "deep")
	manySpin       = fixtureKey(fixtures.Many, "16", "spin")
)

// allFixtures are the fixture keys TestDifferential runs.
var allFixtures = []string{fixtures.Nested, fixtures.Serialized, serializedDeep, fixtures.Tasks, fixtures.ICVs,
	fixtures.Many, manySpin, fixtures.Workshare}

// serialized are the fixture keys with nested serialized regions.
var serialized = []string{fixtures.Serialized, serializedDeep}

// knownFault is a question on which LLVM's libompd 19 is known to answer
// wrong. A difference on it is tolerated only in the fixtures listed, only
// when libompd gives the answer listed, and only if our answer matches the
// program's truth; a listed fault that does not show in a fixture fails the
// test too, so the list cannot go stale.
type knownFault struct {
	fixtures []string
	question string
	// lib is libompd's answer: "rc:<code>", "=<value>" (that wrong
	// value), "exact" (the wrong value the check computes from the truth
	// and passes as libWant, so that the fault matches libompd's documented
	// wrong answer only), or "absent" (a chain element it skips).
	lib    string
	reason string
}

var knownFaults = []*knownFault{
	{allFixtures, "parallel.enclosing(outermost)", "rc:unsupported",
		"the enclosing region of the outermost (level 0) region: libompd dereferences the null t_parent and answers " +
			"ompd_rc_unsupported; the specification's answer for 'there is none' is ompd_rc_unavailable"},
	{allFixtures, "task.generating(outermost)", "rc:unsupported",
		"the generating task of the initial task: libompd dereferences the null td_parent and answers " +
			"ompd_rc_unsupported instead of ompd_rc_unavailable"},
	{allFixtures, "task.function(level 0)", "=0x0",
		"the initial task (and so the level-0 region, whose function is its implicit task's) runs no " +
			"outlined function: libompd returns the level-0 team's t_pkfn, 0, as a successful answer; ours " +
			"says unavailable"},
	{allFixtures, "task.frame.exit-flags", "=0x0",
		"ompd_get_task_frame leaves frame_flag unset (the harness zeroes it, so libompd answers 0); " +
			"ours reports the runtime's flags (runtime or application, framepointer)"},
	{allFixtures, "task.frame.enter-flags", "=0x0",
		"as for the exit frame: libompd never sets frame_flag"},
	{allFixtures, "task.scheduling(implicit)", "rc:unavailable",
		"libompd reads ompt_task_info.scheduling_parent, which the runtime sets for explicit tasks only, so it " +
			"answers unavailable for every implicit task; ours gives the task the region's primary thread " +
			"interrupted (the encountering task) for a primary thread's implicit task and for each enclosing " +
			"serialized level"},
	{allFixtures, "task.scheduling-chain(implicit)", "rc:unavailable",
		"the same fault, met when following the scheduling chain from the current task: it ends at the " +
			"first implicit task in libompd"},
	{serialized, "parallel.chain", "absent",
		"nested serialized levels share one serial team: libompd's handle of the innermost one carries the " +
			"lw-taskteam of the level above, and its enclosing region skips that level (levels 5, 3, 2, 1, 0 " +
			"where the program is at 5, 4, 3, 2, 1, 0; with four serialized levels 4-7 in a row, 7 regions for " +
			"levels 7..0, level 4 skipped)"},
	{serialized, "task.chain", "absent",
		"the same fault on the task side: the generating task of the innermost serialized implicit task " +
			"skips the implicit task of the level above"},
	{serialized, "task.handle-compare", "=false",
		"the same fault seen through handle identity: the current task's handle carries the lw-taskteam of " +
			"the level above, the handle ompd_get_task_in_parallel makes for the same implicit task carries " +
			"none, and ompd_task_handle_compare compares the lw-taskteams too: the thread's own implicit task " +
			"compares unequal to itself"},
	{serialized, "task.function(serialized)", "rc:bad_input",
		"ompd_get_task_function refuses task handles that carry a lw-taskteam (\"We need to decide what we do " +
			"here\"): the implicit task of a nested serialized region"},
	{serialized, "task.frame.exit", "exact",
		"the frames of the innermost serialized implicit task are read from the lw-taskteam of the level " +
			"above: libompd reports the enclosing level's frames (as OMPT recorded them), one level off"},
	{serialized, "task.frame.enter", "exact",
		"as for the exit frame: the enclosing level's enter frame"},
	{[]string{serializedDeep}, "icv(integer).integer", "exact",
		"levels-var of a serialized region enclosing another (levels 6 and 5 of the four serialized levels 4-7 " +
			"in a row; libompd's chain skips level 4): libompd reads the serial team's t_level, which the " +
			"runtime raises for every serialized level nested in the team, and ignores the lw-taskteam its " +
			"handle carries: it answers the innermost serialized level (7) for each"},
	{[]string{serializedDeep}, "parallel.function", "exact",
		"the same fault on the entry function: for the implicit task of a serialized region enclosing another " +
			"libompd reads the serial team's t_pkfn, the entry of the innermost serialized level (the outlined " +
			"function of depth 7), where the runtime keeps none for the enclosing level (ours: unavailable)"},
	{allFixtures, "icv(integer).string", "rc:unsupported",
		"libompd gives string forms of run-sched-var, nthreads-var, bind-var and the three string ICVs only; " +
			"ompd_get_icv_string_from_scope refuses every integer ICV"},
	{allFixtures, "icv(run-sched-var).integer", "rc:incompatible",
		"libompd answers ompd_rc_incompatible for the integer form of run-sched-var; ours gives the " +
			"schedule kind as omp_get_schedule does"},
	{[]string{fixtures.Workshare}, "parallel.function", "=0x0",
		"a region opened with if(0) (clang calls __kmpc_serialized_parallel and the outlined function itself): " +
			"the runtime never learns its function and leaves the serial team's t_pkfn 0, which libompd " +
			"returns as a successful answer; ours says unavailable"},
	{[]string{fixtures.Workshare}, "task.function", "=0x0",
		"the same fault through the implicit task of the if(0) region"},
	{[]string{fixtures.Nested, fixtures.Serialized, serializedDeep, fixtures.Tasks, fixtures.Many, manySpin, fixtures.Workshare}, "icv(nthreads-var).integer", "exact",
		"without an OMP_NUM_THREADS list __kmp_nested_nth.used is 0, and libompd tests level < used - 1 " +
			"in unsigned arithmetic: it always answers ompd_rc_incomplete (with the right first element)"},
	{allFixtures, "as.display-control-vars", "exact",
		"the runtime writes ompd_env_block before it reads the environment, so the block holds defaults " +
			"(OMP_STACKSIZE=4M where the program runs with 256K); libompd returns the block as is, ours " +
			"corrects the variables whose values it can read from the runtime"},
	{allFixtures, "as.states", "exact",
		"ompd_enumerate_states lacks ompt_state_undefined (0x102), ompt_state_wait_barrier_implementation " +
			"(0x15) and ompt_state_wait_barrier_teams (0x16) of OpenMP 5.1"},
}

func (f *knownFault) matches(fixture, question string, lib answer, libWant *answer) bool {
	if f.question != question || !slices.Contains(f.fixtures, fixture) {
		return false
	}
	if want, ok := strings.CutPrefix(f.lib, "="); ok {
		return lib == answer{val: want}
	}
	switch f.lib {
	case "exact":
		return libWant != nil && lib == *libWant
	case "absent":
		return lib == answer{val: "absent"}
	}
	return lib.String() == f.lib || (lib.rc != "" && "rc:"+lib.rc == f.lib)
}

// ---- comparing -------------------------------------------------------------

// differ compares the answers to the questions about one fixture.
type differ struct {
	t       *testing.T
	fixture string
	used    map[*knownFault]int
	n       int // questions asked
	truths  int // questions with the program's truth
	errs    int
	// unchecked counts known libompd faults where no truth says what the
	// answer is: ours is not checked there.
	unchecked int
}

const maxErrors = 50 // per fixture, so that one fault does not flood the log

func (d *differ) errorf(format string, args ...any) {
	d.t.Helper()
	d.errs++
	if d.errs <= maxErrors {
		d.t.Errorf(format, args...)
	} else if d.errs == maxErrors+1 {
		d.t.Errorf("more differences left out")
	}
}

// check compares our answer and libompd's to one question. question names
// the kind of question (what knownFaults match on), where says which
// instance of it (for messages). tr, if not nil, is what the program
// recorded: our answer must match it.
func (d *differ) check(question, where string, our, lib answer, tr *truth) {
	d.t.Helper()
	var libWant *answer
	if tr != nil {
		libWant = tr.lib
	}
	d.checkLib(question, where, our, lib, tr, libWant)
}

// oursOnly checks our answer to a question libompd has no answer to (it
// skips the task or region) against the truth alone.
func (d *differ) oursOnly(question, where string, our answer, tr *truth) {
	d.t.Helper()
	d.n++
	if tr == nil {
		return
	}
	d.truths++
	if !tr.ok(our) {
		d.errorf("%s: %s: ours %v contradicts the program (%s); libompd skips it", where, question, our, tr.desc)
	}
}

// checkLib is check with libWant, libompd's known wrong answer for a fault
// listed as "exact".
func (d *differ) checkLib(question, where string, our, lib answer, tr *truth, libWant *answer) {
	d.t.Helper()
	d.n++
	if tr != nil {
		d.truths++
	}
	if tr != nil && !tr.ok(our) {
		d.errorf("%s: %s: ours %v contradicts the program (%s); libompd says %v", where, question, our, tr.desc, lib)
	}
	if our == lib {
		return
	}
	for _, f := range knownFaults {
		if f.matches(d.fixture, question, lib, libWant) {
			d.used[f]++
			if tr == nil {
				// Neither the program nor the runtime's memory says
				// what the answer is (the program cannot query an
				// enclosing task's ICVs, for instance): ours goes
				// unchecked rather than checked against either
				// implementation.
				d.unchecked++
			}
			return
		}
	}
	d.errorf("%s: %s: ours %v, libompd %v", where, question, our, lib)
}

// finish reports the known faults listed for the fixture that did not show.
func (d *differ) finish() {
	d.t.Helper()
	for _, f := range knownFaults {
		if slices.Contains(f.fixtures, d.fixture) && d.used[f] == 0 {
			d.errorf("known fault %q (libompd %s) did not show in %s: remove the fixture from its entry", f.question, f.lib, d.fixture)
		}
	}
	tolerated := 0
	for _, n := range d.used {
		tolerated += n
	}
	// Every tolerated libompd fault has truth for our answer: none may
	// leave ours unchecked.
	if d.unchecked != 0 {
		d.errorf("%d tolerated libompd differences without truth: ours unchecked", d.unchecked)
	}
	d.t.Logf("%d questions (%d checked against the program's or the runtime's own truth), %d tolerated differences "+
		"(known libompd faults; %d of them without truth, ours unchecked)", d.n, d.truths, tolerated, d.unchecked)
}

// ---- the walk --------------------------------------------------------------

// session holds both sides' address spaces of one fixture.
type session struct {
	d      *differ
	fx     *fixture
	tr     *fixtures.Truth
	as     *ompd.AddressSpace
	las    *libompd.AddressSpace
	thOff  uint64 // offset of kmp_base_info_t in kmp_info_t (libompd's thread handles point there)
	teamT  uint64 // offset of kmp_base_team_t in kmp_team_t (libompd's parallel handles point there)
	rel    []interface{ Release() error }
	region map[ompd.Parallel]*libompd.Parallel // regions whose threads and tasks were compared
}

func (s *session) keep(h interface{ Release() error }) { s.rel = append(s.rel, h) }

// libHandle is a handle of libompd's.
type libHandle interface {
	Addr() uint64
	Release() error
}

// handles is the pair of answers to a question whose answer is a handle:
// ours by the address of the runtime object it names (as libompd's handles
// point), libompd's by its handle's, kept for release.
func (s *session) handles(our uint64, oerr error, lib libHandle, lerr error) (answer, answer) {
	oa, la := ours("", oerr), theirs("", lerr)
	if oerr == nil {
		oa.val = hex(our)
	}
	if lerr == nil {
		la.val = hex(lib.Addr())
		s.keep(lib)
	}
	return oa, la
}

func diffFixture(t *testing.T, lib *libompd.Library, fx *fixture) {
	as, err := ompd.Open(fx.target)
	if err != nil {
		t.Fatalf("ompd.Open: %v", err)
	}
	defer as.Close()
	las, err := lib.ProcessInitialize(fx.target)
	if err != nil {
		t.Fatalf("libompd: %v", err)
	}
	s := &session{
		d:      &differ{t: t, fixture: fixtureKey(fx.stop.Name, fx.stop.Args...), used: map[*knownFault]int{}},
		fx:     fx,
		tr:     fx.stop.Truth,
		as:     as,
		las:    las,
		region: map[ompd.Parallel]*libompd.Parallel{},
	}
	defer func() {
		for i := len(s.rel) - 1; i >= 0; i-- {
			if err := s.rel[i].Release(); err != nil {
				t.Errorf("release: %v", err)
			}
		}
		if err := las.Release(); err != nil {
			t.Errorf("release address space: %v", err)
		}
	}()
	s.thOff = s.tableEntry("ompd_access__kmp_info_t__th")
	s.teamT = s.tableEntry("ompd_access__kmp_team_p__t")

	s.addressSpace()
	osThreads, err := fx.target.Threads()
	if err != nil {
		t.Fatal(err)
	}
	if len(osThreads) != len(s.tr.Threads) {
		t.Errorf("the core has %d threads, the truth %d", len(osThreads), len(s.tr.Threads))
	}
	for _, th := range osThreads {
		s.thread(th)
	}
	s.d.finish()
}

// tableEntry reads one of the runtime's OMPD layout table entries.
func (s *session) tableEntry(sym string) uint64 {
	addr, err := s.fx.target.LookupSymbol(sym)
	if err != nil {
		s.d.t.Fatalf("%s: %v", sym, err)
	}
	var b [8]byte
	if err := s.fx.target.ReadMemory(b[:], addr); err != nil {
		s.d.t.Fatalf("%s: %v", sym, err)
	}
	return s.fx.target.ByteOrder().Uint64(b[:])
}

// specStates are the thread states of OpenMP 5.1 (ompt_state_t), as
// ompd_enumerate_states should list them.
var specStates = "0x102:undefined 0x0:work_serial 0x1:work_parallel 0x2:work_reduction 0x10:wait_barrier " +
	"0x11:wait_barrier_implicit_parallel 0x12:wait_barrier_implicit_workshare 0x13:wait_barrier_implicit " +
	"0x14:wait_barrier_explicit 0x15:wait_barrier_implementation 0x16:wait_barrier_teams 0x20:wait_taskwait " +
	"0x21:wait_taskgroup 0x40:wait_mutex 0x41:wait_lock 0x42:wait_critical 0x43:wait_atomic 0x44:wait_ordered " +
	"0x80:wait_target 0x81:wait_target_map 0x82:wait_target_update 0x100:idle 0x101:overhead"

func (s *session) addressSpace() {
	d, where := s.d, "address space"

	ov, oerr := s.as.OpenMPVersion()
	lv, lerr := s.las.OMPVersion()
	d.check("as.omp-version", where, ours(strconv.Itoa(ov), oerr), theirs(strconv.FormatInt(lv, 10), lerr), nil)

	// The enumerations: same ids, names and scopes.
	var o, l []string
	for _, id := range libompdICVs() {
		o = append(o, fmt.Sprintf("%d:%s:%d", int(id), id.Name(), int(id.Scope())))
	}
	icvs, err := s.las.ICVs()
	for _, i := range icvs {
		l = append(l, fmt.Sprintf("%d:%s:%d", i.ID, i.Name, int(i.Scope)))
	}
	d.check("as.icvs", where, answer{val: strings.Join(o, " ")}, theirs(strings.Join(l, " "), err), nil)
	o, l = nil, nil
	for st := range ompd.States() {
		o = append(o, fmt.Sprintf("%#x:%v", int64(st), st))
	}
	states, err := s.las.States()
	for _, st := range states {
		l = append(l, fmt.Sprintf("%#x:%s", st.Value, strings.TrimPrefix(st.Name, "ompt_state_")))
	}
	var libStates []string // libompd 19's list: OpenMP 5.1's without the three it lacks
	for _, st := range strings.Fields(specStates) {
		if !strings.HasPrefix(st, "0x15:") && !strings.HasPrefix(st, "0x16:") && !strings.HasPrefix(st, "0x102:") {
			libStates = append(libStates, st)
		}
	}
	d.checkLib("as.states", where, answer{val: strings.Join(o, " ")}, theirs(strings.Join(l, " "), err),
		truthVal("the thread states of OpenMP 5.1", specStates), &answer{val: strings.Join(libStates, " ")})

	// The display control variables. Both read the runtime's
	// ompd_env_block, NAME=value lines; the runtime fills it
	// (__kmp_env_dump) before it reads the environment
	// (__kmp_env_initialize), so it holds defaults. Ours corrects the
	// values it can read from the runtime's globals; libompd passes the
	// block on. So: the block as read must agree, and the corrected lines
	// must agree with what the program ran with (its OMP_DISPLAY_ENV
	// output where it printed one, else its environment).
	var raw, shown []string
	vars, oerr := s.as.DisplayControlVars()
	for _, v := range vars {
		shown = append(shown, v.Raw)
		if v.Corrected && v.RuntimeRaw == "" {
			continue // added: the block leaves it out (OMP_WAIT_POLICY, KMP_LIBRARY)
		}
		if v.Corrected {
			raw = append(raw, v.RuntimeRaw)
		} else {
			raw = append(raw, v.Raw)
		}
	}
	lvars, lerr := s.las.DisplayControlVars()
	lib := theirs(strings.Join(lvars, "\n"), lerr)
	d.check("as.display-control-vars(block)", where, ours(strings.Join(raw, "\n"), oerr), lib, nil)
	d.checkLib("as.display-control-vars", where, ours(strings.Join(shown, "\n"), oerr), lib, s.displayTruth(vars),
		&answer{val: s.envBlock()})

	s.icvs(where, ompd.ScopeAddressSpace, s.as, s.las, s.addressSpaceTruth)
}

// envBlock reads the runtime's ompd_env_block (a pointer to
// ompd_env_block_size bytes of NAME=value lines) from the core directly:
// what libompd returns as is.
func (s *session) envBlock() string {
	t := s.fx.target
	read := func(addr uint64) uint64 {
		var b [8]byte
		if err := t.ReadMemory(b[:], addr); err != nil {
			s.d.t.Fatalf("reading %#x: %v", addr, err)
		}
		return t.ByteOrder().Uint64(b[:])
	}
	sym := func(name string) uint64 {
		a, err := t.LookupSymbol(name)
		if err != nil {
			s.d.t.Fatalf("%s: %v", name, err)
		}
		return a
	}
	block, size := read(sym("ompd_env_block")), read(sym("ompd_env_block_size"))
	buf := make([]byte, size)
	if err := t.ReadMemory(buf, block); err != nil {
		s.d.t.Fatalf("ompd_env_block: %v", err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(string(buf), "\x00"), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// displayTruth checks our display variables against what the runtime
// printed for omp_display_env(1) at the stop (every fixture records it):
// every printed variable must be there, exactly those of
// ompdtest.StaleDisplayVars may be marked stale, and every other one must
// agree.
func (s *session) displayTruth(vars []ompd.ControlVar) *truth {
	got := map[string]ompd.ControlVar{}
	for _, v := range vars {
		got[v.Name] = v
	}
	var bad []string
	checked := 0
	for name, printed := range ompdtest.DisplayLines(s.tr.Display) {
		v, ok := got[name]
		switch {
		case !ok:
			bad = append(bad, name+" missing")
		case !v.Stale:
			checked++
			if !ompdtest.DisplayValueMatches(name, printed, v.Value, s.tr) {
				bad = append(bad, fmt.Sprintf("%s=%s (printed: %s)", name, v.Value, printed))
			}
		}
	}
	// Exactly the pinned variables may be stale: one more would leave
	// its value unchecked.
	stale, want := ompdtest.StaleDisplayNames(vars)
	for _, n := range stale {
		if !slices.Contains(want, n) {
			bad = append(bad, n+" stale")
		}
	}
	for _, n := range want {
		if !slices.Contains(stale, n) {
			bad = append(bad, n+" not stale")
		}
	}
	slices.Sort(bad)
	return &truth{desc: fmt.Sprintf("the runtime's omp_display_env output (%d variables checked; wrong: %s)", checked, strings.Join(bad, ", ")),
		ok: func(answer) bool { return checked > 0 && len(bad) == 0 }}
}

// ---- ICVs ------------------------------------------------------------------

// icvClass is how libompd treats an ICV: "integer", "list" (integer, but
// the value may be a list: libompd says incomplete) or "string".
func icvClass(name string) string {
	switch name {
	case "nthreads-var", "bind-var":
		return "list"
	case "run-sched-var", "affinity-format-var", "tool-libraries-var", "tool-verbose-init-var":
		return "string"
	}
	return "integer"
}

type libICVScope interface {
	ICV(uint64) (int64, error)
	ICVString(uint64) (string, error)
}

// icvTruth gives the program's truth for an ICV's integer form (str
// false) or string form (str true), or nil.
type icvTruth func(name string, str bool) *truth

// icvs compares every ICV of one scope in both forms with libompd's
// answers. Only the program's truth (tr) checks ours: the string form of
// an integer ICV is its recorded value in decimal, a text ICV has no
// integer form (ompd_rc_incompatible), and an ICV the program recorded
// nothing about is not checked against either implementation.
func (s *session) icvs(where string, scope ompd.ScopeKind, o ompd.Scope, l libICVScope, tr icvTruth) {
	for _, id := range libompdICVs() {
		if id.Scope() != scope {
			continue
		}
		name, class := id.Name(), icvClass(id.Name())
		w := where + " " + name
		ov, oerr := o.ICV(id)
		lv, lerr := l.ICV(uint64(id))
		oi, li := ours(strconv.FormatInt(ov, 10), oerr), theirs(strconv.FormatInt(lv, 10), lerr)
		ostr, oerr := o.ICVString(id)
		lstr, lerr := l.ICVString(uint64(id))
		os, ls := ours(ostr, oerr), theirs(lstr, lerr)

		// Only the program's truth (and the OMPD specification's rule for
		// text ICVs) checks our answers: an ICV the program cannot query
		// goes unchecked here (the address-space ones are checked
		// against OMP_DISPLAY_ENV's output).
		question, intTr, strTr := icvQuestion(name, class, tr)
		s.d.check(question+".integer", w, oi, li, intTr)
		s.d.check(question+".string", w, os, ls, strTr)
	}
}

// icvQuestion returns the question for an ICV of the given class and the
// truth for its integer and string forms.
func icvQuestion(name, class string, tr icvTruth) (question string, intTr, strTr *truth) {
	intTr, strTr = tr(name, false), tr(name, true)
	switch class {
	case "integer":
		// The string form of an integer ICV is the number in decimal.
		if strTr == nil && intTr != nil && intTr.want != nil {
			strTr = truthIs(intTr.desc+", in decimal", *intTr.want)
		}
	case "string":
		if name != "run-sched-var" {
			intTr = truthIs("OMPD: a text ICV has no integer form (ompd_rc_incompatible)", answer{rc: "incompatible"})
		}
	}
	question = "icv(" + class + ")"
	if class == "list" || name == "run-sched-var" {
		question = "icv(" + name + ")"
	}
	return question, intTr, strTr
}

// ourICVs checks every ICV of one scope of ours, in both forms, against
// the program's truth alone: for a task libompd's chain skips, where
// libompd has no answer to compare.
func (s *session) ourICVs(where string, scope ompd.ScopeKind, o ompd.Scope, tr icvTruth) {
	for id := range ompd.AllICVs() {
		if id.Scope() != scope {
			continue
		}
		name := id.Name()
		w := where + " " + name
		ov, oerr := o.ICV(id)
		ostr, serr := o.ICVString(id)
		question, intTr, strTr := icvQuestion(name, icvClass(name), tr)
		s.d.oursOnly(question+".integer", w, ours(strconv.FormatInt(ov, 10), oerr), intTr)
		s.d.oursOnly(question+".string", w, ours(ostr, serr), strTr)
	}
}

// addressSpaceTruth: what the icvs fixture recorded with the omp API, and
// what every fixture's environment sets.
func (s *session) addressSpaceTruth(name string, str bool) *truth {
	var icv *fixtures.ICV
	for i := range s.tr.Threads {
		if s.tr.Threads[i].ICV != nil {
			icv = s.tr.Threads[i].ICV
			break
		}
	}
	// The string form of an integer ICV is the number in decimal.
	val := truthVal
	switch name {
	case "debug-var":
		if s.tr.Env["OMP_DEBUG"] == "enabled" {
			return val("OMP_DEBUG=enabled", "1")
		}
	}
	// What the runtime printed for omp_display_env at the stop.
	printed := ompdtest.DisplayLines(s.tr.Display)
	onOff := func(v string, on ...string) string {
		return boolVal(slices.ContainsFunc(on, func(o string) bool { return strings.EqualFold(o, v) }))
	}
	switch name {
	case "display-affinity-var":
		if v, ok := printed["OMP_DISPLAY_AFFINITY"]; ok {
			return val("OMP_DISPLAY_AFFINITY as printed: "+v, onOff(v, "TRUE"))
		}
	case "tool-var":
		if v, ok := printed["OMP_TOOL"]; ok {
			return val("OMP_TOOL as printed: "+v, onOff(v, "enabled"))
		}
	case "tool-libraries-var", "tool-verbose-init-var":
		env := map[string]string{"tool-libraries-var": "OMP_TOOL_LIBRARIES", "tool-verbose-init-var": "OMP_TOOL_VERBOSE_INIT"}[name]
		if v, ok := printed[env]; ok && str {
			// Printed as not defined: the runtime holds no string.
			want := v
			if v == "undefined" {
				want = ""
			}
			return val(env+" as printed: "+v, want)
		}
	}
	if icv == nil {
		return nil
	}
	switch name {
	case "stacksize-var":
		if icv.Stacksize >= 0 {
			return val("kmp_get_stacksize_s()", strconv.FormatInt(icv.Stacksize, 10))
		}
	case "num-procs-var", "ompd-num-procs-var":
		return val("omp_get_num_procs()", strconv.Itoa(icv.NumProcs))
	case "cancel-var":
		return val("omp_get_cancellation()", boolVal(icv.Cancellation))
	case "max-task-priority-var":
		return val("omp_get_max_task_priority()", strconv.Itoa(icv.MaxTaskPriority))
	case "affinity-format-var":
		if str {
			return val("omp_get_affinity_format()", icv.AffinityFormat)
		}
	}
	return nil
}

// ---- threads ---------------------------------------------------------------

func (s *session) thread(ot target.Thread) {
	d := s.d
	tt := s.tr.ThreadByTID(int(ot.ID))
	where := fmt.Sprintf("thread %d", ot.ID)
	if tt != nil {
		where += " (" + tt.Role + ")"
	}
	isOpenMP := &truth{desc: "the program recorded it as an OpenMP thread", ok: func(a answer) bool { return a.ok() == (tt != nil) }}

	oth, oerr := s.as.ThreadByOSThread(ompd.PthreadID, ot.Pointer)
	lth, lerr := s.las.ThreadHandle(libompd.PthreadID, ot.Pointer)
	oa, la := s.handles(oth.Addr()+s.thOff, oerr, lth, lerr)
	d.check("thread.handle(pthread)", where, oa, la, isOpenMP)

	olwp, oerr := s.as.ThreadByOSThread(ompd.LWPID, ot.ID)
	llwp, lerr := s.las.ThreadHandle(libompd.LWPID, ot.ID)
	oa, la = s.handles(olwp.Addr()+s.thOff, oerr, llwp, lerr)
	d.check("thread.handle(lwp)", where, oa, la, isOpenMP)
	if oth.AddressSpace() == nil || lth == nil {
		return
	}
	if olwp.AddressSpace() != nil && llwp != nil {
		c, err := lth.Compare(llwp)
		d.check("thread.handle-compare", where+" pthread vs lwp handle", answer{val: strconv.FormatBool(oth.Equal(olwp))},
			theirs(strconv.FormatBool(c == 0), err), truthVal("the same thread", "true"))
	}

	op, oerr := oth.OSThread(ompd.PthreadID)
	lp, lerr := lth.PthreadID()
	var tr *truth
	if tt != nil {
		tr = truthVal("pthread_self()", strings.ToLower(tt.Pthread))
	}
	d.check("thread.id(pthread)", where, ours(hex(op), oerr), theirs(hex(lp), lerr), tr)

	ost, owait, oerr := oth.State()
	lst, lwait, lerr := lth.State()
	d.check("thread.state", where, ours(hex(uint64(ost)), oerr), theirs(hex(uint64(lst)), lerr), stateTruth(tt))
	d.check("thread.wait-id", where, ours(hex(uint64(owait)), oerr), theirs(hex(lwait), lerr), s.waitTruth(tt))

	s.icvs(where, ompd.ScopeThread, oth, lth, s.threadTruth(tt))

	// The chains from the thread's innermost region and current task.
	s.parallelChain(where, tt, oth, lth)
	s.taskChain(where, tt, oth, lth)
}

// stateTruth maps the thread's role to the state it must be in.
func stateTruth(tt *fixtures.Thread) *truth {
	if tt == nil {
		return nil
	}
	var want []ompd.State
	switch tt.Role {
	case fixtures.RoleStopper, fixtures.RoleWorking:
		// In user code, inside a parallel region (all fixtures stop at
		// level 1 or deeper).
		want = []ompd.State{ompd.StateWorkParallel}
	case fixtures.RoleBarrier:
		want = []ompd.State{ompd.StateWaitBarrierExplicit}
	case fixtures.RoleWorkshareBarrier:
		want = []ompd.State{ompd.StateWaitBarrierImplicitWorkshare}
	case fixtures.RoleLock:
		want = []ompd.State{ompd.StateWaitLock}
	case fixtures.RoleCritical:
		// The runtime enters wait_critical, and its queuing lock (the
		// default lock kind) then overwrites the state with wait_lock
		// while it waits (kmp_lock.cpp).
		want = []ompd.State{ompd.StateWaitCritical, ompd.StateWaitLock}
	default:
		return nil
	}
	return &truth{desc: fmt.Sprintf("role %s: state %v", tt.Role, want), ok: func(a answer) bool {
		for _, w := range want {
			if a == (answer{val: hex(uint64(w))}) {
				return true
			}
		}
		return false
	}}
}

// waitTruth: a thread waiting for a lock waits for the program's
// omp_lock_t, which the runtime's wait id names either directly or (an
// indirect lock, such as the default queuing lock) through the runtime lock
// object the omp_lock_t indexes: the runtime's lock code sets the wait id
// to that object while it waits.
func (s *session) waitTruth(tt *fixtures.Thread) *truth {
	if tt == nil || tt.Role != fixtures.RoleLock {
		return nil
	}
	user, err := fixtures.ParseHex(tt.Lock)
	if err != nil {
		return nil
	}
	want := map[string]bool{hex(user): true}
	if l, ok := s.indirectLock(user); ok {
		want[hex(l)] = true
	}
	return &truth{desc: fmt.Sprintf("the omp_lock_t waited for, %s, or its runtime lock", tt.Lock), ok: func(a answer) bool {
		return a.ok() && want[a.val]
	}}
}

// indirectLock returns the runtime lock object of an indirect omp_lock_t
// (kmp_lock.h: the lock word holds index<<1, and __kmp_i_lock_table rows of
// KMP_I_LOCK_CHUNK kmp_indirect_lock_t hold the lock pointers).
func (s *session) indirectLock(user uint64) (uint64, bool) {
	t := s.fx.target
	ptr := uint64(t.Sizes().Pointer)
	read := func(addr, n uint64) (uint64, bool) {
		b := make([]byte, 8)
		if err := t.ReadMemory(b[:n], addr); err != nil {
			return 0, false
		}
		if n == 4 {
			return uint64(t.ByteOrder().Uint32(b)), true
		}
		return t.ByteOrder().Uint64(b), true
	}
	const chunk = 1024 // KMP_I_LOCK_CHUNK
	poll, ok := read(user, 4)
	if !ok || poll&1 != 0 {
		return 0, false // a direct lock
	}
	idx := poll >> 1
	tab, err := t.LookupSymbol("__kmp_i_lock_table")
	if err != nil {
		return 0, false
	}
	size, err := t.TypeSize("kmp_indirect_lock_t")
	if err != nil {
		return 0, false
	}
	rows, ok := read(tab, ptr) // kmp_indirect_lock_table_t.table
	if !ok {
		return 0, false
	}
	row, ok := read(rows+idx/chunk*ptr, ptr)
	if !ok || row == 0 {
		return 0, false
	}
	return read(row+idx%chunk*size, ptr) // kmp_indirect_lock_t.lock
}

func (s *session) threadTruth(tt *fixtures.Thread) icvTruth {
	return func(name string, str bool) *truth {
		if tt == nil {
			return nil
		}
		switch name {
		case "thread-num-var", "ompd-thread-num-var":
			return truthVal("omp_get_thread_num()", strconv.Itoa(tt.ThreadNum))
		case "nthreads-var":
			tr := listTruth("omp_get_max_threads()", strconv.Itoa(tt.MaxThreads), str, s.tr.Env["OMP_NUM_THREADS"], tt.Level)
			if !str {
				// libompd's fault: incomplete, with the right
				// first element.
				tr.lib = &answer{val: strconv.Itoa(tt.MaxThreads), rc: "incomplete"}
			}
			return tr
		}
		if tt.ICV == nil {
			return nil
		}
		switch name {
		case "dyn-var":
			return truthVal("omp_get_dynamic()", boolVal(tt.ICV.Dynamic))
		case "default-device-var":
			return truthVal("omp_get_default_device()", strconv.Itoa(tt.ICV.DefaultDevice))
		}
		return nil
	}
}

// listTruth is the truth for a list ICV (nthreads-var, bind-var) whose
// first element the program's API call answered (first) at the given
// level, the rest coming from the environment's list (env) for the levels
// below: its string form starts with first; its integer form is first, with
// ompd_rc_incomplete when the list has more elements.
func listTruth(api, first string, str bool, env string, level int) *truth {
	more := env != "" && level+1 < len(strings.Split(env, ","))
	if str {
		return &truth{desc: api + " first: " + first, ok: func(a answer) bool {
			f, rest, _ := strings.Cut(a.val, ",")
			return a.ok() && f == first && (rest != "") == more
		}}
	}
	if more {
		return truthIs(api+", the list going on (environment "+env+")", answer{val: first, rc: "incomplete"})
	}
	return truthVal(api, first)
}

// ---- parallel regions ------------------------------------------------------

// chainLimit bounds the chains followed.
const chainLimit = 64

func (s *session) parallelChain(where string, tt *fixtures.Thread, oth ompd.Thread, lth *libompd.Thread) {
	d := s.d
	var our []ompd.Parallel
	p, ourEnd := oth.CurrentParallel()
	for ; ourEnd == nil && len(our) < chainLimit; p, ourEnd = p.Enclosing() {
		our = append(our, p)
	}
	var lib []*libompd.Parallel
	q, libEnd := lth.CurrParallel()
	for ; libEnd == nil && len(lib) < chainLimit; q, libEnd = q.Enclosing() {
		s.keep(q)
		lib = append(lib, q)
	}

	// Align the chains on the team each region runs in: ours has one
	// region per level, libompd may skip some.
	j := 0
	for i, p := range our {
		level := -1
		if tt != nil && i <= tt.Level {
			level = tt.Level - i
		}
		w := fmt.Sprintf("%s region %d (%v)", where, i, p)
		if j < len(lib) && lib[j].Addr() == p.Addr()+s.teamT {
			s.parallel(w, tt, level, i == 0, p, lib[j])
			j++
			continue
		}
		var tr *truth
		if level >= 0 {
			// Every level's entry is the outlined function of its
			// depth (a serialized level enclosing another's from the
			// stack: its serial team's t_pkfn is the innermost's).
			want := fmt.Sprintf("level %d, %d threads, outlined depth %d", level, tt.Ancestors[level].TeamSize, level)
			tr = truthVal(fmt.Sprintf("omp_get_level() %d, omp_get_team_size(%d)", tt.Level, level), want)
		}
		d.check("parallel.chain", w, answer{val: s.regionFacts(p)}, answer{val: "absent"}, tr)
	}
	for ; j < len(lib); j++ {
		d.check("parallel.chain", fmt.Sprintf("%s libompd region %d (team %#x)", where, j, lib[j].Addr()),
			answer{val: "absent"}, answer{val: "present"}, nil)
	}
	var tr *truth
	if tt != nil {
		n := tt.Level + 1
		tr = &truth{desc: fmt.Sprintf("levels %d..0: %d regions, then none", tt.Level, n), ok: func(a answer) bool {
			return a.rc == "unavailable" && len(our) == n
		}}
	}
	d.check("parallel.enclosing(outermost)", where, ours("", ourEnd), theirs("", libEnd), tr)
}

// regionFacts sums up a region libompd's chain skips: its level, team
// size, and the nesting depth of its entry function (clang names the
// outlined function of a level-n region with n "omp_outlined" parts; level
// 0 runs none, depth 0).
func (s *session) regionFacts(p ompd.Parallel) string {
	l, err := p.Level()
	if err != nil {
		return "level: " + ourRC(err)
	}
	n, err := p.NumThreads()
	if err != nil {
		return "size: " + ourRC(err)
	}
	f, err := p.Function()
	if errors.Is(err, ompd.ErrUnavailable) {
		// The runtime keeps no entry function for the level: a nested
		// serialized level shares its team with the innermost one.
		return fmt.Sprintf("level %d, %d threads", l, n)
	}
	depth := -1 // no function, or not an outlined one
	if err == nil && strings.Contains(f.Symbol, "omp_outlined") {
		depth = strings.Count(f.Symbol, "omp_outlined")
	}
	return fmt.Sprintf("level %d, %d threads, outlined depth %d", l, n, depth)
}

// parallel compares one region. level is the region's nesting level as the
// program recorded it (-1 if unknown).
func (s *session) parallel(where string, tt *fixtures.Thread, level int, innermost bool, p ompd.Parallel, q *libompd.Parallel) {
	d := s.d
	s.icvs(where, ompd.ScopeParallel, p, q, func(name string, str bool) *truth {
		if level < 0 {
			return nil
		}
		switch name {
		case "levels-var":
			tr := truthVal("omp_get_level()", strconv.Itoa(level))
			if enclosingSerialized(tt, level) {
				// libompd reads the serial team's t_level, which
				// counts every serialized level nested in it.
				tr.lib = &answer{val: strconv.Itoa(innermostSerialized(tt, level))}
			}
			return tr
		case "active-levels-var":
			active := 0
			for _, a := range tt.Ancestors[1 : level+1] {
				if a.TeamSize > 1 {
					active++
				}
			}
			return truthVal("active regions among the ancestors", strconv.Itoa(active))
		case "team-size-var", "ompd-team-size-var":
			return truthVal("omp_get_team_size(level)", strconv.Itoa(tt.Ancestors[level].TeamSize))
		}
		return nil
	})

	// libompd has no ompd_get_parallel_function: the entry of a region
	// is the function of its implicit tasks.
	of, oerr := p.Function()
	lf, lerr := uint64(0), error(nil)
	if t0, err := q.TaskIn(0); err != nil {
		lerr = err
	} else {
		s.keep(t0)
		lf, lerr = t0.Function()
	}
	question, tr := "parallel.function", s.functionTruth(tt, level)
	if level > 0 && enclosingSerialized(tt, level) {
		// libompd reads the serial team's t_pkfn: the entry of the
		// innermost serialized level.
		if addr, err := s.outlinedEntry(innermostSerialized(tt, level)); err == nil {
			tr.lib = &answer{val: hex(addr)}
		} else {
			d.errorf("%s: %v", where, err)
		}
	}
	if l, err := p.Level(); err == nil && l == 0 {
		question = "task.function(level 0)"
	}
	d.check(question, where, ours(hex(of.Addr), oerr), theirs(hex(lf), lerr), tr)

	if innermost && tt != nil {
		th, err := p.Thread(tt.ThreadNum)
		me, _ := p.AddressSpace().ThreadByOSThread(ompd.LWPID, uint64(tt.TID))
		if err != nil || th != me {
			d.errorf("%s: thread %d of the region is %v (%v), not the thread itself (%v)", where, tt.ThreadNum, th, err, me)
		}
	}
	if _, done := s.region[p]; done {
		return
	}
	s.region[p] = q
	n, err := p.NumThreads()
	if err != nil {
		return // compared above
	}
	for i := 0; i <= n; i++ { // one past the end too: both must refuse it
		w := fmt.Sprintf("%s thread %d", where, i)
		ot, oerr := p.Thread(i)
		lt, lerr := q.ThreadIn(i)
		oa, la := s.handles(ot.Addr()+s.thOff, oerr, lt, lerr)
		d.check("parallel.thread", w, oa, la, nil)
		ok, oerr := p.ImplicitTask(i)
		lk, lerr := q.TaskIn(i)
		oa, la = s.handles(ok.Addr(), oerr, lk, lerr)
		d.check("parallel.implicit-task", w, oa, la, nil)
	}
}

// functionTruth checks the entry function of the region (or implicit task)
// at the given level: clang names the outlined function of a region at
// level n with n "omp_outlined" parts (main.omp_outlined_debug__.omp_outlined
// at level 2); the initial task at level 0 runs none.
//
// A serialized level with another serialized level inside it in the thread
// shares its serial team with that one, and the runtime keeps the entry
// function of the innermost level only (t_pkfn): ompd-go finds the
// enclosing ones' on the thread's stack.
func (s *session) functionTruth(tt *fixtures.Thread, level int) *truth {
	switch {
	case level == 0:
		return truthIs("level 0 runs main, not an outlined function", answer{rc: "unavailable"})
	case level > 0:
		// A region opened with if(0) (clang serializes it itself, the
		// runtime never learns its function) may also say unavailable.
		ifFalse := slices.Contains(s.tr.IfFalseLevels, level)
		return &truth{desc: fmt.Sprintf("an outlined function of nesting depth %d", level), ok: func(a answer) bool {
			if ifFalse && a == (answer{rc: "unavailable"}) {
				return true
			}
			addr, err := strconv.ParseUint(strings.TrimPrefix(a.val, "0x"), 16, 64)
			if !a.ok() || err != nil {
				return false
			}
			sym, ok := s.fx.target.SymbolAt(addr)
			return ok && strings.Count(sym, "omp_outlined") == level
		}}
	}
	return nil
}

// enclosingSerialized tells whether, in the thread tt, the region at level
// is serialized and so is the one at level+1 inside it (omp_get_team_size
// 1 at both).
func enclosingSerialized(tt *fixtures.Thread, level int) bool {
	return tt != nil && level >= 0 && level < tt.Level && level+1 < len(tt.Ancestors) &&
		tt.Ancestors[level].TeamSize == 1 && tt.Ancestors[level+1].TeamSize == 1
}

// innermostSerialized is the level of the innermost of the serialized
// levels in a row, in the thread tt, from level inwards: they share one
// serial team, whose t_level and t_pkfn are that level's.
func innermostSerialized(tt *fixtures.Thread, level int) int {
	for enclosingSerialized(tt, level) {
		level++
	}
	return level
}

// outlinedEntry is the address of the outlined function clang makes for a
// region of main at nesting depth n, the one the runtime calls (and keeps
// in t_pkfn): main.omp_outlined at depth 1, its body
// main.omp_outlined_debug__ calling main.omp_outlined_debug__.omp_outlined
// at depth 2, and so on.
func (s *session) outlinedEntry(depth int) (uint64, error) {
	name := "main" + strings.Repeat(".omp_outlined_debug__", depth-1) + ".omp_outlined"
	addr, err := s.fx.target.LookupSymbol(name)
	if err != nil {
		return 0, fmt.Errorf("the outlined function of depth %d: %w", depth, err)
	}
	return addr, nil
}

// ---- tasks -----------------------------------------------------------------

// taskInfo is what the program recorded about one task of a thread's
// chain, as far as it recorded it.
type taskInfo struct {
	label    string         // tasks fixture: the task's label
	rec      *fixtures.Task // tasks fixture: its record
	level    int            // implicit tasks: the level of their region (-1 if unknown)
	explicit bool           // known to be an explicit task
	current  bool           // the thread's current task
	thread   *fixtures.Thread
	index    int // in the thread's chain (and in its OMPT record)
}

// chainTruth lists what the program recorded about the tasks of the
// thread's chain, current task first: the explicit tasks (tasks fixture,
// by their labels), then one implicit task per level from the thread's
// level to 0.
func (s *session) chainTruth(tt *fixtures.Thread) []taskInfo {
	if tt == nil {
		return nil
	}
	var out []taskInfo
	label := tt.Task
	for label != "" {
		rec := s.tr.Task(label)
		if rec == nil || rec.Kind != "explicit" {
			break
		}
		out = append(out, taskInfo{label: label, rec: rec, level: -1, explicit: true, thread: tt})
		label = rec.Parent
	}
	for l := tt.Level; l >= 0; l-- {
		ti := taskInfo{level: l, thread: tt}
		if l == tt.Level && label != "" {
			ti.label, ti.rec = label, s.tr.Task(label)
		}
		out = append(out, ti)
	}
	out[0].current = true
	for i := range out {
		out[i].index = i
	}
	return out
}

func (s *session) taskChain(where string, tt *fixtures.Thread, oth ompd.Thread, lth *libompd.Thread) {
	d := s.d
	var our []ompd.Task
	k, ourEnd := oth.CurrentTask()
	for ; ourEnd == nil && len(our) < chainLimit; k, ourEnd = k.Generating() {
		our = append(our, k)
	}
	var lib []*libompd.Task
	lk, libEnd := lth.CurrTask()
	for ; libEnd == nil && len(lib) < chainLimit; lk, libEnd = lk.Generating() {
		s.keep(lk)
		lib = append(lib, lk)
	}
	infos := s.chainTruth(tt)

	j := 0
	for i, k := range our {
		var info *taskInfo
		if i < len(infos) {
			info = &infos[i]
		}
		w := fmt.Sprintf("%s task %d (%v)", where, i, k)
		if j < len(lib) && lib[j].Addr() == k.Addr() {
			var next *ompd.Task
			if i+1 < len(our) {
				next = &our[i+1]
			}
			s.task(w, info, k, next, lib[j])
			j++
			continue
		}
		var tr *truth
		if info != nil {
			if ex, en, ok := info.thread.FrameTruth(info.index); ok && en.SavedFrameOf == 0 {
				want := fmt.Sprintf("exit %#x/%#x enter %#x/%#x", ex.Addr, ex.Flags, en.Addr, en.Flags)
				if !info.explicit && info.level >= 0 {
					// An implicit task: its region's level, and its
					// entry function as functionTruth says.
					fn := fmt.Sprintf("outlined depth %d", info.level)
					if info.level == 0 {
						fn = "no function"
					}
					want = fmt.Sprintf("level %d, %s, %s", info.level, fn, want)
				}
				tr = truthVal("the task OMPT recorded at this place of the chain, at the program's level", want)
			}
			// Its ICVs, against what the program recorded in it.
			s.ourICVs(w, ompd.ScopeTask, k, s.taskTruth(info))
		}
		facts := taskFacts(k)
		if info != nil && !info.explicit && info.level >= 0 {
			facts = implicitTaskFacts(k) + ", " + facts
		}
		d.check("task.chain", w, answer{val: facts}, answer{val: "absent"}, tr)
	}
	for ; j < len(lib); j++ {
		d.check("task.chain", fmt.Sprintf("%s libompd task %d (%#x)", where, j, lib[j].Addr()),
			answer{val: "absent"}, answer{val: "present"}, nil)
	}
	var tr *truth
	if tt != nil {
		n := len(infos)
		tr = &truth{desc: fmt.Sprintf("%d tasks down to the initial task, then none", n), ok: func(a answer) bool {
			return a.rc == "unavailable" && len(our) == n
		}}
	}
	d.check("task.generating(outermost)", where, ours("", ourEnd), theirs("", libEnd), tr)
	if len(our) > 0 && len(lib) > 0 {
		s.schedulingChain(where, our, infos, lib[0])
		s.currentRegion(where, oth, lth, our[0], lib[0])
	}
}

// schedulingChain follows the scheduling tasks from the current task in
// both, as long as they agree.
func (s *session) schedulingChain(where string, our []ompd.Task, infos []taskInfo, lk *libompd.Task) {
	at := map[ompd.Task]int{}
	for i, k := range our {
		if _, dup := at[k]; !dup {
			at[k] = i
		}
	}
	k := our[0]
	for step := 0; step < chainLimit; step++ {
		var info *taskInfo
		var next *ompd.Task
		if i, ok := at[k]; ok {
			if i < len(infos) {
				info = &infos[i]
			}
			if i+1 < len(our) {
				next = &our[i+1]
			}
		}
		kind, _ := k.Kind()
		implicit := kind.Has(ompd.TaskImplicit)
		os, oerr := k.Scheduling()
		ls, lerr := lk.Scheduling()
		oa, la := s.handles(os.Addr(), oerr, ls, lerr)
		question := "task.scheduling-chain"
		if implicit {
			question = "task.scheduling-chain(implicit)"
		}
		s.d.check(question, fmt.Sprintf("%s scheduling step %d (%v)", where, step, k), oa, la, s.schedulingTruth(info, implicit, next))
		if oa != la || !oa.ok() {
			return
		}
		k, lk = os, ls
	}
}

// currentRegion compares handles that must name the thread's innermost
// region: its current parallel region and its current task's region.
func (s *session) currentRegion(where string, oth ompd.Thread, lth *libompd.Thread, ok ompd.Task, lk *libompd.Task) {
	op, oerr := oth.CurrentParallel()
	lp, lerr := lth.CurrParallel()
	otp, oerr2 := ok.Parallel()
	ltp, lerr2 := lk.Parallel()
	if oerr != nil || lerr != nil || oerr2 != nil || lerr2 != nil {
		return // compared elsewhere
	}
	s.keep(lp)
	s.keep(ltp)
	c, err := lp.Compare(ltp)
	s.d.check("parallel.handle-compare", where+" current region vs current task's region",
		answer{val: strconv.FormatBool(op.Equal(otp))}, theirs(strconv.FormatBool(c == 0), err),
		truthVal("the current task runs in the innermost region", "true"))

	// An implicit current task is the region's implicit task of the
	// thread's number.
	kind, err := ok.Kind()
	n, err2 := oth.Num()
	if err != nil || err2 != nil || !kind.Has(ompd.TaskImplicit) {
		return
	}
	oi, oerr := op.ImplicitTask(n)
	li, lerr := lp.TaskIn(n)
	if oerr != nil || lerr != nil {
		return // compared with the region
	}
	s.keep(li)
	c, err = lk.Compare(li)
	s.d.check("task.handle-compare", fmt.Sprintf("%s current task vs implicit task %d of the current region", where, n),
		answer{val: strconv.FormatBool(ok.Equal(oi))}, theirs(strconv.FormatBool(c == 0), err),
		truthVal("the thread runs its implicit task", "true"))
}

// task compares one task. next is our next task of the chain (its
// generating task), or nil.
func (s *session) task(where string, info *taskInfo, k ompd.Task, next *ompd.Task, lk *libompd.Task) {
	d := s.d
	kind, _ := k.Kind()
	implicit := kind.Has(ompd.TaskImplicit)
	level := -1
	if info != nil && !info.explicit {
		level = info.level
	}

	// Entry function.
	of, oerr := k.Function()
	lf, lerr := lk.Function()
	question := "task.function"
	switch {
	case implicit && kind.Has(ompd.TaskInitial):
		question = "task.function(level 0)"
	case implicit && lk.LWT() != 0:
		question = "task.function(serialized)"
	}
	var tr *truth
	if implicit && info != nil {
		tr = s.functionTruth(info.thread, level)
	}
	d.check(question, where, ours(hex(of.Addr), oerr), theirs(hex(lf), lerr), tr)

	// Frames.
	ofr, oerr := k.Frames()
	lexit, lenter, lerr := lk.Frame()
	exitTr, enterTr, exitFl, enterFl := s.frameTruth(info)
	// libompd's frames of a nested serialized level are those of the
	// level above: OMPT's record of the next task of the chain.
	var libExit, libEnter *answer
	if info != nil {
		if ex, en, ok := info.thread.FrameTruth(info.index + 1); ok {
			libExit, libEnter = &answer{val: hex(ex.Addr)}, &answer{val: hex(en.Addr)}
		}
	}
	d.checkLib("task.frame.exit", where, ours(hex(ofr.Exit.Addr), oerr), theirs(hex(lexit.Addr), lerr), exitTr, libExit)
	d.checkLib("task.frame.enter", where, ours(hex(ofr.Enter.Addr), oerr), theirs(hex(lenter.Addr), lerr), enterTr, libEnter)
	d.check("task.frame.exit-flags", where, ours(hex(uint64(ofr.Exit.Flags)), oerr), theirs(hex(uint64(lexit.Flags)), lerr), exitFl)
	d.check("task.frame.enter-flags", where, ours(hex(uint64(ofr.Enter.Flags)), oerr), theirs(hex(uint64(lenter.Flags)), lerr), enterFl)

	// Scheduling task.
	os, oerr := k.Scheduling()
	ls, lerr := lk.Scheduling()
	oa, la := s.handles(os.Addr(), oerr, ls, lerr)
	question = "task.scheduling"
	if implicit {
		question = "task.scheduling(implicit)"
	}
	d.check(question, where, oa, la, s.schedulingTruth(info, implicit, next))

	// The task's region.
	op, oerr := k.Parallel()
	lp, lerr := lk.Parallel()
	oa, la = s.handles(op.Addr()+s.teamT, oerr, lp, lerr)
	d.check("task.parallel", where, oa, la, nil)

	s.icvs(where, ompd.ScopeTask, k, lk, s.taskTruth(info))
}

// frameTruth: the task's frames and their flags as the runtime itself
// answered through OMPT when the thread recorded its truth
// (fixtures.Thread.FrameTruth), exactly.
func (s *session) frameTruth(info *taskInfo) (exit, enter, exitFlags, enterFlags *truth) {
	if info == nil {
		return nil, nil, nil, nil
	}
	ex, en, ok := info.thread.FrameTruth(info.index)
	if !ok {
		return nil, nil, nil, nil
	}
	addr := func(what string, f fixtures.FrameTruth) *truth {
		if f.SavedFrameOf == 0 {
			return truthVal("OMPT's "+what+" frame", hex(f.Addr))
		}
		return &truth{desc: fmt.Sprintf("the frame at which __kmpc_barrier saved the program's frame pointer %#x", f.SavedFrameOf),
			ok: func(a answer) bool {
				v, err := strconv.ParseUint(strings.TrimPrefix(a.val, "0x"), 16, 64)
				return a.ok() && err == nil && ompdtest.CheckFrame(s.fx.target, ompd.FrameInfo{Addr: v, Flags: ompd.FrameFlags(f.Flags)}, f) == nil
			}}
	}
	flags := func(what string, f fixtures.FrameTruth) *truth {
		return truthVal("OMPT's "+what+" frame flags", hex(uint64(f.Flags)))
	}
	return addr("exit", ex), addr("enter", en), flags("exit", ex), flags("enter", en)
}

// implicitTaskFacts sums up an implicit task libompd's chain skips: the
// level of its region and the nesting depth of its entry function (or
// "no function" where ours has none).
func implicitTaskFacts(k ompd.Task) string {
	p, err := k.Parallel()
	if err != nil {
		return "region: " + ourRC(err)
	}
	l, err := p.Level()
	if err != nil {
		return "level: " + ourRC(err)
	}
	f, err := k.Function()
	switch {
	case errors.Is(err, ompd.ErrUnavailable):
		return fmt.Sprintf("level %d, no function", l)
	case err != nil:
		return fmt.Sprintf("level %d, function: %s", l, ourRC(err))
	}
	depth := -1 // not an outlined function
	if strings.Contains(f.Symbol, "omp_outlined") {
		depth = strings.Count(f.Symbol, "omp_outlined")
	}
	return fmt.Sprintf("level %d, outlined depth %d", l, depth)
}

// taskFacts sums up a task libompd's chain skips: its frames with their
// flags, and the nesting depth of its entry function.
func taskFacts(k ompd.Task) string {
	fr, err := k.Frames()
	if err != nil {
		return "frames: " + ourRC(err)
	}
	return fmt.Sprintf("exit %#x/%#x enter %#x/%#x", fr.Exit.Addr, uint32(fr.Exit.Flags), fr.Enter.Addr, uint32(fr.Enter.Flags))
}

// schedulingTruth: a primary thread's implicit task (thread 0 of its team:
// the serialized levels' too) interrupted the task that encountered the
// region, its generating task; a worker's implicit task and the initial
// task interrupted none. The tasks fixture's explicit tasks ran undeferred
// or in their parent's taskwait: their scheduling task is their
// generating task.
func (s *session) schedulingTruth(info *taskInfo, implicit bool, next *ompd.Task) *truth {
	if info == nil {
		return nil
	}
	// The task it interrupted is the next task of OMPT's chain (which
	// follows scheduling parents): our task whose frames are the ones
	// OMPT recorded there.
	gen := answer{rc: "unavailable"}
	if ex, en, ok := info.thread.FrameTruth(info.index + 1); ok {
		gen = answer{val: "no task with the frames OMPT recorded next"}
		if next != nil {
			if fr, err := next.Frames(); err == nil &&
				ompdtest.CheckFrame(s.fx.target, fr.Exit, ex) == nil && ompdtest.CheckFrame(s.fx.target, fr.Enter, en) == nil {
				gen = answer{val: hex(next.Addr())}
			}
		}
	}
	if implicit {
		if info.level < 0 {
			return nil
		}
		if info.level == 0 {
			return truthIs("the initial task interrupted nothing", answer{rc: "unavailable"})
		}
		if info.thread.Ancestors[info.level].ThreadNum != 0 {
			return truthIs(fmt.Sprintf("thread %d of its team at level %d: a worker",
				info.thread.Ancestors[info.level].ThreadNum, info.level), answer{rc: "unavailable"})
		}
		return truthIs(fmt.Sprintf("thread 0 of its team at level %d interrupted its encountering task", info.level), gen)
	}
	if info.rec != nil {
		parent := s.tr.Task(info.rec.Parent)
		if info.rec.Undeferred || (parent != nil && parent.InTaskwait) {
			return truthIs(fmt.Sprintf("%s ran undeferred or in %s's taskwait", info.label, info.rec.Parent), gen)
		}
	}
	return nil
}

func (s *session) taskTruth(info *taskInfo) icvTruth {
	return func(name string, str bool) *truth {
		if info == nil {
			return nil
		}
		switch name {
		case "final-task-var", "ompd-final-var", "ompd-final-task-var":
			switch {
			case info.rec != nil:
				return truthVal("omp_in_final() in the task", boolVal(info.rec.InFinal))
			case info.current:
				return truthVal("omp_in_final()", boolVal(info.thread.InFinal))
			case !info.explicit && info.level >= 0:
				if icv := s.tr.TaskICV(info.thread, info.level); icv != nil {
					return truthVal(fmt.Sprintf("omp_in_final() in the implicit task at level %d", info.level), boolVal(icv.InFinal))
				}
			}
		case "implicit-task-var", "ompd-implicit-var", "ompd-implicit-task-var":
			if info.rec != nil {
				return truthVal("the task's kind", boolVal(info.rec.Kind == "implicit"))
			}
			if !info.explicit && s.tr.Fixture != fixtures.Tasks {
				return truthVal("the fixture creates no explicit task", "1")
			}
			if !info.explicit && info.level >= 0 {
				return truthVal(fmt.Sprintf("the implicit task of the thread's level %d", info.level), "1")
			}
		}
		// What the omp API answered in the task: the thread's record for
		// its current task, the task's own (tasks fixture), or the record
		// of the thread that forked the next level for an enclosing
		// implicit task.
		var icv *fixtures.ICV
		switch {
		case info.current:
			icv = info.thread.ICV
		case info.rec != nil:
			icv = info.rec.ICV
		case !info.explicit && info.level >= 0:
			icv = s.tr.TaskICV(info.thread, info.level)
		}
		if icv == nil {
			return nil
		}
		switch name {
		case "thread-limit-var":
			return truthVal("omp_get_thread_limit()", strconv.Itoa(icv.ThreadLimit))
		case "max-active-levels-var":
			return truthVal("omp_get_max_active_levels()", strconv.Itoa(icv.MaxActiveLevels))
		case "bind-var":
			level := info.level
			if level < 0 {
				level = info.thread.Level
			}
			return listTruth("omp_get_proc_bind()", strconv.Itoa(icv.ProcBindKind), str, s.tr.Env["OMP_PROC_BIND"], level)
		case "run-sched-var":
			if !str {
				return truthVal("omp_get_schedule() kind", strconv.Itoa(icv.ScheduleKind))
			}
			want := fmt.Sprintf("%s,%d", icv.Schedule, icv.ScheduleChunk)
			return &truth{desc: "omp_get_schedule(): " + want, ok: func(a answer) bool {
				v := a.val
				if icv.ScheduleMonotonic {
					var ok bool
					if v, ok = strings.CutPrefix(v, "monotonic:"); !ok {
						return false
					}
				}
				return a.ok() && strings.TrimPrefix(v, "nonmonotonic:") == want
			}}
		}
		return nil
	}
}

// libompdICVs are the ICVs libompd 19 knows: ids 1 to 30 (ours add OpenMP
// 5.1's teams ICVs after them, checked against the teams fixture's truth
// in package ompd's TestTeamsICVs).
func libompdICVs() []ompd.ICV {
	var out []ompd.ICV
	for id := range ompd.AllICVs() {
		if id <= ompd.ICVOMPDTeamSizeVar {
			out = append(out, id)
		}
	}
	return out
}
