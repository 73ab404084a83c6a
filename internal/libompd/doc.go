// Package libompd drives LLVM's libompd.so, the reference C implementation
// of OMPD, from Go, over a target.Target. It exists for tests: the
// differential test and the benchmarks of internal/compare ask libompd and
// ompd-go the same questions about the same target. Nothing outside tests
// may import it; it is the only package of the module that uses cgo, and
// without cgo it is empty (its tests and internal/compare's build only with
// cgo).
//
// The library is loaded at run time with dlopen (Load); there is no
// link-time dependency on it. The harness gives it OMPD's callback table
// (ompd_callbacks_t) implemented over the target: symbol lookups (global,
// and thread-local through target.Target.LookupThreadLocal when libompd
// passes a thread context), memory reads and writes, string reads, the
// target's primitive sizes and byte order, and thread contexts for pthread
// (the thread pointer, fs_base on x86-64 glibc) and LWP ids. Every callback
// is counted (Counters), reads with their byte counts.
//
// # One library, one thread, one target at a time
//
// libompd keeps global state: a static pointer to the callback table, the
// target's primitive sizes (read once, at the first ompd_process_initialize,
// and never again), the ompd_state of the last process initialized, and
// per-OS-thread caches of the runtime's type layout keyed by context
// address. So the harness loads one library per process (Load returns the
// same *Library for the same path and fails for another), and runs every
// call to it, and so every callback, on one dedicated OS thread: calls from
// several goroutines are serialized, and libompd's thread-local caches see
// one thread. Several address spaces may exist at once, but they must be
// of the same target program (same primitive sizes, same ompd_state):
// use one target at a time.
//
// Each address space gets a context never used before (contexts are not
// freed, a few bytes each), so libompd's layout cache starts cold for every
// ProcessInitialize, as ompd-go's does for every ompd.Open.
//
// The Go API mirrors the OMPD calls one to one (Thread.CurrParallel is
// ompd_get_curr_parallel_handle, and so on). libompd 19 exports no
// ompd_get_parallel_function: a region's entry point is the function of its
// implicit tasks (Parallel.TaskIn, then Task.Function). Handles must be
// released (Release), as in C; strings libompd allocates are copied and
// freed by the harness.
//
// Errors carry the ompd_rc_t value: errors.Is(err, libompd.Unavailable)
// works, and Code(err) returns it. A call answering ompd_rc_incomplete
// returns its value together with the error.
package libompd
