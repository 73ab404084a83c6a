// ompd_go.h: the OMPD ABI types the harness needs, declared from the OpenMP
// 5.1 specification (and the layout of LLVM's omp-tools.h), plus the
// harness's own C entry points. Declarations only: cgo copies this header
// into more than one C file.

#ifndef OMPD_GO_H
#define OMPD_GO_H

#include <stddef.h>
#include <stdint.h>

typedef uint64_t ompd_size_t;
typedef uint64_t ompd_wait_id_t;
typedef uint64_t ompd_addr_t;
typedef int64_t ompd_word_t;
typedef uint64_t ompd_seg_t;
typedef uint64_t ompd_device_t;
typedef uint64_t ompd_thread_id_t;
typedef uint64_t ompd_icv_id_t;
/* ompd_scope_t and ompd_rc_t are C enums: int-sized on every ABI OMPD runs on. */
typedef int ompd_scope_t;
typedef int ompd_rc_t;

typedef struct ompd_address_t {
	ompd_seg_t segment;
	ompd_addr_t address;
} ompd_address_t;

typedef struct ompd_frame_info_t {
	ompd_address_t frame_address;
	ompd_word_t frame_flag;
} ompd_frame_info_t;

typedef struct ompd_device_type_sizes_t {
	uint8_t sizeof_char;
	uint8_t sizeof_short;
	uint8_t sizeof_int;
	uint8_t sizeof_long;
	uint8_t sizeof_long_long;
	uint8_t sizeof_pointer;
} ompd_device_type_sizes_t;

/* The contexts are the tool's (ours): OMPD passes them back opaquely. */
typedef struct _ompd_aspace_cont {
	uint64_t id;                    /* key of the Go registry entry */
	ompd_device_type_sizes_t sizes; /* the target's primitive sizes */
	int swap;                       /* target byte order differs from the host's */
} ompd_address_space_context_t;

typedef struct _ompd_thread_cont {
	uint64_t aspace; /* id of the address space context */
	uint64_t lwp;    /* the OS thread's kernel id */
} ompd_thread_context_t;

/* The handles belong to LLVM's libompd. Their layout is private to it
 * (openmp/libompd/src/omp-debug.h, LLVM 19); it is mirrored here only to
 * read the target addresses a handle names, for comparisons in tests. */
typedef struct _ompd_aspace_handle {
	ompd_address_space_context_t *context;
	ompd_device_t kind;
	uint64_t id;
} ompd_address_space_handle_t;

typedef struct _ompd_thread_handle {
	ompd_address_space_handle_t *ah;
	ompd_thread_context_t *thread_context;
	ompd_address_t th; /* kmp_base_info_t (the th member of kmp_info_t) */
} ompd_thread_handle_t;

typedef struct _ompd_parallel_handle {
	ompd_address_space_handle_t *ah;
	ompd_address_t th;  /* kmp_base_team_t (the t member of kmp_team_t) */
	ompd_address_t lwt; /* ompt_lw_taskteam_t, or 0 */
} ompd_parallel_handle_t;

typedef struct _ompd_task_handle {
	ompd_address_space_handle_t *ah;
	ompd_address_t th;  /* kmp_taskdata_t */
	ompd_address_t lwt; /* ompt_lw_taskteam_t, or 0 */
} ompd_task_handle_t;

/* Callback counters, incremented by the C side of every callback. */
typedef struct ompd_go_counters_t {
	uint64_t calls; /* every callback */
	uint64_t alloc_memory;
	uint64_t free_memory;
	uint64_t print_string;
	uint64_t sizeof_type;
	uint64_t symbol_addr_lookup;
	uint64_t read_memory;
	uint64_t read_memory_bytes;
	uint64_t write_memory;
	uint64_t write_memory_bytes;
	uint64_t read_string;
	uint64_t read_string_bytes; /* bytes of the strings returned, NUL included */
	uint64_t device_to_host;
	uint64_t host_to_device;
	uint64_t get_thread_context;
} ompd_go_counters_t;

/* Loading. ompd_go_load returns NULL or a static error message. */
const char *ompd_go_load(const char *path);
void ompd_go_get_counters(ompd_go_counters_t *out);
void ompd_go_reset_counters(void);
ompd_rc_t ompd_go_probe_reads(ompd_address_space_context_t *ctx, uint64_t addr, uint64_t size, uint64_t n);

/* Thin wrappers over the OMPD functions found with dlsym. A missing
 * function gives ompd_rc_unsupported. */
