package ompd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ompd-go/ompd"
	"github.com/ompd-go/ompd/internal/fixtures"
	"github.com/ompd-go/ompd/target/core"
)

// TestGompThroughAPI reads gcc programs on libgomp through the public API,
// as the README's first example does: on the debug builds (DWARF) and on
// the system's libgomp1 (no debug information: the known-layout table).
// internal/gomp's own tests check every answer in depth.
func TestGompThroughAPI(t *testing.T) {
	runtimes := map[string]func(testing.TB) fixtures.RuntimeInfo{
		"system": func(t testing.TB) fixtures.RuntimeInfo { return fixtures.SystemGomp(t) },
	}
	for _, v := range fixtures.GompVersions {
		runtimes["debug-"+v] = func(t testing.TB) fixtures.RuntimeInfo { return fixtures.GompRuntime(t, v) }
	}
	for rname, info := range runtimes {
		for _, name := range fixtures.GompNames() {
			t.Run(rname+"/"+name, func(t *testing.T) {
				stop := fixtures.CoreWith(t, info(t), name)
				as := openStop(t, stop, core.WithDebugDirs())
				want := ompd.LayoutDWARF
				if rname == "system" {
					want = ompd.LayoutKnownTable
				}
				checkGompAPI(t, as, stop.Truth, want)
			})
		}
	}
}

// checkGompAPI checks, through the public API, what a libgomp program's
// stop shows against its truth: the runtime and where its layout came
// from, each thread's number, region nest and team sizes, its task's final
// flag, idle pool threads as idle (inferred) in no region; and that a
// snapshot has every thread and lists libgomp's missing breakpoints as
// unsupported, not as errors. internal/gomp's tests check every answer in
// depth.
func checkGompAPI(t *testing.T, as *ompd.AddressSpace, truth *fixtures.Truth, layout ompd.LayoutSource) {
	t.Helper()
	rt := as.Runtime()
	assert.Equal(t, "GNU libgomp", rt.Name)
	assert.Equal(t, layout, rt.Layout)
	threads, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	require.Len(t, threads, len(truth.Threads))
	for _, th := range threads {
		lwp, err := th.OSThread(ompd.LWPID)
		require.NoError(t, err)
		want := truth.ThreadByTID(int(lwp))
		require.NotNil(t, want, "thread %d", lwp)
		if want.Role == fixtures.RoleIdle {
			state, _, err := th.State()
			require.NoError(t, err)
			assert.Equal(t, ompd.StateIdle, state)
			inferred, err := th.StateInferred()
			require.NoError(t, err)
			assert.True(t, inferred)
			_, err = th.CurrentParallel()
			assert.ErrorIs(t, err, ompd.ErrUnavailable)
			continue
		}
		n, err := th.Num()
		require.NoError(t, err)
		assert.Equal(t, want.ThreadNum, n)
		in, err := th.InParallel()
		require.NoError(t, err)
		assert.Equal(t, want.InParallel, in)
		level := want.Level
		p, err := th.CurrentParallel()
		for ; err == nil; p, err = p.Enclosing() {
			l, err := p.Level()
			require.NoError(t, err)
			assert.Equal(t, level, l)
			size, err := p.NumThreads()
			require.NoError(t, err)
			assert.Equal(t, want.Ancestors[l].TeamSize, size, "team size at level %d", l)
			level--
		}
		assert.ErrorIs(t, err, ompd.ErrUnavailable)
		assert.Equal(t, -1, level, "every level down to 0")
		task, err := th.CurrentTask()
		require.NoError(t, err)
		final, err := task.InFinal()
		require.NoError(t, err)
		assert.Equal(t, want.InFinal, final)
	}
	snap, err := as.Snapshot(context.Background())
	require.NoError(t, err)
	require.Len(t, snap.Threads, len(truth.Threads))
	// libgomp has no breakpoints: unsupported, not an error.
	assert.Equal(t, []string{"breakpoints: gomp: libgomp has no OMPD breakpoint functions: ompd: unsupported"}, snap.Unsupported)
	for _, e := range snap.Errors {
		assert.NotContains(t, e, "breakpoints")
	}
	js, err := json.Marshal(snap)
	require.NoError(t, err)
	if len(truth.Tasks) > 0 {
		checkGompTaskKinds(t, as, truth)
	}
	assert.Contains(t, string(js), `"unsupported":["breakpoints: `)
}

