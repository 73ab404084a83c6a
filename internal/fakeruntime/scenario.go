package fakeruntime

import (
	"github.com/ompd-go/ompd/target"
)

// Scenario is a typical program state built in one call, with every piece
// named for tests.
//
// Nested builds this program, stopped with thread 2 inside task B:
//
//	#pragma omp parallel num_threads(4)          // Outer: level 1, threads 0-3
//	  if (omp_get_thread_num() == 1)
//	    #pragma omp parallel num_threads(2)      // Inner: level 2, threads 1, 2
//	      if (omp_get_thread_num() == 1)         // thread 2:
//	        #pragma omp parallel if(0)           // Serial: levels 3, 4 and 5,
//	        #pragma omp parallel if(0)           //   all in thread 2's serial team
//	        #pragma omp parallel if(0)
//	          #pragma omp task untied            // task A
//	            #pragma omp task final(1) if(0)  // task B (included, final)
//
// Thread 4 idles in the thread pool (no team), and one OS thread of the
// target is no OpenMP thread at all.
type Scenario struct {
	RT *Runtime
	T  *Target

	// Threads by gtid: 0 initial, 1-3 workers of Outer, 4 idle in the pool.
	Threads []*Thread
	// Foreign is an OS thread that is no OpenMP thread.
	Foreign target.Thread

	Root   *Team // level 0: the initial thread's implicit region
	Outer  *Team // level 1, active level 1, 4 threads
	Inner  *Team // level 2, active level 2, threads 1 and 2
	Serial *Team // levels 3-5, active level 2, thread 2; nil in Minimal

	Initial      *Task // the initial task (Root's implicit task)
	TaskA, TaskB *Task // explicit tasks of Nested; nil in Minimal

	// Outlined functions and task routines.
	FnOuter, FnInner, FnSerial, FnTaskA, FnTaskB uint64

	// ICVs of the initial task and of task B.
	InitialICVs, TaskBICVs ICVs
	// NestedNth and NestedProcBind are the runtime's lists.
	NestedNth, NestedProcBind []int
	// DLLs are the ompd_dll_locations entries; EnvBlock the display block.
	DLLs     []string
	EnvBlock string
}

// Thread states used by Nested (ompt_state_t values).
const (
	StateWaitTaskwait                = 0x020
	StateWaitBarrierImplicitParallel = 0x011
	StateIdle                        = 0x100
)

// PthreadOf returns the pthread id Nested and Minimal give thread gtid.
func PthreadOf(sizes target.Sizes, gtid int) uint64 {
	if sizes.Pointer == 4 {
		return 0xf700_0000 + uint64(gtid)*0x10_0000
	}
	return 0x7f12_3400_0000 + uint64(gtid)*0x80_0000
}

// LWPOf returns the LWP id Nested and Minimal give thread gtid.
func LWPOf(gtid int) uint64 { return 4000 + uint64(gtid) }

// FrameAddr returns a stack address for frame k that fits every pointer
// size.
func FrameAddr(k int) uint64 { return 0xbf00_0000 + uint64(k)*0x100 }

// Frame flags (ompt_frame_flag_t).
const (
	FrameRuntime      = 0x00
	FrameApplication  = 0x01
	FrameFramePointer = 0x20
)

// Minimal builds a runtime with the initial thread only, in its implicit
// region at level 0 (a program that called omp_get_num_threads once).
func Minimal(cfg Config) *Scenario {
	t := NewTarget(cfg)
	rt := New(t)
	s := &Scenario{RT: rt, T: t, DLLs: []string{"libompd.so"}, EnvBlock: DefaultEnvBlock}
	s.InitialICVs = ICVs{NProc: 4, ThreadLimit: 2147483647, MaxActiveLevels: 1, SchedType: SchedStatic}
	rt.DefaultICVs = s.InitialICVs
	th := rt.NewThread(0, PthreadOf(t.Sizes(), 0), LWPOf(0))
	s.Threads = []*Thread{th}
	s.Root = rt.NewTeam(nil, 0, 0, 1, []*Thread{th}, 0)
	s.Initial = s.Root.Implicit[0]
	return s
}

