// ompd_go.c: loads LLVM's libompd.so with dlopen, gives it OMPD's callback
// table, and wraps its functions so that Go can call them.
//
// The callbacks that need the target (symbols, memory, threads) call back
// into Go; the others (allocation, primitive sizes, byte-order conversion,
// printing) are plain C. Every callback is counted here.

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ompd_go.h"
#include "_cgo_export.h"

enum {
	rc_ok = 0,
	rc_unavailable = 1,
	rc_stale_handle = 2,
	rc_bad_input = 3,
	rc_error = 4,
	rc_unsupported = 5,
	rc_callback_error = 12,
};

/* ---- the callback table ------------------------------------------------ */

typedef ompd_rc_t (*alloc_fn)(ompd_size_t, void **);
typedef ompd_rc_t (*free_fn)(void *);
typedef ompd_rc_t (*print_fn)(const char *, int);
typedef ompd_rc_t (*sizeof_fn)(ompd_address_space_context_t *, ompd_device_type_sizes_t *);
typedef ompd_rc_t (*symbol_fn)(ompd_address_space_context_t *, ompd_thread_context_t *, const char *, ompd_address_t *, const char *);
typedef ompd_rc_t (*read_fn)(ompd_address_space_context_t *, ompd_thread_context_t *, const ompd_address_t *, ompd_size_t, void *);
typedef ompd_rc_t (*write_fn)(ompd_address_space_context_t *, ompd_thread_context_t *, const ompd_address_t *, ompd_size_t, const void *);
typedef ompd_rc_t (*convert_fn)(ompd_address_space_context_t *, const void *, ompd_size_t, ompd_size_t, void *);
typedef ompd_rc_t (*thread_ctx_fn)(ompd_address_space_context_t *, ompd_thread_id_t, ompd_size_t, const void *, ompd_thread_context_t **);

/* ompd_callbacks_t, in the order of the OpenMP specification. */
typedef struct ompd_callbacks_t {
	alloc_fn alloc_memory;
	free_fn free_memory;
	print_fn print_string;
	sizeof_fn sizeof_type;
	symbol_fn symbol_addr_lookup;
	read_fn read_memory;
	write_fn write_memory;
	read_fn read_string;
	convert_fn device_to_host;
	convert_fn host_to_device;
	thread_ctx_fn get_thread_context_for_thread_id;
} ompd_callbacks_t;

static ompd_go_counters_t counters;

static ompd_rc_t cb_alloc_memory(ompd_size_t n, void **ptr) {
	counters.calls++;
	counters.alloc_memory++;
	if (!ptr)
		return rc_bad_input;
	/* Zeroed: libompd leaves some handle fields unset (the thread context
	 * of handles from ompd_get_thread_in_parallel); zero keeps that
	 * deterministic. */
	*ptr = calloc(1, n ? n : 1);
	return *ptr ? rc_ok : 10 /* ompd_rc_nomem */;
}

static ompd_rc_t cb_free_memory(void *ptr) {
	counters.calls++;
	counters.free_memory++;
	free(ptr);
	return rc_ok;
}

static ompd_rc_t cb_print_string(const char *s, int category) {
	(void)s;
	(void)category;
	counters.calls++;
	counters.print_string++;
	return rc_ok;
}

static ompd_rc_t cb_sizeof_type(ompd_address_space_context_t *ctx, ompd_device_type_sizes_t *sizes) {
	counters.calls++;
	counters.sizeof_type++;
	if (!ctx || !sizes)
		return rc_bad_input;
	*sizes = ctx->sizes;
	return rc_ok;
}

static ompd_rc_t cb_symbol_addr_lookup(ompd_address_space_context_t *ctx, ompd_thread_context_t *tctx,
                                       const char *name, ompd_address_t *addr, const char *file) {
	(void)file;
	counters.calls++;
	counters.symbol_addr_lookup++;
	if (!ctx || !name || !addr)
		return rc_bad_input;
	addr->segment = 0;
	return ompdGoSymbolAddr(ctx, tctx, (char *)name, &addr->address);
}

static ompd_rc_t cb_read_memory(ompd_address_space_context_t *ctx, ompd_thread_context_t *tctx,
                                const ompd_address_t *addr, ompd_size_t n, void *buf) {
	counters.calls++;
	counters.read_memory++;
	counters.read_memory_bytes += n;
	if (!ctx || !addr || (!buf && n))
		return rc_bad_input;
	if (n == 0)
		return rc_ok;
	return ompdGoReadMemory(ctx, tctx, addr->address, n, buf);
}