// checkGompTaskKinds follows every current task of the tasks fixture up
// its generating chain and compares each task's Kind with what the program
// says of it: explicit or implicit; final for the task created with
// final(1) and for the task included in it (omp_in_final() true in both),
// for no other; included for the undeferred ones (if(0), and the task
// created inside the final one). Its final bit is read from the task's
// final_task flag, its included bit from its kind (GOMP_TASK_UNDEFERRED).
//
// Planted (not committed), each caught here on every libgomp setup of
// TestGompThroughAPI/*/tasks, the truth being the program's final(1) and
// if(0) clauses and its omp_in_final() answers: internal/gomp/regions.go
// setting the mergeable bit (0x40000000) instead of flagFinal for a task
// in a final one ("task final final", "task included final"), and
// flagUndeferred set for kind GOMP_TASK_TIED instead of
// GOMP_TASK_UNDEFERRED ("included" fails for every explicit task).
func checkGompTaskKinds(t *testing.T, as *ompd.AddressSpace, truth *fixtures.Truth) {
	t.Helper()
	checked := 0
	for _, cur := range truth.Tasks {
		if !cur.Current {
			continue
		}
		th, err := as.ThreadByOSThread(ompd.LWPID, uint64(cur.TID))
		require.NoError(t, err)
		task, err := th.CurrentTask()
		require.NoError(t, err)
		for want := &cur; want != nil; {
			kind, err := task.Kind()
			require.NoError(t, err, "task %s", want.Label)
			assert.Equal(t, want.Kind == "explicit", kind.Has(ompd.TaskExplicit), "task %s: %v", want.Label, kind)
			assert.Equal(t, want.Kind == "implicit", kind.Has(ompd.TaskImplicit), "task %s: %v", want.Label, kind)
			assert.Equal(t, want.InFinal, kind.Has(ompd.TaskFinal), "task %s final: %v", want.Label, kind)
			if want.Final {
				assert.True(t, kind.Has(ompd.TaskFinal), "task %s has final(1): %v", want.Label, kind)
			}
			assert.Equal(t, want.Undeferred, kind.Has(ompd.TaskIncluded), "task %s included: %v", want.Label, kind)
			assert.False(t, kind.Has(ompd.TaskUntied), "task %s: libgomp runs untied tasks tied: %v", want.Label, kind)
			checked++
			if want.Parent == "" {
				break
			}
			want = truth.Task(want.Parent)
			require.NotNil(t, want)
			task, err = task.Generating()
			require.NoError(t, err)
		}
	}
	assert.GreaterOrEqual(t, checked, len(truth.Tasks), "every task of the program checked")
}

// TestGCCProgramOnLLVM: a gcc-compiled program on LLVM's runtime (which
// serves GCC's ABI) shows the user's outlined functions (main._omp_fn.N)
// for its regions and implicit tasks, not the runtime's wrapper.
func TestGCCProgramOnLLVM(t *testing.T) {
	stop := fixtures.CoreWith(t, fixtures.GCCOnLLVM(t), fixtures.Nested)
	as := openStop(t, stop)
	assert.Equal(t, "LLVM libomp", as.Runtime().Name)
	threads, err := ompd.Collect(as.Threads())
	require.NoError(t, err)
	require.Len(t, threads, len(stop.Truth.Threads))
	for _, th := range threads {
		p, err := th.CurrentParallel()
		require.NoError(t, err)
		var names []string
		for ; err == nil; p, err = p.Enclosing() {
			if l, _ := p.Level(); l == 0 {
				break
			}
			fn, err := p.Function()
			require.NoError(t, err)
			assert.Contains(t, fn.Symbol, "main._omp_fn.", "not the runtime's wrapper")
			names = append(names, fn.Symbol)
		}
		require.Len(t, names, 2)
		assert.NotEqual(t, names[0], names[1], "each level has its own outlined function")
		task, err := th.CurrentTask()
		require.NoError(t, err)
		fn, err := task.Function()
		require.NoError(t, err)
		assert.Equal(t, names[0], fn.Symbol, "the implicit task runs its region's function")
	}
}

