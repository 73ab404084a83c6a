package objfile

import "strconv"

// CXXFuncName returns the Itanium C++ ABI (GCC, clang) name of a function
// called name that takes no parameters, as a C++ compiler names a function
// not declared extern "C": "ompd_bp_parallel_begin" is
// "_Z22ompd_bp_parallel_beginv" (LLVM 13-16 compile the OpenMP runtime's
// OMPD breakpoint functions so).
func CXXFuncName(name string) string { return "_Z" + strconv.Itoa(len(name)) + name + "v" }