// Nested builds the program state described on Scenario.
func Nested(cfg Config) *Scenario {
	t := NewTarget(cfg)
	rt := New(t)
	s := &Scenario{RT: rt, T: t}
	s.InitialICVs = ICVs{NProc: 4, ThreadLimit: 64, MaxActiveLevels: 3, ProcBind: 4,
		SchedType: SchedDynamicChunked, SchedChunk: 7}
	s.TaskBICVs = ICVs{Dynamic: true, NProc: 3, ThreadLimit: 16, MaxActiveLevels: 3, DefaultDevice: 1,
		ProcBind: 3, SchedType: SchedStatic | SchedMonotonic}
	rt.DefaultICVs = s.InitialICVs
	s.NestedNth = []int{4, 2, 3, 1}
	s.NestedProcBind = []int{4, 3, 3}
	rt.SetNestedNth(s.NestedNth)
	rt.SetNestedProcBind(s.NestedProcBind)
	s.DLLs = []string{"libompd.so", "/opt/llvm/lib/libompd.so"}
	rt.SetDLLLocations(s.DLLs)
	// The display block holds the defaults (LLVM writes it before reading
	// the environment); the globals hold what the program runs with:
	// OMP_SCHEDULE=dynamic,7 OMP_DYNAMIC=true OMP_NUM_THREADS=4,2,3,1
	// OMP_PROC_BIND=spread,close,close OMP_THREAD_LIMIT=64
	// OMP_MAX_ACTIVE_LEVELS=3 OMP_CANCELLATION=true OMP_MAX_TASK_PRIORITY=7
	// OMP_DISPLAY_AFFINITY=true OMP_STACKSIZE=4M OMP_DEFAULT_DEVICE=0.
	s.EnvBlock = DefaultEnvBlock
	rt.SetStringGlobal("__kmp_tool_libraries", "libfaketool.so")
	rt.SetStringGlobal("__kmp_tool_verbose_init", "disabled")
	rt.SetGlobal("__kmp_omp_cancellation", 1)
	rt.SetGlobal("__kmp_max_task_priority", 7)
	// omp_set_num_teams(2), omp_set_teams_thread_limit(6).
	rt.SetGlobal("__kmp_nteams", 2)
	rt.SetGlobal("__kmp_teams_thread_limit", 6)
	rt.SetGlobal("__kmp_display_affinity", 1)
	rt.SetGlobal("__kmp_stksize", 4<<20)
	rt.SetGlobal("__kmp_cg_max_nth", 64)
	rt.SetGlobal("__kmp_dflt_max_active_levels", 3)
	rt.SetGlobal("__kmp_sched", SchedDynamicChunked)
	rt.SetGlobal("__kmp_chunk", 7)
	rt.SetDynamicDefault(true)

	s.FnOuter = rt.Function("main._omp_fn.0")
	s.FnInner = rt.Function("main._omp_fn.1")
	s.FnSerial = rt.Function("main._omp_fn.4")
	s.FnTaskA = rt.Function("task_a._omp_fn")
	s.FnTaskB = rt.Function("task_b._omp_fn")

	for g := 0; g < 5; g++ {
		s.Threads = append(s.Threads, rt.NewThread(g, PthreadOf(t.Sizes(), g), LWPOf(g)))
	}
	s.Foreign = target.Thread{ID: 4999, Pointer: PthreadOf(t.Sizes(), 99)}
	t.AddThread(s.Foreign)
	th := s.Threads

	s.Root = rt.NewTeam(nil, 0, 0, 1, th[:1], 0)
	s.Initial = s.Root.Implicit[0]
	s.Root.SetParallelID(0x500)
	s.Initial.SetTaskID(0x7500)
	s.Initial.SetFrames(Frames{Exit: 0, Enter: FrameAddr(1), EnterFlags: FrameRuntime | FrameFramePointer})

	s.Outer = rt.NewTeam(s.Root, 1, 1, 4, th[:4], s.FnOuter)
	s.Outer.SetParallelID(0x501)
	for i, task := range s.Outer.Implicit {
		task.SetTaskID(0x7510 + uint64(i))
		task.SetFrames(Frames{Exit: FrameAddr(10 + i), ExitFlags: FrameRuntime | FrameFramePointer})
	}
	s.Inner = rt.NewTeam(s.Outer, 2, 2, 2, []*Thread{th[1], th[2]}, s.FnInner)
	s.Inner.SetParallelID(0x502)
	s.Inner.SetMasterTid(1)
	for i, task := range s.Inner.Implicit {
		task.SetTaskID(0x7520 + uint64(i))
		task.SetFrames(Frames{Exit: FrameAddr(20 + i), ExitFlags: FrameRuntime | FrameFramePointer})
	}
	s.Serial = rt.SerialTeam(s.Inner, th[2], 3, s.FnSerial)
	for level := 3; level <= 5; level++ {
		s.Serial.SetLevelData(level, LevelData{ParallelID: 0x500 + uint64(level), TaskID: 0x7500 + uint64(level)*0x10,
			Frames: Frames{Exit: FrameAddr(30 + level), ExitFlags: FrameRuntime | FrameFramePointer,
				Enter: FrameAddr(40 + level), EnterFlags: FrameApplication | FrameFramePointer}})
	}
	s.TaskA = rt.NewTask(s.Serial.Implicit[0], s.Serial, Explicit|Untied|Started|Executing, s.FnTaskA)
	s.TaskA.SetTaskID(0xa)
	s.TaskA.SetFrames(Frames{Exit: FrameAddr(50), ExitFlags: FrameApplication | FrameFramePointer,
		Enter: FrameAddr(51), EnterFlags: FrameRuntime | FrameFramePointer})
	s.TaskB = rt.NewTask(s.TaskA, s.Serial, Explicit|Included|Final|Started|Executing, s.FnTaskB)
	s.TaskB.SetTaskID(0xb)
	s.TaskB.SetICVs(s.TaskBICVs)
	s.TaskB.SetFrames(Frames{Exit: FrameAddr(60), ExitFlags: FrameApplication | FrameFramePointer})
	th[2].SetCurrentTask(s.TaskB)

	th[0].SetState(StateWorkParallel, 0)
	th[1].SetState(StateWaitTaskwait, 0)
	th[2].SetState(StateWorkParallel, 0)
	th[3].SetState(StateWaitBarrierImplicitParallel, 0xb0)
	th[4].SetState(StateIdle, 0)
	for _, x := range th {
		x.SetThreadData(0x1000 + uint64(x.GTID))
	}
	return s
}