// TestBothRuntimesLoaded: a program that loads LLVM's and GCC's runtimes
// is read through the one its threads use, and the other is named.
func TestBothRuntimesLoaded(t *testing.T) {
	gomp, llvm := fixtures.GompRuntime(t, fixtures.GompVersions[0]), fixtures.Runtime(t)
	for _, c := range []struct {
		info        fixtures.RuntimeInfo
		used, other string
	}{
		{fixtures.BothRuntimes(gomp, llvm), "GNU libgomp", "LLVM libomp"},
		{fixtures.BothRuntimes(llvm, gomp), "LLVM libomp", "GNU libgomp"},
	} {
		t.Run(c.used, func(t *testing.T) {
			stop := fixtures.CoreWith(t, c.info, fixtures.Nested)
			cr, err := core.Open(context.Background(), stop.Exe, stop.Core)
			require.NoError(t, err)
			defer cr.Close()
			as, err := ompd.Open(cr)
			require.NoError(t, err)
			defer as.Close()
			rt := as.Runtime()
			assert.Equal(t, c.used, rt.Name)
			require.Len(t, rt.AlsoLoaded, 1)
			assert.Contains(t, rt.AlsoLoaded[0], c.other)
			threads, err := ompd.Collect(as.Threads())
			require.NoError(t, err)
			assert.Len(t, threads, len(stop.Truth.Threads))
		})
	}
}

// gompRuntimes are the libgomp builds the public-API tests run on: the
// debug builds (DWARF: every global readable) and the system's libgomp1
// (no debug information: hidden globals unreadable).
func gompRuntimes() map[string]func(testing.TB) fixtures.RuntimeInfo {
	m := map[string]func(testing.TB) fixtures.RuntimeInfo{
		"system": func(t testing.TB) fixtures.RuntimeInfo { return fixtures.SystemGomp(t) },
	}
	for _, v := range fixtures.GompVersions {
		m["debug-"+v] = func(t testing.TB) fixtures.RuntimeInfo { return fixtures.GompRuntime(t, v) }
	}
	return m
}