static ompd_rc_t cb_write_memory(ompd_address_space_context_t *ctx, ompd_thread_context_t *tctx,
                                 const ompd_address_t *addr, ompd_size_t n, const void *buf) {
	counters.calls++;
	counters.write_memory++;
	counters.write_memory_bytes += n;
	if (!ctx || !addr || (!buf && n))
		return rc_bad_input;
	if (n == 0)
		return rc_ok;
	return ompdGoWriteMemory(ctx, tctx, addr->address, n, (void *)buf);
}

static ompd_rc_t cb_read_string(ompd_address_space_context_t *ctx, ompd_thread_context_t *tctx,
                                const ompd_address_t *addr, ompd_size_t n, void *buf) {
	counters.calls++;
	counters.read_string++;
	if (!ctx || !addr || (!buf && n))
		return rc_bad_input;
	if (n == 0)
		return rc_ok;
	ompd_size_t got = 0;
	ompd_rc_t rc = ompdGoReadString(ctx, tctx, addr->address, n, buf, &got);
	counters.read_string_bytes += got;
	return rc;
}

/* convert copies count units of unit_size bytes, reversing each unit's
 * bytes when the target's byte order is not the host's. input and output
 * may be the same buffer (libompd converts in place). */
static ompd_rc_t convert(ompd_address_space_context_t *ctx, const void *input, ompd_size_t unit_size,
                         ompd_size_t count, void *output) {
	if (!ctx || !input || !output)
		return rc_bad_input;
	if (unit_size == 0 || unit_size > 16)
		return rc_bad_input;
	if (!ctx->swap || unit_size == 1) {
		if (input != output)
			memmove(output, input, unit_size * count);
		return rc_ok;
	}
	const unsigned char *in = input;
	unsigned char *out = output;
	for (ompd_size_t i = 0; i < count; i++) {
		unsigned char tmp[16];
		memcpy(tmp, in + i * unit_size, unit_size);
		for (ompd_size_t j = 0; j < unit_size; j++)
			out[i * unit_size + j] = tmp[unit_size - 1 - j];
	}
	return rc_ok;
}

static ompd_rc_t cb_device_to_host(ompd_address_space_context_t *ctx, const void *input, ompd_size_t unit_size,
                                   ompd_size_t count, void *output) {
	counters.calls++;
	counters.device_to_host++;
	return convert(ctx, input, unit_size, count, output);
}

static ompd_rc_t cb_host_to_device(ompd_address_space_context_t *ctx, const void *input, ompd_size_t unit_size,
                                   ompd_size_t count, void *output) {
	counters.calls++;
	counters.host_to_device++;
	return convert(ctx, input, unit_size, count, output);
}

static ompd_rc_t cb_get_thread_context(ompd_address_space_context_t *ctx, ompd_thread_id_t kind,
                                       ompd_size_t size, const void *id, ompd_thread_context_t **out) {
	counters.calls++;
	counters.get_thread_context++;
	if (!ctx || !id || !out)
		return rc_bad_input;
	uint64_t v;
	if (size == 8)
		v = *(const uint64_t *)id;
	else if (size == 4)
		v = *(const uint32_t *)id;
	else
		return rc_bad_input;
	return ompdGoThreadContext(ctx, kind, v, out);
}

static const ompd_callbacks_t callback_table = {
	cb_alloc_memory,       cb_free_memory,  cb_print_string, cb_sizeof_type,
	cb_symbol_addr_lookup, cb_read_memory,  cb_write_memory, cb_read_string,
	cb_device_to_host,     cb_host_to_device, cb_get_thread_context,
};

void ompd_go_get_counters(ompd_go_counters_t *out) { *out = counters; }

/* ompd_go_probe_reads makes n read_memory callbacks of size bytes at addr,
 * as libompd would, to measure what one callback costs. */
ompd_rc_t ompd_go_probe_reads(ompd_address_space_context_t *ctx, uint64_t addr, uint64_t size, uint64_t n) {
	unsigned char buf[64];
	ompd_address_t a = {0, addr};
	if (size > sizeof buf)
		return rc_bad_input;
	for (uint64_t i = 0; i < n; i++) {
		ompd_rc_t rc = callback_table.read_memory(ctx, NULL, &a, size, buf);
		if (rc != rc_ok)
			return rc;
	}
	return rc_ok;
}
void ompd_go_reset_counters(void) { memset(&counters, 0, sizeof counters); }

