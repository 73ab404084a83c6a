package kmp

import "sync"

// LLVM's runtime also serves GCC's OpenMP ABI (GOMP_parallel and friends),
// so a program compiled with gcc can run on it. Such a region's entry
// function in the team (t_pkfn) is one of the runtime's wrappers, the same
// for every region; the user's outlined function (main._omp_fn.N) is the
// wrapper's first argument, kept in the team's t_argv[0].

// gompWrappers are the wrappers __kmp_GOMP_fork_call runs regions through.
var gompWrappers = []string{"__kmp_GOMP_microtask_wrapper", "__kmp_GOMP_parallel_microtask_wrapper"}

// gompABI is what reading through the wrappers needs, found once.
type gompABI struct {
	once     sync.Once
	wrappers map[uint64]bool
	argv     uint64 // offset of t_argv in kmp_base_team_t
	ok       bool
}

func (g *gompABI) init(rt *Runtime) {
	g.wrappers = map[uint64]bool{}
	for _, name := range gompWrappers {
		if a, err := rt.sym(name); err == nil && a != 0 {
			g.wrappers[a] = true
		}
	}
	if len(g.wrappers) == 0 {
		return
	}
	// t_argv is in no OMPD table: it needs the runtime's DWARF, or the
	// table of the known release a stripped runtime is.
	off, err := rt.fieldOffset("kmp_base_team_t", "t_argv")
	if err != nil {
		return
	}
	g.argv, g.ok = off, true
}

// regionFunction is the outlined function of a team: its t_pkfn, or for a
// region of a gcc-compiled program the user's function the wrapper calls.
// Where the wrapper's argument cannot be read, it is the wrapper.
func (rt *Runtime) regionFunction(tm *team) uint64 {
	g := &rt.gomp
	g.once.Do(func() { g.init(rt) })
	if !g.ok || !g.wrappers[tm.pkfn] {
		return tm.pkfn
	}
	argv, err := rt.mem.Ptr(tm.addr+rt.l.teamT+g.argv, "team t_argv")
	if err != nil || argv == 0 {
		return tm.pkfn
	}
	fn, err := rt.mem.Ptr(argv, "team t_argv[0]")
	if err != nil || fn == 0 {
		return tm.pkfn
	}
	return fn
}

// isGOMPWrapper reports whether fn is one of the runtime's wrappers of
// GCC-compiled regions.
func (rt *Runtime) isGOMPWrapper(fn uint64) bool {
	g := &rt.gomp
	g.once.Do(func() { g.init(rt) })
	return g.wrappers[fn]
}