// TestGompListAndTextICVs reads the icvs fixture (OMP_NUM_THREADS=3,2,1,
// OMP_PROC_BIND=spread,close, an OMP_AFFINITY_FORMAT) through the public
// API and compares the text ICVs and the lists with the program's truth:
// the affinity format as text; nthreads-var of every thread and bind-var of
// every task of its chain (level 2 down to 0), each the task's own value
// followed by the environment's list from the next level on. Without
// libgomp's debug file the lists' rest cannot be read: the first element
// comes with ErrIncomplete, never as if it were the whole list.
func TestGompListAndTextICVs(t *testing.T) {
	for rname, info := range gompRuntimes() {
		t.Run(rname, func(t *testing.T) {
			stop := fixtures.CoreWith(t, info(t), fixtures.ICVs)
			as := openStop(t, stop, core.WithDebugDirs())
			globals := rname != "system"
			truth := stop.Truth
			nthreadsEnv := truth.Env["OMP_NUM_THREADS"]
			bindEnv := fixtures.ProcBindNumbers(truth.Env["OMP_PROC_BIND"])
			require.Equal(t, "3,2,1", nthreadsEnv)
			require.Equal(t, "4,3", bindEnv)

			af, err := as.ICVString(ompd.ICVAffinityFormatVar)
			if globals {
				require.NoError(t, err)
				assert.Equal(t, fixtures.AffinityFormat, af, "affinity-format-var")
				_, err = as.ICV(ompd.ICVAffinityFormatVar)
				assert.ErrorIs(t, err, ompd.ErrIncompatible, "text has no integer form")
			} else {
				assert.ErrorIs(t, err, ompd.ErrUnavailable)
				assert.ErrorContains(t, err, "debug information")
				// What was searched, once, not once per structure
				// member looked up.
				assert.Equal(t, 1, strings.Count(err.Error(), "libgomp.so.1.0.0: no DWARF debug information"), "%v", err)
				assert.Less(t, len(err.Error()), 2000, "%v", err)
			}

			threads, err := ompd.Collect(as.Threads())
			require.NoError(t, err)
			require.Len(t, threads, len(truth.Threads))
			for _, th := range threads {
				lwp, err := th.OSThread(ompd.LWPID)
				require.NoError(t, err)
				want := truth.ThreadByTID(int(lwp))
				require.NotNil(t, want)
				require.NotNil(t, want.ICV)
				wantList := fixtures.EnvList(want.MaxThreads, nthreadsEnv, want.Level)

				text, err := th.ICVString(ompd.ICVNthreadsVar)
				list, lerr := th.NthreadsList()
				first, ferr := th.ICV(ompd.ICVNthreadsVar)
				mt, merr := th.MaxThreads()
				require.NoError(t, merr, "the first element is all MaxThreads asks")
				assert.Equal(t, want.MaxThreads, mt)
				assert.EqualValues(t, want.MaxThreads, first, "nthreads-var's first element")
				if globals {
					require.NoError(t, err)
					require.NoError(t, lerr)
					assert.Equal(t, wantList, text, "nthreads-var of thread %d at level %d", lwp, want.Level)
					assert.Equal(t, wantList, joinInts(list))
					if strings.Contains(wantList, ",") {
						assert.ErrorIs(t, ferr, ompd.ErrIncomplete)
					} else {
						assert.NoError(t, ferr)
					}
				} else {
					assert.ErrorIs(t, err, ompd.ErrIncomplete, "the rest of the list needs the debug file")
					assert.NotErrorIs(t, err, ompd.ErrUnavailable)
					assert.ErrorContains(t, err, "debug information")
					assert.Equal(t, strconv.Itoa(want.MaxThreads), text, "the first element comes with the error")
					assert.ErrorIs(t, lerr, ompd.ErrIncomplete)
					assert.Equal(t, []int{want.MaxThreads}, list)
					assert.ErrorIs(t, ferr, ompd.ErrIncomplete)
				}

				// bind-var of every task from the current one (level
				// want.Level) out to the initial task (level 0).
				task, err := th.CurrentTask()
				require.NoError(t, err)
				for l := want.Level; l >= 0; l-- {
					ticv := truth.TaskICV(want, l)
					require.NotNil(t, ticv, "truth of level %d", l)
					wantBind := fixtures.EnvList(ticv.ProcBindKind, bindEnv, l)
					text, err := task.ICVString(ompd.ICVBindVar)
					pb, perr := task.ProcBind()
					if globals {
						require.NoError(t, err)
						require.NoError(t, perr)
						assert.Equal(t, wantBind, text, "bind-var at level %d", l)
					} else if l == 0 && errors.Is(err, ompd.ErrUnavailable) {
						// The initial task before libgomp made one
						// for it: its ICVs are gomp_global_icv, a
						// hidden symbol.
						assert.ErrorContains(t, err, "debug information")
						assert.ErrorIs(t, perr, ompd.ErrUnavailable)
						break
					} else {
						assert.ErrorIs(t, err, ompd.ErrIncomplete)
						assert.ErrorIs(t, perr, ompd.ErrIncomplete)
						assert.Equal(t, strconv.Itoa(ticv.ProcBindKind), text, "bind-var's first element at level %d", l)
					}
					require.NotEmpty(t, pb)
					assert.EqualValues(t, ticv.ProcBindKind, pb[0], "omp_get_proc_bind at level %d", l)
					if l == 0 {
						_, err := task.Generating()
						assert.ErrorIs(t, err, ompd.ErrUnavailable, "the initial task has none")
						break
					}
					task, err = task.Generating()
					require.NoError(t, err, "the task at level %d", l-1)
				}
			}

			// The snapshot keeps the part it could read, marked.
			snap, err := as.Snapshot(context.Background())
			require.NoError(t, err)
			for _, ts := range snap.Threads {
				for _, v := range ts.ICVs {
					if v.ICV == ompd.ICVNthreadsVar {
						assert.Equal(t, !globals, v.Incomplete, "thread %s nthreads-var %q", ts.ID, v.Value)
					}
				}
			}
			for _, e := range snap.Errors {
				assert.NotContains(t, e, "nthreads-var")
				assert.NotContains(t, e, "bind-var")
			}
			if globals {
				var found bool
				for _, v := range snap.ICVs {
					if v.ICV == ompd.ICVAffinityFormatVar {
						found = true
						assert.Equal(t, fixtures.AffinityFormat, v.Value)
					}
				}
				assert.True(t, found, "affinity-format-var in the snapshot")
			}
		})
	}
}