/* ---- the library's functions ------------------------------------------- */

#define OMPD_FUNCS(X)                                                                                      \
	X(initialize, (ompd_word_t, const ompd_callbacks_t *))                                             \
	X(get_api_version, (ompd_word_t *))                                                                \
	X(get_version_string, (const char **))                                                             \
	X(finalize, (void))                                                                                \
	X(process_initialize, (ompd_address_space_context_t *, ompd_address_space_handle_t **))            \
	X(device_initialize, (ompd_address_space_handle_t *, ompd_address_space_context_t *, ompd_device_t, \
	                      ompd_size_t, void *, ompd_address_space_handle_t **))                        \
	X(rel_address_space_handle, (ompd_address_space_handle_t *))                                       \
	X(get_omp_version, (ompd_address_space_handle_t *, ompd_word_t *))                                 \
	X(get_omp_version_string, (ompd_address_space_handle_t *, const char **))                          \
	X(get_thread_in_parallel, (ompd_parallel_handle_t *, int, ompd_thread_handle_t **))               \
	X(get_thread_handle, (ompd_address_space_handle_t *, ompd_thread_id_t, ompd_size_t, const void *,  \
	                      ompd_thread_handle_t **))                                                    \
	X(rel_thread_handle, (ompd_thread_handle_t *))                                                     \
	X(thread_handle_compare, (ompd_thread_handle_t *, ompd_thread_handle_t *, int *))                  \
	X(get_thread_id, (ompd_thread_handle_t *, ompd_thread_id_t, ompd_size_t, void *))                  \
	X(get_curr_parallel_handle, (ompd_thread_handle_t *, ompd_parallel_handle_t **))                   \
	X(get_enclosing_parallel_handle, (ompd_parallel_handle_t *, ompd_parallel_handle_t **))            \
	X(get_task_parallel_handle, (ompd_task_handle_t *, ompd_parallel_handle_t **))                     \
	X(rel_parallel_handle, (ompd_parallel_handle_t *))                                                 \
	X(parallel_handle_compare, (ompd_parallel_handle_t *, ompd_parallel_handle_t *, int *))            \
	X(get_curr_task_handle, (ompd_thread_handle_t *, ompd_task_handle_t **))                           \
	X(get_generating_task_handle, (ompd_task_handle_t *, ompd_task_handle_t **))                       \
	X(get_scheduling_task_handle, (ompd_task_handle_t *, ompd_task_handle_t **))                       \
	X(get_task_in_parallel, (ompd_parallel_handle_t *, int, ompd_task_handle_t **))                   \
	X(rel_task_handle, (ompd_task_handle_t *))                                                         \
	X(task_handle_compare, (ompd_task_handle_t *, ompd_task_handle_t *, int *))                        \
	X(get_task_function, (ompd_task_handle_t *, ompd_address_t *))                                     \
	X(get_task_frame, (ompd_task_handle_t *, ompd_frame_info_t *, ompd_frame_info_t *))               \
	X(enumerate_states, (ompd_address_space_handle_t *, ompd_word_t, ompd_word_t *, const char **,     \
	                     ompd_word_t *))                                                               \
	X(get_state, (ompd_thread_handle_t *, ompd_word_t *, ompd_wait_id_t *))                            \
	X(get_display_control_vars, (ompd_address_space_handle_t *, const char *const **))                 \
	X(rel_display_control_vars, (const char *const **))                                                \
	X(enumerate_icvs, (ompd_address_space_handle_t *, ompd_icv_id_t, ompd_icv_id_t *, const char **,   \
	                   ompd_scope_t *, int *))                                                         \
	X(get_icv_from_scope, (void *, ompd_scope_t, ompd_icv_id_t, ompd_word_t *))                        \
	X(get_icv_string_from_scope, (void *, ompd_scope_t, ompd_icv_id_t, const char **))                 \
	X(get_tool_data, (void *, ompd_scope_t, ompd_word_t *, ompd_address_t *))

#define DECLARE(name, args) static ompd_rc_t(*fn_##name) args;
OMPD_FUNCS(DECLARE)
#undef DECLARE

static void *lib;

