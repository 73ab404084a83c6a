package kmp

import (
	"fmt"
	"math"
	"strconv"
)

// How a tuning variable's global is printed (LLVM 19 kmp_settings.cpp,
// __kmp_env_format 0): __kmp_stg_print_int (a 4-byte int, %d),
// __kmp_stg_print_bool (a 4-byte int, true or false),
// __kmp_stg_print_uint64 (an unsigned 64-bit integer, or a 4-byte int
// converted to one) and __kmp_stg_print_size (a size_t, as
// __kmp_str_buf_print_size writes it).
const (
	printInt = iota
	printBool
	printUint64
	printInt32AsUint64
	printSize
)

// tuningVars are the KMP_* (and LIBOMP_*) display variables whose print
// function prints one global as it is, with the global and how it is
// printed. The runtime reads them from the environment after it wrote
// its display block (so the block holds their defaults), and some change
// later: KMP_USE_YIELD (kmp_set_library, OMP_WAIT_POLICY=active),
// KMP_WARNINGS (kmp_set_warnings_on/off), KMP_DISP_NUM_BUFFERS
// (kmp_set_disp_num_buffers), KMP_DUPLICATE_LIB_OK (set when a second
// copy of the runtime is found), and every one with kmp_set_defaults.
var tuningVars = []struct {
	env, sym string
	how      int
}{
	{"KMP_ABORT_DELAY", "__kmp_abort_delay", printInt},
	{"KMP_ALIGN_ALLOC", "__kmp_align_alloc", printSize},
	{"KMP_ATOMIC_MODE", "__kmp_atomic_mode", printInt},
	{"KMP_A_DEBUG", "kmp_a_debug", printInt},
	{"KMP_B_DEBUG", "kmp_b_debug", printInt},
	{"KMP_C_DEBUG", "kmp_c_debug", printInt},
	{"KMP_D_DEBUG", "kmp_d_debug", printInt},
	{"KMP_E_DEBUG", "kmp_e_debug", printInt},
	{"KMP_F_DEBUG", "kmp_f_debug", printInt},
	{"KMP_DEBUG_BUF", "__kmp_debug_buf", printBool},
	{"KMP_DEBUG_BUF_ATOMIC", "__kmp_debug_buf_atomic", printBool},
	{"KMP_DEBUG_BUF_CHARS", "__kmp_debug_buf_chars", printInt},
	{"KMP_DEBUG_BUF_LINES", "__kmp_debug_buf_lines", printInt},
	{"KMP_DETERMINISTIC_REDUCTION", "__kmp_determ_red", printBool},
	{"KMP_DIAG", "kmp_diag", printInt},
	{"KMP_DISP_NUM_BUFFERS", "__kmp_dispatch_num_buffers", printInt},
	{"KMP_DUPLICATE_LIB_OK", "__kmp_duplicate_library_ok", printBool},
	{"KMP_ENABLE_TASK_THROTTLING", "__kmp_enable_task_throttling", printBool},
	{"KMP_FORCE_MONOTONIC_DYNAMIC_SCHEDULE", "__kmp_force_monotonic", printBool},
	{"KMP_FOREIGN_THREADS_THREADPRIVATE", "__kmp_foreign_tp", printBool},
	{"KMP_FORKJOIN_FRAMES", "__kmp_forkjoin_frames", printBool},
	{"KMP_FORKJOIN_FRAMES_MODE", "__kmp_forkjoin_frames_mode", printInt},
	{"KMP_HANDLE_SIGNALS", "__kmp_handle_signals", printBool},
	{"KMP_HOT_TEAMS_MAX_LEVEL", "__kmp_hot_teams_max_level", printInt},
	{"KMP_HOT_TEAMS_MODE", "__kmp_hot_teams_mode", printInt},
	{"KMP_INHERIT_FP_CONTROL", "__kmp_inherit_fp_control", printBool},
	{"KMP_INIT_AT_FORK", "__kmp_need_register_atfork_specified", printBool},
	{"KMP_ITT_PREPARE_DELAY", "__kmp_itt_prepare_delay", printInt32AsUint64},
	{"KMP_MALLOC_POOL_INCR", "__kmp_malloc_pool_incr", printSize},
	{"KMP_MWAIT_HINTS", "__kmp_mwait_hints", printInt},
	{"KMP_NESTING_MODE", "__kmp_nesting_mode", printInt},
	{"KMP_NUM_LOCKS_IN_BLOCK", "__kmp_num_locks_in_block", printInt},
	{"KMP_SETTINGS", "__kmp_settings", printBool},
	{"KMP_STACKOFFSET", "__kmp_stkoffset", printSize},
	{"KMP_STACKPAD", "__kmp_stkpadding", printInt},
	{"KMP_TASKING", "__kmp_tasking_mode", printInt},
	{"KMP_TASKLOOP_MIN_TASKS", "__kmp_taskloop_min_tasks", printUint64},
	{"KMP_TASK_STEALING_CONSTRAINT", "__kmp_task_stealing_constraint", printInt},
	{"KMP_TPAUSE", "__kmp_tpause_state", printInt},
	{"KMP_USER_LEVEL_MWAIT", "__kmp_user_level_mwait", printBool},
	{"KMP_USE_YIELD", "__kmp_use_yield", printInt},
	{"KMP_VERSION", "__kmp_version", printBool},
	{"KMP_WARNINGS", "__kmp_generate_warnings", printBool},
	{"LIBOMP_USE_HIDDEN_HELPER_TASK", "__kmp_enable_hidden_helper", printBool},
}