ompd_rc_t ompd_go_initialize(ompd_word_t api_version);
ompd_rc_t ompd_go_get_api_version(ompd_word_t *version);
ompd_rc_t ompd_go_get_version_string(const char **string);
ompd_rc_t ompd_go_finalize(void);
ompd_rc_t ompd_go_process_initialize(ompd_address_space_context_t *context, ompd_address_space_handle_t **handle);
ompd_rc_t ompd_go_device_initialize(ompd_address_space_handle_t *process_handle, ompd_address_space_context_t *device_context, ompd_device_t kind, ompd_size_t sizeof_id, void *id, ompd_address_space_handle_t **device_handle);
ompd_rc_t ompd_go_rel_address_space_handle(ompd_address_space_handle_t *handle);
ompd_rc_t ompd_go_get_omp_version(ompd_address_space_handle_t *as, ompd_word_t *version);
ompd_rc_t ompd_go_get_omp_version_string(ompd_address_space_handle_t *as, const char **string);
ompd_rc_t ompd_go_get_thread_in_parallel(ompd_parallel_handle_t *p, int thread_num, ompd_thread_handle_t **th);
ompd_rc_t ompd_go_get_thread_handle(ompd_address_space_handle_t *as, ompd_thread_id_t kind, ompd_size_t sizeof_thread_id, const void *thread_id, ompd_thread_handle_t **th);
ompd_rc_t ompd_go_rel_thread_handle(ompd_thread_handle_t *th);
ompd_rc_t ompd_go_thread_handle_compare(ompd_thread_handle_t *a, ompd_thread_handle_t *b, int *cmp);
ompd_rc_t ompd_go_get_thread_id(ompd_thread_handle_t *th, ompd_thread_id_t kind, ompd_size_t sizeof_thread_id, void *thread_id);
ompd_rc_t ompd_go_get_curr_parallel_handle(ompd_thread_handle_t *th, ompd_parallel_handle_t **p);
ompd_rc_t ompd_go_get_enclosing_parallel_handle(ompd_parallel_handle_t *p, ompd_parallel_handle_t **enc);
ompd_rc_t ompd_go_get_task_parallel_handle(ompd_task_handle_t *t, ompd_parallel_handle_t **p);
ompd_rc_t ompd_go_rel_parallel_handle(ompd_parallel_handle_t *p);
ompd_rc_t ompd_go_parallel_handle_compare(ompd_parallel_handle_t *a, ompd_parallel_handle_t *b, int *cmp);
ompd_rc_t ompd_go_get_curr_task_handle(ompd_thread_handle_t *th, ompd_task_handle_t **t);
ompd_rc_t ompd_go_get_generating_task_handle(ompd_task_handle_t *t, ompd_task_handle_t **gen);
ompd_rc_t ompd_go_get_scheduling_task_handle(ompd_task_handle_t *t, ompd_task_handle_t **sched);
ompd_rc_t ompd_go_get_task_in_parallel(ompd_parallel_handle_t *p, int thread_num, ompd_task_handle_t **t);
ompd_rc_t ompd_go_rel_task_handle(ompd_task_handle_t *t);
ompd_rc_t ompd_go_task_handle_compare(ompd_task_handle_t *a, ompd_task_handle_t *b, int *cmp);
ompd_rc_t ompd_go_get_task_function(ompd_task_handle_t *t, ompd_address_t *entry);
ompd_rc_t ompd_go_get_task_frame(ompd_task_handle_t *t, ompd_frame_info_t *exit_frame, ompd_frame_info_t *enter_frame);
ompd_rc_t ompd_go_enumerate_states(ompd_address_space_handle_t *as, ompd_word_t current, ompd_word_t *next, const char **next_name, ompd_word_t *more);
ompd_rc_t ompd_go_get_state(ompd_thread_handle_t *th, ompd_word_t *state, ompd_wait_id_t *wait_id);
ompd_rc_t ompd_go_get_display_control_vars(ompd_address_space_handle_t *as, const char *const **vars);
ompd_rc_t ompd_go_rel_display_control_vars(const char *const **vars);
ompd_rc_t ompd_go_enumerate_icvs(ompd_address_space_handle_t *as, ompd_icv_id_t current, ompd_icv_id_t *next, const char **next_name, ompd_scope_t *next_scope, int *more);
ompd_rc_t ompd_go_get_icv_from_scope(void *handle, ompd_scope_t scope, ompd_icv_id_t icv, ompd_word_t *value);
ompd_rc_t ompd_go_get_icv_string_from_scope(void *handle, ompd_scope_t scope, ompd_icv_id_t icv, const char **value);
ompd_rc_t ompd_go_get_tool_data(void *handle, ompd_scope_t scope, ompd_word_t *value, ompd_address_t *ptr);

/* Helpers for Go, which cannot index C arrays of pointers conveniently. */
const char *ompd_go_string_at(const char *const *vars, int i);

#endif