const char *ompd_go_load(const char *path) {
	static char msg[1024];
	if (lib)
		return NULL;
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(msg, sizeof msg, "dlopen: %s", dlerror());
		return msg;
	}
#define RESOLVE(name, args) *(void **)(&fn_##name) = dlsym(h, "ompd_" #name);
	OMPD_FUNCS(RESOLVE)
#undef RESOLVE
	if (!fn_initialize || !fn_get_api_version || !fn_process_initialize) {
		snprintf(msg, sizeof msg, "%s is no OMPD library (no ompd_initialize, ompd_get_api_version or ompd_process_initialize)", path);
		dlclose(h);
		return msg;
	}
	lib = h;
	return NULL;
}

const char *ompd_go_string_at(const char *const *vars, int i) { return vars[i]; }

ompd_rc_t ompd_go_initialize(ompd_word_t api_version) { return fn_initialize(api_version, &callback_table); }

#define MISSING(name) \
	if (!fn_##name)   \
		return rc_unsupported;

ompd_rc_t ompd_go_get_api_version(ompd_word_t *v) { MISSING(get_api_version) return fn_get_api_version(v); }
ompd_rc_t ompd_go_get_version_string(const char **s) { MISSING(get_version_string) return fn_get_version_string(s); }
ompd_rc_t ompd_go_finalize(void) { MISSING(finalize) return fn_finalize(); }
ompd_rc_t ompd_go_process_initialize(ompd_address_space_context_t *c, ompd_address_space_handle_t **h) {
	MISSING(process_initialize) return fn_process_initialize(c, h);
}
ompd_rc_t ompd_go_device_initialize(ompd_address_space_handle_t *ph, ompd_address_space_context_t *dc, ompd_device_t kind,
                                    ompd_size_t sz, void *id, ompd_address_space_handle_t **dh) {
	MISSING(device_initialize) return fn_device_initialize(ph, dc, kind, sz, id, dh);
}
ompd_rc_t ompd_go_rel_address_space_handle(ompd_address_space_handle_t *h) {
	MISSING(rel_address_space_handle) return fn_rel_address_space_handle(h);
}
ompd_rc_t ompd_go_get_omp_version(ompd_address_space_handle_t *h, ompd_word_t *v) {
	MISSING(get_omp_version) return fn_get_omp_version(h, v);
}
ompd_rc_t ompd_go_get_omp_version_string(ompd_address_space_handle_t *h, const char **s) {
	MISSING(get_omp_version_string) return fn_get_omp_version_string(h, s);
}
ompd_rc_t ompd_go_get_thread_in_parallel(ompd_parallel_handle_t *p, int n, ompd_thread_handle_t **th) {
	MISSING(get_thread_in_parallel) return fn_get_thread_in_parallel(p, n, th);
}
ompd_rc_t ompd_go_get_thread_handle(ompd_address_space_handle_t *h, ompd_thread_id_t kind, ompd_size_t sz, const void *id,
                                    ompd_thread_handle_t **th) {
	MISSING(get_thread_handle) return fn_get_thread_handle(h, kind, sz, id, th);
}
ompd_rc_t ompd_go_rel_thread_handle(ompd_thread_handle_t *th) { MISSING(rel_thread_handle) return fn_rel_thread_handle(th); }
ompd_rc_t ompd_go_thread_handle_compare(ompd_thread_handle_t *a, ompd_thread_handle_t *b, int *c) {
	MISSING(thread_handle_compare) return fn_thread_handle_compare(a, b, c);
}
ompd_rc_t ompd_go_get_thread_id(ompd_thread_handle_t *th, ompd_thread_id_t kind, ompd_size_t sz, void *id) {
	MISSING(get_thread_id) return fn_get_thread_id(th, kind, sz, id);
}
ompd_rc_t ompd_go_get_curr_parallel_handle(ompd_thread_handle_t *th, ompd_parallel_handle_t **p) {
	MISSING(get_curr_parallel_handle) return fn_get_curr_parallel_handle(th, p);
}
ompd_rc_t ompd_go_get_enclosing_parallel_handle(ompd_parallel_handle_t *p, ompd_parallel_handle_t **e) {
	MISSING(get_enclosing_parallel_handle) return fn_get_enclosing_parallel_handle(p, e);
}
ompd_rc_t ompd_go_get_task_parallel_handle(ompd_task_handle_t *t, ompd_parallel_handle_t **p) {
	MISSING(get_task_parallel_handle) return fn_get_task_parallel_handle(t, p);
}
ompd_rc_t ompd_go_rel_parallel_handle(ompd_parallel_handle_t *p) { MISSING(rel_parallel_handle) return fn_rel_parallel_handle(p); }
ompd_rc_t ompd_go_parallel_handle_compare(ompd_parallel_handle_t *a, ompd_parallel_handle_t *b, int *c) {
	MISSING(parallel_handle_compare) return fn_parallel_handle_compare(a, b, c);
}
ompd_rc_t ompd_go_get_curr_task_handle(ompd_thread_handle_t *th, ompd_task_handle_t **t) {
	MISSING(get_curr_task_handle) return fn_get_curr_task_handle(th, t);
}
ompd_rc_t ompd_go_get_generating_task_handle(ompd_task_handle_t *t, ompd_task_handle_t **g) {
	MISSING(get_generating_task_handle) return fn_get_generating_task_handle(t, g);
}
ompd_rc_t ompd_go_get_scheduling_task_handle(ompd_task_handle_t *t, ompd_task_handle_t **s) {
	MISSING(get_scheduling_task_handle) return fn_get_scheduling_task_handle(t, s);
}
ompd_rc_t ompd_go_get_task_in_parallel(ompd_parallel_handle_t *p, int n, ompd_task_handle_t **t) {
	MISSING(get_task_in_parallel) return fn_get_task_in_parallel(p, n, t);
}
ompd_rc_t ompd_go_rel_task_handle(ompd_task_handle_t *t) { MISSING(rel_task_handle) return fn_rel_task_handle(t); }
ompd_rc_t ompd_go_task_handle_compare(ompd_task_handle_t *a, ompd_task_handle_t *b, int *c) {
	MISSING(task_handle_compare) return fn_task_handle_compare(a, b, c);
}
ompd_rc_t ompd_go_get_task_function(ompd_task_handle_t *t, ompd_address_t *e) {
	MISSING(get_task_function) return fn_get_task_function(t, e);
}
ompd_rc_t ompd_go_get_task_frame(ompd_task_handle_t *t, ompd_frame_info_t *exit_frame, ompd_frame_info_t *enter_frame) {
	MISSING(get_task_frame) return fn_get_task_frame(t, exit_frame, enter_frame);
}
ompd_rc_t ompd_go_enumerate_states(ompd_address_space_handle_t *h, ompd_word_t cur, ompd_word_t *next, const char **name,
                                   ompd_word_t *more) {
	MISSING(enumerate_states) return fn_enumerate_states(h, cur, next, name, more);
}
ompd_rc_t ompd_go_get_state(ompd_thread_handle_t *th, ompd_word_t *s, ompd_wait_id_t *w) {
	MISSING(get_state) return fn_get_state(th, s, w);
}
ompd_rc_t ompd_go_get_display_control_vars(ompd_address_space_handle_t *h, const char *const **v) {
	MISSING(get_display_control_vars) return fn_get_display_control_vars(h, v);
}
ompd_rc_t ompd_go_rel_display_control_vars(const char *const **v) {
	MISSING(rel_display_control_vars) return fn_rel_display_control_vars(v);
}
ompd_rc_t ompd_go_enumerate_icvs(ompd_address_space_handle_t *h, ompd_icv_id_t cur, ompd_icv_id_t *next, const char **name,
                                 ompd_scope_t *scope, int *more) {
	MISSING(enumerate_icvs) return fn_enumerate_icvs(h, cur, next, name, scope, more);
}
ompd_rc_t ompd_go_get_icv_from_scope(void *h, ompd_scope_t scope, ompd_icv_id_t icv, ompd_word_t *v) {
	MISSING(get_icv_from_scope) return fn_get_icv_from_scope(h, scope, icv, v);
}
ompd_rc_t ompd_go_get_icv_string_from_scope(void *h, ompd_scope_t scope, ompd_icv_id_t icv, const char **v) {
	MISSING(get_icv_string_from_scope) return fn_get_icv_string_from_scope(h, scope, icv, v);
}
ompd_rc_t ompd_go_get_tool_data(void *h, ompd_scope_t scope, ompd_word_t *v, ompd_address_t *p) {
	MISSING(get_tool_data) return fn_get_tool_data(h, scope, v, p);
}
