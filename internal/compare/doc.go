// Package compare holds the comparison of ompd-go with LLVM's libompd: the
// differential test (TestDifferential), which asks both the same questions
// about the core file of every fixture program and checks every answer
// against the program's own truth, and the benchmarks that measure both on
// the same targets (BenchmarkSnapshot). It has no code of its own: its
// tests drive libompd through the cgo harness of internal/libompd, so they
// build only with cgo, and the root package's tests build without it.
package compare