func joinInts(l []int) string {
	s := make([]string, len(l))
	for i, n := range l {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

// renamedNode is a core whose libgomp calls its newest symbol version
// GOMP_5.1 something else: a release this package has no layout for.
type renamedNode struct {
	*core.Core
	to string // as long as "GOMP_5.1"
}

func (c renamedNode) ReadMemory(buf []byte, addr uint64) error {
	if err := c.Core.ReadMemory(buf, addr); err != nil {
		return err
	}
	from := []byte("GOMP_5.1\x00")
	for i := bytes.Index(buf, from); i >= 0; {
		copy(buf[i:], c.to)
		j := bytes.Index(buf[i+1:], from)
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return nil
}

// TestGompUnknownReleaseThroughOpen: ompd.Open on a libgomp without debug
// information whose release has no known layout fails with ErrIncompatible
// naming the library, the GCC release its symbol version maps to and the
// missing structures, with what was searched said once (not once per
// member looked up).
func TestGompUnknownReleaseThroughOpen(t *testing.T) {
	stop := fixtures.CoreWith(t, fixtures.SystemGomp(t), fixtures.Nested)
	c, err := core.Open(context.Background(), stop.Exe, stop.Core, core.WithDebugDirs())
	require.NoError(t, err)
	defer c.Close()
	for _, tc := range []struct{ node, release string }{
		{"GOMP_9.1", "a GCC newer than 16: newest symbol version GOMP_9.1"},
	} {
		t.Run(tc.node, func(t *testing.T) {
			_, err := ompd.Open(renamedNode{Core: c, to: tc.node})
			require.ErrorIs(t, err, ompd.ErrIncompatible)
			require.NotErrorIs(t, err, ompd.ErrNoRuntime, "a runtime is there")
			msg := err.Error()
			assert.Contains(t, msg, "libgomp.so.1 ("+tc.release+", build-id ")
			assert.Contains(t, msg, "no known layout (known: GCC 9.3.0 (GOMP_5.0), GCC 10.2.1 (GOMP_5.0), GCC 11.3.0 (GOMP_5.0.1), GCC 12.2.0 (GOMP_5.1)")
			assert.Contains(t, msg, "libgomp1-dbgsym", "which package gives the debug file")
			assert.Contains(t, msg, "missing struct gomp_thread, struct gomp_team, struct gomp_task, struct gomp_thread_pool, struct gomp_task_icv)")
			assert.Equal(t, 1, strings.Count(msg, "libgomp.so.1.0.0: no DWARF debug information"), "what was searched, once: %s", msg)
			assert.Less(t, len(msg), 2500, "%s", msg)
		})
	}
	// Without GOMP_5.1 the newest left is GCC 11's GOMP_5.0.1: GCC 11's
	// table, which lays out what is read as GCC 12 does but for the host
	// teams' numbers (GCC 11 keeps them in globals), passes the checks.
	as, err := ompd.Open(renamedNode{Core: c, to: "GOMP_0.0"})
	require.NoError(t, err)
	defer as.Close()
	assert.Equal(t, "GOMP_5.0.1 (the layout of GCC 11.3.0)", as.Runtime().Version)
}

// taskFunctionOf maps the deferred explicit tasks of tasks.c to the C
// function whose body holds them: gcc outlines a task body of function F
// as F._omp_fn.N.
var taskFunctionOf = map[string]string{"nest3": "chain", "final": "waiter"}

// TestGompUnsupportedAndTasks reads the tasks fixture on libgomp through
// the public API. What libgomp does not record (region and task ids, task
// frames, breakpoints, enabling OMPD) is ErrUnsupported; the implicit task
// of every level of a thread's nest is the task its chain holds at that
// level; each deferred explicit task's function is the outlined body gcc
// made of the fixture's task (chain._omp_fn.N, waiter._omp_fn.N), and its
// thread's stack runs that very function.
func TestGompUnsupportedAndTasks(t *testing.T) {
	for rname, info := range gompRuntimes() {
		t.Run(rname, func(t *testing.T) {
			stop := fixtures.CoreWith(t, info(t), fixtures.Tasks)
			as := openStop(t, stop, core.WithDebugDirs())
			truth := stop.Truth

			_, err := as.Breakpoints()
			assert.ErrorIs(t, err, ompd.ErrUnsupported, "breakpoints")
			assert.ErrorIs(t, as.Enable(true), ompd.ErrUnsupported, "Enable(true)")
			assert.ErrorIs(t, as.Enable(false), ompd.ErrUnsupported, "Enable(false)")
			on, err := as.Enabled()
			require.NoError(t, err)
			assert.False(t, on)
			_, err = as.DLLLocations()
			assert.ErrorIs(t, err, ompd.ErrUnsupported, "DLL locations")

			deferred := map[string]bool{}
			threads, err := ompd.Collect(as.Threads())
			require.NoError(t, err)
			for _, th := range threads {
				lwp, err := th.OSThread(ompd.LWPID)
				require.NoError(t, err)
				want := truth.ThreadByTID(int(lwp))
				require.NotNil(t, want)
				if want.Role == fixtures.RoleIdle {
					continue
				}
				// The regions, innermost first.
				var regions []ompd.Parallel
				for p, err := range th.Regions() {
					require.NoError(t, err)
					regions = append(regions, p)
					_, err = p.ID()
					assert.ErrorIs(t, err, ompd.ErrUnsupported, "region id")
				}
				require.Len(t, regions, want.Level+1)

				// The task chain: explicit tasks first, then one
				// implicit task per level, innermost first.
				var chain []ompd.Task
				for k, err := range th.Tasks() {
					require.NoError(t, err)
					chain = append(chain, k)
					_, err = k.ID()
					assert.ErrorIs(t, err, ompd.ErrUnsupported, "task id")
					// Task frames, read from the stacks: the
					// current task's from its thread's; a task on
					// no thread's stack has none.
					fr, err := k.Frames()
					if len(chain) == 1 {
						require.NoError(t, err, "the current task's frames")
					} else if err != nil {
						assert.ErrorIs(t, err, ompd.ErrUnavailable, "task frames")
						continue
					}
					assert.True(t, fr.Exit.Addr != 0 || fr.Enter.Addr != 0 || len(chain) > 1, "the current task's frames: %+v", fr)
				}
				var implicit []ompd.Task
				for _, k := range chain {
					kind, err := k.Kind()
					require.NoError(t, err)
					if kind.Has(ompd.TaskImplicit) {
						implicit = append(implicit, k)
					}
				}
				require.Len(t, implicit, want.Level+1, "one implicit task per level")
				for i, p := range regions {
					l := want.Level - i
					it, err := p.ImplicitTask(want.Ancestors[l].ThreadNum)
					require.NoError(t, err, "implicit task of thread %d at level %d", want.Ancestors[l].ThreadNum, l)
					assert.True(t, it.Equal(implicit[i]), "level %d: the region's implicit task %v is the chain's %v", l, it, implicit[i])
					tp, err := it.Parallel()
					require.NoError(t, err)
					assert.True(t, tp.Equal(p), "level %d: the implicit task runs in its region", l)
				}

				// The explicit tasks, matched with the truth by
				// following the labels from the thread's own.
				if want.Task == "" {
					continue
				}
				var bt *ompd.Backtrace
				label := want.Task
				for _, k := range chain {
					tk := truth.Task(label)
					require.NotNil(t, tk, "task %s", label)
					if tk.Kind != "explicit" {
						break
					}
					fn, err := k.Function()
					if tk.Undeferred {
						assert.ErrorIs(t, err, ompd.ErrUnavailable, "task %s: never an undeferred task's function", label)
					} else {
						require.NoError(t, err, "task %s", label)
						prefix, ok := taskFunctionOf[label]
						require.True(t, ok, "a deferred task of tasks.c: %s", label)
						assert.True(t, strings.HasPrefix(fn.Symbol, prefix+"._omp_fn."), "task %s runs %s, not %q", label, prefix, fn.Symbol)
						if bt == nil {
							bt, err = th.Backtrace(context.Background())
							require.NoError(t, err)
						}
						found := false
						for _, f := range bt.Frames {
							found = found || f.Symbol == fn.Symbol
						}
						assert.True(t, found, "task %s: its thread's stack runs %s", label, fn.Symbol)
						deferred[label] = true
					}
					label = tk.Parent
				}
			}
			assert.Equal(t, map[string]bool{"nest3": true, "final": true}, deferred, "every deferred task checked")
		})
	}
}