// LLVM 19's kmp_target_offload_kind_t, PACKED_REDUCTION_METHOD_T's
// methods KMP_FORCE_REDUCTION names (kmp.h), the predefined allocators
// OMP_ALLOCATOR names (omp.h, in the order __kmp_stg_print_allocator
// tests them) and kmp_proc_bind_t values KMP_TEAMS_PROC_BIND prints
// (proc_bind_table: the first name of each).
var (
	targetOffloadNames = map[int64]string{0: "DISABLED", 1: "DEFAULT", 2: "MANDATORY"}
	reductionNames     = map[int64]string{1 << 8: "critical", 2 << 8: "atomic", 3 << 8: "tree"}
	allocatorNames     = map[int64]string{1: "omp_default_mem_alloc", 4: "omp_high_bw_mem_alloc",
		2: "omp_large_cap_mem_alloc", 3: "omp_const_mem_alloc", 5: "omp_low_lat_mem_alloc",
		6: "omp_cgroup_mem_alloc", 7: "omp_pteam_mem_alloc", 8: "omp_thread_mem_alloc"}
	teamsProcBindNames = map[int64]string{4: "spread", 3: "close", 2: "primary"}
)

// tuningSettings adds to out the KMP_* tuning variables (and
// OMP_TARGET_OFFLOAD, OMP_ALLOCATOR, LIBOMP_*) from the globals their
// __kmp_stg_print_* functions in LLVM 19 kmp_settings.cpp print, formatted
// as those print them into the display block. Each is a global of the
// runtime's symbol table, so no DWARF is needed; the two parameter pairs
// are structs of kmp_uint32 whose layout (kmp_lock.h, kmp.h) is fixed in
// LLVM 19. A variable whose global cannot be read or holds a value its
// print function prints no name for is left out (and stays stale).
func (rt *Runtime) tuningSettings(out map[string]string) {
	i32 := func(sym string) (int64, bool) {
		v, err := rt.global(sym, 4, true)
		return v, err == nil
	}
	for _, tv := range tuningVars {
		switch tv.how {
		case printInt:
			if v, ok := i32(tv.sym); ok {
				out[tv.env] = strconv.FormatInt(v, 10)
			}
		case printBool:
			if v, ok := i32(tv.sym); ok {
				out[tv.env] = strconv.FormatBool(v != 0)
			}
		case printInt32AsUint64:
			if v, ok := i32(tv.sym); ok {
				out[tv.env] = strconv.FormatUint(uint64(v), 10)
			}
		case printUint64:
			if v, err := rt.global(tv.sym, 8, false); err == nil {
				out[tv.env] = strconv.FormatUint(uint64(v), 10)
			}
		case printSize:
			if v, err := rt.global(tv.sym, uint64(rt.mem.PtrSize), false); err == nil {
				out[tv.env] = formatSize(uint64(v))
			}
		}
	}
	named := func(env, sym string, size uint64, names map[int64]string) {
		if v, err := rt.global(sym, size, true); err == nil && names[v] != "" {
			out[env] = names[v]
		}
	}
	named("OMP_TARGET_OFFLOAD", "__kmp_target_offload", 4, targetOffloadNames)
	named("OMP_ALLOCATOR", "__kmp_def_allocator", uint64(rt.mem.PtrSize), allocatorNames)
	named("KMP_TEAMS_PROC_BIND", "__kmp_teams_proc_bind", 4, teamsProcBindNames)
	if v, ok := i32("__kmp_force_reduction_method"); ok {
		if n := reductionNames[v]; n != "" {
			out["KMP_FORCE_REDUCTION"] = n
		} else {
			out["KMP_FORCE_REDUCTION"] = undefined
		}
	}
	m, ok1 := i32("__kmp_storage_map")
	mv, ok2 := i32("__kmp_storage_map_verbose")
	ms, ok3 := i32("__kmp_storage_map_verbose_specified")
	if ok1 && ok2 && ok3 {
		if mv != 0 || ms != 0 {
			out["KMP_STORAGE_MAP"] = "verbose"
		} else {
			out["KMP_STORAGE_MAP"] = strconv.FormatBool(m != 0)
		}
	}
	adjust, ok1 := i32("__kmp_adjust_gtid_mode")
	mode, ok2 := i32("__kmp_gtid_mode")
	if ok1 && ok2 {
		if adjust != 0 {
			mode = 0
		}
		out["KMP_GTID_MODE"] = strconv.FormatInt(mode, 10)
	}
	if v, ok := i32("__kmp_env_consistency_check"); ok {
		out["KMP_CONSISTENCY_CHECK"] = map[bool]string{true: "all", false: "none"}[v != 0]
	}
	if v, ok := i32("__kmp_hidden_helper_threads_num"); ok {
		// LLVM 15 and later count the hidden helper team's primary
		// thread in and print only its workers; older releases print
		// the count.
		if v != 0 && !rt.before(15) {
			v--
		}
		out["LIBOMP_NUM_HIDDEN_HELPER_THREADS"] = strconv.FormatInt(v, 10)
	}
	if v, err := rt.global("__kmp_load_balance_interval", 8, false); err == nil {
		out["KMP_LOAD_BALANCE_INTERVAL"] = fmt.Sprintf("%8.6f", math.Float64frombits(uint64(v)))
	}
	// kmp_backoff_t {step, max_backoff, min_tick} and
	// kmp_adaptive_backoff_params_t {max_soft_retries, max_badness}.
	pair := func(env, sym string, first uint64) {
		base, err := rt.sym(sym)
		if err != nil {
			return
		}
		v, err := rt.view(base+first, 8, sym)
		if err == nil {
			out[env] = fmt.Sprintf("'%d,%d'", int32(v.Uint(0, 4)), int32(v.Uint(4, 4)))
		}
	}
	pair("KMP_SPIN_BACKOFF_PARAMS", "__kmp_spin_backoff_params", 4)
	pair("KMP_ADAPTIVE_LOCK_PROPS", "__kmp_adaptive_backoff_params", 0)
	if p, err := rt.globalPtr("__kmp_cpuinfo_file"); err == nil {
		if p == 0 {
			out["KMP_CPUINFO_FILE"] = undefined
		} else if s, err := rt.mem.String(p, "__kmp_cpuinfo_file"); err == nil {
			out["KMP_CPUINFO_FILE"] = "'" + s + "'"
		}
	}
}
