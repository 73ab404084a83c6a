package kmp

// stockNames lists the runtime's hidden globals and functions this package
// reads, for internal/kmp/gen: for each it records, from the builds with
// symbols of every known LLVM release, which exported functions' code leads
// to it, so that a stripped runtime's can be found (see stock.go). A name
// the package reads but that is missing here is not found in a stripped
// runtime (TestStockNamesComplete checks).
var stockNames = []string{
	// The thread table and what bounds it.
	"__kmp_threads", "__kmp_threads_capacity", "__kmp_all_nth", "__kmp_sys_max_nth", "__kmp_nth",
	"__kmp_root", "__kmp_init_serial", "__kmp_init_parallel",
	// OMPD.
	"ompd_state", "ompd_dll_locations", "ompd_env_block", "ompd_env_block_size", "ompd_init",
	"ompd_bp_parallel_begin", "ompd_bp_parallel_end", "ompd_bp_task_begin", "ompd_bp_task_end",
	"ompd_bp_thread_begin", "ompd_bp_thread_end", "ompd_dll_locations_valid",
	// Functions the decoding recognises, and those a thread's stack
	// tells its state by (states.go).
	"__kmp_teams_master", "__kmp_GOMP_microtask_wrapper", "__kmp_GOMP_parallel_microtask_wrapper",
	"__kmp_fork_barrier", "__kmp_join_barrier", "__kmp_join_call", "__kmp_fork_call", "__kmp_invoke_microtask",
	// ICVs and the address space's answers.
	"__kmp_openmp_version", "__kmp_avail_proc", "__kmp_cg_max_nth", "__kmp_max_nth", "__kmp_stksize",
	"__kmp_omp_cancellation", "__kmp_max_task_priority", "__kmp_display_affinity", "__kmp_affinity_format",
	"__kmp_tool", "__kmp_tool_libraries", "__kmp_tool_verbose_init", "__kmp_nested_nth", "__kmp_nested_proc_bind",
	"__kmp_nteams", "__kmp_teams_thread_limit", "__kmp_default_device", "__kmp_dflt_max_active_levels",
	"__kmp_gtid_mode",
	// Display control variables.
	"__kmp_teams_max_nth", "__kmp_tp_capacity", "__kmp_display_env", "__kmp_display_env_verbose",
	"__kmp_library", "__kmp_dflt_blocktime", "__kmp_blocktime_units", "__kmp_sched", "__kmp_chunk",
	"__kmp_static", "__kmp_guided", "__kmp_global", "__kmp_user_lock_kind", "__kmp_affinity_top_method",
	"__kmp_barrier_gather_branch_bits", "__kmp_barrier_release_branch_bits",
	"__kmp_barrier_gather_pattern", "__kmp_barrier_release_pattern",
	"__kmp_affinity", "__kmp_hh_affinity", "__kmp_affin_mask_size", "__kmp_affinity_num_places",
	"__kmp_target_offload", "__kmp_def_allocator", "__kmp_teams_proc_bind",
	// What tests need to check answers (LookupHidden): the indirect
	// locks' table, where a user lock's runtime object is.
	"__kmp_i_lock_table",
	// The settings table: its rows lead to the globals of the display
	// control variables (stock.go).
	"__kmp_stg_table",
	// Tuning settings (tuning.go).
	"__kmp_abort_delay", "__kmp_adaptive_backoff_params", "__kmp_adjust_gtid_mode", "__kmp_align_alloc",
	"__kmp_atomic_mode", "__kmp_cpuinfo_file", "__kmp_debug_buf", "__kmp_debug_buf_atomic",
	"__kmp_debug_buf_chars", "__kmp_debug_buf_lines", "__kmp_determ_red", "__kmp_dispatch_num_buffers",
	"__kmp_duplicate_library_ok", "__kmp_enable_hidden_helper", "__kmp_enable_task_throttling",
	"__kmp_env_consistency_check", "__kmp_force_monotonic", "__kmp_force_reduction_method", "__kmp_foreign_tp",
	"__kmp_forkjoin_frames", "__kmp_forkjoin_frames_mode", "__kmp_generate_warnings", "__kmp_handle_signals",
	"__kmp_hidden_helper_threads_num", "__kmp_hot_teams_max_level", "__kmp_hot_teams_mode",
	"__kmp_inherit_fp_control", "__kmp_itt_prepare_delay", "__kmp_load_balance_interval",
	"__kmp_malloc_pool_incr", "__kmp_mwait_hints", "__kmp_need_register_atfork_specified", "__kmp_nesting_mode",
	"__kmp_num_locks_in_block", "__kmp_settings", "__kmp_spin_backoff_params", "__kmp_stkoffset",
	"__kmp_stkpadding", "__kmp_storage_map", "__kmp_storage_map_verbose", "__kmp_storage_map_verbose_specified",
	"__kmp_task_stealing_constraint", "__kmp_tasking_mode", "__kmp_taskloop_min_tasks", "__kmp_tpause_state",
	"__kmp_use_yield", "__kmp_user_level_mwait", "__kmp_version",
}
